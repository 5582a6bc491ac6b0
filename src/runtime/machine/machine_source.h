/* The machine source: what the machine was doing while the job ran.
 *
 *  - Once, when recording starts: a snapshot of the machine as one MACHINE block (the text of
 *    include/npkit/event_log.h): host name and whether it resolves, CPU, kernel, open-file limit,
 *    the NCCL_* / NPKIT_* settings of the environment and of NCCL's configuration files, the GPUs
 *    with their NVLinks (NVML, loaded at run time), the InfiniBand and Ethernet ports (/sys under
 *    NPKIT_SYSFS_ROOT).  The settings are copied on the starting thread (before NCCL applies its
 *    files to the environment); everything slow (getaddrinfo, NVML, /sys) runs on the source's own
 *    thread, never on the NCCL call that started recording.
 *  - When the first communicator is created: which GPU the process uses (machine_bind.h) and
 *    NCCL's version, as a second MACHINE block.
 *  - With NPKIT_GPU_SAMPLE_RATE: the counters of that GPU, of every port and of the process's CPU
 *    time, sampled on the same thread (machine_sample.h).
 *
 * The thread runs at the lowest priority (nice 19): where the job keeps the cores busy, its threads
 * go first.  NPKIT_MACHINE=0 turns all of it off.  No NVML (a machine without a driver) gives one line and a
 * snapshot without GPUs, never a failure.  At the finish the thread is given 2 s to end (a host
 * name lookup can hang on a broken resolver); if it does not, a note says so and the log goes on
 * without what it still held. */
#ifndef NPKIT_MACHINE_SOURCE_H
#define NPKIT_MACHINE_SOURCE_H

#include "source.h"

extern const npkit_source_ops npkit_source_machine;

/* 1 while the source still waits for the first communicator (so the caller asks NCCL's version
 * only once). */
int npkit_machine_wants_comm(void);
/* The first communicator's CUDA device (ncclCommCuDevice, -1 unknown) and NCCL's version code (0
 * unknown).  Only stores them and wakes the machine thread. */
void npkit_machine_comm_created(int cuda_device, int nccl_version);

#endif
