/* The NCCL profiler plugin ABI, versions 1 to 7, in our own declarations.
 *
 * NCCL 2.23 and later dlopen a profiler plugin and look up a table of function pointers by a
 * versioned symbol name.  The layouts below were written from NVIDIA/nccl's plugin headers
 * (ext-profiler/, plugins/profiler/ since 2.30, src/include/plugin/profiler/) and checked field by
 * field against them at every tag listed; the _Static_asserts pin each offset we read, for LP64
 * (x86-64, aarch64), so a change here that moves a field does not compile.
 *
 *  ABI  symbol            first NCCL  what changed
 *  v1   ncclProfiler_v1   2.23.4      groups, Coll/P2p tasks, proxy op/step/ctrl; enums as numbers
 *  v2   ncclProfiler_v2   2.24.3      function, datatype, algorithm, protocol become strings
 *  v3   ncclProfiler_v3   2.26.2      kernel-channel (KernelCh) and network plugin events
 *  v4   ncclProfiler_v4   2.27.3      init gets commName/commHash/nNodes/nranks/rank/logger; task
 *                                      descriptors lose name/commHash; KernelCh carries the GPU
 *                                      %globaltimer start (pTimer) and its stop arrives through
 *                                      recordEventState(ncclProfilerKernelChStop, args.pTimer);
 *                                      proxy step states carry transSize
 *  v5   ncclProfiler_v5   2.28.3      descriptor type widens to 64 bits; init(ctx, commId, mask,
 *                                      ...); API-level events (GroupApi, CollApi, P2pApi,
 *                                      KernelLaunch); Coll/P2p gain parentGroup
 *  v6   ncclProfiler_v6   2.29.2      copy-engine collective events appended to the union; the
 *                                      rest is v5's layout, state args are v5's
 *  v7   ncclProfiler_v7   2.31.2      (src/include/plugin/profiler/profiler_v7.h at commit
 *                                      889806836097): userTag (the call's ncclCollConfig_t
 *                                      userProfilerTag, 0 = untagged) appended to CollApi, P2pApi,
 *                                      Coll, P2p and CeColl; kernelVariant and isSymColl to Coll
 *                                      (the symmetric-memory kernels); KernelPhase events (bit 15):
 *                                      per channel, phases 0..2 "initial_sync", "compute",
 *                                      "final_sync" on the GPU clock, parent the KernelCh, stop
 *                                      through recordEventState(KernelPhaseStop = 31) with the stop
 *                                      stamp in kernelCh.pTimer, all before the KernelCh's own stop.
 *                                      Every v6 field keeps its offset; sizeof grows 112 -> 136.
 *                                      2.31.2 probes v7 first; a v6 table there gets no phases
 *                                      (profiler_v6.cc clears the bit after init).  Asking for
 *                                      KernelPhase makes NCCL ask for KernelCh too.  KernelCh (and
 *                                      KernelPhase) come from a profiler thread per communicator
 *                                      from 2.31, no longer from the proxy thread.
 *
 * Facts this code relies on (all versions unless stated):
 *  - NCCL dlopens NCCL_PROFILER_PLUGIN as given (a path works), else libnccl-profiler-<v>.so;
 *    without the variable it opens libnccl-profiler.so.  It then dlsyms the newest table it knows
 *    and walks down (2.28: v5, v4, v3, v2, v1).  It dlcloses the library when the last
 *    communicator is finalized.
 *  - init is called once per communicator during its creation, on the thread that runs the
 *    creation; finalize at its destruction.  A failing init disables the plugin (v1-v3) or only
 *    logs (v4+).  Every other return code is ignored.
 *  - eActivationMask points to one process-wide int that NCCL reads again for every operation,
 *    so the last init's value wins and it may change at any time.  Asking for a child event makes
 *    NCCL start its parents too (Group, Coll/P2p, and in v5 GroupApi/CollApi/P2pApi).  In v1-v3
 *    NCCL only starts Coll/P2p when the Group handle it got is not NULL.
 *  - Coll seqNumber is comm->seqNumber[func]: counted per communicator AND per function
 *    (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce), read when the task is launched.
 *    Collectives with count 0, on one-rank communicators, or run as copy-engine collectives get
 *    no task; AlltoAll, Gather and Scatter (2.28+) become P2p tasks.  Within one launch NCCL
 *    orders a communicator's tasks by size (largest first), not by call order.
 *  - stopEvent of a Coll/P2p means "enqueued", not finished; KernelCh and proxy events of the task
 *    arrive later, from the proxy thread, with the task's handle as parentObj.  Its parent
 *    handle may therefore be used after the task's stopEvent.
 *  - ProxyStep states: send 8 (GPU wait), 20 (peer wait, v4+), 9 (network wait; transSize is set
 *    here); recv 10 (posted), 11 (received, flushing; transSize set), 12 (GPU wait).  v1-v3 pass
 *    NULL state args for steps and the cumulative transSize on the proxy op's states instead.
 *  - proxyOp.pid is the process that issued the op: a parentObj from another pid is not ours.
 *  - The API-level and copy-engine events may be started even when not asked for (as parents);
 *    unknown types must be accepted and ignored.
 *  - v5+ (2.28.9 src/plugin/profiler.cc, src/enqueue.cc, src/group.cc): GroupApi starts at the
 *    first coll/p2p call of a group (not at ncclGroupStart) and stops at the end of the outermost
 *    ncclGroupEnd; CollApi/P2pApi start and stop inside their call (parent: the GroupApi);
 *    KernelLaunch brackets cuLaunchKernelEx on the launching thread (parent: the GroupApi) -- the
 *    user's thread, or NCCL's own for non-blocking communicators.  Group and Coll/P2p come after
 *    the launch (hostStreamPlanTask); Coll's parentObj is its CollApi (already stopped),
 *    coll.parentGroup the Group.  A plan captured into a CUDA graph emits its Group/Coll at every
 *    replay from CUDA's host-callback thread, before the kernel in stream order, with the
 *    capture-time CollApi as parent; seqNumber then advances per replay only when kernel-channel
 *    events are asked for.
 * ncclResult_t is an int-sized enum and ncclSuccess is 0: declared here as int. */
#ifndef NPKIT_PROFILER_ABI_H
#define NPKIT_PROFILER_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ncclProfile* event types (the bits of eActivationMask). */
enum {
  NPKIT_NCCL_EV_GROUP = 1 << 0,
  NPKIT_NCCL_EV_COLL = 1 << 1,
  NPKIT_NCCL_EV_P2P = 1 << 2,
  NPKIT_NCCL_EV_PROXY_OP = 1 << 3,
  NPKIT_NCCL_EV_PROXY_STEP = 1 << 4,
  NPKIT_NCCL_EV_PROXY_CTRL = 1 << 5,
  NPKIT_NCCL_EV_KERNEL_CH = 1 << 6,      /* v3+ */
  NPKIT_NCCL_EV_NET_PLUGIN = 1 << 7,     /* v3+ */
  NPKIT_NCCL_EV_GROUP_API = 1 << 8,      /* v5+ */
  NPKIT_NCCL_EV_COLL_API = 1 << 9,       /* v5+ */
  NPKIT_NCCL_EV_P2P_API = 1 << 10,       /* v5+ */
  NPKIT_NCCL_EV_KERNEL_LAUNCH = 1 << 11, /* v5+ */
  NPKIT_NCCL_EV_KERNEL_PHASE = 1 << 15,  /* v7+ (bits 12-14: v6's copy-engine events) */
};

/* ncclProfilerEventState_t values (one numbering for all versions). */
enum {
  NPKIT_NCCL_ST_OP_SEND_POSTED = 0, /* 0..7: proxy op states of v1-v3 */
  NPKIT_NCCL_ST_OP_SEND_REM_FIFO_WAIT = 1,
  NPKIT_NCCL_ST_OP_SEND_TRANSMITTED = 2,
  NPKIT_NCCL_ST_OP_SEND_DONE = 3,
  NPKIT_NCCL_ST_OP_RECV_POSTED = 4,
  NPKIT_NCCL_ST_OP_RECV_RECEIVED = 5,
  NPKIT_NCCL_ST_OP_RECV_TRANSMITTED = 6,
  NPKIT_NCCL_ST_OP_RECV_DONE = 7,
  NPKIT_NCCL_ST_STEP_SEND_GPU_WAIT = 8,
  NPKIT_NCCL_ST_STEP_SEND_WAIT = 9,
  NPKIT_NCCL_ST_STEP_RECV_WAIT = 10,
  NPKIT_NCCL_ST_STEP_RECV_FLUSH_WAIT = 11,
  NPKIT_NCCL_ST_STEP_RECV_GPU_WAIT = 12,
  NPKIT_NCCL_ST_CTRL_IDLE = 13, /* 13..18: proxy thread states */
  NPKIT_NCCL_ST_CTRL_APPEND_END = 18,
  NPKIT_NCCL_ST_OP_IN_PROGRESS = 19,   /* v4+ */
  NPKIT_NCCL_ST_STEP_SEND_PEER_WAIT = 20, /* v4+ */
  NPKIT_NCCL_ST_NET_PLUGIN_UPDATE = 21,
  NPKIT_NCCL_ST_KERNEL_CH_STOP = 22,   /* v4+: args.kernelCh.pTimer is the GPU stop time */
  NPKIT_NCCL_ST_GROUP_START_API_STOP = 23, /* v5+ */
  NPKIT_NCCL_ST_GROUP_END_API_START = 24,  /* v5+ */
  NPKIT_NCCL_ST_KERNEL_PHASE_STOP = 31,    /* v7+: args.kernelCh.pTimer is the phase's GPU stop */
};

/* ncclDebugLogger_t: we never call it, only receive it. */
typedef void (*npkit_nccl_logger)(int level, unsigned long flags, const char *file, int line,
                                  const char *fmt, ...);

/* ---- descriptor parts shared by several versions ---- */

typedef struct npkit_abi_proxy_op {
  int32_t pid;           /* pid_t */
  uint8_t channel;
  int peer;
  int nsteps;
  int chunk_size;
  int is_send;
} npkit_abi_proxy_op;

typedef struct npkit_abi_proxy_step {
  int step;
} npkit_abi_proxy_step;

/* Coll of v4 to v6; v3's is the same behind name and commHash (v4 dropped those two and renamed
 * nMaxChannels to nChannels, nothing else). */
typedef struct npkit_abi_v4_coll {
  uint64_t seq;
  const char *func;
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nchannels;
  uint8_t nwarps;
  const char *algo;
  const char *proto;
} npkit_abi_v4_coll;

typedef struct npkit_abi_net_plugin {
  int64_t id;
  void *data;
} npkit_abi_net_plugin;

/* ---- v1 (2.23) ---- */

typedef struct npkit_abi_v1_coll {
  const char *name;
  uint64_t comm_hash;
  uint64_t seq;
  uint8_t func;          /* ncclFunc_t of 2.23 */
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  int root;
  uint8_t datatype;      /* ncclDataType_t */
  uint32_t op;
  size_t traffic_bytes;
  uint8_t max_channels;
  uint8_t nwarps;
  uint8_t algo;          /* NCCL_ALGO_* of 2.23 */
  uint8_t proto;         /* NCCL_PROTO_* */
  int is_collnet;
  int is_nvls;
} npkit_abi_v1_coll;

typedef struct npkit_abi_v1_p2p {
  const char *name;
  uint64_t comm_hash;
  uint8_t func;
  void *buf;
  uint8_t datatype;
  size_t count;
  int peer;
} npkit_abi_v1_p2p;

typedef struct npkit_abi_v1_descr {
  uint8_t type;
  void *parent;
  int rank;
  union {
    npkit_abi_v1_coll coll;
    npkit_abi_v1_p2p p2p;
    npkit_abi_proxy_op proxy_op;
    npkit_abi_proxy_step proxy_step;
  } u;
} npkit_abi_v1_descr;

/* State arguments of v1-v3. */
typedef union npkit_abi_v1_state_args {
  struct {
    size_t trans_size;   /* cumulative bytes of the proxy op */
    int steps;
  } proxy_op;
  struct {
    int appended;
  } proxy_ctrl;
} npkit_abi_v1_state_args;

/* ---- v2 (2.24, 2.25) ---- */

typedef struct npkit_abi_v2_coll {
  const char *name;
  uint64_t comm_hash;
  uint64_t seq;
  const char *func;
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  int root;
  const char *datatype;
  size_t traffic_bytes;
  uint8_t max_channels;
  uint8_t nwarps;
  const char *algo;
  const char *proto;
} npkit_abi_v2_coll;

/* Also the P2p of v3. */
typedef struct npkit_abi_v2_p2p {
  const char *name;
  uint64_t comm_hash;
  const char *func;
  void *buf;
  const char *datatype;
  size_t count;
  int peer;
} npkit_abi_v2_p2p;

typedef struct npkit_abi_v2_descr {
  uint8_t type;
  void *parent;
  int rank;
  union {
    npkit_abi_v2_coll coll;
    npkit_abi_v2_p2p p2p;
    npkit_abi_proxy_op proxy_op;
    npkit_abi_proxy_step proxy_step;
  } u;
} npkit_abi_v2_descr;

/* ---- v3 (2.26) ---- */

typedef struct npkit_abi_v3_coll {
  const char *name;
  uint64_t comm_hash;
  npkit_abi_v4_coll v4;  /* its nchannels is v3's nMaxChannels */
} npkit_abi_v3_coll;

typedef struct npkit_abi_v3_kernel_ch {
  uint8_t channel;
} npkit_abi_v3_kernel_ch;

typedef struct npkit_abi_v3_descr {
  uint8_t type;
  void *parent;
  int rank;
  union {
    npkit_abi_v3_coll coll;
    npkit_abi_v2_p2p p2p;
    npkit_abi_proxy_op proxy_op;
    npkit_abi_proxy_step proxy_step;
    npkit_abi_v3_kernel_ch kernel_ch;
    npkit_abi_net_plugin net_plugin;
  } u;
} npkit_abi_v3_descr;

/* ---- v4 (2.27) ---- */

typedef struct npkit_abi_v4_p2p {
  const char *func;
  void *buf;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nchannels;
} npkit_abi_v4_p2p;

typedef struct npkit_abi_kernel_ch {
  uint8_t channel;
  uint64_t ptimer;       /* GPU %globaltimer at the channel's start, ns */
} npkit_abi_kernel_ch;

typedef struct npkit_abi_v4_descr {
  uint8_t type;
  void *parent;
  int rank;
  union {
    npkit_abi_v4_coll coll;
    npkit_abi_v4_p2p p2p;
    npkit_abi_proxy_op proxy_op;
    npkit_abi_proxy_step proxy_step;
    npkit_abi_kernel_ch kernel_ch;
    npkit_abi_net_plugin net_plugin;
  } u;
} npkit_abi_v4_descr;

/* State arguments of v4-v6. */
typedef union npkit_abi_v4_state_args {
  struct {
    size_t trans_size;
  } proxy_step;
  struct {
    int appended;
  } proxy_ctrl;
  struct {
    void *data;
  } net_plugin;
  struct {
    uint64_t ptimer;     /* GPU %globaltimer at the channel's stop, ns */
  } kernel_ch;
} npkit_abi_v4_state_args;

/* ---- v5 (2.28) and v6 (2.29): one layout for every member we read ---- */

typedef struct npkit_abi_v5_coll {
  npkit_abi_v4_coll v4;
  void *parent_group;
} npkit_abi_v5_coll;

typedef struct npkit_abi_v5_p2p {
  npkit_abi_v4_p2p v4;
  void *parent_group;
} npkit_abi_v5_p2p;

/* The API-level events (v5+, src/include/plugin/profiler/profiler_v5.h): NCCL's bool is one byte. */
typedef struct npkit_abi_v5_group_api {
  uint8_t graph_captured;
  int group_depth;
} npkit_abi_v5_group_api;

typedef struct npkit_abi_v5_coll_api {
  const char *func;
  size_t count;
  const char *datatype;
  int root;
  void *stream;
  uint8_t graph_captured;
} npkit_abi_v5_coll_api;

typedef struct npkit_abi_v5_p2p_api {
  const char *func;
  size_t count;
  const char *datatype;
  void *stream;
  uint8_t graph_captured;
} npkit_abi_v5_p2p_api;

typedef struct npkit_abi_v5_kernel_launch {
  void *stream;
} npkit_abi_v5_kernel_launch;

typedef struct npkit_abi_v5_descr {
  uint64_t type;
  void *parent;
  int rank;
  union {
    npkit_abi_v5_group_api group_api;
    npkit_abi_v5_coll_api coll_api;
    npkit_abi_v5_p2p_api p2p_api;
    npkit_abi_v5_kernel_launch kernel_launch;
    npkit_abi_v5_coll coll;
    npkit_abi_v5_p2p p2p;
    npkit_abi_proxy_op proxy_op;
    npkit_abi_proxy_step proxy_step;
    npkit_abi_kernel_ch kernel_ch;
    npkit_abi_net_plugin net_plugin;
    /* v6's copy-engine events are never read */
  } u;
} npkit_abi_v5_descr;

/* ---- v7 (2.31.2): v5's members with their v7 tails, and the KernelPhase member ---- */

typedef struct npkit_abi_v7_coll_api {
  npkit_abi_v5_coll_api v5;
  uint64_t user_tag;
} npkit_abi_v7_coll_api;

typedef struct npkit_abi_v7_p2p_api {
  npkit_abi_v5_p2p_api v5;
  uint64_t user_tag;
} npkit_abi_v7_p2p_api;

typedef struct npkit_abi_v7_coll {
  npkit_abi_v5_coll v5;
  const char *kernel_variant; /* symmetric kernels: "AllReduce_AGxLL_R"; else NULL */
  uint8_t is_sym_coll;
  uint64_t user_tag;
} npkit_abi_v7_coll;

typedef struct npkit_abi_v7_p2p {
  npkit_abi_v5_p2p v5;
  uint64_t user_tag;
} npkit_abi_v7_p2p;

typedef struct npkit_abi_v7_kernel_phase {
  uint8_t channel;
  uint8_t phase;              /* 0 initial_sync, 1 compute, 2 final_sync */
  const char *name;
  uint64_t ptimer;            /* the GPU's %globaltimer at the phase's start */
} npkit_abi_v7_kernel_phase;

typedef struct npkit_abi_v7_descr {
  uint64_t type;
  void *parent;
  int rank;
  union {
    npkit_abi_v5_group_api group_api;
    npkit_abi_v7_coll_api coll_api;
    npkit_abi_v7_p2p_api p2p_api;
    npkit_abi_v5_kernel_launch kernel_launch;
    npkit_abi_v7_coll coll;
    npkit_abi_v7_p2p p2p;
    npkit_abi_proxy_op proxy_op;
    npkit_abi_proxy_step proxy_step;
    npkit_abi_kernel_ch kernel_ch;
    npkit_abi_net_plugin net_plugin;
    npkit_abi_v7_kernel_phase kernel_phase;
    /* v6/v7's copy-engine members are never read; Coll is the largest member (112 bytes) */
  } u;
} npkit_abi_v7_descr;

/* ---- the tables ---- */

#define NPKIT_ABI_TABLE(ver, init_params, descr_t, args_t)                  \
  typedef struct npkit_abi_table_##ver {                                   \
    const char *name;                                                      \
    int (*init) init_params;                                               \
    int (*start_event)(void *ctx, void **handle, descr_t *descr);          \
    int (*stop_event)(void *handle);                                       \
    int (*record_event_state)(void *handle, int state, args_t *args);      \
    int (*finalize)(void *ctx);                                            \
  } npkit_abi_table_##ver;

NPKIT_ABI_TABLE(v1, (void **ctx, int *mask), npkit_abi_v1_descr, npkit_abi_v1_state_args)
NPKIT_ABI_TABLE(v2, (void **ctx, int *mask), npkit_abi_v2_descr, npkit_abi_v1_state_args)
NPKIT_ABI_TABLE(v3, (void **ctx, int *mask), npkit_abi_v3_descr, npkit_abi_v1_state_args)
NPKIT_ABI_TABLE(v4,
                (void **ctx, int *mask, const char *comm_name, uint64_t comm_hash, int nnodes,
                 int nranks, int rank, npkit_nccl_logger log),
                npkit_abi_v4_descr, npkit_abi_v4_state_args)
NPKIT_ABI_TABLE(v5,
                (void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes,
                 int nranks, int rank, npkit_nccl_logger log),
                npkit_abi_v5_descr, npkit_abi_v4_state_args)
NPKIT_ABI_TABLE(v7,
                (void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes,
                 int nranks, int rank, npkit_nccl_logger log),
                npkit_abi_v7_descr, npkit_abi_v4_state_args)
#undef NPKIT_ABI_TABLE
/* v6's table has v5's signatures (its descriptor only grows at the end of the union). */
typedef npkit_abi_table_v5 npkit_abi_table_v6;

/* ---- the layout, pinned (LP64) ---- */
#define NPKIT_ABI_AT(type, member, off) \
  _Static_assert(offsetof(type, member) == (off), #type "." #member " offset")
_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8 && sizeof(int) == 4, "LP64 only");
NPKIT_ABI_AT(npkit_abi_v1_descr, parent, 8);
NPKIT_ABI_AT(npkit_abi_v1_descr, rank, 16);
NPKIT_ABI_AT(npkit_abi_v1_descr, u, 24);
NPKIT_ABI_AT(npkit_abi_v5_descr, parent, 8);
NPKIT_ABI_AT(npkit_abi_v5_descr, rank, 16);
NPKIT_ABI_AT(npkit_abi_v5_descr, u, 24);
NPKIT_ABI_AT(npkit_abi_proxy_op, channel, 4);
NPKIT_ABI_AT(npkit_abi_proxy_op, peer, 8);
NPKIT_ABI_AT(npkit_abi_proxy_op, nsteps, 12);
NPKIT_ABI_AT(npkit_abi_proxy_op, chunk_size, 16);
NPKIT_ABI_AT(npkit_abi_proxy_op, is_send, 20);
NPKIT_ABI_AT(npkit_abi_v1_coll, seq, 16);
NPKIT_ABI_AT(npkit_abi_v1_coll, func, 24);
NPKIT_ABI_AT(npkit_abi_v1_coll, count, 48);
NPKIT_ABI_AT(npkit_abi_v1_coll, root, 56);
NPKIT_ABI_AT(npkit_abi_v1_coll, datatype, 60);
NPKIT_ABI_AT(npkit_abi_v1_coll, op, 64);
NPKIT_ABI_AT(npkit_abi_v1_coll, max_channels, 80);
NPKIT_ABI_AT(npkit_abi_v1_coll, nwarps, 81);
NPKIT_ABI_AT(npkit_abi_v1_coll, algo, 82);
NPKIT_ABI_AT(npkit_abi_v1_coll, proto, 83);
NPKIT_ABI_AT(npkit_abi_v1_p2p, func, 16);
NPKIT_ABI_AT(npkit_abi_v1_p2p, datatype, 32);
NPKIT_ABI_AT(npkit_abi_v1_p2p, count, 40);
NPKIT_ABI_AT(npkit_abi_v1_p2p, peer, 48);
NPKIT_ABI_AT(npkit_abi_v2_coll, func, 24);
NPKIT_ABI_AT(npkit_abi_v2_coll, root, 56);
NPKIT_ABI_AT(npkit_abi_v2_coll, datatype, 64);
NPKIT_ABI_AT(npkit_abi_v2_coll, max_channels, 80);
NPKIT_ABI_AT(npkit_abi_v2_coll, nwarps, 81);
NPKIT_ABI_AT(npkit_abi_v2_coll, algo, 88);
NPKIT_ABI_AT(npkit_abi_v2_coll, proto, 96);
NPKIT_ABI_AT(npkit_abi_v2_p2p, func, 16);
NPKIT_ABI_AT(npkit_abi_v2_p2p, datatype, 32);
NPKIT_ABI_AT(npkit_abi_v2_p2p, count, 40);
NPKIT_ABI_AT(npkit_abi_v2_p2p, peer, 48);
NPKIT_ABI_AT(npkit_abi_v3_coll, v4, 16);
NPKIT_ABI_AT(npkit_abi_v3_coll, v4.datatype, 64);
NPKIT_ABI_AT(npkit_abi_v3_coll, v4.nchannels, 72);
NPKIT_ABI_AT(npkit_abi_v3_coll, v4.nwarps, 73);
NPKIT_ABI_AT(npkit_abi_v3_coll, v4.algo, 80);
NPKIT_ABI_AT(npkit_abi_v3_coll, v4.proto, 88);
NPKIT_ABI_AT(npkit_abi_v4_coll, func, 8);
NPKIT_ABI_AT(npkit_abi_v4_coll, count, 32);
NPKIT_ABI_AT(npkit_abi_v4_coll, root, 40);
NPKIT_ABI_AT(npkit_abi_v4_coll, datatype, 48);
NPKIT_ABI_AT(npkit_abi_v4_coll, nchannels, 56);
NPKIT_ABI_AT(npkit_abi_v4_coll, nwarps, 57);
NPKIT_ABI_AT(npkit_abi_v4_coll, algo, 64);
NPKIT_ABI_AT(npkit_abi_v4_coll, proto, 72);
NPKIT_ABI_AT(npkit_abi_v4_p2p, datatype, 16);
NPKIT_ABI_AT(npkit_abi_v4_p2p, count, 24);
NPKIT_ABI_AT(npkit_abi_v4_p2p, peer, 32);
NPKIT_ABI_AT(npkit_abi_v4_p2p, nchannels, 36);
NPKIT_ABI_AT(npkit_abi_v5_coll, parent_group, 80);
NPKIT_ABI_AT(npkit_abi_v5_group_api, group_depth, 4);
NPKIT_ABI_AT(npkit_abi_v5_coll_api, datatype, 16);
NPKIT_ABI_AT(npkit_abi_v5_coll_api, root, 24);
NPKIT_ABI_AT(npkit_abi_v5_coll_api, stream, 32);
NPKIT_ABI_AT(npkit_abi_v5_coll_api, graph_captured, 40);
NPKIT_ABI_AT(npkit_abi_v5_p2p_api, stream, 24);
NPKIT_ABI_AT(npkit_abi_v5_p2p_api, graph_captured, 32);
NPKIT_ABI_AT(npkit_abi_v5_p2p, parent_group, 40);
NPKIT_ABI_AT(npkit_abi_kernel_ch, ptimer, 8);
NPKIT_ABI_AT(npkit_abi_v1_state_args, proxy_op.steps, 8);
NPKIT_ABI_AT(npkit_abi_table_v1, finalize, 40);
NPKIT_ABI_AT(npkit_abi_table_v5, finalize, 40);
NPKIT_ABI_AT(npkit_abi_table_v7, finalize, 40);
/* v7, absolute offsets of profiler_v7.h at 2.31.2 (union at 24) */
NPKIT_ABI_AT(npkit_abi_v7_descr, u, 24);
_Static_assert(sizeof(npkit_abi_v7_descr) == 136, "ncclProfilerEventDescr_v7_t size");
NPKIT_ABI_AT(npkit_abi_v7_descr, u.coll_api.user_tag, 72);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.p2p_api.user_tag, 64);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.coll.v5.parent_group, 104);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.coll.kernel_variant, 112);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.coll.is_sym_coll, 120);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.coll.user_tag, 128);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.p2p.v5.parent_group, 64);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.p2p.user_tag, 72);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.kernel_phase.phase, 25);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.kernel_phase.name, 32);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.kernel_phase.ptimer, 40);
NPKIT_ABI_AT(npkit_abi_v7_descr, u.kernel_ch.ptimer, 32);
#undef NPKIT_ABI_AT

#endif
