/* Unit tests of the per-version adapters (profiler_plugin_abi.c): descriptors and state
 * arguments are laid out as NCCL lays them out for each ABI version, handed to the exported
 * tables, and what reaches the core (stubbed here) is compared with values written down by hand.
 * Every version is covered, v6 included, which no NCCL the other tests run speaks.  v7's
 * descriptors are built as raw bytes at the offsets of ncclProfilerEventDescr_v7_t (profiler_v7.h
 * of NCCL 2.31.2, LP64), not from the library's own declaration. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "plugin_abi.h"
#include "plugin_core.h"

extern npkit_abi_table_v1 ncclProfiler_v1;
extern npkit_abi_table_v2 ncclProfiler_v2;
extern npkit_abi_table_v3 ncclProfiler_v3;
extern npkit_abi_table_v4 ncclProfiler_v4;
extern npkit_abi_table_v5 ncclProfiler_v5;
extern npkit_abi_table_v6 ncclProfiler_v6;
extern npkit_abi_table_v7 ncclProfiler_v7;

/* ---- the core, reduced to remembering its last call ---- */

static npkit_plugin_comm last_comm;
static npkit_plugin_descr last_descr;
static int last_descr_null;
static npkit_plugin_state last_state;
static int last_state_value;
static int calls;

int npkit_plugin_init(void **ctx, int *mask, const npkit_plugin_comm *comm) {
  (void)ctx;
  (void)mask;
  last_comm = *comm;
  calls++;
  return 0;
}

int npkit_plugin_start(void *ctx, void **handle, const npkit_plugin_descr *d) {
  (void)ctx;
  (void)handle;
  last_descr_null = d == NULL;
  if (d != NULL) last_descr = *d;
  calls++;
  return 0;
}

int npkit_plugin_stop(void *handle) {
  (void)handle;
  return 0;
}

int npkit_plugin_record_state(void *handle, int state, const npkit_plugin_state *s) {
  (void)handle;
  last_state_value = state;
  last_state = *s;
  calls++;
  return 0;
}

int npkit_plugin_finalize(void *ctx) {
  (void)ctx;
  return 0;
}

static int streq(const char *a, const char *b) {
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static void *ctx;
static int mask;
static void *handle;
static char parent_obj;

/* ---- init ---- */

static void test_init(void) {
  ncclProfiler_v1.init(&ctx, &mask);
  CHECK(last_comm.abi == 1 && last_comm.nccl_comm_id == 0 && last_comm.name == NULL);
  CHECK(last_comm.nnodes == -1 && last_comm.nranks == -1 && last_comm.rank == -1);
  ncclProfiler_v2.init(&ctx, &mask);
  CHECK(last_comm.abi == 2 && last_comm.rank == -1);
  ncclProfiler_v3.init(&ctx, &mask);
  CHECK(last_comm.abi == 3 && last_comm.nnodes == -1);

  ncclProfiler_v4.init(&ctx, &mask, "c4", 0x44, 2, 16, 5, NULL);
  CHECK(last_comm.abi == 4 && last_comm.nccl_comm_id == 0x44 && streq(last_comm.name, "c4"));
  CHECK(last_comm.nnodes == 2 && last_comm.nranks == 16 && last_comm.rank == 5);
  ncclProfiler_v5.init(&ctx, 0x55, &mask, "c5", 3, 24, 7, NULL);
  CHECK(last_comm.abi == 5 && last_comm.nccl_comm_id == 0x55 && streq(last_comm.name, "c5"));
  CHECK(last_comm.nnodes == 3 && last_comm.nranks == 24 && last_comm.rank == 7);
  ncclProfiler_v6.init(&ctx, 0x66, &mask, NULL, 1, 8, 0, NULL);
  CHECK(last_comm.abi == 6 && last_comm.nccl_comm_id == 0x66 && last_comm.name == NULL);
  CHECK(last_comm.nnodes == 1 && last_comm.nranks == 8 && last_comm.rank == 0);
}

/* ---- start: NULL descriptors, headers, events we do not read ---- */

static void test_null_descr(void) {
  int before = calls;
  ncclProfiler_v1.start_event(ctx, &handle, NULL);
  CHECK(last_descr_null);
  ncclProfiler_v3.start_event(ctx, &handle, NULL);
  CHECK(last_descr_null);
  ncclProfiler_v6.start_event(ctx, &handle, NULL);
  CHECK(last_descr_null);
  CHECK(calls == before + 3);
}

static void check_task(npkit_plugin_type type, uint64_t seq, uint64_t count, uint64_t hash,
                       const char *func, const char *algo, const char *proto, int datatype,
                       int root, unsigned nchannels, unsigned nwarps) {
  const npkit_plugin_task *t = &last_descr.u.task;
  CHECK(!last_descr_null && last_descr.type == type);
  CHECK(last_descr.parent == &parent_obj && last_descr.rank == 3);
  CHECK(t->seq == seq && t->count == count && t->comm_hash == hash);
  CHECK(func == NULL ? t->func == NULL : streq(t->func, func));
  CHECK(algo == NULL ? t->algo == NULL : streq(t->algo, algo));
  CHECK(proto == NULL ? t->proto == NULL : streq(t->proto, proto));
  CHECK(t->datatype == datatype && t->root == root);
  CHECK(t->nchannels == nchannels && t->nwarps == nwarps);
}

/* Poison, so that a field the adapter forgets to set, or reads from the wrong place, shows. */
#define POISON(x) memset(&(x), 0xa5, sizeof(x))
/* d's header (type, parent, rank) over poison: one macro for the six descriptor types. */
#define DESCR(d, t) (POISON(d), (d).type = (t), (d).parent = &parent_obj, (d).rank = 3)

/* ---- Coll and P2p, whose layout changes with every version ---- */

static void test_tasks_v1(void) {
  npkit_abi_v1_descr d;
  DESCR(d, NPKIT_NCCL_EV_COLL);
  /* 2.23's numbers: func 4 AllReduce, datatype 7 ncclFloat32, algo 1 RING, proto 2 SIMPLE */
  d.u.coll = (npkit_abi_v1_coll){.comm_hash = 0xabc, .seq = 9, .func = 4, .count = 1000,
                                 .datatype = 7, .max_channels = 12, .nwarps = 16, .algo = 1,
                                 .proto = 2};
  ncclProfiler_v1.start_event(ctx, &handle, &d);
  check_task(NPKIT_PLUGIN_COLL, 9, 1000, 0xabc, "AllReduce", "RING", "SIMPLE", 7, 0, 12, 16);
  d.u.coll.func = 200; /* out of 2.23's range: no name rather than a wrong one */
  d.u.coll.algo = 99;
  d.u.coll.proto = 3;
  ncclProfiler_v1.start_event(ctx, &handle, &d);
  check_task(NPKIT_PLUGIN_COLL, 9, 1000, 0xabc, NULL, NULL, NULL, 7, 0, 12, 16);

  DESCR(d, NPKIT_NCCL_EV_P2P);
  d.u.p2p = (npkit_abi_v1_p2p){.comm_hash = 0xdef, .func = 6, .datatype = 4, .count = 77,
                               .peer = 5}; /* Send of ncclInt64 */
  ncclProfiler_v1.start_event(ctx, &handle, &d);
  check_task(NPKIT_PLUGIN_P2P, 0, 77, 0xdef, "Send", NULL, NULL, 4, 5, 0, 0);
}

static void test_tasks_v2_v3(void) {
  npkit_abi_v2_descr d2;
  DESCR(d2, NPKIT_NCCL_EV_COLL);
  d2.u.coll = (npkit_abi_v2_coll){.comm_hash = 0x22, .seq = 4, .func = "Broadcast", .count = 64,
                                  .root = 2, .datatype = "ncclBfloat16", .traffic_bytes = 1,
                                  .max_channels = 2, .nwarps = 8, .algo = "RING", .proto = "LL"};
  ncclProfiler_v2.start_event(ctx, &handle, &d2);
  check_task(NPKIT_PLUGIN_COLL, 4, 64, 0x22, "Broadcast", "RING", "LL", 9, 2, 2, 8);

  npkit_abi_v3_descr d3;
  DESCR(d3, NPKIT_NCCL_EV_COLL);
  /* commHash is still in v3's Coll, gone from v4's */
  d3.u.coll = (npkit_abi_v3_coll){
      .comm_hash = 0x33,
      .v4 = {.seq = 11, .func = "ReduceScatter", .count = 4096, .datatype = "ncclInt32",
             .nchannels = 24, .nwarps = 32, .algo = "PAT", .proto = "LL128"}};
  ncclProfiler_v3.start_event(ctx, &handle, &d3);
  check_task(NPKIT_PLUGIN_COLL, 11, 4096, 0x33, "ReduceScatter", "PAT", "LL128", 2, 0, 24, 32);

  /* one P2p layout for both */
  DESCR(d2, NPKIT_NCCL_EV_P2P);
  DESCR(d3, NPKIT_NCCL_EV_P2P);
  d2.u.p2p = d3.u.p2p = (npkit_abi_v2_p2p){.comm_hash = 0x23, .func = "Recv",
                                           .datatype = "no such type", .count = 5, .peer = 1};
  ncclProfiler_v2.start_event(ctx, &handle, &d2);
  check_task(NPKIT_PLUGIN_P2P, 0, 5, 0x23, "Recv", NULL, NULL, -1, 1, 0, 0);
  ncclProfiler_v3.start_event(ctx, &handle, &d3);
  check_task(NPKIT_PLUGIN_P2P, 0, 5, 0x23, "Recv", NULL, NULL, -1, 1, 0, 0);
}

static void test_tasks_v4_v6(void) {
  npkit_abi_v4_descr d4;
  DESCR(d4, NPKIT_NCCL_EV_COLL);
  d4.u.coll = (npkit_abi_v4_coll){.seq = 12, .func = "AllGather", .count = 256,
                                  .datatype = "ncclFloat16", .nchannels = 4, .nwarps = 20,
                                  .algo = "NVLS", .proto = "SIMPLE"};
  ncclProfiler_v4.start_event(ctx, &handle, &d4);
  check_task(NPKIT_PLUGIN_COLL, 12, 256, 0, "AllGather", "NVLS", "SIMPLE", 6, 0, 4, 20);

  DESCR(d4, NPKIT_NCCL_EV_P2P);
  d4.u.p2p = (npkit_abi_v4_p2p){.func = "Recv", .datatype = "ncclInt8", .count = 3, .peer = 7,
                                .nchannels = 2};
  ncclProfiler_v4.start_event(ctx, &handle, &d4);
  check_task(NPKIT_PLUGIN_P2P, 0, 3, 0, "Recv", NULL, NULL, 0, 7, 2, 0);

  const npkit_abi_table_v5 *tables[] = {&ncclProfiler_v5, &ncclProfiler_v6};
  for (int i = 0; i < 2; i++) {
    npkit_abi_v5_descr d5;
    DESCR(d5, NPKIT_NCCL_EV_COLL);
    d5.u.coll = (npkit_abi_v5_coll){
        .v4 = {.seq = 13 + (uint64_t)i, .func = "Reduce", .count = 8, .root = 1,
               .datatype = "ncclFloat64", .nchannels = 1, .nwarps = 4, .algo = "TREE",
               .proto = "LL"},
        .parent_group = &parent_obj};
    tables[i]->start_event(ctx, &handle, &d5);
    check_task(NPKIT_PLUGIN_COLL, 13 + (uint64_t)i, 8, 0, "Reduce", "TREE", "LL", 8, 1, 1, 4);

    DESCR(d5, NPKIT_NCCL_EV_P2P);
    d5.u.p2p = (npkit_abi_v5_p2p){
        .v4 = {.func = "Send", .datatype = "ncclUint32", .count = 100, .peer = 0, .nchannels = 3},
        .parent_group = &parent_obj};
    tables[i]->start_event(ctx, &handle, &d5);
    check_task(NPKIT_PLUGIN_P2P, 0, 100, 0, "Send", NULL, NULL, 3, 0, 3, 0);
  }
}

/* ---- proxy events: one layout since v1 ---- */

/* uint8_t channel 200: must not come out signed */
static const npkit_abi_proxy_op proxy_op = {.pid = 4321, .channel = 200, .peer = 6, .nsteps = 8,
                                            .chunk_size = 524288, .is_send = 1};

static void check_proxy_op(void) {
  CHECK(last_descr.type == NPKIT_PLUGIN_PROXY_OP && last_descr.parent == &parent_obj);
  CHECK(last_descr.u.proxy_op.pid == 4321 && last_descr.u.proxy_op.channel == 200);
  CHECK(last_descr.u.proxy_op.peer == 6 && last_descr.u.proxy_op.nsteps == 8);
  CHECK(last_descr.u.proxy_op.chunk_size == 524288 && last_descr.u.proxy_op.is_send == 1);
}

static void test_proxy(void) {
  npkit_abi_v1_descr d1;
  npkit_abi_v4_descr d4;
  npkit_abi_v5_descr d5;
  DESCR(d1, NPKIT_NCCL_EV_PROXY_OP);
  DESCR(d4, NPKIT_NCCL_EV_PROXY_OP);
  DESCR(d5, NPKIT_NCCL_EV_PROXY_OP);
  d1.u.proxy_op = d4.u.proxy_op = d5.u.proxy_op = proxy_op;
  ncclProfiler_v1.start_event(ctx, &handle, &d1);
  check_proxy_op();
  ncclProfiler_v4.start_event(ctx, &handle, &d4);
  check_proxy_op();
  ncclProfiler_v6.start_event(ctx, &handle, &d5);
  check_proxy_op();

  npkit_abi_v2_descr d2;
  DESCR(d2, NPKIT_NCCL_EV_PROXY_STEP);
  DESCR(d5, NPKIT_NCCL_EV_PROXY_STEP);
  d2.u.proxy_step.step = 41;
  d5.u.proxy_step.step = 42;
  ncclProfiler_v2.start_event(ctx, &handle, &d2);
  CHECK(last_descr.type == NPKIT_PLUGIN_PROXY_STEP && last_descr.u.proxy_step.step == 41);
  ncclProfiler_v5.start_event(ctx, &handle, &d5);
  CHECK(last_descr.type == NPKIT_PLUGIN_PROXY_STEP && last_descr.u.proxy_step.step == 42);
}

/* ---- kernel channels: none before v3, no GPU stamp before v4 ---- */

static void test_kernel_ch(void) {
  npkit_abi_v2_descr d2;
  DESCR(d2, NPKIT_NCCL_EV_KERNEL_CH);
  ncclProfiler_v2.start_event(ctx, &handle, &d2);
  CHECK(!last_descr_null && last_descr.type == NPKIT_PLUGIN_IGNORED);

  npkit_abi_v3_descr d3;
  DESCR(d3, NPKIT_NCCL_EV_KERNEL_CH);
  d3.u.kernel_ch.channel = 17;
  ncclProfiler_v3.start_event(ctx, &handle, &d3);
  CHECK(last_descr.type == NPKIT_PLUGIN_KERNEL_CH && last_descr.u.kernel_ch.channel == 17);
  CHECK(last_descr.u.kernel_ch.has_ptimer == 0 && last_descr.u.kernel_ch.ptimer == 0);

  npkit_abi_v4_descr d4;
  DESCR(d4, NPKIT_NCCL_EV_KERNEL_CH);
  d4.u.kernel_ch = (npkit_abi_kernel_ch){.channel = 31, .ptimer = 1700000000123456789ull};
  ncclProfiler_v4.start_event(ctx, &handle, &d4);
  CHECK(last_descr.type == NPKIT_PLUGIN_KERNEL_CH && last_descr.u.kernel_ch.channel == 31);
  CHECK(last_descr.u.kernel_ch.has_ptimer == 1);
  CHECK_EQ_U64(last_descr.u.kernel_ch.ptimer, 1700000000123456789ull);

  npkit_abi_v5_descr d5;
  DESCR(d5, NPKIT_NCCL_EV_KERNEL_CH);
  d5.u.kernel_ch = (npkit_abi_kernel_ch){.channel = 0, .ptimer = 5};
  ncclProfiler_v6.start_event(ctx, &handle, &d5);
  CHECK(last_descr.type == NPKIT_PLUGIN_KERNEL_CH && last_descr.u.kernel_ch.channel == 0);
  CHECK(last_descr.u.kernel_ch.has_ptimer == 1 && last_descr.u.kernel_ch.ptimer == 5);
}

/* ---- the other types ---- */

static void test_other_types(void) {
  npkit_abi_v1_descr d1;
  DESCR(d1, NPKIT_NCCL_EV_GROUP);
  ncclProfiler_v1.start_event(ctx, &handle, &d1);
  CHECK(last_descr.type == NPKIT_PLUGIN_GROUP && last_descr.parent == &parent_obj);
  CHECK(last_descr.rank == 3);
  d1.type = NPKIT_NCCL_EV_PROXY_CTRL;
  ncclProfiler_v1.start_event(ctx, &handle, &d1);
  CHECK(last_descr.type == NPKIT_PLUGIN_PROXY_CTRL);
  d1.type = 0;
  ncclProfiler_v1.start_event(ctx, &handle, &d1);
  CHECK(last_descr.type == NPKIT_PLUGIN_IGNORED);

  npkit_abi_v3_descr d3;
  DESCR(d3, NPKIT_NCCL_EV_NET_PLUGIN);
  ncclProfiler_v3.start_event(ctx, &handle, &d3);
  CHECK(last_descr.type == NPKIT_PLUGIN_IGNORED);

  const uint64_t api[] = {NPKIT_NCCL_EV_GROUP_API, NPKIT_NCCL_EV_COLL_API, NPKIT_NCCL_EV_P2P_API,
                          NPKIT_NCCL_EV_KERNEL_LAUNCH};
  npkit_abi_v5_descr d5;
  for (int i = 0; i < 4; i++) {
    DESCR(d5, api[i]);
    ncclProfiler_v5.start_event(ctx, &handle, &d5);
    CHECK(last_descr.type == NPKIT_PLUGIN_API);
  }
  /* v5's type is 64 bits wide: a high bit must not be cut off into a Coll, and a copy-engine
   * event (v6, 1 << 12) is not mistaken for anything we read. */
  DESCR(d5, (1ull << 40) | NPKIT_NCCL_EV_COLL);
  ncclProfiler_v5.start_event(ctx, &handle, &d5);
  CHECK(last_descr.type == NPKIT_PLUGIN_IGNORED);
  DESCR(d5, 1ull << 12);
  ncclProfiler_v6.start_event(ctx, &handle, &d5);
  CHECK(last_descr.type == NPKIT_PLUGIN_IGNORED);
}

/* ---- v7: raw descriptors of 136 bytes ---- */

static void put(unsigned char *d, size_t off, const void *v, size_t n) { memcpy(d + off, v, n); }
static void put64(unsigned char *d, size_t off, uint64_t v) { put(d, off, &v, 8); }
static void put32(unsigned char *d, size_t off, int32_t v) { put(d, off, &v, 4); }
static void putp(unsigned char *d, size_t off, const void *p) { put(d, off, &p, sizeof p); }

static void start_v7(unsigned char *d) {
  ncclProfiler_v7.start_event(ctx, &handle, (npkit_abi_v7_descr *)(void *)d);
}

static void test_v7(void) {
  _Alignas(8) unsigned char d[136];
  CHECK(sizeof(npkit_abi_v7_descr) == sizeof d);
  ncclProfiler_v7.init(&ctx, 0x77, &mask, "v7", 2, 8, 3, NULL);
  CHECK(last_comm.abi == 7 && last_comm.nccl_comm_id == 0x77 && last_comm.rank == 3);

  /* CollApi: func @24, count @32, datatype @40, root @48, stream @56, graphCaptured @64, userTag @72 */
  memset(d, 0xee, sizeof d);
  put64(d, 0, NPKIT_NCCL_EV_COLL_API);
  putp(d, 8, &parent_obj);
  putp(d, 24, "AllReduce");
  put64(d, 32, 1000);
  putp(d, 40, "ncclFloat32");
  put32(d, 48, 0);
  putp(d, 56, (void *)0x5000);
  d[64] = 1;
  put64(d, 72, 0x1234567890abcdefull);
  start_v7(d);
  CHECK(last_descr.type == NPKIT_PLUGIN_API && last_descr.u.api.kind == NPKIT_PAPI_COLL);
  CHECK(streq(last_descr.u.api.func, "AllReduce") && last_descr.u.api.count == 1000);
  CHECK(last_descr.u.api.stream == (void *)0x5000 && last_descr.u.api.graph_captured == 1);
  CHECK(last_descr.u.api.user_tag == 0x1234567890abcdefull);

  /* P2pApi: func @24, count @32, datatype @40, stream @48, graphCaptured @56, userTag @64 */
  memset(d, 0xee, sizeof d);
  put64(d, 0, NPKIT_NCCL_EV_P2P_API);
  putp(d, 24, "Send");
  put64(d, 32, 16);
  putp(d, 40, "ncclInt8");
  putp(d, 48, (void *)0x6000);
  d[56] = 0;
  put64(d, 64, 0x4004);
  start_v7(d);
  CHECK(last_descr.u.api.kind == NPKIT_PAPI_P2P && streq(last_descr.u.api.func, "Send"));
  CHECK(last_descr.u.api.stream == (void *)0x6000 && last_descr.u.api.user_tag == 0x4004);

  /* Coll: seq @24, func @32, count @56, root @64, datatype @72, nChannels @80, nWarps @81, algo
   * @88, proto @96, parentGroup @104, kernelVariant @112, isSymColl @120, userTag @128 */
  memset(d, 0, sizeof d);
  put64(d, 0, NPKIT_NCCL_EV_COLL);
  put64(d, 24, 41);
  putp(d, 32, "AllReduce");
  put64(d, 56, 4096);
  put32(d, 64, 2);
  putp(d, 72, "ncclBfloat16");
  d[80] = 5;
  d[81] = 16;
  putp(d, 88, "AGxLL_R");
  putp(d, 96, "");
  putp(d, 112, "AllReduce_AGxLL_R");
  d[120] = 1;
  put64(d, 128, 0x99);
  start_v7(d);
  const npkit_plugin_task *t = &last_descr.u.task;
  CHECK(last_descr.type == NPKIT_PLUGIN_COLL && t->seq == 41 && t->count == 4096 && t->root == 2);
  CHECK(streq(t->func, "AllReduce") && streq(t->algo, "AGxLL_R") && streq(t->proto, ""));
  CHECK(t->datatype == 9 && t->nchannels == 5 && t->nwarps == 16 && t->symmetric == 1);

  /* KernelPhase (1 << 15): channelId @24, phaseId @25, phaseName @32, pTimer @40 */
  memset(d, 0, sizeof d);
  put64(d, 0, 1ull << 15);
  putp(d, 8, &parent_obj);
  d[24] = 7;
  d[25] = 2;
  putp(d, 32, "final_sync");
  put64(d, 40, 1770000000123456789ull);
  start_v7(d);
  CHECK(last_descr.type == NPKIT_PLUGIN_KERNEL_PHASE && last_descr.parent == &parent_obj);
  CHECK(last_descr.u.kernel_phase.channel == 7 && last_descr.u.kernel_phase.phase == 2);
  CHECK(streq(last_descr.u.kernel_phase.name, "final_sync"));
  CHECK(last_descr.u.kernel_phase.ptimer == 1770000000123456789ull);
  /* ... whose stop, ncclProfilerKernelPhaseStop (31), carries the stamp in kernelCh.pTimer */
  npkit_abi_v4_state_args a = {.kernel_ch = {.ptimer = 1770000000123999999ull}};
  ncclProfiler_v7.record_event_state(handle, 31, &a);
  CHECK(last_state_value == 31 && last_state.has_ptimer && last_state.ptimer == 1770000000123999999ull);
  /* the older tables know no phases: a v6 descriptor with bit 15 is ignored */
  npkit_abi_v5_descr d5;
  DESCR(d5, 1ull << 15);
  ncclProfiler_v6.start_event(ctx, &handle, &d5);
  CHECK(last_descr.type == NPKIT_PLUGIN_IGNORED);
}

/* ---- state arguments ---- */

static int record_state(int abi, int state, void *args) {
  switch (abi) {
  case 1: return ncclProfiler_v1.record_event_state(handle, state, args);
  case 2: return ncclProfiler_v2.record_event_state(handle, state, args);
  case 3: return ncclProfiler_v3.record_event_state(handle, state, args);
  case 4: return ncclProfiler_v4.record_event_state(handle, state, args);
  case 5: return ncclProfiler_v5.record_event_state(handle, state, args);
  default: return ncclProfiler_v6.record_event_state(handle, state, args);
  }
}

static void test_states(void) {
  /* v1-v3: proxy ops carry their cumulative size, steps nothing whatever the pointer holds */
  npkit_abi_v1_state_args op_size = {.proxy_op = {.trans_size = 65536, .steps = 4}};
  npkit_abi_v1_state_args ctrl1 = {.proxy_ctrl = {.appended = 3}};
  /* v4+: steps carry their own size, a kernel channel's stop its GPU stamp, proxy ops nothing */
  npkit_abi_v4_state_args step_size = {.proxy_step = {.trans_size = 1000}};
  npkit_abi_v4_state_args stop = {.kernel_ch = {.ptimer = 99}};
  npkit_abi_v4_state_args ctrl4 = {.proxy_ctrl = {.appended = 2}};
  const npkit_plugin_state none = {0}, size1 = {.has_trans_size = 1, .trans_size = 65536},
                       size4 = {.has_trans_size = 1, .trans_size = 1000};
  const struct {
    int abi, state;
    void *args;
    npkit_plugin_state want;
  } cases[] = {
      {1, NPKIT_NCCL_ST_OP_SEND_TRANSMITTED, &op_size, size1},
      {3, NPKIT_NCCL_ST_OP_RECV_DONE, &op_size, size1},
      {2, NPKIT_NCCL_ST_STEP_SEND_WAIT, &op_size, none},
      {1, NPKIT_NCCL_ST_CTRL_APPEND_END, &ctrl1, {.has_appended = 1, .appended = 3}},
      {1, NPKIT_NCCL_ST_OP_SEND_POSTED, NULL, none},
      {4, NPKIT_NCCL_ST_STEP_SEND_GPU_WAIT, &step_size, size4},
      {5, NPKIT_NCCL_ST_STEP_SEND_PEER_WAIT, &step_size, size4},
      {6, NPKIT_NCCL_ST_STEP_SEND_WAIT, &step_size, size4},
      {4, NPKIT_NCCL_ST_STEP_RECV_WAIT, &step_size, size4},
      {4, NPKIT_NCCL_ST_STEP_RECV_FLUSH_WAIT, &step_size, size4},
      {4, NPKIT_NCCL_ST_STEP_RECV_GPU_WAIT, &step_size, size4},
      {5, NPKIT_NCCL_ST_KERNEL_CH_STOP, &stop, {.has_ptimer = 1, .ptimer = 99}},
      {6, NPKIT_NCCL_ST_CTRL_IDLE, &ctrl4, {.has_appended = 1, .appended = 2}},
      {4, NPKIT_NCCL_ST_OP_SEND_DONE, &stop, none},
      {6, NPKIT_NCCL_ST_KERNEL_CH_STOP, NULL, none},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const npkit_plugin_state *w = &cases[i].want;
    record_state(cases[i].abi, cases[i].state, cases[i].args);
    int ok = last_state_value == cases[i].state && last_state.has_trans_size == w->has_trans_size &&
             last_state.trans_size == w->trans_size && last_state.has_ptimer == w->has_ptimer &&
             last_state.ptimer == w->ptimer && last_state.has_appended == w->has_appended &&
             last_state.appended == w->appended;
    if (!ok) fprintf(stderr, "state case %zu (v%d, state %d):\n", i, cases[i].abi, cases[i].state);
    CHECK(ok);
  }
}

int main(void) {
  test_init();
  test_null_descr();
  test_tasks_v1();
  test_tasks_v2_v3();
  test_tasks_v4_v6();
  test_proxy();
  test_kernel_ch();
  test_other_types();
  test_states();
  test_v7();
  CHECK(ncclProfiler_v1.stop_event == npkit_plugin_stop);
  CHECK(ncclProfiler_v7.stop_event == npkit_plugin_stop && ncclProfiler_v7.finalize == npkit_plugin_finalize);
  CHECK(ncclProfiler_v6.finalize == npkit_plugin_finalize);
  CHECK(streq(ncclProfiler_v1.name, "npkit") && streq(ncclProfiler_v6.name, "npkit"));
  return check_exit_code("test_plugin_adapters");
}
