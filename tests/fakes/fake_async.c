/* Non-blocking communicators (ncclConfig_t.blocking = 0), as NVIDIA/nccl v2.28.9-1 runs them:
 *  - ncclCommInitRankConfig returns ncclInProgress at once; the creation (the profiler plugin's
 *    init included, and fillInfo's call of ncclGetVersion through the PLT, src/init.cc:620) runs
 *    on a thread of NCCL's own (src/init.cc ncclCommInitRankFunc as an async job);
 *  - a data call outside a group, and ncclGroupEnd of a group of such calls, return
 *    ncclInProgress; the launch (KernelLaunch, the kernels' cuLaunchKernelEx, Group and Coll) runs
 *    on a new thread (src/group.cc groupLaunchNonBlocking) while the GroupApi event stops on the
 *    calling thread (grp.cc:754); calls inside the group return ncclSuccess;
 *  - ncclCommGetAsyncError says ncclInProgress until the work is done, then its result; a call on
 *    a communicator still in progress fails with ncclInvalidArgument (init.cc ncclCommEnsureReady,
 *    reached through the PLT from every data call: npkit_fake_ensure_ready in fake_plt.c);
 *  - a group mixing blocking and non-blocking communicators is ncclInvalidArgument (grp.cc:51-60).
 * ncclCommDestroy waits for the communicator's running work. */
#include "fake_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct job {
  npkit_fake_op *list;
  void *group_api;
  ncclComm_t init;   /* a communicator being created, else NULL */
  double until;      /* the simulated duration ends (npkit_fake_now) */
} job;

static void set_state(npkit_fake_op *list, ncclComm_t init, ncclResult_t res, int pending_delta) {
  for (npkit_fake_op *op = list; op != NULL; op = op->next) {
    ncclComm_t c = op->comm;
    if (c == NULL) continue;
    bool seen = false;
    for (npkit_fake_op *o = list; o != op; o = o->next) seen |= o->comm == c;
    if (seen) continue;
    atomic_store(&c->async_error, (int)res);
    atomic_fetch_add(&c->pending, pending_delta);
  }
  if (init != NULL && (list == NULL || list->comm != init)) {
    atomic_store(&init->async_error, (int)res);
    atomic_fetch_add(&init->pending, pending_delta);
  }
}

static void *job_main(void *arg) {
  job *j = arg;
  if (j->init != NULL) {
    npkit_fake_prof_comm_init(j->init);
    npkit_fake_init_version(); /* NCCL calls its public API from its own thread */
  }
  ncclResult_t res = npkit_fake_run_group(j->list, j->group_api, false);
  if (res == ncclSuccess) npkit_fake_sleep_until(j->until);
  set_state(j->list, j->init, res, -1);
  while (j->list != NULL) {
    npkit_fake_op *next = j->list->next;
    npkit_fake_op_free(j->list);
    j->list = next;
  }
  free(j);
  return NULL;
}

ncclResult_t npkit_fake_async_launch(npkit_fake_op *list, void *group_api, ncclComm_t init, double until) {
  job *j = calloc(1, sizeof *j);
  if (j == NULL) return npkit_fake_fail(ncclSystemError, "out of memory launching non-blocking work");
  *j = (job){list, group_api, init, until};
  set_state(list, init, ncclInProgress, 1);
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int e = pthread_create(&t, &attr, job_main, j);
  pthread_attr_destroy(&attr);
  if (e != 0) {
    set_state(list, init, ncclSystemError, -1);
    free(j);
    return npkit_fake_fail(ncclSystemError, "cannot start a thread for non-blocking work");
  }
  pthread_setname_np(t, "fake-nccl-async");
  npkit_fake_prof_group_done(group_api); /* on the calling thread, possibly before the launch */
  return ncclInProgress;
}

void npkit_fake_async_wait(ncclComm_t comm) {
  npkit_fake_backoff b = {0};
  while (atomic_load(&comm->pending) > 0) npkit_fake_backoff_wait(&b);
}
