/* The exported NCCL API: every public function of nccl.h 2.28 as pnccl*, with the nccl* name a
 * weak alias, as NCCL builds it.  Built with -DFAKE_NCCL_OLD=1 the library plays NCCL 2.17.3 and
 * lacks the functions NCCL added later (see README.md).  Small functions are implemented here;
 * the others forward to the file that owns them.  ncclBcast is in fake_bcast.c. */
#include "fake_internal.h"
#include "fake_newer.h"

#include <stdlib.h>
#include <string.h>

#define API NPKIT_FAKE_EXPORT

/* A configuration of an nccl*Config call (NULL for the plain collectives) must be
 * NCCL_COLLCONFIG_INITIALIZER'd (magic NCCL_API_MAGIC); of it the fake uses the user profiler tag
 * (given to the plugin's v7 events, 2.31.2 src/collectives.cc). */
static ncclResult_t coll(npkit_fake_kind kind, const char *name, const void *sendbuff,
                         void *recvbuff, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream, const void *config) {
  const npkit_fake_coll_config *cc = config;
  if (cc != NULL && cc->magic != 0xcafebeefu)
    return npkit_fake_group_error(npkit_fake_fail(
        ncclInvalidArgument, "%s : config is not initialized with NCCL_COLLCONFIG_INITIALIZER", name));
  npkit_fake_call c = {kind, name, sendbuff, recvbuff, count, dt, op, root, comm, stream,
                       cc != NULL ? cc->user_profiler_tag : 0};
  return npkit_fake_collective(&c);
}

/* ------------------------------------------------------------------ collectives and p2p */

/* One collective of nccl.h, pnccl<fn>(sendbuff, recvbuff, count, datatype, <mid> comm, stream)
 * where mid (in parentheses) is what it takes between datatype and comm: its operator and/or
 * root; op and root are what the engine gets.  Built as 2.31.2 (FAKE_NCCL_NEW) the library also
 * has its nccl<fn>Config twin, the same call with a per-call configuration as last argument
 * (2.31.2 src/collectives.cc). */
#define UNPAREN(...) __VA_ARGS__
#define COLL(fn, kind, mid, op, root)                                                              \
  API ncclResult_t pnccl##fn(const void *sendbuff, void *recvbuff, size_t count,                   \
                             ncclDataType_t datatype, UNPAREN mid ncclComm_t comm,                 \
                             cudaStream_t stream) {                                                \
    return coll(kind, #fn, sendbuff, recvbuff, count, datatype, op, root, comm, stream, NULL);     \
  }                                                                                                \
  NPKIT_FAKE_ALIAS(nccl##fn)                                                                       \
  COLL_CONFIG(fn, kind, mid, op, root)
#if FAKE_NCCL_NEW
#define COLL_CONFIG(fn, kind, mid, op, root)                                                       \
  API ncclResult_t pnccl##fn##Config(const void *sendbuff, void *recvbuff, size_t count,           \
                                     ncclDataType_t datatype, UNPAREN mid ncclComm_t comm,         \
                                     cudaStream_t stream, const ncclCollConfig_t *config) {        \
    return coll(kind, #fn, sendbuff, recvbuff, count, datatype, op, root, comm, stream, config);   \
  }                                                                                                \
  NPKIT_FAKE_ALIAS(nccl##fn##Config)
#else
#define COLL_CONFIG(fn, kind, mid, op, root)
#endif

COLL(AllReduce, NPKIT_FAKE_K_ALLREDUCE, (ncclRedOp_t op,), op, -1)
COLL(Broadcast, NPKIT_FAKE_K_BROADCAST, (int root,), ncclSum, root)
COLL(Reduce, NPKIT_FAKE_K_REDUCE, (ncclRedOp_t op, int root,), op, root)
COLL(AllGather, NPKIT_FAKE_K_ALLGATHER, (), ncclSum, -1)
COLL(ReduceScatter, NPKIT_FAKE_K_REDUCESCATTER, (ncclRedOp_t op,), op, -1)
#if !FAKE_NCCL_OLD
COLL(AlltoAll, NPKIT_FAKE_K_ALLTOALL, (), ncclSum, -1)
COLL(Gather, NPKIT_FAKE_K_GATHER, (int root,), ncclSum, root)
COLL(Scatter, NPKIT_FAKE_K_SCATTER, (int root,), ncclSum, root)
#endif

API ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclComm_t comm, cudaStream_t stream) {
  return coll(NPKIT_FAKE_K_SEND, "Send", sendbuff, NULL, count, datatype, ncclSum, peer, comm,
              stream, NULL);
}
NPKIT_FAKE_ALIAS(ncclSend)

API ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclComm_t comm, cudaStream_t stream) {
  return coll(NPKIT_FAKE_K_RECV, "Recv", NULL, recvbuff, count, datatype, ncclSum, peer, comm,
              stream, NULL);
}
NPKIT_FAKE_ALIAS(ncclRecv)

/* ------------------------------------------------------------------ groups */

API ncclResult_t pncclGroupStart(void) { return npkit_fake_group_start(); }
NPKIT_FAKE_ALIAS(ncclGroupStart)

API ncclResult_t pncclGroupEnd(void) { return npkit_fake_group_end(NULL); }
NPKIT_FAKE_ALIAS(ncclGroupEnd)

#if !FAKE_NCCL_OLD
#define SIM_INFO_MAGIC 0x74685283u
/* Ends the group without running it; estimatedTime is in microseconds. */
API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  if (simInfo == NULL || simInfo->magic != SIM_INFO_MAGIC)
    return npkit_fake_fail(ncclInvalidArgument,
                           "ncclGroupSimulateEnd : simInfo is NULL or not initialized with "
                           "NCCL_SIM_INFO_INITIALIZER");
  return npkit_fake_group_end(simInfo);
}
NPKIT_FAKE_ALIAS(ncclGroupSimulateEnd)
#endif

/* ------------------------------------------------------------------ communicators */

API ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId) {
  return npkit_fake_get_unique_id(uniqueId);
}
NPKIT_FAKE_ALIAS(ncclGetUniqueId)

API ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  return npkit_fake_init_rank(comm, nranks, &commId, rank, NULL, "CommInitRank");
}
NPKIT_FAKE_ALIAS(ncclCommInitRank)

API ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                         int rank, ncclConfig_t *config) {
  return npkit_fake_init_rank(comm, nranks, &commId, rank, config, "CommInitRankConfig");
}
NPKIT_FAKE_ALIAS(ncclCommInitRankConfig)

#if !FAKE_NCCL_OLD
/* Every id names the same communicator here: the first one is enough. */
API ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                           ncclUniqueId *commIds, ncclConfig_t *config) {
  if (nId < 1 || commIds == NULL) {
    if (newcomm != NULL) *newcomm = NULL;
    return npkit_fake_group_error(npkit_fake_fail(
        ncclInvalidArgument, "CommInitRankScalable : invalid list of %d unique ids", nId));
  }
  return npkit_fake_init_rank(newcomm, nranks, &commIds[0], myrank, config,
                              "CommInitRankScalable");
}
NPKIT_FAKE_ALIAS(ncclCommInitRankScalable)
#endif

API ncclResult_t pncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist) {
  return npkit_fake_init_all(comm, ndev, devlist);
}
NPKIT_FAKE_ALIAS(ncclCommInitAll)

API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                ncclConfig_t *config) {
  return npkit_fake_split(comm, color, key, newcomm, config);
}
NPKIT_FAKE_ALIAS(ncclCommSplit)

#if !FAKE_NCCL_OLD
API ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                 ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  return npkit_fake_shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config,
                           shrinkFlags);
}
NPKIT_FAKE_ALIAS(ncclCommShrink)
#endif

API ncclResult_t pncclCommFinalize(ncclComm_t comm) { return npkit_fake_finalize(comm); }
NPKIT_FAKE_ALIAS(ncclCommFinalize)

API ncclResult_t pncclCommDestroy(ncclComm_t comm) { return npkit_fake_destroy(comm, false); }
NPKIT_FAKE_ALIAS(ncclCommDestroy)

API ncclResult_t pncclCommAbort(ncclComm_t comm) { return npkit_fake_destroy(comm, true); }
NPKIT_FAKE_ALIAS(ncclCommAbort)

#if !FAKE_NCCL_OLD
API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return npkit_fake_revoke(comm, revokeFlags);
}
NPKIT_FAKE_ALIAS(ncclCommRevoke)
#endif

/* ------------------------------------------------------------------ queries */

static ncclResult_t query(ncclComm_t comm, const void *out, const char *fn) {
  if (comm == NULL) return npkit_fake_fail(ncclInvalidArgument, "%s : comm argument is NULL", fn);
  if (comm->magic != NPKIT_FAKE_COMM_MAGIC)
    return npkit_fake_fail(ncclInvalidArgument, "%s : comm argument is not a valid communicator",
                           fn);
  if (out == NULL) return npkit_fake_fail(ncclInvalidArgument, "%s : out argument is NULL", fn);
  return ncclSuccess;
}

API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  ncclResult_t r = query(comm, asyncError, "CommGetAsyncError");
  if (r == ncclSuccess) *asyncError = (ncclResult_t)atomic_load(&comm->async_error);
  return r;
}
NPKIT_FAKE_ALIAS(ncclCommGetAsyncError)

/* The queries of one int of the communicator. */
#define INT_QUERY(fn, member)                                                                      \
  API ncclResult_t pnccl##fn(const ncclComm_t comm, int *out) {                                    \
    ncclResult_t r = query(comm, out, #fn);                                                        \
    if (r == ncclSuccess) *out = comm->member;                                                     \
    return r;                                                                                      \
  }                                                                                                \
  NPKIT_FAKE_ALIAS(nccl##fn)

INT_QUERY(CommCount, nranks)
INT_QUERY(CommCuDevice, device)
INT_QUERY(CommUserRank, rank)

API ncclResult_t pncclGetVersion(int *version) {
  if (version == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "GetVersion : version argument is NULL");
  *version = npkit_fake_cfg()->version;
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclGetVersion)

/* NCCL's own wording. */
API const char *pncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "unknown result code";
  }
}
NPKIT_FAKE_ALIAS(ncclGetErrorString)

/* The last error of the calling thread, whatever the communicator. */
API const char *pncclGetLastError(ncclComm_t comm) { return npkit_fake_last_error(); }
NPKIT_FAKE_ALIAS(ncclGetLastError)

#if !FAKE_NCCL_OLD
/* nccl.h marks it deprecated; it still has to exist. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
API void pncclResetDebugInit(void) { npkit_fake_reread_debug(); }
NPKIT_FAKE_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop
#endif

/* ------------------------------------------------------------------ memory and registration */

#define ALLOC_ALIGN 4096 /* NCCL_WIN_REQUIRED_ALIGNMENT */

API ncclResult_t pncclMemAlloc(void **ptr, size_t size) {
  if (ptr == NULL) return npkit_fake_fail(ncclInvalidArgument, "MemAlloc : ptr argument is NULL");
  *ptr = NULL;
  if (size == 0) return ncclSuccess; /* like cudaMalloc */
  if (size > SIZE_MAX - ALLOC_ALIGN)
    return npkit_fake_fail(ncclInvalidArgument, "MemAlloc : size %zu is too large", size);
  size_t rounded = (size + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN;
  if (posix_memalign(ptr, ALLOC_ALIGN, rounded) != 0) {
    *ptr = NULL;
    return npkit_fake_fail(ncclSystemError, "MemAlloc : cannot allocate %zu bytes", size);
  }
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclMemAlloc)

API ncclResult_t pncclMemFree(void *ptr) {
  free(ptr);
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclMemFree)

/* What a registration handle or window points to: checked when it is given back. */
#define REG_MAGIC 0x52454749u
typedef struct registration {
  unsigned magic;
  ncclComm_t comm;
  void *buff;
  size_t size;
  int flags;
} registration;

static ncclResult_t reg_new(ncclComm_t comm, void *buff, size_t size, const void *out, int flags,
                            const char *fn, registration **reg) {
  ncclResult_t r = query(comm, out, fn);
  if (r != ncclSuccess) return r;
  if (buff == NULL && size > 0)
    return npkit_fake_fail(ncclInvalidArgument, "%s : buff argument is NULL", fn);
  *reg = malloc(sizeof **reg);
  if (*reg == NULL) return npkit_fake_fail(ncclSystemError, "%s : out of memory", fn);
  **reg = (registration){REG_MAGIC, comm, buff, size, flags};
  return ncclSuccess;
}

static ncclResult_t reg_free(ncclComm_t comm, void *handle, const char *fn) {
  ncclResult_t r = query(comm, handle, fn);
  if (r != ncclSuccess) return r;
  registration *reg = handle;
  if (reg->magic != REG_MAGIC || reg->comm != comm)
    return npkit_fake_fail(ncclInvalidArgument, "%s : handle was not registered with this comm",
                           fn);
  reg->magic = 0;
  free(reg);
  return ncclSuccess;
}

API ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  registration *reg = NULL;
  ncclResult_t r = reg_new(comm, buff, size, handle, 0, "CommRegister", &reg);
  if (r == ncclSuccess) *handle = reg;
  return r;
}
NPKIT_FAKE_ALIAS(ncclCommRegister)

API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle) {
  return reg_free(comm, handle, "CommDeregister");
}
NPKIT_FAKE_ALIAS(ncclCommDeregister)

#if !FAKE_NCCL_OLD
API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                         ncclWindow_t *win, int winFlags) {
  registration *reg = NULL;
  ncclResult_t r = reg_new(comm, buff, size, win, winFlags, "CommWindowRegister", &reg);
  if (r == ncclSuccess) *win = (ncclWindow_t)(void *)reg;
  return r;
}
NPKIT_FAKE_ALIAS(ncclCommWindowRegister)

API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return reg_free(comm, (void *)win, "CommWindowDeregister");
}
NPKIT_FAKE_ALIAS(ncclCommWindowDeregister)
#endif

/* ------------------------------------------------------------------ reduction operators */

API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                           ncclScalarResidence_t residence, ncclComm_t comm) {
  return npkit_fake_redop_create(op, scalar, datatype, residence, comm);
}
NPKIT_FAKE_ALIAS(ncclRedOpCreatePreMulSum)

API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return npkit_fake_redop_destroy(op, comm);
}
NPKIT_FAKE_ALIAS(ncclRedOpDestroy)

#if FAKE_NCCL_NEW
/* ------------------------------------------------------------------ NCCL 2.29-2.31 */

API ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr) {
  ncclResult_t r = query(comm, outUserPtr, "WinGetUserPtr");
  if (r != ncclSuccess) return r;
  registration *reg = (registration *)(void *)win;
  if (reg == NULL || reg->magic != REG_MAGIC || reg->comm != comm)
    return npkit_fake_fail(ncclInvalidArgument, "WinGetUserPtr : win was not registered with this comm");
  *outUserPtr = reg->buff;
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclWinGetUserPtr)

#endif
