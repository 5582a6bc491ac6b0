/* The API NCCL added to nccl.h after 2.28 (built with FAKE_NCCL_NEW: the fake plays 2.31.2), and
 * the host functions of the device API that libnccl 2.28.9 already exports (the nccl_device headers;
 * src/libnccl.map exports every nccl* symbol).
 *
 * Modelled (NVIDIA/nccl v2.28.9-1 src/nccl_device/core.cc, ll_a2a.cc): the teams of a
 * communicator, all of whose ranks share one host here (the LSA team is the world):
 *   ncclTeamWorld {nRanks, rank, 1}, ncclTeamLsa the same, ncclTeamRail {nRanks / lsaSize,
 *   rank / lsaSize, lsaSize}, ncclTeamRankToWorld/ToLsa = own rank + (rank - team.rank) x stride,
 *   ncclLLA2ACalcSlots = maxElts x ceil(maxEltSize / 8);
 * from 2.29-2.31:
 *   ncclCommSuspend/Resume/MemStats (v2.29.7-1 src/mem_manager.cc): the communicator is checked
 *   and the flags; MemStats answers 0 bytes, as NCCL does for a communicator without a memory
 *   manager.  Stricter than NCCL: a suspended communicator refuses calls until resumed, and a
 *   Resume without a Suspend is ncclInvalidUsage (NCCL resumes whatever there is);
 *   ncclCommGetUniqueId (a fresh id);
 *   the parameter API (v2.30.7-1 src/param/c_api.cc): a handle binds a key, the getters read it.
 *   Simpler than NCCL: the fake has no registry of typed parameters, a key is NCCL_<KEY> of the
 *   environment and an unset one has no value (ncclInvalidArgument, as NCCL's unknown keys);
 *   ncclTeamCft* (the world team).
 * Not modelled, and refused with ncclInvalidUsage after the argument checks: everything that needs
 * device memory or symmetric windows (ncclDevCommCreate/Destroy, the requirement builders, the
 * device-pointer and CFT queries, ncclCommQueryProperties), one-sided operations (ncclPutSignal,
 * ncclSignal, ncclWaitSignal) and ncclCommGrow. */
#include "fake_internal.h"
#include "fake_newer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API NPKIT_FAKE_EXPORT

#if !FAKE_NCCL_OLD

static ncclResult_t usable(ncclComm_t comm, const char *fn) {
  if (comm == NULL) return npkit_fake_fail(ncclInvalidArgument, "%s : comm argument is NULL", fn);
  return npkit_fake_comm_usable(comm, fn);
}

static ncclResult_t not_modelled(const char *fn, const char *what) {
  return npkit_fake_fail(ncclInvalidUsage, "%s : %s is not modelled by the fake NCCL", fn, what);
}

/* A function whose arguments are checked (bad: they are wrong) before it is refused. */
static ncclResult_t refused(const char *fn, bool bad, const char *what) {
  if (bad) return npkit_fake_fail(ncclInvalidArgument, "%s : invalid arguments", fn);
  return not_modelled(fn, what);
}

/* ---- 2.28: the device API's host side ---- */

API ncclResult_t pncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm) {
  ncclResult_t r = usable(comm, "DevCommCreate");
  if (r == ncclSuccess && (reqs == NULL || outDevComm == NULL))
    r = npkit_fake_fail(ncclInvalidArgument, "DevCommCreate : reqs or outDevComm is NULL");
  return r != ncclSuccess ? r : not_modelled("DevCommCreate", "a device communicator");
}
NPKIT_FAKE_ALIAS(ncclDevCommCreate)

API ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const void *devComm) {
  ncclResult_t r = usable(comm, "DevCommDestroy");
  if (r == ncclSuccess && devComm == NULL)
    r = npkit_fake_fail(ncclInvalidArgument, "DevCommDestroy : devComm is NULL");
  return r != ncclSuccess ? r : not_modelled("DevCommDestroy", "a device communicator");
}
NPKIT_FAKE_ALIAS(ncclDevCommDestroy)

/* A wrong communicator gives an empty team, as NCCL's does when its device runtime fails. */
static npkit_fake_team team(ncclComm_t comm, int kind) {
  if (comm == NULL || comm->magic != NPKIT_FAKE_COMM_MAGIC) return (npkit_fake_team){0, 0, 0};
  int lsa = comm->nranks; /* one host */
  if (kind == 2) return (npkit_fake_team){comm->nranks / lsa, comm->rank / lsa, lsa};
  return (npkit_fake_team){comm->nranks, comm->rank, 1};
}

API npkit_fake_team pncclTeamWorld(ncclComm_t comm) { return team(comm, 0); }
NPKIT_FAKE_ALIAS(ncclTeamWorld)
API npkit_fake_team pncclTeamLsa(ncclComm_t comm) { return team(comm, 1); }
NPKIT_FAKE_ALIAS(ncclTeamLsa)
API npkit_fake_team pncclTeamRail(ncclComm_t comm) { return team(comm, 2); }
NPKIT_FAKE_ALIAS(ncclTeamRail)

API int pncclTeamRankToWorld(ncclComm_t comm, npkit_fake_team t, int rank) {
  if (comm == NULL || comm->magic != NPKIT_FAKE_COMM_MAGIC) return -1;
  return comm->rank + (rank - t.rank) * t.stride;
}
NPKIT_FAKE_ALIAS(ncclTeamRankToWorld)

API int pncclTeamRankToLsa(ncclComm_t comm, npkit_fake_team t, int rank) {
  if (comm == NULL || comm->magic != NPKIT_FAKE_COMM_MAGIC) return -1;
  return comm->rank + (rank - t.rank) * t.stride; /* lsaSelf is the rank: one host */
}
NPKIT_FAKE_ALIAS(ncclTeamRankToLsa)

API ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, npkit_fake_team t, int nBarriers,
                                                  void *outHandle, void *outReq) {
  (void)t;
  ncclResult_t r = usable(comm, "GinBarrierCreateRequirement");
  if (r != ncclSuccess) return r;
  return refused("GinBarrierCreateRequirement", nBarriers < 0 || outHandle == NULL || outReq == NULL,
                 "GPU-initiated networking");
}
NPKIT_FAKE_ALIAS(ncclGinBarrierCreateRequirement)

API int pncclLLA2ACalcSlots(int maxElts, int maxEltSize) { return maxElts * ((maxEltSize + 7) / 8); }
NPKIT_FAKE_ALIAS(ncclLLA2ACalcSlots)

API ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, void *outHandle, void *outReq) {
  return refused("LLA2ACreateRequirement", nBlocks < 0 || nSlots < 0 || outHandle == NULL || outReq == NULL,
                 "a device resource");
}
NPKIT_FAKE_ALIAS(ncclLLA2ACreateRequirement)

/* The barriers' requirement builders: (team, nBarriers, outHandle, outReq). */
#define BARRIER_REQUIREMENT(fn)                                                                    \
  API ncclResult_t pnccl##fn(npkit_fake_team t, int nBarriers, void *outHandle, void *outReq) {    \
    (void)t;                                                                                       \
    return refused(#fn, nBarriers < 0 || outHandle == NULL || outReq == NULL, "a device resource"); \
  }                                                                                                \
  NPKIT_FAKE_ALIAS(nccl##fn)

BARRIER_REQUIREMENT(LsaBarrierCreateRequirement)

#endif /* !FAKE_NCCL_OLD */

#if FAKE_NCCL_NEW

/* ---- 2.29.2 ---- */

API ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId) {
  ncclResult_t r = usable(comm, "CommGetUniqueId");
  if (r == ncclSuccess && uniqueId == NULL)
    r = npkit_fake_fail(ncclInvalidArgument, "CommGetUniqueId : uniqueId is NULL");
  return r != ncclSuccess ? r : npkit_fake_get_unique_id(uniqueId);
}
NPKIT_FAKE_ALIAS(ncclCommGetUniqueId)

API ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
                               ncclComm_t *newcomm, ncclConfig_t *config) {
  (void)comm;
  (void)config;
  if (newcomm != NULL) *newcomm = NULL;
  return refused("CommGrow", newcomm == NULL || uniqueId == NULL || nRanks < 1 || rank < 0 || rank >= nRanks,
                 "growing a communicator");
}
NPKIT_FAKE_ALIAS(ncclCommGrow)

static ncclResult_t one_sided(ncclComm_t comm, int peer, const char *fn) {
  ncclResult_t r = usable(comm, fn);
  if (r == ncclSuccess && (peer < 0 || peer >= comm->nranks))
    r = npkit_fake_fail(ncclInvalidArgument, "%s : invalid peer %d", fn, peer);
  return npkit_fake_group_error(r != ncclSuccess ? r : not_modelled(fn, "one-sided communication"));
}

API ncclResult_t pncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                                ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                                unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  (void)localbuff, (void)count, (void)datatype, (void)peerWin, (void)peerWinOffset, (void)sigIdx;
  (void)ctx, (void)flags, (void)stream;
  return one_sided(comm, peer, "PutSignal");
}
NPKIT_FAKE_ALIAS(ncclPutSignal)

API ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                             cudaStream_t stream) {
  (void)sigIdx, (void)ctx, (void)flags, (void)stream;
  return one_sided(comm, peer, "Signal");
}
NPKIT_FAKE_ALIAS(ncclSignal)

API ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
                                 cudaStream_t stream) {
  (void)stream;
  if (nDesc < 0 || (nDesc > 0 && signalDescs == NULL))
    return npkit_fake_group_error(npkit_fake_fail(ncclInvalidArgument, "WaitSignal : invalid descriptors"));
  return one_sided(comm, nDesc > 0 ? signalDescs[0].peer : 0, "WaitSignal");
}
NPKIT_FAKE_ALIAS(ncclWaitSignal)

API ncclResult_t pncclCommQueryProperties(ncclComm_t comm, void *props) {
  ncclResult_t r = usable(comm, "CommQueryProperties");
  if (r == ncclSuccess && props == NULL)
    r = npkit_fake_fail(ncclInvalidArgument, "CommQueryProperties : props is NULL");
  return r != ncclSuccess ? r : not_modelled("CommQueryProperties", "the device API's properties");
}
NPKIT_FAKE_ALIAS(ncclCommQueryProperties)

static ncclResult_t device_pointer(const void *window, const void *out, const char *fn) {
  return refused(fn, window == NULL || out == NULL, "a device pointer");
}

API ncclResult_t pncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void **outPtr) {
  (void)offset;
  return device_pointer(window, outPtr, "GetLsaMultimemDevicePointer");
}
NPKIT_FAKE_ALIAS(ncclGetLsaMultimemDevicePointer)

typedef struct {
  void *mcBasePtr;
} multimem_handle; /* ncclMultimemHandle_t, v2.30.7-1 nccl_device/core.h: by value */

API ncclResult_t pncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset, multimem_handle mm,
                                               void **outPtr) {
  (void)offset, (void)mm;
  return device_pointer(window, outPtr, "GetMultimemDevicePointer");
}
NPKIT_FAKE_ALIAS(ncclGetMultimemDevicePointer)

API ncclResult_t pncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void **outPtr) {
  (void)offset, (void)lsaRank;
  return device_pointer(window, outPtr, "GetLsaDevicePointer");
}
NPKIT_FAKE_ALIAS(ncclGetLsaDevicePointer)

API ncclResult_t pncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void **outPtr) {
  (void)offset, (void)peer;
  return device_pointer(window, outPtr, "GetPeerDevicePointer");
}
NPKIT_FAKE_ALIAS(ncclGetPeerDevicePointer)

/* ---- 2.29.7 ---- */

API ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags) {
  ncclResult_t r = usable(comm, "CommSuspend");
  if (r != ncclSuccess) return r;
  if (flags & ~0x01 /* NCCL_SUSPEND_MEM */)
    return npkit_fake_fail(ncclInvalidArgument, "CommSuspend : invalid flags %d", flags);
  atomic_store(&comm->suspended, true);
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclCommSuspend)

API ncclResult_t pncclCommResume(ncclComm_t comm) {
  if (comm == NULL || comm->magic != NPKIT_FAKE_COMM_MAGIC)
    return npkit_fake_fail(ncclInvalidArgument, "CommResume : comm argument is not a valid communicator");
  if (!atomic_exchange(&comm->suspended, false))
    return npkit_fake_fail(ncclInvalidUsage, "CommResume : the communicator is not suspended");
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclCommResume)

API ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value) {
  if (comm == NULL || comm->magic != NPKIT_FAKE_COMM_MAGIC || value == NULL ||
      (unsigned)stat > (unsigned)ncclStatGpuMemTotal)
    return npkit_fake_fail(ncclInvalidArgument, "CommMemStats : invalid arguments");
  *value = 0; /* the fake holds no GPU memory */
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclCommMemStats)

/* ---- 2.30.3 / 2.30.4 ---- */

API ncclResult_t pncclGinOutboxCreateRequirement(int nBlocks, int size_log2, void *outHandle, void *outReq) {
  return refused("GinOutboxCreateRequirement", nBlocks < 0 || size_log2 < 0 || outHandle == NULL || outReq == NULL,
                 "GPU-initiated networking");
}
NPKIT_FAKE_ALIAS(ncclGinOutboxCreateRequirement)

API ncclResult_t pncclGinInboxA2ACreateRequirement(npkit_fake_team peers, int nBlocks, int size_log2,
                                                   void *outHandle, void *outReq) {
  (void)peers;
  return refused("GinInboxA2ACreateRequirement", nBlocks < 0 || size_log2 < 0 || outHandle == NULL || outReq == NULL,
                 "GPU-initiated networking");
}
NPKIT_FAKE_ALIAS(ncclGinInboxA2ACreateRequirement)

/* A parameter handle names NCCL_<key>; its value is read when asked for. */
#define PARAM_MAGIC 0x50415241u
struct ncclParamHandle {
  unsigned magic;
  char env[128];
};

API ncclResult_t pncclParamBind(ncclParamHandle_t *out, const char *key) {
  if (out == NULL || key == NULL || strlen(key) > 100)
    return npkit_fake_fail(ncclInvalidArgument, "ParamBind : invalid arguments");
  struct ncclParamHandle *h = calloc(1, sizeof *h);
  if (h == NULL) return npkit_fake_fail(ncclSystemError, "ParamBind : out of memory");
  h->magic = PARAM_MAGIC;
  snprintf(h->env, sizeof h->env, "NCCL_%s", key);
  *out = h;
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclParamBind)

static ncclResult_t param_text(ncclParamHandle_t h, const void *out, const char **text) {
  if (h == NULL || h->magic != PARAM_MAGIC || out == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "ParamGet : invalid handle or output");
  *text = getenv(h->env);
  if (*text == NULL) return npkit_fake_fail(ncclInvalidArgument, "ParamGet : %s has no value", h->env);
  return ncclSuccess;
}

static ncclResult_t param_int(ncclParamHandle_t h, const void *out, int64_t lo, int64_t hi, int64_t *v) {
  const char *text;
  ncclResult_t r = param_text(h, out, &text);
  if (r != ncclSuccess) return r;
  char *end;
  errno = 0;
  long long x = strtoll(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || x < lo || x > hi)
    return npkit_fake_fail(ncclInvalidArgument, "ParamGet : %s=%s is not in range", h->env, text);
  *v = x;
  return ncclSuccess;
}

#define PARAM_GET(name, type, lo, hi)                                      \
  API ncclResult_t pnccl##name(ncclParamHandle_t h, type *out) {           \
    int64_t v;                                                             \
    ncclResult_t r = param_int(h, out, lo, hi, &v);                        \
    if (r == ncclSuccess) *out = (type)v;                                  \
    return r;                                                              \
  }                                                                        \
  NPKIT_FAKE_ALIAS(nccl##name)
PARAM_GET(ParamGetI8, int8_t, INT8_MIN, INT8_MAX)
PARAM_GET(ParamGetI16, int16_t, INT16_MIN, INT16_MAX)
PARAM_GET(ParamGetI32, int32_t, INT32_MIN, INT32_MAX)
PARAM_GET(ParamGetI64, int64_t, INT64_MIN, INT64_MAX)
PARAM_GET(ParamGetU8, uint8_t, 0, UINT8_MAX)
PARAM_GET(ParamGetU16, uint16_t, 0, UINT16_MAX)
PARAM_GET(ParamGetU32, uint32_t, 0, UINT32_MAX)
PARAM_GET(ParamGetU64, uint64_t, 0, INT64_MAX)

API ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char **out) {
  const char *text;
  ncclResult_t r = param_text(h, out, &text);
  if (r == ncclSuccess) *out = text;
  return r;
}
NPKIT_FAKE_ALIAS(ncclParamGetStr)

API ncclResult_t pncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len) {
  const char *text;
  ncclResult_t r = param_text(h, out, &text);
  if (r != ncclSuccess) return r;
  int n = (int)strlen(text) + 1;
  if (len == NULL || maxLen < n) return npkit_fake_fail(ncclInvalidArgument, "ParamGet : buffer too small");
  memcpy(out, text, (size_t)n);
  *len = n;
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclParamGet)

API ncclResult_t pncclParamGetParameter(const char *key, const char **value, int *valueLen) {
  char env[128];
  if (key == NULL || value == NULL || valueLen == NULL || strlen(key) > 100)
    return npkit_fake_fail(ncclInvalidArgument, "ParamGetParameter : invalid arguments");
  snprintf(env, sizeof env, "NCCL_%s", key);
  *value = getenv(env);
  if (*value == NULL) return npkit_fake_fail(ncclInvalidArgument, "ParamGetParameter : %s has no value", env);
  *valueLen = (int)strlen(*value);
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclParamGetParameter)

API ncclResult_t pncclParamGetAllParameterKeys(const char ***table, int *tableLen) {
  static const char *const none[1] = {NULL};
  if (table == NULL || tableLen == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "ParamGetAllParameterKeys : invalid arguments");
  *table = (const char **)none; /* the fake registers no parameter */
  *tableLen = 0;
  return ncclSuccess;
}
NPKIT_FAKE_ALIAS(ncclParamGetAllParameterKeys)

API void pncclParamDumpAll(void) {} /* NCCL prints them; the fake never prints */
NPKIT_FAKE_ALIAS(ncclParamDumpAll)

/* ---- 2.31.2: CFT ---- */

static ncclResult_t le_info(const void *window, const void *a, const void *b, const char *fn) {
  return refused(fn, window == NULL || a == NULL || b == NULL, "CFT");
}

API ncclResult_t pncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, uint32_t *leId, size_t *leOffset) {
  (void)offset;
  return le_info(window, leId, leOffset, "GetMultimemDeviceLeInfo");
}
NPKIT_FAKE_ALIAS(ncclGetMultimemDeviceLeInfo)

API ncclResult_t pncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft, npkit_fake_team cftTeam,
                                         uint32_t *leId, size_t *leOffset) {
  (void)offset, (void)peerCft, (void)cftTeam;
  return le_info(window, leId, leOffset, "GetCftDeviceLeInfo");
}
NPKIT_FAKE_ALIAS(ncclGetCftDeviceLeInfo)

API ncclResult_t pncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld, uint32_t *leId,
                                          size_t *leOffset) {
  (void)offset, (void)peerWorld;
  return le_info(window, leId, leOffset, "GetPeerDeviceLeInfo");
}
NPKIT_FAKE_ALIAS(ncclGetPeerDeviceLeInfo)

API npkit_fake_team pncclTeamCft(ncclComm_t comm, int mode) {
  (void)mode;
  return team(comm, 0);
}
NPKIT_FAKE_ALIAS(ncclTeamCft)
API npkit_fake_team pncclTeamCftMultimem(ncclComm_t comm) { return team(comm, 0); }
NPKIT_FAKE_ALIAS(ncclTeamCftMultimem)

/* nccl_device/cft_barrier.h at 2.31.2 (commit 889806836097) */
BARRIER_REQUIREMENT(CftBarrierCreateRequirement)

#endif /* FAKE_NCCL_NEW */
