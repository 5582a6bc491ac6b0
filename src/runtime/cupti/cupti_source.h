/* The GPU source: CUPTI activity tracing of every kernel, memcpy and memset of the process.
 *
 * Started once, by whichever comes first:
 *  - the CUDA driver calling InitializeInjection during cuInit (CUDA_INJECTION64_PATH names this
 *    library; self_register.c sets it when the user has not), the moment NVIDIA recommends, before
 *    any module is loaded;
 *  - the first communicator creation, where no driver does that (another injection library is
 *    named, or in tests with a fake CUPTI).
 * Walks the copies of libcupti until one starts (cupti_loader.h: CUPTI 13 cannot start with a
 * CUDA 12 driver, a CUDA 12 copy can), saying in one line which it uses when it skipped one.
 * Stops with one `npkit:` line, without CUPTI's kernels, copies and memsets (NCCL's own GPU times
 * come from the profiler plugin), when NPKIT_CUPTI=0, when NPKIT_CUPTI=auto and PyTorch, whose
 * profiler needs CUPTI, is loaded (cupti_peers.h), when libcupti or the driver is missing or no
 * copy can start, or when another CUPTI client (Nsight Systems, a profiler) holds CUPTI.  Another
 * client's timestamp callback changes the clock of the records: they are mapped back onto
 * CLOCK_REALTIME (cupti_clock.h).
 *
 * Flushes: periodically (NPKIT_FLUSH_MS, forced, so that partly filled buffers are written too), when
 * the last communicator is destroyed, at exit before CUDA tears down, and when the trace is
 * finished (npkit_finish). */
#ifndef NPKIT_CUPTI_SOURCE_H
#define NPKIT_CUPTI_SOURCE_H

#include <stddef.h>

#include "cupti_drain.h"
#include "log_writer.h"

typedef enum npkit_gpu_origin {
  NPKIT_GPU_FROM_DRIVER = 1, /* InitializeInjection */
  NPKIT_GPU_FROM_COMM = 2,   /* first communicator */
} npkit_gpu_origin;

/* The event log GPU events go to (set when recording starts). */
void npkit_gpu_attach(npkit_log_writer *log);
/* Starts the source once; later calls do nothing.  Recording must be on. */
void npkit_gpu_start(npkit_gpu_origin origin);
/* A communicator was created / destroyed (the last one destroyed flushes). */
void npkit_gpu_comm_created(void);
void npkit_gpu_comm_destroyed(void);
/* Final flush and drain, then detaches from the log; fills totals (zeros if never started).
 * Safe to call more than once. */
void npkit_gpu_finish(npkit_gpu_counts *totals);
/* ", GPU: 12 kernels, 3 copies, 0 memsets, 0 lost" for the exit line; "" if the source never
 * ran. */
void npkit_gpu_summary(const npkit_gpu_counts *c, char *buf, size_t len);

#endif
