/* A GPU-side hang on one rank, for the tests of the hang watchdog and diagnosis:
 * FAKE_NCCL_STALL=<kind>:<rank>:<n> stops the n-th data collective (from 0, counted per
 * communicator) of the rank with that rank in its communicator, for good.
 *
 * On a GPU (v2.28.9-1) NCCL's host call of a collective returns as soon as its kernel is launched
 * (src/enqueue.cc ncclEnqueueCheck -> ncclGroupEndInternal -> doLaunches -> ncclLaunchKernel:
 * cuLaunchKernelEx does not wait), and the profiler plugin hears of the kernel only from NCCL's
 * proxy thread, which polls the counters the kernel writes when each channel starts and finishes
 * (src/transport/profiler.cc profilerProxyProgress -> ncclProfilerStartKernelChEvent /
 * ncclProfilerStopKernelChEvent).  A stuck kernel therefore shows as a Coll task that was launched
 * (its events stop right after the launch: src/enqueue.cc hostStreamPlanTask ->
 * ncclProfilerStopTaskEvents) and whose channels started but never stopped, or never started; the
 * rank's later calls return too (a GPU hang on the device check's stalled rank, 2026-12-04: the
 * healthy rank enqueued every later collective and blocked in cudaStreamSynchronize), and their
 * kernels never start: a stream runs its kernels in order.
 *
 *  - kernel: the n-th collective's kernel never starts (the stream is held by earlier work): its
 *    launch and task events come, no kernel-channel event, no data moves.
 *  - proxy:  its kernel starts (KernelCh start), and the first network send of the rank's first
 *    transfer never completes (FAKE_NCCL_NET=1): NCCL's progress thread posts the step
 *    (src/transport/net.cc sendProxyProgress: ProxyStepSendGPUWait, SendPeerWait, SendWait once
 *    isend was issued) and stops it only when ncclNet->test says the request is done, which never
 *    happens; the kernel waits for the buffer and never finishes.
 * In both, the call returns ncclSuccess at once, later collectives of the communicator on the rank
 * return at once without running (their kernels wait behind), and the peers, whose transfers wait
 * for this rank's data, block in their call until FAKE_NCCL_TIMEOUT_S (stricter than a GPU, where
 * they too return and their kernels wait).  npkitFakeNcclStreamSynchronize plays
 * cudaStreamSynchronize: it blocks for as long as the rank has stalled work.  Only calls outside
 * groups on blocking communicators stall. */
#include "fake_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
  int kind, rank;
  unsigned long long n;
} stall;
static pthread_once_t stall_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static npkit_fake_op *kept; /* every stalled op, linked through `next`; never freed */

static void read_stall(void) {
  const char *v = getenv("FAKE_NCCL_STALL");
  char kind[16];
  int rank;
  unsigned long long n;
  if (v == NULL || sscanf(v, "%15[a-z]:%d:%llu", kind, &rank, &n) != 3) return;
  stall.kind = strcmp(kind, "kernel") == 0 ? NPKIT_FAKE_STALL_KERNEL
               : strcmp(kind, "proxy") == 0 ? NPKIT_FAKE_STALL_PROXY
                                            : NPKIT_FAKE_STALL_NONE;
  stall.rank = rank;
  stall.n = n;
}

static bool data_collective(npkit_fake_kind k) { return k >= NPKIT_FAKE_K_ALLREDUCE && k <= NPKIT_FAKE_K_SCATTER; }

bool npkit_fake_stall_mark(npkit_fake_op *list, bool single_call) {
  pthread_once(&stall_once, read_stall);
  bool any = false;
  for (npkit_fake_op *op = list; op != NULL; op = op->next) {
    ncclComm_t c = op->comm;
    op->stall = NPKIT_FAKE_STALL_NONE;
    if (c == NULL || !data_collective(op->kind) || op->replay) continue;
    uint64_t n = c->data_calls++;
    if (!single_call || list->next != NULL || c->nonblocking) continue;
    if (c->stalled) {
      op->stall = NPKIT_FAKE_STALL_BEHIND;
    } else if (stall.kind != NPKIT_FAKE_STALL_NONE && c->rank == stall.rank && n == stall.n) {
      op->stall = (uint8_t)stall.kind;
      c->stalled = true;
      npkit_fake_debug_log("%s #%llu of rank %d stalls on the GPU (FAKE_NCCL_STALL)", op->name,
                           (unsigned long long)n, c->rank);
    }
    any |= op->stall != NPKIT_FAKE_STALL_NONE;
  }
  return any;
}

void npkit_fake_stall_keep(npkit_fake_op *list) {
  pthread_mutex_lock(&kept_lock);
  npkit_fake_op *last = list;
  while (last->next != NULL) last = last->next;
  last->next = kept;
  kept = list;
  pthread_mutex_unlock(&kept_lock);
}

/* Test-only: cudaStreamSynchronize of a rank whose GPU work stalled never returns; otherwise the
 * fake's work is done when its call returns. */
NPKIT_FAKE_EXPORT void npkitFakeNcclStreamSynchronize(void) {
  for (;;) {
    pthread_mutex_lock(&kept_lock);
    bool stalled = kept != NULL;
    pthread_mutex_unlock(&kept_lock);
    if (!stalled) return;
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
  }
}
