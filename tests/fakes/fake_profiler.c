/* The profiler plugin side of the fake NCCL: loads a plugin and drives it the way NCCL 2.28.9
 * does (ABI v5), or as 2.27 (v4) or 2.26 (v3) do with FAKE_NCCL_PROFILER_ABI=4 or 3.  Built as
 * 2.31.2 (FAKE_NCCL_NEW) it takes ncclProfiler_v7 first (then v6 as 2.29/2.30 do, or with
 * FAKE_NCCL_PROFILER_ABI=6), passes each call's user tag (nccl*Config) on CollApi/P2pApi and Coll
 * events, and fires KernelPhase events when the plugin asks for them (run_kernel_phases).
 *
 *  - Loading, at the first communicator: dlopen of NCCL_PROFILER_PLUGIN as given, then of
 *    libnccl-profiler-<value>.so; libnccl-profiler.so when unset; "none" disables; STATIC_PLUGIN
 *    searches the program.  Then the newest table first: (v7, v6,) ncclProfiler_v5, v4, v3 (v2 and v1 are
 *    not driven: the fake says so and runs without).  One reference per communicator; the library
 *    is dlclosed when the last one is finalized, as NCCL does.
 *  - init per communicator (commId = a hash of its segment name, nNodes = 1, or nranks with
 *    FAKE_NCCL_NET=1), finalize when it is freed, after its proxy work is drained.
 *  - At each call (v5): GroupApi (once per outermost group, with GroupStartApiStop), CollApi or
 *    P2pApi started and stopped; at the launch GroupEndApiStart (v2.28.9-1 src/enqueue.cc
 *    collTaskAppend/p2pTaskAppend, src/group.cc ncclGroupEndInternal).  One-rank collectives
 *    get no event at all: NCCL copies them before any task exists (enqueue.cc taskAppend).
 *  - At the launch, per communicator: KernelLaunch (parent: the GroupApi) around the kernel's
 *    cuLaunchKernelEx (enqueue.cc ncclLaunchKernel), then, as hostStreamPlanTask does after the
 *    launch: Group, its Coll tasks largest first (NCCL's sorter: 4 bins per power of two of the
 *    size in KiB, the later call first within a bin) with seqNumber = the communicator's count of
 *    earlier tasks of that function and parentObj = the task's CollApi, then its P2p tasks; all
 *    task events stop right after ("enqueued"), then Group.  AlltoAll, Gather and Scatter become
 *    Send/Recv P2p tasks as in 2.28.  GroupApi stops after the launch (blocking) or on the
 *    calling thread while NCCL's own thread launches (non-blocking communicators).
 *  - The proxy thread reports for every task and channel a KernelCh as NCCL's profilerProxyProgress
 *    does (src/transport/profiler.cc): its start once the kernel has started (FAKE_NCCL_LAUNCH_US
 *    after the launch, + 100 ns x channel), with pTimer = the GPU clock (%globaltimer,
 *    npkit_fake_gpu_timer: offset and drift from CLOCK_REALTIME) then; its stop through
 *    recordEventState(KernelChStop, pTimer = the GPU clock at the completion + 100 ns x channel),
 *    then stopEvent.  With FAKE_NCCL_NET=1 every transfer is also a network proxy op per channel
 *    (its bytes split over the task's channels, 64 KiB steps) with NCCL's step states and
 *    transSize, on the same proxy thread.
 *  - The event mask the plugin wrote at init is read again for every launch.
 * The choices NCCL's tuner would make are replaced by a fixed rule (README.md). */
#include "fake_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#if FAKE_NCCL_OLD /* NCCL 2.17 had no profiler plugin */

void npkit_fake_prof_comm_init(ncclComm_t comm) { (void)comm; }
void npkit_fake_prof_comm_fini(ncclComm_t comm) { (void)comm; }
void npkit_fake_prof_call(npkit_fake_op *op) { (void)op; }
void *npkit_fake_prof_take_group(void) { return NULL; }
void npkit_fake_prof_capture(npkit_fake_op *list, npkit_fake_kernels *kernels, void *group) {
  (void)list;
  (void)group;
  npkit_fake_gpu_launch_comm(kernels, NULL, &(uint64_t){0});
}
void npkit_fake_prof_group_done(void *group) { (void)group; }
void *npkit_fake_prof_launch(npkit_fake_op *list, npkit_fake_kernels *kernels, void *group) {
  (void)list;
  (void)group;
  npkit_fake_gpu_launch_comm(kernels, NULL, &(uint64_t){0});
  return NULL;
}
void npkit_fake_prof_complete(void *launch, ncclResult_t res) {
  (void)launch;
  (void)res;
}
void npkit_fake_prof_abandon(void *launch) { (void)launch; }

#else

#include "fake_profiler_abi.h"

/* ---------------------------------------------------------------- loading */

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int load_refs;
static void *plugin_lib;
static int plugin_abi; /* 3 to 7 while loaded, 0 otherwise */
static const table_v7 *t7;
static const table_v5 *t5; /* also v6's: the same signatures */
static const table_v4 *t4;
static const table_v3 *t3;
static int event_mask; /* NCCL's process-wide activation mask, written by init */
static pid_t my_pid;

typedef struct settings {
  int net, max_abi, nchannels;
} settings;
static settings cfg;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

static int env_int(const char *name, int def, int lo, int hi) {
  const char *s = getenv(name);
  if (s == NULL || *s == '\0') return def;
  char *end;
  long v = strtol(s, &end, 10);
  return *end == '\0' && v >= lo && v <= hi ? (int)v : def;
}

static void read_cfg(void) {
  cfg.net = env_int("FAKE_NCCL_NET", 0, 0, 1);
  /* the newest table the NCCL played knows: 2.28.9 v5, 2.31.2 v7 (2.29/2.30: 6) */
  cfg.max_abi = env_int("FAKE_NCCL_PROFILER_ABI", FAKE_NCCL_NEW ? 7 : 5, 3, FAKE_NCCL_NEW ? 7 : 5);
  cfg.nchannels = env_int("FAKE_NCCL_NCHANNELS", 4, 1, 64);
  my_pid = getpid();
}

static void *open_plugin(void) {
  const char *name = getenv("NCCL_PROFILER_PLUGIN");
  char buf[512];
  if (name == NULL || *name == '\0') return dlopen("libnccl-profiler.so", RTLD_NOW | RTLD_LOCAL);
  if (strcasecmp(name, "none") == 0) return NULL;
  if (strcasecmp(name, "STATIC_PLUGIN") == 0) return dlopen(NULL, RTLD_NOW | RTLD_LOCAL);
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (h != NULL || strchr(name, '/') != NULL) return h;
  snprintf(buf, sizeof buf, "libnccl-profiler-%s.so", name);
  return dlopen(buf, RTLD_NOW | RTLD_LOCAL);
}

/* One reference per communicator; 0 when no plugin is active. */
static int plugin_acquire(void) {
  pthread_once(&cfg_once, read_cfg);
  pthread_mutex_lock(&load_lock);
  if (plugin_abi == 0 && load_refs == 0) {
    plugin_lib = open_plugin();
    if (plugin_lib != NULL) {
      /* 2.31.2 src/plugin/profiler.cc ncclProfilerPluginLoad: v7 first, then down to v1 */
      if (cfg.max_abi >= 7 && (t7 = dlsym(plugin_lib, "ncclProfiler_v7")) != NULL)
        plugin_abi = 7;
      else if (cfg.max_abi >= 6 && (t5 = dlsym(plugin_lib, "ncclProfiler_v6")) != NULL)
        plugin_abi = 6;
      else if (cfg.max_abi >= 5 && (t5 = dlsym(plugin_lib, "ncclProfiler_v5")) != NULL)
        plugin_abi = 5;
      else if (cfg.max_abi >= 4 && (t4 = dlsym(plugin_lib, "ncclProfiler_v4")) != NULL)
        plugin_abi = 4;
      else if ((t3 = dlsym(plugin_lib, "ncclProfiler_v3")) != NULL)
        plugin_abi = 3;
      if (plugin_abi == 0) {
        npkit_fake_debug_log("profiler plugin without a table this fake drives (v3-v%d)", cfg.max_abi);
        dlclose(plugin_lib);
        plugin_lib = NULL;
      }
    }
  }
  int abi = plugin_abi;
  if (abi != 0) load_refs++;
  pthread_mutex_unlock(&load_lock);
  return abi;
}

static void plugin_release(void) {
  pthread_mutex_lock(&load_lock);
  if (load_refs > 0 && --load_refs == 0) {
    dlclose(plugin_lib);
    plugin_lib = NULL;
    plugin_abi = 0;
    t7 = NULL;
    t5 = NULL;
    t4 = NULL;
    t3 = NULL;
  }
  pthread_mutex_unlock(&load_lock);
}

static int mask_now(void) { return __atomic_load_n(&event_mask, __ATOMIC_RELAXED); }

/* ---------------------------------------------------------------- calls into the plugin */

struct npkit_fake_prof_comm {
  void *ctx;
  int abi;
  uint64_t comm_id;
  uint64_t seq[NPKIT_FAKE_K_SCATTER + 1]; /* per NCCL function, indexed by kind */
};

/* The function of a data call, NULL for the other kinds. */
static const char *kind_func(npkit_fake_kind k) {
  return k >= NPKIT_FAKE_K_ALLREDUCE && k <= NPKIT_FAKE_K_RECV ? npkit_fake_kind_name(k) : NULL;
}

/* NCCL's own string table (which has no entry for uint8) */
static const char *type_name(ncclDataType_t dt) {
  static const char *const names[] = {"ncclInt8",       "Unknown",       "ncclInt32",
                                      "ncclUint32",     "ncclInt64",     "ncclUint64",
                                      "ncclFloat16",    "ncclFloat32",   "ncclFloat64",
                                      "ncclBfloat16",   "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return (unsigned)dt < sizeof names / sizeof names[0] ? names[dt] : "Unknown";
}

/* What v3 and v4 take over from a v5 description: the fields all three name alike, each version at
 * its own offsets, hence a macro.  The callers add what their version has of its own. */
#define FROM_V5(o, d)                                                                              \
  do {                                                                                             \
    memset(&(o), 0, sizeof(o));                                                                    \
    (o).type = (uint8_t)(d)->type;                                                                 \
    (o).parent_obj = (d)->parent_obj;                                                              \
    (o).rank = (d)->rank;                                                                          \
    if ((d)->type == EV_COLL) {                                                                    \
      (o).coll.seq_number = (d)->coll.seq_number;                                                  \
      (o).coll.func = (d)->coll.func;                                                              \
      (o).coll.count = (d)->coll.count;                                                            \
      (o).coll.root = (d)->coll.root;                                                              \
      (o).coll.datatype = (d)->coll.datatype;                                                      \
      (o).coll.n_warps = (d)->coll.n_warps;                                                        \
      (o).coll.algo = (d)->coll.algo;                                                              \
      (o).coll.proto = (d)->coll.proto;                                                            \
      (o).parent_obj = (d)->coll.parent_group;                                                     \
    } else if ((d)->type == EV_P2P) {                                                              \
      (o).p2p.func = (d)->p2p.func;                                                                \
      (o).p2p.datatype = (d)->p2p.datatype;                                                        \
      (o).p2p.count = (d)->p2p.count;                                                              \
      (o).p2p.peer = (d)->p2p.peer;                                                                \
      (o).parent_obj = (d)->p2p.parent_group;                                                      \
    } else if ((d)->type == EV_PROXY_OP) {                                                         \
      (o).proxy_op = (d)->proxy_op;                                                                \
    } else if ((d)->type == EV_PROXY_STEP) {                                                       \
      (o).proxy_step.step = (d)->proxy_step.step;                                                  \
    } else if ((d)->type == EV_KERNEL_CH) {                                                        \
      (o).kernel_ch.channel_id = (d)->kernel_ch.channel_id;                                        \
    }                                                                                              \
  } while (0)

/* Starts an event described in the v5 layout, translated for the loaded version. */
static void *start_event(const struct npkit_fake_prof_comm *pc, descr_v7 *d) {
  void *h = NULL;
  if (pc == NULL || pc->abi == 0) return NULL;
  if (pc->abi == 7) {
    t7->start_event(pc->ctx, &h, d);
    return h;
  }
  if (d->type == EV_KERNEL_PHASE) return NULL; /* 2.31.2 profiler_v6.cc drops them for v6 */
  if (pc->abi >= 5) {
    /* v5/v6: the descriptor of their size, as 2.31.2's v6 adapter copies it (profiler_v6.cc);
     * on the heap, so that a plugin reading past its end is caught by a sanitizer */
    descr_v5 *o = malloc(sizeof *o);
    if (o == NULL) return NULL;
    memcpy(o, d, sizeof *o);
    t5->start_event(pc->ctx, &h, o);
    free(o);
    return h;
  }
  if (d->type > EV_NET_PLUGIN) return NULL; /* API-level events came with v5 */
  if (pc->abi == 4) {
    descr_v4 o;
    FROM_V5(o, d);
    if (d->type == EV_COLL) o.coll.n_channels = d->coll.n_channels;
    if (d->type == EV_P2P) o.p2p.n_channels = d->p2p.n_channels;
    if (d->type == EV_KERNEL_CH) o.kernel_ch.p_timer = d->kernel_ch.p_timer;
    t4->start_event(pc->ctx, &h, &o);
  } else { /* v3 tasks name their communicator; v3 has no channel count for P2p, no GPU timer */
    descr_v3 o;
    FROM_V5(o, d);
    if (d->type == EV_COLL) {
      o.coll.name = "";
      o.coll.comm_hash = pc->comm_id;
      o.coll.n_max_channels = d->coll.n_channels;
    } else if (d->type == EV_P2P) {
      o.p2p.name = "";
      o.p2p.comm_hash = pc->comm_id;
    }
    t3->start_event(pc->ctx, &h, &o);
  }
  return h;
}

static void stop_event(const struct npkit_fake_prof_comm *pc, void *h) {
  if (pc == NULL || h == NULL) return;
  if (pc->abi == 7) t7->stop_event(h);
  else if (pc->abi >= 5) t5->stop_event(h);
  else if (pc->abi == 4) t4->stop_event(h);
  else t3->stop_event(h);
}

/* A state in v4/v5 terms; v3 gets what it knew (steps: no arguments). */
static void record_state(const struct npkit_fake_prof_comm *pc, void *h, int state, args_v4 *a) {
  if (pc == NULL || h == NULL) return;
  if (pc->abi == 7) {
    t7->record_event_state(h, state, a);
  } else if (state == ST_KERNEL_PHASE_STOP) {
    /* dropped for older tables (2.31.2 profiler_v6.cc) */
  } else if (pc->abi >= 5) {
    t5->record_event_state(h, state, a);
  } else if (pc->abi == 4) {
    t4->record_event_state(h, state, a);
  } else if (state == ST_KERNEL_CH_STOP || state == ST_OP_IN_PROGRESS ||
             state == ST_SEND_PEER_WAIT || state >= ST_GROUP_START_API_STOP) {
    /* not in v3 */
  } else if (state >= ST_SEND_GPU_WAIT && state <= ST_RECV_GPU_WAIT) {
    t3->record_event_state(h, state, NULL);
  } else {
    args_v3 o;
    memset(&o, 0, sizeof o);
    if (a != NULL) o.proxy_ctrl.appended_proxy_ops = a->proxy_ctrl.appended_proxy_ops;
    t3->record_event_state(h, state, &o);
  }
}

/* v3 proxy ops carry their cumulative size in op states */
static void record_op_bytes_v3(const struct npkit_fake_prof_comm *pc, void *h, int is_send,
                               size_t total, int steps) {
  if (pc->abi != 3 || h == NULL) return;
  args_v3 o;
  memset(&o, 0, sizeof o);
  o.proxy_op.trans_size = total;
  o.proxy_op.steps = steps;
  t3->record_event_state(h, is_send ? ST_SEND_TRANSMITTED : ST_RECV_RECEIVED, &o);
}

/* ---------------------------------------------------------------- communicators */

static uint64_t name_hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static void drain_proxy(void);
static void start_proxy(void);

void npkit_fake_prof_comm_init(ncclComm_t comm) {
  comm->prof = NULL;
  int abi = plugin_acquire();
  if (abi == 0) return;
  struct npkit_fake_prof_comm *pc = calloc(1, sizeof *pc);
  if (pc == NULL) {
    plugin_release();
    return;
  }
  pc->abi = abi;
  pc->comm_id = name_hash(comm->name);
  int nnodes = cfg.net ? comm->nranks : 1;
  ncclResult_t r;
  if (abi == 7)
    r = t7->init(&pc->ctx, pc->comm_id, &event_mask, "", nnodes, comm->nranks, comm->rank, NULL);
  else if (abi >= 5)
    r = t5->init(&pc->ctx, pc->comm_id, &event_mask, "", nnodes, comm->nranks, comm->rank, NULL);
  else if (abi == 4)
    r = t4->init(&pc->ctx, &event_mask, "", pc->comm_id, nnodes, comm->nranks, comm->rank, NULL);
  else
    r = t3->init(&pc->ctx, &event_mask);
  if (r != ncclSuccess && abi == 3) { /* v1-v3: a failed init disables the plugin */
    free(pc);
    plugin_release();
    return;
  }
  /* 2.31.2: a v6 table never gets KernelPhase (profiler_v6.cc clears it after init), and a
   * mask with KernelPhase gets KernelCh too (profiler.cc ncclProfilerEnforceMaskDeps) */
  int m = mask_now();
  if (abi < 7) m &= ~EV_KERNEL_PHASE;
  else if (m & EV_KERNEL_PHASE) m |= EV_KERNEL_CH;
  __atomic_store_n(&event_mask, m, __ATOMIC_RELAXED);
  comm->prof = pc;
  /* NCCL's progress thread starts with the communicator's first connection that needs one, at
   * init (v2.28.9-1 src/proxy.cc proxyConnInit -> proxyProgressInit), not at the first call. */
  start_proxy();
}

void npkit_fake_prof_comm_fini(ncclComm_t comm) {
  struct npkit_fake_prof_comm *pc = comm->prof;
  if (pc == NULL) return;
  drain_proxy(); /* NCCL stops the proxy before it finalizes the plugin */
  if (pc->abi == 3) /* 2.26 finalizes every context; 2.27+ only those that are not NULL */
    t3->finalize(pc->ctx);
  else if (pc->ctx != NULL && pc->abi == 7)
    t7->finalize(pc->ctx);
  else if (pc->ctx != NULL && pc->abi >= 5)
    t5->finalize(pc->ctx);
  else if (pc->ctx != NULL)
    t4->finalize(pc->ctx);
  comm->prof = NULL;
  free(pc);
  plugin_release();
}

/* ---------------------------------------------------------------- API-level events (v5) */

static _Thread_local void *group_api; /* the open GroupApi event of this thread */

/* The launch of the thread's outermost group: its GroupApi gets GroupEndApiStart and leaves the
 * thread.  (A group dropped by an error keeps it until the next launch.) */
void *npkit_fake_prof_take_group(void) {
  void *g = group_api;
  if (g == NULL) return NULL;
  group_api = NULL;
  pthread_mutex_lock(&load_lock);
  if (plugin_abi == 7) t7->record_event_state(g, ST_GROUP_END_API_START, NULL);
  else if (plugin_abi >= 5) t5->record_event_state(g, ST_GROUP_END_API_START, NULL);
  pthread_mutex_unlock(&load_lock);
  return g;
}

/* ... and stops at the end of ncclGroupEnd (group.cc:754). */
void npkit_fake_prof_group_done(void *g) {
  if (g == NULL) return;
  pthread_mutex_lock(&load_lock);
  if (plugin_abi == 7) t7->stop_event(g);
  else if (plugin_abi >= 5) t5->stop_event(g);
  pthread_mutex_unlock(&load_lock);
}

static bool data_kind(npkit_fake_kind k) { return kind_func(k) != NULL; }
static bool p2p_kind(npkit_fake_kind k) { return k == NPKIT_FAKE_K_SEND || k == NPKIT_FAKE_K_RECV; }
static bool as_p2p(npkit_fake_kind k) {
  return p2p_kind(k) || k == NPKIT_FAKE_K_ALLTOALL || k == NPKIT_FAKE_K_GATHER ||
         k == NPKIT_FAKE_K_SCATTER;
}

void npkit_fake_prof_call(npkit_fake_op *op) {
  op->prof_api = NULL;
  struct npkit_fake_prof_comm *pc = op->comm != NULL ? op->comm->prof : NULL;
  if (pc == NULL || pc->abi < 5 || !data_kind(op->kind)) return;
  if (op->comm->nranks == 1 && !p2p_kind(op->kind)) return; /* copied, no task (enqueue.cc:2569) */
  int mask = mask_now();
  if (!(mask & (EV_GROUP_API | EV_COLL_API | EV_P2P_API | EV_KERNEL_LAUNCH | EV_GROUP | EV_COLL |
                EV_P2P | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET_PLUGIN)))
    return;
  descr_v7 d;
  if (group_api == NULL) {
    memset(&d, 0, sizeof d);
    d.type = EV_GROUP_API;
    d.group_api.group_depth = npkit_fake_in_group() ? 2 : 1; /* ncclGroupDepth, prof.cc:223 */
    d.group_api.graph_captured = op->captured;
    group_api = start_event(pc, &d);
    record_state(pc, group_api, ST_GROUP_START_API_STOP, NULL);
  }
  memset(&d, 0, sizeof d);
  d.parent_obj = group_api;
  const char *type = type_name(op->dt);
  /* in 2.28 the API event of an AlltoAll/Gather/Scatter is a P2p one named after its first part */
  if (as_p2p(op->kind)) {
    d.type = EV_P2P_API;
    d.p2p_api.func = op->kind == NPKIT_FAKE_K_RECV ? "Recv" : "Send";
    d.p2p_api.count = op->count;
    d.p2p_api.datatype = type;
    d.p2p_api.stream = op->stream;
    d.p2p_api.graph_captured = op->captured;
    d.p2p_api.user_tag = op->user_tag; /* AlltoAllConfig & co; 0 for Send/Recv (profiler.cc) */
  } else {
    d.type = EV_COLL_API;
    d.coll_api.func = kind_func(op->kind);
    d.coll_api.count = op->count;
    d.coll_api.datatype = type;
    d.coll_api.root = op->root < 0 ? 0 : op->root;
    d.coll_api.stream = op->stream;
    d.coll_api.graph_captured = op->captured;
    d.coll_api.user_tag = op->user_tag; /* info->collConfig.userProfilerTag (2.31.2 profiler.cc) */
  }
  op->prof_api = start_event(pc, &d);
  stop_event(pc, op->prof_api);
}

/* ---------------------------------------------------------------- the tuner's stand-in */

static const char *forced(const char *var, const char *const *names, int n) {
  const char *v = getenv(var);
  if (v == NULL) return NULL;
  for (int i = 0; i < n; i++)
    if (strncasecmp(v, names[i], strlen(names[i])) == 0 &&
        (v[strlen(names[i])] == '\0' || v[strlen(names[i])] == ','))
      return names[i];
  return NULL;
}

static const char *choose_proto(size_t bytes) {
  static const char *const names[] = {"LL128", "LL", "SIMPLE"};
  const char *f = forced("NCCL_PROTO", names, 3);
  if (f != NULL) return f;
  return bytes <= 65536 ? "LL" : bytes <= 1048576 ? "LL128" : "SIMPLE";
}

static const char *choose_algo(npkit_fake_kind k, size_t bytes, int nranks) {
  static const char *const names[] = {"RING", "TREE"};
  const char *f = forced("NCCL_ALGO", names, 2);
  if (f != NULL) return f;
  return k == NPKIT_FAKE_K_ALLREDUCE && nranks > 2 && bytes <= 262144 ? "TREE" : "RING";
}

static int choose_channels(size_t bytes, bool p2p) {
  size_t unit = p2p ? 65536 : 262144;
  size_t n = (bytes + unit - 1) / unit;
  int max = p2p && cfg.nchannels > 2 ? 2 : cfg.nchannels;
  return n < 1 ? 1 : n > (size_t)max ? max : (int)n;
}

/* ---------------------------------------------------------------- launch and completion */

typedef struct task {
  npkit_fake_op *op;
  struct npkit_fake_prof_comm *pc;
  void *handle;
  const char *func;
  size_t count, bytes, traffic;
  ncclDataType_t dt;
  int peer;       /* P2p: peer; Coll: root */
  int nch, first_channel;
  bool p2p, is_send;
  int order;      /* issue order, for the sort */
  struct kch *kch; /* its channels' KernelCh events, between start and stop reports */
} task;

typedef struct launch {
  task *tasks;
  int n, cap;
  uint64_t t0;
  npkit_fake_kernels *kernels; /* the run's, not owned */
} launch;

/* The proxy thread's reports of a task's channels (below). */
static void channels_started(task *t, uint64_t t_start);
static void stalled_send(const launch *l, const task *t);
static void channels_stopped(task *t, uint64_t t_stop);

static uint64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static task *add_task(launch *l) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    task *t = realloc(l->tasks, (size_t)cap * sizeof *t);
    if (t == NULL) return NULL;
    l->tasks = t;
    l->cap = cap;
  }
  task *t = &l->tasks[l->n];
  memset(t, 0, sizeof *t);
  t->order = l->n++;
  return t;
}

static void add_p2p(launch *l, npkit_fake_op *op, bool send, int peer) {
  task *t = add_task(l);
  if (t == NULL) return;
  t->op = op;
  t->pc = op->comm->prof;
  t->p2p = true;
  t->is_send = send;
  t->func = send ? "Send" : "Recv";
  t->count = op->count;
  t->dt = op->dt;
  t->bytes = op->count * op->esize;
  t->peer = peer;
  t->nch = choose_channels(t->bytes, true);
  t->first_channel = (peer * 2) % cfg.nchannels;
}

/* NCCL's sorter: bins of (bytes >> 10) with 4 bins per power of two, largest bin first. */
static int size_bin(size_t traffic) {
  size_t x = traffic >> 10;
  if (x == 0) return 0;
  int e = 63 - __builtin_clzll((unsigned long long)x);
  int frac = e >= 2 ? (int)((x >> (e - 2)) & 3) : (int)((x << (2 - e)) & 3);
  return 1 + e * 4 + frac;
}

static int task_cmp(const void *a, const void *b) {
  const task *x = a, *y = b;
  if (x->pc != y->pc) return x->pc < y->pc ? -1 : 1; /* grouped by communicator */
  if (x->p2p != y->p2p) return x->p2p ? 1 : -1;     /* collectives first */
  if (!x->p2p) {
    int bx = size_bin(x->traffic), by = size_bin(y->traffic);
    if (bx != by) return bx > by ? -1 : 1;
    return x->order > y->order ? -1 : 1; /* pushed at the head of its bin */
  }
  return x->order < y->order ? -1 : 1;
}

/* The stream NCCL launches a plan on: the last distinct stream of its calls (enqueue.cc:2355,
 * a list prepended with each new stream). */
static void *launch_stream(const launch *l, int i, int j) {
  void *stream = NULL;
  for (int k = i; k < j; k++) {
    bool seen = false;
    for (int m = i; m < k; m++) seen |= l->tasks[m].op->stream == l->tasks[k].op->stream;
    if (!seen) stream = l->tasks[k].op->stream;
  }
  return stream;
}

enum { MODE_RUN, MODE_CAPTURE, MODE_REPLAY };

static void *launch_tasks(npkit_fake_op *list, npkit_fake_kernels *kernels, void *group_api_h, int mode);

void *npkit_fake_prof_launch(npkit_fake_op *list, npkit_fake_kernels *kernels, void *group_api_h) {
  return launch_tasks(list, kernels, group_api_h, list != NULL && list->replay ? MODE_REPLAY : MODE_RUN);
}

/* A plan captured into a CUDA graph (v2.28.9-1 src/enqueue.cc): the captured cuLaunchKernelEx
 * gets its KernelLaunch; Group and Coll are emitted now only when the plan has no proxy ops
 * (neither kernel-channel events nor network), without advancing seqNumber (persistent plan,
 * prof.cc:425), else at every replay from the host callback (hostStreamPlanCallback). */
void npkit_fake_prof_capture(npkit_fake_op *list, npkit_fake_kernels *kernels, void *group_api_h) {
  launch *l = launch_tasks(list, kernels, group_api_h, MODE_CAPTURE);
  if (l != NULL) {
    free(l->tasks);
    free(l);
  }
}

static void *launch_tasks(npkit_fake_op *list, npkit_fake_kernels *kernels, void *group_api_h, int mode) {
  launch *l = calloc(1, sizeof *l);
  if (l == NULL) {
    npkit_fake_gpu_launch_comm(kernels, NULL, &(uint64_t){0});
    return NULL;
  }
  l->kernels = kernels;
  for (npkit_fake_op *op = list; op != NULL; op = op->next) {
    ncclComm_t c = op->comm;
    if (c == NULL || c->prof == NULL || !data_kind(op->kind)) continue;
    int n = c->nranks, me = c->rank;
    switch (op->kind) {
    case NPKIT_FAKE_K_SEND: add_p2p(l, op, true, op->root); break;
    case NPKIT_FAKE_K_RECV: add_p2p(l, op, false, op->root); break;
    case NPKIT_FAKE_K_ALLTOALL:
      if (n == 1) break;
      for (int r = 0; r < n; r++) {
        add_p2p(l, op, true, r);
        add_p2p(l, op, false, r);
      }
      break;
    case NPKIT_FAKE_K_GATHER:
      if (n == 1) break;
      add_p2p(l, op, true, op->root);
      for (int r = 0; me == op->root && r < n; r++) add_p2p(l, op, false, r);
      break;
    case NPKIT_FAKE_K_SCATTER:
      if (n == 1) break;
      for (int r = 0; me == op->root && r < n; r++) add_p2p(l, op, true, r);
      add_p2p(l, op, false, op->root);
      break;
    default: {
      if (n == 1) break; /* NCCL copies locally: no task */
      task *t = add_task(l);
      if (t == NULL) break;
      t->op = op;
      t->pc = c->prof;
      t->func = kind_func(op->kind);
      t->count = op->count;
      t->dt = op->dt;
      t->bytes = op->count * op->esize;
      t->peer = op->root < 0 ? 0 : op->root;
      if (op->kind == NPKIT_FAKE_K_ALLGATHER || op->kind == NPKIT_FAKE_K_BROADCAST) {
        t->count = t->bytes; /* NCCL moves these as bytes */
        t->dt = ncclInt8;
      }
      size_t factor = op->kind == NPKIT_FAKE_K_ALLREDUCE ? 2
                      : op->kind == NPKIT_FAKE_K_ALLGATHER || op->kind == NPKIT_FAKE_K_REDUCESCATTER
                          ? (size_t)n
                          : 1;
      t->traffic = t->bytes * factor;
      t->nch = choose_channels(t->bytes, false);
    }
    }
  }
  if (l->n > 1) qsort(l->tasks, (size_t)l->n, sizeof *l->tasks, task_cmp);
  int mask = mask_now();
  bool proxy_ops = (mask & EV_KERNEL_CH) || cfg.net; /* enqueue.cc:236, 511-517 */
  for (int i = 0; i < l->n;) {
    struct npkit_fake_prof_comm *pc = l->tasks[i].pc;
    ncclComm_t comm = l->tasks[i].op->comm;
    int j = i;
    while (j < l->n && l->tasks[j].pc == pc) j++;
    descr_v7 d;
    /* the plan's kernel: KernelLaunch brackets its cuLaunchKernelEx (enqueue.cc:1575-1662) */
    void *kl = NULL;
    if (pc->abi >= 5 && (mask & EV_KERNEL_LAUNCH) && mode != MODE_REPLAY) {
      memset(&d, 0, sizeof d);
      d.type = EV_KERNEL_LAUNCH;
      d.parent_obj = group_api_h;
      d.kernel_launch.stream = launch_stream(l, i, j);
      kl = start_event(pc, &d);
    }
    uint64_t launched;
    npkit_fake_gpu_launch_comm(kernels, comm, &launched);
    stop_event(pc, kl);
    if (mode == MODE_CAPTURE && proxy_ops) { /* the tasks come at the replays */
      i = j;
      continue;
    }
    void *group = NULL;
    if (mask & (EV_GROUP | EV_COLL | EV_P2P | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH |
                EV_NET_PLUGIN)) {
      memset(&d, 0, sizeof d);
      d.type = EV_GROUP;
      group = start_event(pc, &d);
    }
    for (int k = i; k < j; k++) {
      task *t = &l->tasks[k];
      npkit_fake_kind kind = t->op->kind;
      memset(&d, 0, sizeof d);
      d.rank = t->op->comm->rank;
      d.parent_obj = t->op->prof_api;
      if (!t->p2p) {
        /* persistent plans count only with kernel-channel events asked for (prof.cc:425-427) */
        uint64_t seq = pc->seq[kind];
        if (mode == MODE_RUN || (mode == MODE_REPLAY && (mask & EV_KERNEL_CH))) pc->seq[kind]++;
        if (!(mask & (EV_COLL | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET_PLUGIN)) ||
            (pc->abi == 3 && group == NULL))
          continue;
        d.type = EV_COLL;
        d.coll.seq_number = seq;
        d.coll.func = t->func;
        d.coll.send_buff = t->op->sendbuff;
        d.coll.recv_buff = t->op->recvbuff;
        d.coll.count = t->count;
        d.coll.root = t->peer;
        d.coll.datatype = type_name(t->dt);
        d.coll.n_channels = (uint8_t)t->nch;
        const char *proto = choose_proto(t->bytes);
        d.coll.n_warps = strcmp(proto, "SIMPLE") == 0 ? 16 : 8;
        d.coll.algo = choose_algo(kind, t->bytes, t->op->comm->nranks);
        d.coll.proto = proto;
        /* Fault injection, no NCCL behaviour: names no release gives (a quote, a backslash, a
         * control character), standing for a foreign build or a damaged log, for the test that
         * every string the trace takes from NCCL is escaped (test_plugin_modes). */
        if (getenv("FAKE_NCCL_ALGO_NAME") != NULL) d.coll.algo = getenv("FAKE_NCCL_ALGO_NAME");
        if (getenv("FAKE_NCCL_PROTO_NAME") != NULL) d.coll.proto = getenv("FAKE_NCCL_PROTO_NAME");
        d.coll.parent_group = group;
        /* ct->profilerTag (2.31.2 profiler.cc ncclProfilerStartTaskEvents); the fake runs no
         * symmetric kernels: kernelVariant NULL, isSymColl false.  P2p tasks keep 0: stricter
         * than NCCL may be for the parts of an AlltoAllConfig, so the tag must come from the API
         * event. */
        d.coll.user_tag = t->op->user_tag;
      } else {
        if (!(mask & (EV_P2P | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET_PLUGIN)) ||
            (pc->abi == 3 && group == NULL))
          continue;
        d.type = EV_P2P;
        d.p2p.func = t->func;
        d.p2p.buff = t->is_send ? (void *)(uintptr_t)t->op->sendbuff : t->op->recvbuff;
        d.p2p.datatype = type_name(t->dt);
        d.p2p.count = t->count;
        d.p2p.peer = t->peer;
        d.p2p.n_channels = (uint8_t)t->nch;
        d.p2p.parent_group = group;
      }
      t->handle = start_event(pc, &d);
    }
    for (int k = i; k < j; k++) stop_event(pc, l->tasks[k].handle); /* enqueued */
    stop_event(pc, group);
    /* the GPU writes each channel's start stamp when the kernel starts; the proxy reports it */
    uint64_t t_start = npkit_fake_gpu_start_of(kernels, comm);
    for (int k = i; k < j && (mask & EV_KERNEL_CH) && pc->abi >= 3 && mode != MODE_CAPTURE; k++) {
      uint8_t stall = l->tasks[k].op->stall;
      if (stall == NPKIT_FAKE_STALL_KERNEL || stall == NPKIT_FAKE_STALL_BEHIND) continue; /* never starts */
      channels_started(&l->tasks[k], t_start);
    }
    for (int k = i; k < j && cfg.net; k++)
      if (l->tasks[k].op->stall == NPKIT_FAKE_STALL_PROXY) stalled_send(l, &l->tasks[k]);
    i = j;
  }
  npkit_fake_gpu_launch_comm(kernels, NULL, &(uint64_t){0}); /* communicators without a plugin */
  l->t0 = realtime_ns();
  return l;
}

/* ---------------------------------------------------------------- the proxy thread */

/* A channel's KernelCh between its start and its stop report. */
typedef struct kch {
  void *handle;
  uint64_t t_start;
} kch;

typedef struct work {
  struct work *next;
  struct npkit_fake_prof_comm *pc;
  void *parent;
  int kind;       /* 0 kernel channel start, 3 its stop, 1 network op, 2 proxy control,
                     4 a network op whose middle send step never completes (fake_stall.c) */
  int channel, peer, is_send;
  int rank;
  bool p2p;                 /* of a P2p task */
  uint64_t t_start, t_stop; /* host times the GPU wrote the stamps */
  size_t bytes;
  kch *k;
} work;

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static work *q_head, *q_tail;
static int q_busy;
static bool proxy_started;

#define NET_CHUNK 65536

/* NCCL's proxy polls the stamps the GPU writes into host memory (transport/profiler.cc:21-49):
 * it cannot report one before it exists. */
static void wait_until(uint64_t host_ns) {
  uint64_t now = realtime_ns();
  if (now >= host_ns) return;
  uint64_t ns = host_ns - now;
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  nanosleep(&ts, NULL);
}

/* rank is 0 in KernelCh descriptors (prof.cc:590-603: only type, parent, channel and pTimer). */
static void run_kernel_ch_start(const work *w) {
  wait_until(w->t_start);
  descr_v7 d;
  memset(&d, 0, sizeof d);
  d.type = EV_KERNEL_CH;
  d.parent_obj = w->parent;
  d.kernel_ch.channel_id = (uint8_t)w->channel;
  d.kernel_ch.p_timer = npkit_fake_gpu_timer(w->t_start);
  w->k->handle = start_event(w->pc, &d);
}

/* v7's KernelPhase events of a channel, fired before its KernelCh stop (2.31.2 profiler.cc
 * profilerFireKernelPhaseEvents, from profilerProgressOps): the GPU stamps BEGIN, AFTER_OPEN (the
 * initial sync done), BEFORE_CLOSE (the compute done) and END in RunWorkBatch::run
 * (src/device/common.h); phase i covers stamps i..i+1, parent the KernelCh, stop with
 * KernelPhaseStop and the end stamp in kernelCh.pTimer.  Here the syncs take 5 % each.  P2p tasks
 * get none: their stamps come from the collective path only, and without AFTER_OPEN and
 * BEFORE_CLOSE NCCL fires nothing. */
static void run_kernel_phases(const work *w) {
  static const char *const names[] = {"initial_sync", "compute", "final_sync"};
  if (w->pc->abi < 7 || w->p2p || !(mask_now() & EV_KERNEL_PHASE) || w->k->handle == NULL) return;
  uint64_t t0 = w->k->t_start, t3 = w->t_stop, sync = (t3 - t0) / 20;
  uint64_t ts[4] = {t0, t0 + sync, t3 - sync, t3};
  for (int i = 0; i < 3; i++) {
    if (ts[i] == ts[i + 1]) continue; /* zero-length phases are skipped */
    descr_v7 d;
    memset(&d, 0, sizeof d);
    d.type = EV_KERNEL_PHASE;
    d.parent_obj = w->k->handle;
    d.kernel_phase.channel_id = (uint8_t)w->channel;
    d.kernel_phase.phase_id = (uint8_t)i;
    d.kernel_phase.phase_name = names[i];
    d.kernel_phase.p_timer = npkit_fake_gpu_timer(ts[i]);
    void *h = start_event(w->pc, &d);
    args_v4 a;
    memset(&a, 0, sizeof a);
    a.kernel_ch.p_timer = npkit_fake_gpu_timer(ts[i + 1]);
    record_state(w->pc, h, ST_KERNEL_PHASE_STOP, &a);
    stop_event(w->pc, h);
  }
}

static void run_kernel_ch_stop(const work *w) {
  wait_until(w->t_stop);
  run_kernel_phases(w);
  args_v4 a;
  memset(&a, 0, sizeof a);
  a.kernel_ch.p_timer = npkit_fake_gpu_timer(w->t_stop);
  record_state(w->pc, w->k->handle, ST_KERNEL_CH_STOP, &a);
  stop_event(w->pc, w->k->handle);
  free(w->k);
}



/* A network op's steps up to `stop_at` (all of them when it is nsteps): each with NCCL's states
 * (v2.28.9-1 src/transport/net.cc sendProxyProgress / recvProxyProgress).  With stop_at < nsteps
 * (FAKE_NCCL_STALL=proxy) step stop_at is posted (SendGPUWait, SendPeerWait, SendWait: isend
 * issued) and neither it nor the op is ever stopped: ncclNet->test never says it is done. */
static void run_net_steps(const work *w, int stop_at) {
  int nsteps = (int)((w->bytes + NET_CHUNK - 1) / NET_CHUNK);
  descr_v7 d;
  memset(&d, 0, sizeof d);
  d.type = EV_PROXY_OP;
  d.parent_obj = w->parent;
  d.rank = w->rank;
  d.proxy_op.pid = my_pid;
  d.proxy_op.channel_id = (uint8_t)w->channel;
  d.proxy_op.peer = w->peer;
  d.proxy_op.n_steps = nsteps;
  d.proxy_op.chunk_size = NET_CHUNK;
  d.proxy_op.is_send = w->is_send;
  void *op = start_event(w->pc, &d);
  record_state(w->pc, op, ST_OP_IN_PROGRESS, NULL);
  size_t done = 0, prev = 0;
  for (int s = 0; s < nsteps; s++) {
    size_t size = w->bytes - done < NET_CHUNK ? w->bytes - done : NET_CHUNK;
    void *step = NULL;
    if (mask_now() & (EV_PROXY_STEP | EV_NET_PLUGIN)) {
      memset(&d, 0, sizeof d);
      d.type = EV_PROXY_STEP;
      d.parent_obj = op;
      d.rank = w->rank;
      d.proxy_step.step = s;
      step = start_event(w->pc, &d);
    }
    args_v4 a;
    memset(&a, 0, sizeof a);
    if (w->is_send) {
      a.proxy_step.trans_size = prev; /* still the previous step's, as in NCCL */
      record_state(w->pc, step, ST_SEND_GPU_WAIT, &a);
      record_state(w->pc, step, ST_SEND_PEER_WAIT, &a);
      a.proxy_step.trans_size = size;
      record_state(w->pc, step, ST_SEND_WAIT, &a);
    } else {
      a.proxy_step.trans_size = prev;
      record_state(w->pc, step, ST_RECV_WAIT, &a);
      a.proxy_step.trans_size = size;
      record_state(w->pc, step, ST_RECV_FLUSH_WAIT, &a);
      record_state(w->pc, step, ST_RECV_GPU_WAIT, &a);
    }
    if (s == stop_at) return; /* posted, never completed */
    done += size;
    prev = size;
    record_op_bytes_v3(w->pc, op, w->is_send, done, s + 1);
    stop_event(w->pc, step);
  }
  stop_event(w->pc, op);
}

static void run_net_op(const work *w) { run_net_steps(w, -1); }

static void run_stalled_net_op(const work *w) {
  int nsteps = (int)((w->bytes + NET_CHUNK - 1) / NET_CHUNK);
  run_net_steps(w, nsteps / 2);
}

static void run_ctrl(struct npkit_fake_prof_comm *pc, int appended) {
  if (!(mask_now() & EV_PROXY_CTRL)) return;
  descr_v7 d;
  memset(&d, 0, sizeof d);
  d.type = EV_PROXY_CTRL;
  void *h = start_event(pc, &d);
  args_v4 a;
  memset(&a, 0, sizeof a);
  a.proxy_ctrl.appended_proxy_ops = appended;
  record_state(pc, h, ST_CTRL_APPEND, &a);
  record_state(pc, h, ST_CTRL_APPEND_END, &a);
  record_state(pc, h, ST_CTRL_ACTIVE, &a);
  stop_event(pc, h);
}

static void run_work(const work *w) {
  switch (w->kind) {
  case 0: run_kernel_ch_start(w); break;
  case 3: run_kernel_ch_stop(w); break;
  case 1: run_net_op(w); break;
  case 4: run_stalled_net_op(w); break;
  default: run_ctrl(w->pc, w->channel); break;
  }
}

static void *proxy_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&q_lock);
  for (;;) {
    while (q_head == NULL) pthread_cond_wait(&q_cond, &q_lock);
    work *w = q_head;
    q_head = w->next;
    if (q_head == NULL) q_tail = NULL;
    q_busy = 1;
    pthread_mutex_unlock(&q_lock);
    run_work(w);
    free(w);
    pthread_mutex_lock(&q_lock);
    q_busy = 0;
    pthread_cond_broadcast(&q_cond);
  }
  return NULL;
}

/* A forked child has no proxy thread (and NCCL does not survive fork): it starts its own. */
static void proxy_forgotten(void) {
  proxy_started = false;
  q_head = q_tail = NULL;
  q_busy = 0;
}

/* q_lock held */
static void start_proxy_locked(void) {
  static bool atfork;
  if (!atfork) {
    atfork = true;
    pthread_atfork(NULL, NULL, proxy_forgotten);
  }
  if (!proxy_started) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, proxy_main, NULL) == 0) {
      proxy_started = true;
      pthread_setname_np(t, "fake-nccl-proxy");
    }
    pthread_attr_destroy(&attr);
  }
}

static void start_proxy(void) {
  pthread_mutex_lock(&q_lock);
  start_proxy_locked();
  pthread_mutex_unlock(&q_lock);
}

static void post(work *w) {
  pthread_mutex_lock(&q_lock);
  start_proxy_locked();
  if (!proxy_started) { /* no thread: the caller's thread plays the proxy */
    pthread_mutex_unlock(&q_lock);
    run_work(w);
    free(w);
    return;
  }
  w->next = NULL;
  if (q_tail != NULL) q_tail->next = w;
  else q_head = w;
  q_tail = w;
  pthread_cond_broadcast(&q_cond);
  pthread_mutex_unlock(&q_lock);
}

static void drain_proxy(void) {
  pthread_mutex_lock(&q_lock);
  while (q_head != NULL || q_busy) pthread_cond_wait(&q_cond, &q_lock);
  pthread_mutex_unlock(&q_lock);
}

static work *new_work(const task *t, int kind, int channel) {
  work *w = calloc(1, sizeof *w);
  if (w == NULL) return NULL;
  w->pc = t->pc;
  w->parent = t->handle;
  w->kind = kind;
  w->channel = channel;
  w->rank = t->op->comm->rank;
  w->p2p = t->p2p;
  return w;
}

/* The task a transfer of its operation belongs to: the collective's, or the P2p part with that
 * peer and direction. */
static const task *task_of(const launch *l, const npkit_fake_op *op, int peer, bool send) {
  for (int i = 0; i < l->n; i++) {
    const task *t = &l->tasks[i];
    if (t->op == op && (!t->p2p || (t->peer == peer && t->is_send == send))) return t;
  }
  return NULL;
}

/* A launch that never completes (fake_stall.c): its channels stay started, or never start. */
void npkit_fake_prof_abandon(void *launch_state) {
  launch *l = launch_state;
  if (l == NULL) return;
  free(l->tasks); /* each task's channel reports (t->kch) stay open for good */
  free(l);
}

/* The first send of the stalled op on the first channel of its task: it never completes. */
static void stalled_send(const launch *l, const task *t) {
  const npkit_fake_op *op = t->op;
  (void)l;
  for (int x = 0; x < op->nxfers; x++) {
    const npkit_fake_xfer *xf = &op->xfers[x];
    if (!xf->is_send || xf->len == 0 || t->handle == NULL || (t->p2p && t->peer != xf->peer)) continue;
    work *w = new_work(t, 4, t->first_channel % 64);
    if (w == NULL) return;
    w->peer = xf->peer;
    w->is_send = 1;
    w->bytes = xf->len / (size_t)(t->nch > 0 ? t->nch : 1) + 1;
    post(w);
    return;
  }
}

void npkit_fake_prof_complete(void *launch_state, ncclResult_t res) {
  launch *l = launch_state;
  if (l == NULL) return;
  uint64_t t1 = realtime_ns();
  int mask = mask_now();
  /* a failed run's kernels end too (the channels report their stop at the failure) */
  for (int i = 0; i < l->n; i++) channels_stopped(&l->tasks[i], t1);
  /* network proxy ops: every transfer, its bytes split over its task's channels */
  int appended = 0;
  struct npkit_fake_prof_comm *last = NULL;
  for (int i = 0; res == ncclSuccess && cfg.net && i < l->n; i++) {
    npkit_fake_op *op = l->tasks[i].op;
    if (i > 0 && l->tasks[i - 1].op == op) continue; /* each operation once */
    if (!(mask & (EV_PROXY_OP | EV_PROXY_STEP | EV_NET_PLUGIN))) break;
    for (int x = 0; x < op->nxfers; x++) {
      const npkit_fake_xfer *xf = &op->xfers[x];
      const task *t = task_of(l, op, xf->peer, xf->is_send);
      if (t == NULL || t->handle == NULL) continue;
      for (int c = 0; c < t->nch; c++) {
        size_t base = xf->len / (size_t)t->nch, rem = xf->len % (size_t)t->nch;
        size_t share = base + ((size_t)c < rem);
        if (share == 0) continue;
        work *w = new_work(t, 1, (t->first_channel + c) % 64);
        if (w == NULL) continue;
        w->peer = xf->peer;
        w->is_send = xf->is_send;
        w->bytes = share;
        post(w);
        appended++;
        last = t->pc;
      }
    }
  }
  if (last != NULL && (mask & EV_PROXY_CTRL)) {
    work *w = calloc(1, sizeof *w);
    if (w != NULL) {
      w->pc = last;
      w->kind = 2;
      w->channel = appended;
      post(w);
    }
  }
  free(l->tasks);
  free(l);
}

static void channels_started(task *t, uint64_t t_start) {
  if (t->handle == NULL || t->nch <= 0) return;
  t->kch = calloc((size_t)t->nch, sizeof *t->kch);
  if (t->kch == NULL) return;
  for (int c = 0; c < t->nch; c++) {
    work *w = new_work(t, 0, (t->first_channel + c) % 64);
    kch *k = malloc(sizeof *k);
    if (w == NULL || k == NULL) {
      free(w);
      free(k);
      continue;
    }
    k->handle = NULL;
    k->t_start = t_start + 100u * (uint64_t)c;
    w->k = k;
    t->kch[c].handle = k; /* holds the report's state until the stop */
    w->t_start = k->t_start;
    post(w);
  }
}

static void channels_stopped(task *t, uint64_t t_stop) {
  if (t->kch == NULL) return;
  for (int c = 0; c < t->nch; c++) {
    kch *k = t->kch[c].handle;
    if (k == NULL) continue;
    work *w = new_work(t, 3, (t->first_channel + c) % 64);
    if (w == NULL) continue; /* the channel's event stays open */
    w->k = k;
    w->t_stop = t_stop + 100u * (uint64_t)c;
    if (w->t_stop < k->t_start) w->t_stop = k->t_start; /* ran shorter than the launch latency */
    post(w);
  }
  free(t->kch);
  t->kch = NULL;
}

#endif
