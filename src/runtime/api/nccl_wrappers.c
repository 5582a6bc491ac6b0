/* The NCCL API wrappers, generated from src/format/nccl_api.def.  Each wrapper: find the real
 * function, take two clock readings around it, describe the call from its arguments, store one event.
 * Return codes, output arguments and buffers pass through untouched.  A call made by libnccl itself
 * (its return address in libnccl's code, nccl_resolve.h) passes through unrecorded. */
#include <nccl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api_call.h"
#include "api_source.h"
#include "cupti_source.h"
#include "diag.h"
#include "flight.h"
#include "hash.h"
#include "inflight_text.h"
#include "lifecycle.h"
#include "machine_source.h"
#include "nccl_compat.h"
#include "nccl_resolve.h"
#include "npkit_dump_source.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- describing a call (before it runs) ---------------------------------------------------- */

static inline void describe_comm(npkit_call *c, const void *comm) {
  c->comm = npkit_comm_find(comm);
  c->ev.u.api.comm = c->comm != NULL ? c->comm->local_id : 0;
}

static inline void describe_data(npkit_call *c, size_t count, int datatype, int op, int peer,
                                 const void *comm, const void *stream) {
  npkit_ev_api *a = &c->ev.u.api;
  describe_comm(c, comm);
  a->count = count;
  a->datatype = datatype;
  a->redop = op;
  a->peer = peer;
  a->stream = (uint64_t)(uintptr_t)stream;
  a->bytes = npkit_message_bytes(c->ev.func, count, datatype, c->comm ? c->comm->nranks : 0);
}

static inline void describe_group_start(npkit_call *c) {
  npkit_thread *t = c->t;
  if (t->group_depth++ == 0) {
    t->group_id = ((uint64_t)t->index << 40) | ++t->groups_opened;
    c->ev.u.api.flags = NPKIT_API_GROUP_OUTER;
  } else {
    c->ev.u.api.flags = 0;
  }
  c->ev.u.api.group = t->group_id;
}

static inline void describe_group_end(npkit_call *c) {
  c->ev.u.api.flags = c->t->group_depth == 1 ? NPKIT_API_GROUP_OUTER : 0;
  c->ev.u.api.group = c->t->group_id;
}

#define D_NONE ((void)0)
#define D_COMM(comm) describe_comm(&call, comm)
#define D_AUX(x) (call.ev.u.api.aux = (uint64_t)(x))
#define D_COMM_AUX(comm, x) (describe_comm(&call, comm), call.ev.u.api.aux = (uint64_t)(x))
#define D_COLL(count, dt, op, root, comm, stream) \
  describe_data(&call, count, (int)(dt), (int)(op), root, comm, stream)
#define D_P2P(count, dt, peer, comm, stream, dir) \
  (describe_data(&call, count, (int)(dt), -1, peer, comm, stream), call.ev.u.api.flags |= (dir))
#define D_GROUP_START describe_group_start(&call)
#define D_GROUP_END describe_group_end(&call)

/* An nccl*Config collective is recorded as its collective (sequence numbers, sizes and joins are
 * the collective's), flagged, with the configuration's user profiler tag. */
static inline void describe_config(npkit_call *c, const void *config) {
  const npkit_nccl_coll_config *cc = config;
  c->ev.u.api.flags |= NPKIT_API_CONFIG;
  if (cc != NULL && cc->magic == 0xcafebeefu && cc->size >= sizeof *cc) c->ev.u.api.user_tag = cc->user_profiler_tag;
}
#define D_COLL_CFG(base, count, dt, op, root, comm, stream, config)               \
  (call.ev.func = NPKIT_FN_##base, describe_data(&call, count, (int)(dt), (int)(op), root, comm, stream), \
   describe_config(&call, config))

/* ---- learning from the outcome (after it ran) ----------------------------------------------- */

static int accepted(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

static int query_int(unsigned fn, ncclComm_t comm, int fallback) {
  typedef ncclResult_t (*query_fn)(const ncclComm_t, int *);
  query_fn f = (query_fn)npkit_nccl_sym(fn);
  int v = fallback;
  if (f == NULL || f(comm, &v) != ncclSuccess) return fallback;
  return v;
}

/* ncclConfig_t grew over releases: read commName only if the caller's struct is new enough. */
static const char *config_name(const ncclConfig_t *config) {
  if (config == NULL || config->magic != 0xcafebeef ||
      config->size < offsetof(ncclConfig_t, commName) + sizeof(config->commName))
    return NULL;
  return config->commName;
}

static uint32_t learn_comm(npkit_call *c, ncclComm_t comm, uint64_t comm_id, int rank, int nranks,
                           uint32_t parent, const char *name) {
  npkit_comm_info info = {comm, comm_id, rank, nranks, query_int(NPKIT_FN_CommCuDevice, comm, -1),
                          parent, c->ev.func, name};
  npkit_comm *nc = npkit_comm_register(&info);
  npkit_identity_from_comm(rank, nranks, info.device);
  if (npkit_machine_wants_comm()) npkit_machine_comm_created(info.device, npkit_nccl_version());
  npkit_cupti_comm_created();
  npkit_dump_source_comm_created(rank);
  return nc != NULL ? nc->local_id : 0;
}

static void after_init_rank(npkit_call *c, ncclResult_t r, ncclComm_t *commp, int nranks,
                            const ncclUniqueId *ids, int nids, int rank, const ncclConfig_t *config) {
  if (!accepted(r) || commp == NULL || *commp == NULL || ids == NULL) return;
  /* Every rank holds the same unique id(s): their hash names the communicator on all ranks. */
  uint64_t h = npkit_hash64(NPKIT_HASH_SEED, "init", 4);
  for (int i = 0; i < nids && i < 4096; i++) h = npkit_hash64(h, ids[i].internal, sizeof ids[i].internal);
  c->ev.u.api.aux = learn_comm(c, *commp, h, rank, nranks, 0, config_name(config));
}

static void after_init_all(npkit_call *c, ncclResult_t r, ncclComm_t *comms, int ndev) {
  static _Atomic uint32_t ordinal;
  if (!accepted(r) || comms == NULL || ndev <= 0) return;
  /* All ranks live in this process: an id unique to the process and call is enough. */
  uint32_t n = atomic_fetch_add(&ordinal, 1);
  uint64_t pid = (uint64_t)getpid() ^ npkit_now_ns();
  uint64_t h = npkit_hash64(NPKIT_HASH_SEED, "all", 3);
  h = npkit_hash64(h, &pid, sizeof pid);
  h = npkit_hash64(h, &n, sizeof n);
  for (int i = 0; i < ndev; i++) {
    if (comms[i] == NULL) continue;
    uint32_t id = learn_comm(c, comms[i], h, query_int(NPKIT_FN_CommUserRank, comms[i], i), ndev, 0, NULL);
    if (i == 0) c->ev.u.api.aux = id;
  }
}

/* A split or shrink is collective over the parent: every member consumes the same ordinal, and the
 * members of one child share (parent id, kind, ordinal, color), which names the child everywhere. */
static void after_derive(npkit_call *c, ncclResult_t r, ncclComm_t parent, const char *kind,
                         const void *extra, size_t extra_len, ncclComm_t *newcomm,
                         const ncclConfig_t *config) {
  npkit_comm *p = c->comm;
  if (!accepted(r) || p == NULL) return;
  uint32_t ordinal = atomic_fetch_add(&p->splits, 1);
  if (newcomm == NULL || *newcomm == NULL) return;
  uint64_t h = npkit_hash64(NPKIT_HASH_SEED, kind, strlen(kind));
  h = npkit_hash64(h, &p->comm_id, sizeof p->comm_id);
  h = npkit_hash64(h, &ordinal, sizeof ordinal);
  if (extra != NULL) h = npkit_hash64(h, extra, extra_len);
  int rank = query_int(NPKIT_FN_CommUserRank, *newcomm, -1);
  int nranks = query_int(NPKIT_FN_CommCount, *newcomm, 0);
  c->ev.u.api.aux = learn_comm(c, *newcomm, h, rank, nranks, p->local_id, config_name(config));
  (void)parent;
}

static void after_gone(npkit_call *c) {
  if (c->ev.func == NPKIT_FN_CommAbort) {
    char reason[48];
    snprintf(reason, sizeof reason, "CommAbort of comm %08llx", c->comm != NULL ? NPKIT_COMM_SHORT(c->comm->comm_id) : 0ull);
    npkit_flight_request(NPKIT_FLIGHT_ABORT, 0, c->ev.u.api.result, reason, 0);
  }
  int ended = c->comm != NULL && atomic_exchange(&c->comm->alive, 0);
  if (ended) npkit_cupti_comm_destroyed();
  npkit_dump_source_comm_gone(c->comm != NULL ? c->comm->local_id : 0, c->comm != NULL ? c->comm->rank : -1,
                              ended, c->ev.func == NPKIT_FN_CommAbort, c->ev.u.api.result, c->t->index);
}

#define A_NONE ((void)0)
#define A_INIT_RANK(commp, nranks, ids, nids, rank, config) \
  after_init_rank(&call, res, commp, nranks, ids, nids, rank, config)
#define A_INIT_ALL(commp, ndev) after_init_all(&call, res, commp, ndev)
#define A_SPLIT(parent, color, newcommp, config) \
  do { int color_ = (color); after_derive(&call, res, parent, "split", &color_, sizeof color_, newcommp, config); } while (0)
#define A_SHRINK(parent, excl, nexcl, newcommp, config)                                         \
  after_derive(&call, res, parent, "shrink", (nexcl) > 0 && (nexcl) < 65536 ? (const void *)(excl) : NULL, \
               (nexcl) > 0 && (nexcl) < 65536 ? (size_t)(nexcl) * sizeof(int) : 0, newcommp, config)
#define A_COMM_GONE(comm) after_gone(&call)
#define A_GROUP_END                                                              \
  do {                                                                           \
    if (call.t->group_depth > 0 && --call.t->group_depth == 0) call.t->group_id = 0; \
  } while (0)
#define A_REDOP(op) ((void)0)
/* The error a communicator reports is a trigger of the flight recorder as a failed call is. */
#define A_ASYNC_ERROR(errp)                                                                          \
  do {                                                                                             \
    if (res == ncclSuccess && (errp) != NULL && npkit_call_job_error((int)*(errp)))                \
      npkit_flight_request(NPKIT_FLIGHT_ERROR, 0, (int)*(errp), "CommGetAsyncError", 0);           \
  } while (0)
#define A_AUX(x) (call.ev.u.api.aux = (uint64_t)(x))
#define A_INT(value) (call.ev.u.api.aux = (uint64_t)(int64_t)(value))
#define A_GROW(newcommp, nranks, ids, rank, config) \
  after_init_rank(&call, res, newcommp, nranks, ids, 1, rank, config)
#define A_VERSION(version) \
  (call.ev.u.api.aux = (res == ncclSuccess && (version) != NULL) ? (uint64_t)*(version) : 0)

/* ---- a function the loaded NCCL lacks (api_source.h) --------------------------------------- */

static ncclResult_t missing_R(unsigned fn) {
  npkit_api_missing(fn);
  return ncclInvalidUsage;
}

static const char *missing_S(unsigned fn) {
  npkit_api_missing(fn);
  return "npkit: this function is not in the loaded NCCL";
}

static int missing_I(unsigned fn) {
  npkit_api_missing(fn);
  return -1;
}

static npkit_nccl_team missing_T(unsigned fn) {
  npkit_api_missing(fn);
  return (npkit_nccl_team){0, 0, 0};
}

#define RESULT_CODE_R(res) ((int32_t)(res))
#define RESULT_CODE_S(res) 0
#define RESULT_CODE_I(res) 0
#define RESULT_CODE_T(res) 0

/* ---- the wrappers ---------------------------------------------------------------------------- */

#define RET_R ncclResult_t
#define RET_S const char *
#define RET_I int
#define RET_T npkit_nccl_team

#define NPKIT_NCCL_API(name, cls, since, root, ret, params, args, describe, after)        \
  typedef RET_##ret(*real_##name##_fn) params;                                       \
  EXPORT RET_##ret nccl##name params {                                               \
    npkit_call call;                                                                 \
    if (npkit_called_by_nccl(__builtin_return_address(0)) ||                         \
        !npkit_call_begin(&call, NPKIT_FN_##name)) {                                 \
      real_##name##_fn pass = (real_##name##_fn)npkit_nccl_sym(NPKIT_FN_##name);     \
      return pass != NULL ? pass args : missing_##ret(NPKIT_FN_##name);             \
    }                                                                                \
    real_##name##_fn real = (real_##name##_fn)npkit_nccl_sym(NPKIT_FN_##name);       \
    describe;                                                                        \
    npkit_cupti_push(&call.ev);                                                        \
    call.ev.start_ns = npkit_now_ns();                                               \
    npkit_call_started(&call);                                                       \
    RET_##ret res = real != NULL ? real args : missing_##ret(NPKIT_FN_##name);       \
    call.ev.end_ns = npkit_now_ns();                                                 \
    npkit_cupti_pop(&call.ev);                                                         \
    call.ev.u.api.result = RESULT_CODE_##ret(res);                                   \
    if (real == NULL) call.ev.u.api.flags |= NPKIT_API_MISSING;                      \
    if (RESULT_CODE_##ret(res) == ncclInProgress) call.ev.u.api.flags |= NPKIT_API_ASYNC; \
    after;                                                                           \
    npkit_call_end(&call);                                                           \
    return res;                                                                      \
  }

#define NPKIT_NCCL_API_VOID(name, cls, since, root, params, args)                      \
  typedef void(*real_##name##_fn) params;                                        \
  EXPORT void nccl##name params {                                                \
    npkit_call call;                                                             \
    real_##name##_fn real = (real_##name##_fn)npkit_nccl_sym(NPKIT_FN_##name);   \
    if (npkit_called_by_nccl(__builtin_return_address(0)) ||                     \
        !npkit_call_begin(&call, NPKIT_FN_##name)) {                             \
      if (real != NULL) real args; else npkit_api_missing(NPKIT_FN_##name);           \
      return;                                                                    \
    }                                                                            \
    call.ev.start_ns = npkit_now_ns();                                           \
    npkit_call_started(&call);                                                   \
    if (real != NULL) real args; else npkit_api_missing(NPKIT_FN_##name);             \
    call.ev.end_ns = npkit_now_ns();                                             \
    if (real == NULL) call.ev.u.api.flags |= NPKIT_API_MISSING;                  \
    npkit_call_end(&call);                                                       \
  }

#include "nccl_api.def"
