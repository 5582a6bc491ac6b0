/* NCCL calling its own public API.  libnccl calls its exported functions by their public names
 * (weak symbols, no -Bsymbolic: NVIDIA/nccl v2.28.9-1 src/include/core.h NCCL_API,
 * makefiles/common.mk), so those calls go through its PLT and a preloaded profiler sees them:
 *  - every data call checks its communicator through ncclCommGetAsyncError (src/enqueue.cc:2637
 *    ncclEnqueueCheck -> ncclCommEnsureReady, src/init.cc:373-384), on the caller's thread;
 *  - a communicator's creation asks ncclGetVersion (src/init.cc:620 fillInfo), on the thread that
 *    runs it: the caller's, or NCCL's own for a non-blocking creation (fake_async.c).
 * This file holds those calls so that they cannot be bound inside the library. */
#include "fake_internal.h"

ncclResult_t npkit_fake_ensure_ready(ncclComm_t comm, const char *fn) {
  ncclResult_t state = ncclSuccess;
  ncclResult_t r = ncclCommGetAsyncError(comm, &state);
  if (r != ncclSuccess) return r;
  if (state == ncclInProgress)
    return npkit_fake_fail(ncclInvalidArgument, "%s : Attempt to use communicator before the "
                           "previous operation returned ncclSuccess", fn);
  return ncclSuccess;
}

void npkit_fake_init_version(void) {
  int v = 0;
  (void)ncclGetVersion(&v);
}
