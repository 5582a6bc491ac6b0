/* nccl_everything: one process (no MPI, communicators of one rank) that calls every public
 * function of NCCL up to 2.31 at least once, error paths included, and journals each call with the
 * code it returned.  The functions of nccl.h are called directly; the device API's host functions
 * and those newer than nccl.h are looked up at run time (test_newer_api.h) and called when some
 * library of the process has them (the preloaded wrappers always do).  Calls that need the output
 * of a call that failed (an older NCCL lacks some functions) are skipped, so the program runs to
 * the end against any NCCL.
 *
 * usage: nccl_everything [--journal FILE] [--check]
 * Prints nothing on stdout.  Exit status: 0, or 1 when --check found wrong data or the journal
 * could not be written, 2 on a usage error. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_colls.h"
#include "test_journal.h"
#include "test_newer_api.h"

typedef struct everything {
  npkit_test_ctx ctx;
  npkit_test_comm c;    /* the main communicator */
} everything;

static ncclResult_t note(everything *e, const char *fn, const npkit_test_comm *comm,
                         ncclResult_t res) {
  npkit_test_call call = npkit_test_call_on(fn, comm, res);
  npkit_test_journal_write(e->ctx.journal, &call);
  return res;
}

static ncclResult_t note_size(everything *e, const char *fn, const npkit_test_comm *comm,
                              size_t size, ncclResult_t res) {
  npkit_test_call call = npkit_test_call_on(fn, comm, res);
  call.size = (long long)size;
  npkit_test_journal_write(e->ctx.journal, &call);
  return res;
}

static void note_void(everything *e, const char *fn, const npkit_test_comm *comm) {
  npkit_test_call call = npkit_test_call_on(fn, comm, NPKIT_TEST_NO_RESULT);
  npkit_test_journal_write(e->ctx.journal, &call);
}

/* The function `name` as type T, NULL when the process has none: the caller skips the call. */
#define NEWER(T, name) ((T)npkit_test_sym(name))

static npkit_test_comm one_rank(const char *label) {
  return (npkit_test_comm){.comm = NULL, .label = label, .rank = 0, .nranks = 1};
}

static void queries(everything *e) {
  const npkit_test_comm *c = &e->c;
  int version = 0, count = 0, device = 0, rank = 0;
  ncclResult_t async = ncclSuccess;
  note(e, "ncclGetVersion", NULL, ncclGetVersion(&version));
  note(e, "ncclCommCount", c, ncclCommCount(c->comm, &count));
  note(e, "ncclCommCuDevice", c, ncclCommCuDevice(c->comm, &device));
  note(e, "ncclCommUserRank", c, ncclCommUserRank(c->comm, &rank));
  note(e, "ncclCommGetAsyncError", c, ncclCommGetAsyncError(c->comm, &async));
}

static void collectives(everything *e) {
  npkit_test_ctx *ctx = &e->ctx;
  const npkit_test_comm *c = &e->c;
  npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, c, 31, ncclFloat32, ncclSum, -1, 1);
  npkit_test_coll(ctx, NPKIT_TEST_BROADCAST, c, 32, ncclInt32, ncclSum, 0, 2);
  npkit_test_coll(ctx, NPKIT_TEST_BCAST, c, 33, ncclUint8, ncclSum, 0, 3);
  npkit_test_coll(ctx, NPKIT_TEST_REDUCE, c, 34, ncclFloat64, ncclMax, 0, 4);
  npkit_test_coll(ctx, NPKIT_TEST_ALLGATHER, c, 35, ncclBfloat16, ncclSum, -1, 5);
  npkit_test_coll(ctx, NPKIT_TEST_REDUCESCATTER, c, 36, ncclFloat16, ncclSum, -1, 6);
  npkit_test_coll(ctx, NPKIT_TEST_ALLTOALL, c, 37, ncclInt64, ncclSum, -1, 7);
  npkit_test_coll(ctx, NPKIT_TEST_GATHER, c, 38, ncclUint32, ncclSum, 0, 8);
  npkit_test_coll(ctx, NPKIT_TEST_SCATTER, c, 39, ncclUint64, ncclSum, 0, 9);
  npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, c, 40, ncclInt8, ncclMin, -1, 10);
}

static void groups(everything *e) {
  npkit_test_ctx *ctx = &e->ctx;
  const npkit_test_comm *c = &e->c;
  /* a rank exchanging with itself */
  npkit_test_group_start(ctx);
  npkit_test_coll(ctx, NPKIT_TEST_SEND, c, 41, ncclFloat32, ncclSum, 0, 11);
  npkit_test_coll(ctx, NPKIT_TEST_RECV, c, 41, ncclFloat32, ncclSum, 0, 11);
  npkit_test_group_end(ctx);
  /* nested groups: only the outermost pair delimits the launch */
  npkit_test_group_start(ctx);
  npkit_test_group_start(ctx);
  npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, c, 42, ncclFloat32, ncclProd, -1, 12);
  npkit_test_group_end(ctx);
  npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, c, 43, ncclFloat32, ncclMax, -1, 13);
  npkit_test_group_end(ctx);

  /* A simulated group launches nothing; its buffers are static so that an NCCL that runs the
   * operation anyway cannot write into freed memory. */
  static float sim_send[64], sim_recv[64];
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  note(e, "ncclGroupStart", NULL, ncclGroupStart());
  npkit_test_call ar = npkit_test_call_on("ncclAllReduce", c, ncclSuccess);
  ar.result = ncclAllReduce(sim_send, sim_recv, 64, ncclFloat32, ncclSum, c->comm, 0);
  ar.count = 64;
  ar.datatype = ncclFloat32;
  ar.op = ncclSum;
  npkit_test_journal_write(ctx->journal, &ar);
  if (note(e, "ncclGroupSimulateEnd", NULL, ncclGroupSimulateEnd(&sim)) != ncclSuccess)
    note(e, "ncclGroupEnd", NULL, ncclGroupEnd()); /* the group is still open: close it */
}

/* ---- the device API's host side (2.28.3+) and the functions newer than nccl.h ---- */

typedef npkit_test_team (*team_fn)(ncclComm_t);
typedef int (*team_rank_fn)(ncclComm_t, npkit_test_team, int);
typedef int (*calc_slots_fn)(int, int);
typedef ncclResult_t (*req_ints_fn)(int, int, void *, void *);
typedef ncclResult_t (*req_team_fn)(npkit_test_team, int, void *, void *);
typedef ncclResult_t (*req_comm_team_fn)(ncclComm_t, npkit_test_team, int, void *, void *);
typedef ncclResult_t (*req_inbox_fn)(npkit_test_team, int, int, void *, void *);
typedef ncclResult_t (*devcomm_create_fn)(ncclComm_t, const void *, void *);
typedef ncclResult_t (*devcomm_destroy_fn)(ncclComm_t, const void *);
typedef ncclResult_t (*comm_ptr_fn)(ncclComm_t, void *);
typedef ncclResult_t (*comm_int_fn)(ncclComm_t, int);
typedef ncclResult_t (*comm_fn)(ncclComm_t);
typedef ncclResult_t (*grow_fn)(ncclComm_t, int, const ncclUniqueId *, int, ncclComm_t *, ncclConfig_t *);
typedef ncclResult_t (*mem_stats_fn)(ncclComm_t, int, uint64_t *);
typedef npkit_test_team (*team_cft_fn)(ncclComm_t, int);

static void note_team(everything *e, const char *fn, const npkit_test_comm *c, team_fn f,
                      npkit_test_team *out) {
  if (f == NULL) return;
  *out = f(c->comm);
  note_void(e, fn, c);
}

static void device_api(everything *e) {
  const npkit_test_comm *c = &e->c;
  npkit_test_team world = {0, 0, 0}, t = {0, 0, 0};
  char handle[64], req[256], devcomm[1024];
  memset(req, 0, sizeof req);
  note_team(e, "ncclTeamWorld", c, NEWER(team_fn, "ncclTeamWorld"), &world);
  note_team(e, "ncclTeamLsa", c, NEWER(team_fn, "ncclTeamLsa"), &t);
  note_team(e, "ncclTeamRail", c, NEWER(team_fn, "ncclTeamRail"), &t);
  team_rank_fn to_world = NEWER(team_rank_fn, "ncclTeamRankToWorld");
  team_rank_fn to_lsa = NEWER(team_rank_fn, "ncclTeamRankToLsa");
  if (to_world) {
    int r = to_world(c->comm, world, 0);
    note_void(e, "ncclTeamRankToWorld", c);
    if (e->ctx.check && world.nRanks == 1 && r != 0) {
      fprintf(stderr, "nccl_everything: ncclTeamRankToWorld(world, 0) = %d\n", r);
      e->ctx.mismatches++;
    }
  }
  if (to_lsa) {
    (void)to_lsa(c->comm, world, 0);
    note_void(e, "ncclTeamRankToLsa", c);
  }
  calc_slots_fn slots = NEWER(calc_slots_fn, "ncclLLA2ACalcSlots");
  int nslots = 8;
  if (slots) {
    nslots = slots(16, 8);
    note_void(e, "ncclLLA2ACalcSlots", NULL);
  }
  req_ints_fn lla2a = NEWER(req_ints_fn, "ncclLLA2ACreateRequirement");
  if (lla2a) note(e, "ncclLLA2ACreateRequirement", NULL, lla2a(1, nslots, handle, req));
  req_team_fn lsa_barrier = NEWER(req_team_fn, "ncclLsaBarrierCreateRequirement");
  if (lsa_barrier) note(e, "ncclLsaBarrierCreateRequirement", NULL, lsa_barrier(world, 1, handle, req));
  req_comm_team_fn gin_barrier = NEWER(req_comm_team_fn, "ncclGinBarrierCreateRequirement");
  if (gin_barrier)
    note(e, "ncclGinBarrierCreateRequirement", c, gin_barrier(c->comm, world, 1, handle, req));
  devcomm_create_fn create = NEWER(devcomm_create_fn, "ncclDevCommCreate");
  devcomm_destroy_fn destroy = NEWER(devcomm_destroy_fn, "ncclDevCommDestroy");
  if (create) note(e, "ncclDevCommCreate", c, create(c->comm, req, devcomm));
  if (destroy) note(e, "ncclDevCommDestroy", c, destroy(c->comm, devcomm));
  /* 2.29.2 */
  comm_ptr_fn props = NEWER(comm_ptr_fn, "ncclCommQueryProperties");
  if (props) note(e, "ncclCommQueryProperties", c, props(c->comm, devcomm));
  /* 2.30.3 */
  req_ints_fn outbox = NEWER(req_ints_fn, "ncclGinOutboxCreateRequirement");
  if (outbox) note(e, "ncclGinOutboxCreateRequirement", NULL, outbox(1, 12, handle, req));
  req_inbox_fn inbox = NEWER(req_inbox_fn, "ncclGinInboxA2ACreateRequirement");
  if (inbox) note(e, "ncclGinInboxA2ACreateRequirement", NULL, inbox(world, 1, 12, handle, req));
  /* 2.31.2 */
  team_cft_fn cft = NEWER(team_cft_fn, "ncclTeamCft");
  if (cft) {
    t = cft(c->comm, 0 /* NCCL_CFT_TEAM_FLAT */);
    note_void(e, "ncclTeamCft", c);
  }
  note_team(e, "ncclTeamCftMultimem", c, NEWER(team_fn, "ncclTeamCftMultimem"), &t);
  req_team_fn cft_barrier = NEWER(req_team_fn, "ncclCftBarrierCreateRequirement");
  if (cft_barrier) note(e, "ncclCftBarrierCreateRequirement", NULL, cft_barrier(world, 1, handle, req));
}

typedef ncclResult_t (*win_user_ptr_fn)(ncclComm_t, ncclWindow_t, void **);
typedef ncclResult_t (*win_ptr_fn)(ncclWindow_t, size_t, void **);
typedef ncclResult_t (*win_int_ptr_fn)(ncclWindow_t, size_t, int, void **);
typedef struct {
  void *mcBasePtr;
} multimem_handle;
typedef ncclResult_t (*win_mm_ptr_fn)(ncclWindow_t, size_t, multimem_handle, void **);
typedef ncclResult_t (*le_fn)(ncclWindow_t, size_t, uint32_t *, size_t *);
typedef ncclResult_t (*le_int_fn)(ncclWindow_t, size_t, int, uint32_t *, size_t *);
typedef ncclResult_t (*le_cft_fn)(ncclWindow_t, size_t, int, npkit_test_team, uint32_t *, size_t *);
typedef ncclResult_t (*put_signal_fn)(const void *, size_t, ncclDataType_t, int, ncclWindow_t, size_t,
                                      int, int, unsigned, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*signal_fn)(int, int, int, unsigned, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*wait_signal_fn)(int, npkit_test_wait_signal_desc *, ncclComm_t, cudaStream_t);

/* Calls on a registered window (2.29.2 on; the LE queries of 2.31.2). */
static void window_calls(everything *e, ncclWindow_t win, const void *buf) {
  const npkit_test_comm *c = &e->c;
  void *ptr = NULL;
  uint32_t le = 0;
  size_t le_off = 0;
  win_user_ptr_fn user = NEWER(win_user_ptr_fn, "ncclWinGetUserPtr");
  if (user && note(e, "ncclWinGetUserPtr", c, user(c->comm, win, &ptr)) == ncclSuccess &&
      e->ctx.check && ptr != buf) {
    fprintf(stderr, "nccl_everything: ncclWinGetUserPtr gave %p, registered %p\n", ptr, buf);
    e->ctx.mismatches++;
  }
  win_ptr_fn lsa_mm = NEWER(win_ptr_fn, "ncclGetLsaMultimemDevicePointer");
  if (lsa_mm) note(e, "ncclGetLsaMultimemDevicePointer", NULL, lsa_mm(win, 0, &ptr));
  win_mm_ptr_fn mm = NEWER(win_mm_ptr_fn, "ncclGetMultimemDevicePointer");
  if (mm) note(e, "ncclGetMultimemDevicePointer", NULL, mm(win, 0, (multimem_handle){NULL}, &ptr));
  win_int_ptr_fn lsa = NEWER(win_int_ptr_fn, "ncclGetLsaDevicePointer");
  if (lsa) note(e, "ncclGetLsaDevicePointer", NULL, lsa(win, 0, 0, &ptr));
  win_int_ptr_fn peer = NEWER(win_int_ptr_fn, "ncclGetPeerDevicePointer");
  if (peer) note(e, "ncclGetPeerDevicePointer", NULL, peer(win, 0, 0, &ptr));
  le_fn mm_le = NEWER(le_fn, "ncclGetMultimemDeviceLeInfo");
  if (mm_le) note(e, "ncclGetMultimemDeviceLeInfo", NULL, mm_le(win, 0, &le, &le_off));
  le_cft_fn cft_le = NEWER(le_cft_fn, "ncclGetCftDeviceLeInfo");
  if (cft_le)
    note(e, "ncclGetCftDeviceLeInfo", NULL, cft_le(win, 0, 0, (npkit_test_team){1, 0, 1}, &le, &le_off));
  le_int_fn peer_le = NEWER(le_int_fn, "ncclGetPeerDeviceLeInfo");
  if (peer_le) note(e, "ncclGetPeerDeviceLeInfo", NULL, peer_le(win, 0, 0, &le, &le_off));
  /* one-sided operations with itself: journaled like Send (peer, count, datatype) */
  put_signal_fn put = NEWER(put_signal_fn, "ncclPutSignal");
  if (put) {
    npkit_test_call call = npkit_test_call_on("ncclPutSignal", c, ncclSuccess);
    call.result = put(buf, 16, ncclFloat32, 0, win, 0, 0, 0, 0, c->comm, 0);
    call.count = 16;
    call.datatype = ncclFloat32;
    call.peer = 0;
    npkit_test_journal_write(e->ctx.journal, &call);
  }
  signal_fn sig = NEWER(signal_fn, "ncclSignal");
  if (sig) {
    npkit_test_call call = npkit_test_call_on("ncclSignal", c, ncclSuccess);
    call.result = sig(0, 0, 0, 0, c->comm, 0);
    call.count = 0;
    call.peer = 0;
    npkit_test_journal_write(e->ctx.journal, &call);
  }
  wait_signal_fn wait = NEWER(wait_signal_fn, "ncclWaitSignal");
  if (wait) {
    npkit_test_wait_signal_desc d = {1, 0, 0, 0};
    npkit_test_call call = npkit_test_call_on("ncclWaitSignal", c, ncclSuccess);
    call.result = wait(1, &d, c->comm, 0);
    call.count = 0;
    npkit_test_journal_write(e->ctx.journal, &call);
  }
}

typedef struct ncclParamHandle *param_handle;
typedef ncclResult_t (*param_bind_fn)(param_handle *, const char *);
typedef ncclResult_t (*param_get_fn)(param_handle, void *);
typedef ncclResult_t (*param_get_raw_fn)(param_handle, void *, int, int *);
typedef ncclResult_t (*param_get_parameter_fn)(const char *, const char **, int *);
typedef ncclResult_t (*param_all_keys_fn)(const char ***, int *);
typedef void (*param_dump_fn)(void);

/* The communicator life cycle of 2.29 (ids, growing, suspending) and the parameter API (2.30.4). */
static void newer_comm_and_params(everything *e) {
  const npkit_test_comm *c = &e->c;
  ncclUniqueId id;
  ncclComm_t grown = NULL;
  uint64_t bytes = 1;
  comm_ptr_fn get_id = NEWER(comm_ptr_fn, "ncclCommGetUniqueId");
  if (get_id && note(e, "ncclCommGetUniqueId", c, get_id(c->comm, &id)) == ncclSuccess) {
    grow_fn grow = NEWER(grow_fn, "ncclCommGrow");
    if (grow && note(e, "ncclCommGrow", c, grow(c->comm, 2, &id, 0, &grown, NULL)) == ncclSuccess)
      note(e, "ncclCommDestroy", NULL, ncclCommDestroy(grown));
  }
  comm_int_fn suspend = NEWER(comm_int_fn, "ncclCommSuspend");
  comm_fn resume = NEWER(comm_fn, "ncclCommResume");
  mem_stats_fn stats = NEWER(mem_stats_fn, "ncclCommMemStats");
  if (suspend && note(e, "ncclCommSuspend", c, suspend(c->comm, 1 /* NCCL_SUSPEND_MEM */)) == ncclSuccess &&
      resume)
    note(e, "ncclCommResume", c, resume(c->comm));
  if (stats) note(e, "ncclCommMemStats", c, stats(c->comm, 3 /* ncclStatGpuMemTotal */, &bytes));

  static const char *const getters[] = {"ncclParamGetI8", "ncclParamGetI16", "ncclParamGetI32",
                                        "ncclParamGetI64", "ncclParamGetU8", "ncclParamGetU16",
                                        "ncclParamGetU32", "ncclParamGetU64", "ncclParamGetStr"};
  param_handle h = NULL;
  param_bind_fn bind = NEWER(param_bind_fn, "ncclParamBind");
  if (bind && note(e, "ncclParamBind", NULL, bind(&h, "NTHREADS")) == ncclSuccess) {
    for (size_t i = 0; i < sizeof getters / sizeof getters[0]; i++) {
      param_get_fn get = NEWER(param_get_fn, getters[i]);
      uint64_t value = 0;
      if (get) note(e, getters[i], NULL, get(h, &value));
    }
    param_get_raw_fn raw = NEWER(param_get_raw_fn, "ncclParamGet");
    char text[64];
    int len = 0;
    if (raw) note(e, "ncclParamGet", NULL, raw(h, text, (int)sizeof text, &len));
  }
  const char *value = NULL;
  int value_len = 0;
  param_get_parameter_fn get_parameter = NEWER(param_get_parameter_fn, "ncclParamGetParameter");
  if (get_parameter)
    note(e, "ncclParamGetParameter", NULL, get_parameter("NTHREADS", &value, &value_len));
  const char **keys = NULL;
  int nkeys = 0;
  param_all_keys_fn all_keys = NEWER(param_all_keys_fn, "ncclParamGetAllParameterKeys");
  if (all_keys) note(e, "ncclParamGetAllParameterKeys", NULL, all_keys(&keys, &nkeys));
  param_dump_fn dump = NEWER(param_dump_fn, "ncclParamDumpAll");
  if (dump) {
    dump();
    note_void(e, "ncclParamDumpAll", NULL);
  }
}

/* The nccl*Config collectives of 2.31.2, each with its own user profiler tag. */
static void config_collectives(everything *e) {
  npkit_test_ctx *ctx = &e->ctx;
  const npkit_test_comm *c = &e->c;
  static const struct {
    npkit_test_fn fn;
    ncclDataType_t dt;
    int root;
  } calls[] = {
    {NPKIT_TEST_ALLREDUCE, ncclFloat32, -1}, {NPKIT_TEST_BROADCAST, ncclInt32, 0},
    {NPKIT_TEST_REDUCE, ncclFloat64, 0},     {NPKIT_TEST_ALLGATHER, ncclInt8, -1},
    {NPKIT_TEST_REDUCESCATTER, ncclFloat32, -1}, {NPKIT_TEST_ALLTOALL, ncclInt64, -1},
    {NPKIT_TEST_GATHER, ncclUint32, 0},      {NPKIT_TEST_SCATTER, ncclUint8, 0},
  };
  for (unsigned i = 0; i < sizeof calls / sizeof calls[0]; i++)
    (void)npkit_test_coll_config(ctx, calls[i].fn, c, 48 + i, calls[i].dt, ncclSum, calls[i].root,
                                 20 + i, 0x7a6000000000ull + i);
  /* untagged (tag 0, NCCL's default) inside a group */
  npkit_test_group_start(ctx);
  (void)npkit_test_coll_config(ctx, NPKIT_TEST_ALLREDUCE, c, 60, ncclFloat32, ncclMax, -1, 30, 0);
  npkit_test_group_end(ctx);
}

static void memory(everything *e) {
  const npkit_test_comm *c = &e->c;
  const size_t size = 1 << 16;
  void *p = NULL, *handle = NULL;
  ncclWindow_t win = NULL;
  if (note_size(e, "ncclMemAlloc", NULL, size, ncclMemAlloc(&p, size)) != ncclSuccess) return;
  if (note_size(e, "ncclCommRegister", c, size, ncclCommRegister(c->comm, p, size, &handle)) ==
      ncclSuccess)
    note(e, "ncclCommDeregister", c, ncclCommDeregister(c->comm, handle));
  if (note_size(e, "ncclCommWindowRegister", c, size,
                ncclCommWindowRegister(c->comm, p, size, &win, NCCL_WIN_DEFAULT)) == ncclSuccess) {
    window_calls(e, win, p);
    note(e, "ncclCommWindowDeregister", c, ncclCommWindowDeregister(c->comm, win));
  }
  note(e, "ncclMemFree", NULL, ncclMemFree(p));
}

static void premulsum(everything *e) {
  const npkit_test_comm *c = &e->c;
  float scalar = 0.5f;
  ncclRedOp_t op;
  if (note(e, "ncclRedOpCreatePreMulSum", c,
           ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate,
                                    c->comm)) != ncclSuccess)
    return;
  e->ctx.premul_scalar = scalar;
  npkit_test_coll(&e->ctx, NPKIT_TEST_ALLREDUCE, c, 44, ncclFloat32, op, -1, 14);
  note(e, "ncclRedOpDestroy", c, ncclRedOpDestroy(op, c->comm));
}

static void errors(everything *e) {
  npkit_test_comm null_comm = {.comm = NULL, .label = "null", .rank = 0, .nranks = 0};
  int count = 0;
  npkit_test_coll(&e->ctx, NPKIT_TEST_ALLREDUCE, &null_comm, 8, ncclFloat32, ncclSum, -1, 15);
  note(e, "ncclCommCount", &null_comm, ncclCommCount(NULL, &count));
  (void)ncclGetLastError(e->c.comm);
  note_void(e, "ncclGetLastError", &e->c);
  (void)ncclGetErrorString(ncclInvalidArgument);
  note_void(e, "ncclGetErrorString", NULL);
  /* deprecated in nccl.h, yet still exported: applications may call it */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
  note_void(e, "ncclResetDebugInit", NULL);
}

/* Communicators derived from c (split, shrink) and the other ways to create one. */
static void lifecycle(everything *e) {
  npkit_test_ctx *ctx = &e->ctx;
  npkit_test_comm split = one_rank("split"), shrunk = one_rank("shrunk");
  npkit_test_comm cfg = one_rank("config"), scal = one_rank("scalable");
  npkit_test_comm all[2] = {{.label = "all0", .rank = 0, .nranks = 2},
                            {.label = "all1", .rank = 1, .nranks = 2}};
  ncclComm_t all_comms[2] = {NULL, NULL};
  ncclUniqueId id2, id3;

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "everything-config";
  if (note(e, "ncclGetUniqueId", NULL, ncclGetUniqueId(&id2)) == ncclSuccess)
    note(e, "ncclCommInitRankConfig", NULL, ncclCommInitRankConfig(&cfg.comm, 1, id2, 0, &config));
  if (note(e, "ncclGetUniqueId", NULL, ncclGetUniqueId(&id3)) == ncclSuccess)
    note(e, "ncclCommInitRankScalable", NULL,
         ncclCommInitRankScalable(&scal.comm, 1, 0, 1, &id3, NULL));
  if (note(e, "ncclCommInitAll", NULL, ncclCommInitAll(all_comms, 2, NULL)) == ncclSuccess) {
    all[0].comm = all_comms[0];
    all[1].comm = all_comms[1];
    npkit_test_group_start(ctx);
    npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, &all[0], 45, ncclFloat32, ncclSum, -1, 16);
    npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, &all[1], 45, ncclFloat32, ncclSum, -1, 16);
    npkit_test_group_end(ctx);
  }
  if (note(e, "ncclCommSplit", &e->c, ncclCommSplit(e->c.comm, 0, 0, &split.comm, NULL)) ==
      ncclSuccess)
    npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, &split, 46, ncclFloat32, ncclSum, -1, 17);
  if (note(e, "ncclCommShrink", &e->c,
           ncclCommShrink(e->c.comm, NULL, 0, &shrunk.comm, NULL, NCCL_SHRINK_DEFAULT)) ==
      ncclSuccess) {
    npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, &shrunk, 47, ncclFloat32, ncclSum, -1, 18);
    note(e, "ncclCommDestroy", &shrunk, ncclCommDestroy(shrunk.comm));
  }
  if (split.comm) {
    note(e, "ncclCommRevoke", &split, ncclCommRevoke(split.comm, NCCL_REVOKE_DEFAULT));
    note(e, "ncclCommDestroy", &split, ncclCommDestroy(split.comm));
  }
  if (cfg.comm) note(e, "ncclCommAbort", &cfg, ncclCommAbort(cfg.comm));
  if (scal.comm) note(e, "ncclCommDestroy", &scal, ncclCommDestroy(scal.comm));
  for (int d = 0; d < 2; d++)
    if (all[d].comm) note(e, "ncclCommDestroy", &all[d], ncclCommDestroy(all[d].comm));
}

int main(int argc, char **argv) {
  everything e;
  npkit_test_ctx_init(&e.ctx);
  e.c = one_rank("c");
  const char *journal = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--journal") && i + 1 < argc) {
      journal = argv[++i];
    } else if (!strcmp(argv[i], "--check")) {
      e.ctx.check = 1;
    } else {
      fprintf(stderr, "usage: nccl_everything [--journal FILE] [--check]\n");
      return 2;
    }
  }
  if (journal && !(e.ctx.journal = npkit_test_journal_open(journal, NULL, 0))) return 1;

  ncclUniqueId id;
  if (note(&e, "ncclGetUniqueId", NULL, ncclGetUniqueId(&id)) == ncclSuccess &&
      note(&e, "ncclCommInitRank", NULL, ncclCommInitRank(&e.c.comm, 1, id, 0)) == ncclSuccess) {
    queries(&e);
    collectives(&e);
    groups(&e);
    memory(&e);
    device_api(&e);
    newer_comm_and_params(&e);
    config_collectives(&e);
    premulsum(&e);
    errors(&e);
    lifecycle(&e);
    note(&e, "ncclCommFinalize", &e.c, ncclCommFinalize(e.c.comm));
    note(&e, "ncclCommDestroy", &e.c, ncclCommDestroy(e.c.comm));
  } else {
    fprintf(stderr, "nccl_everything: no communicator, most calls skipped\n");
  }
  npkit_test_ctx_finish(&e.ctx);
  int bad = npkit_test_journal_close(e.ctx.journal) != 0 || e.ctx.mismatches;
  if (e.ctx.mismatches) fprintf(stderr, "nccl_everything: %lu wrong results\n", e.ctx.mismatches);
  return bad ? 1 : 0;
}
