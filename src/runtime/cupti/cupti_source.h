/* The GPU source: CUPTI activity tracing of every kernel, memcpy and memset of the process.
 *
 * Started once, by whichever comes first:
 *  - the CUDA driver calling InitializeInjection during cuInit (CUDA_INJECTION64_PATH names this
 *    library; cupti_injection.c sets it when the user has not), the moment NVIDIA recommends, before
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

#include "source.h"

typedef enum npkit_cupti_origin {
  NPKIT_CUPTI_FROM_DRIVER = 1, /* InitializeInjection */
  NPKIT_CUPTI_FROM_COMM = 2,   /* first communicator */
} npkit_cupti_origin;

/* The source's entry in the life cycle's table: attaches to the log, finishes (final flush and
 * drain) and gives the exit line's "; GPU: 12 kernels, 3 copies, 0 memsets, 0 lost". */
extern const npkit_source_ops npkit_source_cupti;

/* Starts the source once; later calls do nothing.  Recording must be on. */
void npkit_cupti_start(npkit_cupti_origin origin);
/* A communicator was created / destroyed (the last one destroyed flushes). */
void npkit_cupti_comm_created(void);
void npkit_cupti_comm_destroyed(void);

#endif
