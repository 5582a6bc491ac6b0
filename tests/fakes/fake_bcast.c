/* ncclBcast is the in-place form of ncclBroadcast and, as in NCCL, is implemented by calling the
 * exported ncclBroadcast.  It lives in its own file so that the call cannot be bound inside the
 * library: it goes through the PLT, and a preloaded profiler sees NCCL calling its own public API
 * from inside another call (the profiler must not count it twice). */
#include "fake_internal.h"

NPKIT_FAKE_EXPORT ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype,
                                          int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
NPKIT_FAKE_ALIAS(ncclBcast)
