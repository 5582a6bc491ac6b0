/* CUDA graphs: NCCL calls captured on a stream and replayed (test-only entry points).
 *
 * NVIDIA/nccl v2.28.9-1 builds a persistent plan for a call made while its stream captures
 * (src/enqueue.cc, planner->capturingGraph) and, at every replay of the graph, runs the host node
 * hostStreamPlanCallback on CUDA's callback thread before the kernel.  The fake does the same:
 *  - npkitFakeNcclCaptureBegin(stream): the stream captures (and the fake CUPTI's stream too, so
 *    that the kernels become its graph nodes);
 *  - a data call on it is accepted and captured: its GroupApi/CollApi events say graphCaptured,
 *    the captured cuLaunchKernelEx gets its KernelLaunch, and no data moves; Group/Coll are
 *    emitted then only for a plan without proxy ops (npkit_fake_prof_capture);
 *  - npkitFakeNcclCaptureEnd(stream): the graph, instantiated; returns its id (0 on error);
 *  - npkitFakeNcclGraphLaunch(id, stream), from any thread (playing CUDA's callback thread): the
 *    application's cudaGraphLaunch (the fake CUPTI's graph launch), then the captured calls run
 *    for real, all ranks replaying in the same order: Group and Coll from this thread with the
 *    capture-time CollApi as parent, seqNumber advancing only with kernel-channel events asked
 *    for, and the proxy's kernel-channel events.  No API-level event: no call is made.
 * Calls captured inside ncclGroupStart/End are not modelled: they fail with ncclInvalidUsage. */
#include "fake_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GRAPHS 16
#define MAX_CALLS 64

typedef struct graph {
  int used, open;
  cudaStream_t stream;
  npkit_fake_call calls[MAX_CALLS];
  void *prof_api[MAX_CALLS]; /* each call's CollApi/P2pApi event, parent of its replays' tasks */
  int n;
  uint32_t cupti_exec;
} graph;

static graph graphs[MAX_GRAPHS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static graph *capturing(cudaStream_t stream) {
  for (int i = 0; i < MAX_GRAPHS; i++)
    if (graphs[i].used && graphs[i].open && graphs[i].stream == stream) return &graphs[i];
  return NULL;
}

NPKIT_FAKE_EXPORT int npkitFakeNcclCaptureBegin(cudaStream_t stream) {
  pthread_mutex_lock(&lock);
  int r = -1;
  for (int i = 0; i < MAX_GRAPHS && capturing(stream) == NULL; i++)
    if (!graphs[i].used) {
      memset(&graphs[i], 0, sizeof graphs[i]);
      graphs[i].used = graphs[i].open = 1;
      graphs[i].stream = stream;
      r = 0;
      break;
    }
  pthread_mutex_unlock(&lock);
  if (r == 0) npkit_fake_gpu_capture_begin(stream);
  return r;
}

NPKIT_FAKE_EXPORT uint32_t npkitFakeNcclCaptureEnd(cudaStream_t stream) {
  pthread_mutex_lock(&lock);
  graph *g = capturing(stream);
  if (g != NULL) g->open = 0;
  pthread_mutex_unlock(&lock);
  if (g == NULL) return 0;
  g->cupti_exec = npkit_fake_gpu_capture_end(stream);
  return (uint32_t)(g - graphs) + 1;
}

bool npkit_fake_graph_capture(const npkit_fake_call *call, npkit_fake_op *op) {
  pthread_mutex_lock(&lock);
  graph *g = capturing(call->stream);
  pthread_mutex_unlock(&lock);
  if (g == NULL) return false;
  if (npkit_fake_in_group() || g->n == MAX_CALLS) {
    npkit_fake_group_error(npkit_fake_fail(ncclInvalidUsage, "%s: capture inside a group is not "
                                           "modelled by the fake NCCL", call->name));
    npkit_fake_op_free(op);
    return true;
  }
  op->captured = true;
  npkit_fake_prof_call(op);
  npkit_fake_kernels *k = npkit_fake_gpu_plan(op);
  void *group = npkit_fake_prof_take_group();
  npkit_fake_prof_capture(op, k, group);
  npkit_fake_prof_group_done(group);
  npkit_fake_gpu_capture(k);
  g->calls[g->n] = *call;
  g->prof_api[g->n] = op->prof_api;
  g->n++;
  npkit_fake_op_free(op);
  return true;
}

NPKIT_FAKE_EXPORT ncclResult_t npkitFakeNcclGraphLaunch(uint32_t id, cudaStream_t stream) {
  if (id == 0 || id > MAX_GRAPHS || !graphs[id - 1].used || graphs[id - 1].open)
    return npkit_fake_fail(ncclInvalidArgument, "npkitFakeNcclGraphLaunch: no such graph");
  graph *g = &graphs[id - 1];
  npkit_fake_gpu_graph_launch(g->cupti_exec, stream);
  npkit_fake_op *head = NULL, **tail = &head;
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < g->n && res == ncclSuccess; i++) {
    npkit_fake_op *op;
    res = npkit_fake_make_op(&g->calls[i], &op);
    if (res != ncclSuccess) break;
    op->replay = true;
    op->prof_api = g->prof_api[i];
    *tail = op;
    tail = &op->next;
  }
  if (res == ncclSuccess && head != NULL) res = npkit_fake_run_group(head, NULL, false);
  while (head != NULL) {
    npkit_fake_op *next = head->next;
    npkit_fake_op_free(head);
    head = next;
  }
  return res;
}
