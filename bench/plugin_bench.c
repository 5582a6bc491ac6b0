/* plugin_bench: what the profiler-plugin path costs the thread NCCL reports on.
 *
 * Loads the library as NCCL loads its profiler plugin (dlopen, dlsym of ncclProfiler_v<ABI>) and
 * drives its table with the events NCCL emits for one collective (v2.28.9-1 src/plugin/profiler.cc;
 * order of src/enqueue.cc and src/group.cc; proxy events as src/transport/net.cc's
 * sendProxyProgress and recvProxyProgress report them):
 *   v5 (2.28), v6 (2.29, v5's layout), v7 (2.31.2, the tag and the kernel variant appended):
 *       GroupApi (+GroupStartApiStop, GroupEndApiStart), CollApi, KernelLaunch, Group, Coll, and
 *       per channel a KernelCh with its GPU start, KernelChStop and stop;
 *   v4 (2.27): Group, Coll and the KernelCh events, no API-level event;
 *   with --steps S > 0, per channel a send and a receive ProxyOp (InProgress), each with S
 *       ProxyStep events carrying NCCL's step states and transSize (send: GPU wait, peer wait,
 *       network wait; receive: posted, flushing, GPU wait), as the fake NCCL's run_net_op does.
 * An event is one start..stop (the states in between included).  All on one thread: NCCL spreads
 * them over the user's, the launching and the proxy (2.31: profiler) thread, each of which pays
 * its share.
 *   plugin_bench LIBRARY [--abi 4|5|6|7] [--collectives N] [--channels C] [--steps S] [--repeats R]
 * Each repeat drives the same events twice, alternately: through the library's table and through a
 * plugin that does nothing (its functions return at once, a handle is a constant), the baseline:
 * the calls themselves and the descriptors NCCL fills for any plugin, which the library cannot
 * remove.
 * Prints on stdout: abi=A channels=C steps=S events_per_collective=E ns_per_collective=X
 * ns_per_event=Y (the calling thread's CPU time added by the library over the baseline, per event,
 * median over the repeats) raw_ns_per_event=R (the library's run, baseline included)
 * baseline_ns_per_event=B other_cpu_ns_per_event=Z (the library's writer thread). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin_abi.h"

static double clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The table of v5, v6 and v7 alike: the same functions; v7's descriptor only appends fields to
 * v5's members, so one v7 descriptor serves all three (v5 and v6 never read past their layout). */
typedef struct table {
  int (*init)(void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes, int nranks, int rank,
              npkit_nccl_logger log);
  int (*start_event)(void *ctx, void **handle, void *descr);
  int (*stop_event)(void *handle);
  int (*record_event_state)(void *handle, int state, npkit_abi_v4_state_args *args);
  int (*finalize)(void *ctx);
} table;

static table table_of(void *sym, long abi) {
  table t;
  if (abi == 4) {
    npkit_abi_table_v4 *v = sym;
    t.init = NULL;
    t.start_event = (int (*)(void *, void **, void *))v->start_event;
    t.stop_event = v->stop_event;
    t.record_event_state = v->record_event_state;
    t.finalize = v->finalize;
  } else {
    npkit_abi_table_v7 *v = sym; /* v5 and v6 tables have the same members */
    t.init = v->init;
    t.start_event = (int (*)(void *, void **, void *))v->start_event;
    t.stop_event = v->stop_event;
    t.record_event_state = v->record_event_state;
    t.finalize = v->finalize;
  }
  return t;
}

/* The baseline: a plugin that does nothing.  noinline and an empty asm keep each a real call
 * through the table, as NCCL's calls of any plugin are. */
#define NULL_HANDLE ((void *)(uintptr_t)0x1000)
__attribute__((noinline)) static int null_start(void *ctx, void **handle, void *descr) {
  __asm__ volatile("" : : "r"(ctx), "r"(descr) : "memory");
  *handle = NULL_HANDLE;
  return 0;
}
__attribute__((noinline)) static int null_stop(void *handle) {
  __asm__ volatile("" : : "r"(handle) : "memory");
  return 0;
}
__attribute__((noinline)) static int null_state(void *handle, int state, npkit_abi_v4_state_args *args) {
  __asm__ volatile("" : : "r"(handle), "r"(state), "r"(args) : "memory");
  return 0;
}
static table null_table = {NULL, null_start, null_stop, null_state, NULL};

static int32_t self_pid; /* NCCL keeps the op's pid with the op; no system call per event */

/* An event descriptor in the layout of the ABI in use: v4's before v5, v7's (the same as v5's and
 * v6's for every event driven here) after. */
typedef struct descr {
  npkit_abi_v4_descr d4;
  npkit_abi_v7_descr d7;
} descr;

static void *descr_new(descr *d, long abi, uint8_t type, void *parent) {
  memset(d, 0, sizeof *d);
  d->d4.type = type;
  d->d4.parent = parent;
  d->d7.type = type;
  d->d7.parent = parent;
  return abi == 4 ? (void *)&d->d4 : (void *)&d->d7;
}

/* One ProxyOp of `steps` steps on channel c, as the proxy thread reports a network transfer. */
static void proxy_op(const table *t, void *ctx, long abi, void *parent, long c, int is_send, long steps) {
  descr dd;
  npkit_abi_proxy_op op = {self_pid, (uint8_t)c, (int)(c % 7) + 1, (int)steps, 65536, is_send};
  void *d = descr_new(&dd, abi, NPKIT_NCCL_EV_PROXY_OP, parent);
  dd.d4.u.proxy_op = op;
  dd.d7.u.proxy_op = op;
  void *h = NULL;
  t->start_event(ctx, &h, d);
  t->record_event_state(h, NPKIT_NCCL_ST_OP_IN_PROGRESS, NULL);
  npkit_abi_v4_state_args a;
  memset(&a, 0, sizeof a);
  for (long s = 0; s < steps; s++) {
    void *st = NULL;
    d = descr_new(&dd, abi, NPKIT_NCCL_EV_PROXY_STEP, h);
    dd.d4.u.proxy_step.step = dd.d7.u.proxy_step.step = (int)s;
    t->start_event(ctx, &st, d);
    a.proxy_step.trans_size = s > 0 ? 65536 : 0; /* the previous step's, as NCCL passes it */
    if (is_send) {
      t->record_event_state(st, NPKIT_NCCL_ST_STEP_SEND_GPU_WAIT, &a);
      t->record_event_state(st, NPKIT_NCCL_ST_STEP_SEND_PEER_WAIT, &a);
      a.proxy_step.trans_size = 65536;
      t->record_event_state(st, NPKIT_NCCL_ST_STEP_SEND_WAIT, &a);
    } else {
      t->record_event_state(st, NPKIT_NCCL_ST_STEP_RECV_WAIT, &a);
      a.proxy_step.trans_size = 65536;
      t->record_event_state(st, NPKIT_NCCL_ST_STEP_RECV_FLUSH_WAIT, &a);
      t->record_event_state(st, NPKIT_NCCL_ST_STEP_RECV_GPU_WAIT, &a);
    }
    t->stop_event(st);
  }
  t->stop_event(h);
}

/* One repeat: n collectives through table t; the calling thread's CPU time per collective. */
static double drive(const table *t, void *ctx, long abi, long n, long nch, long steps, uint64_t *gpu) {
  double t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID); /* the thread's own CPU: other load stays out */
  for (long i = 0; i < n; i++) {
    void *gapi = NULL, *capi = NULL, *kl = NULL, *grp = NULL, *coll = NULL;
    npkit_abi_v7_descr d7;
    descr dd;
    npkit_abi_v4_state_args a;
    memset(&a, 0, sizeof a);
    npkit_abi_v4_coll c4 = {(uint64_t)i, "AllReduce", NULL, NULL, 262144, 0, "ncclFloat32", (uint8_t)nch, 16,
                            "RING", "SIMPLE"};
    if (abi >= 5) {
      memset(&d7, 0, sizeof d7);
      d7.type = NPKIT_NCCL_EV_GROUP_API;
      d7.u.group_api.group_depth = 1;
      t->start_event(ctx, &gapi, &d7);
      t->record_event_state(gapi, NPKIT_NCCL_ST_GROUP_START_API_STOP, NULL);
      memset(&d7, 0, sizeof d7);
      d7.type = NPKIT_NCCL_EV_COLL_API;
      d7.parent = gapi;
      d7.u.coll_api.v5.func = "AllReduce";
      d7.u.coll_api.v5.count = 262144;
      d7.u.coll_api.v5.datatype = "ncclFloat32";
      t->start_event(ctx, &capi, &d7);
      t->stop_event(capi);
      t->record_event_state(gapi, NPKIT_NCCL_ST_GROUP_END_API_START, NULL);
      memset(&d7, 0, sizeof d7);
      d7.type = NPKIT_NCCL_EV_KERNEL_LAUNCH;
      d7.parent = gapi;
      t->start_event(ctx, &kl, &d7);
      t->stop_event(kl);
      memset(&d7, 0, sizeof d7);
      d7.type = NPKIT_NCCL_EV_GROUP;
      t->start_event(ctx, &grp, &d7);
      memset(&d7, 0, sizeof d7);
      d7.type = NPKIT_NCCL_EV_COLL;
      d7.parent = capi;
      d7.u.coll.v5.v4 = c4;
      d7.u.coll.v5.parent_group = grp;
      t->start_event(ctx, &coll, &d7);
      t->stop_event(coll);
      t->stop_event(grp);
      t->stop_event(gapi);
    } else {
      t->start_event(ctx, &grp, descr_new(&dd, abi, NPKIT_NCCL_EV_GROUP, NULL));
      descr_new(&dd, abi, NPKIT_NCCL_EV_COLL, grp);
      dd.d4.u.coll = c4;
      t->start_event(ctx, &coll, &dd.d4);
      t->stop_event(coll);
      t->stop_event(grp);
    }
    for (long c = 0; c < nch; c++) { /* the proxy (2.31: profiler) thread's part */
      void *h = NULL;
      void *d = descr_new(&dd, abi, NPKIT_NCCL_EV_KERNEL_CH, coll);
      dd.d4.u.kernel_ch.channel = dd.d7.u.kernel_ch.channel = (uint8_t)c;
      dd.d4.u.kernel_ch.ptimer = dd.d7.u.kernel_ch.ptimer = *gpu + 1000;
      t->start_event(ctx, &h, d);
      a.kernel_ch.ptimer = *gpu + 50000;
      t->record_event_state(h, NPKIT_NCCL_ST_KERNEL_CH_STOP, &a);
      t->stop_event(h);
      if (steps > 0) {
        proxy_op(t, ctx, abi, coll, c, 1, steps);
        proxy_op(t, ctx, abi, coll, c, 0, steps);
      }
    }
    *gpu += 100000;
  }
  return (clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)n;
}

int main(int argc, char **argv) {
  long n = 200000, reps = 5, abi = 5, nch = 16, steps = 0;
  if (argc < 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: plugin_bench LIBRARY [--abi 4|5|6|7] [--collectives N] [--channels C] [--steps S] "
                    "[--repeats R]\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    long v = atol(argv[i + 1]);
    if (!strcmp(argv[i], "--abi")) abi = v;
    else if (!strcmp(argv[i], "--collectives")) n = v;
    else if (!strcmp(argv[i], "--channels")) nch = v;
    else if (!strcmp(argv[i], "--steps")) steps = v;
    else if (!strcmp(argv[i], "--repeats")) reps = v;
    else return 2;
  }
  if (abi < 4 || abi > 7 || n < 1 || nch < 1 || nch > 64 || steps < 0 || steps > 1024 || reps < 1 || reps > 64)
    return 2;
  self_pid = (int32_t)getpid();
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "plugin_bench: %s\n", dlerror());
    return 1;
  }
  char name[32];
  snprintf(name, sizeof name, "ncclProfiler_v%ld", abi);
  void *sym = dlsym(lib, name);
  if (sym == NULL) {
    fprintf(stderr, "plugin_bench: no %s in %s\n", name, argv[1]);
    return 1;
  }
  table t = table_of(sym, abi);
  int mask = 0;
  void *ctx = NULL;
  if (abi == 4) ((npkit_abi_table_v4 *)sym)->init(&ctx, &mask, "bench", 0x1234, 1, 8, 0, NULL);
  else t.init(&ctx, 0x1234, &mask, "bench", 1, 8, 0, NULL);
  if (ctx == NULL) {
    fprintf(stderr, "plugin_bench: the plugin did not initialise (NPKIT_DISABLE or NPKIT_PLUGIN=0?)\n");
    return 1;
  }
  double per_coll[64], base[64], added[64];
  uint64_t gpu = 1700000000000000000ull;
  long events = (abi >= 5 ? 5 : 2) + nch + (steps > 0 ? 2 * nch * (1 + steps) : 0);
  double other0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - clock_ns(CLOCK_THREAD_CPUTIME_ID);
  for (long r = 0; r < reps; r++) {
    /* The baseline first, then the library: paired, so that a slower stretch of the machine
     * shows in both of a pair.  The baseline's CPU time is the calling thread's alone as well. */
    uint64_t gpu0 = gpu;
    base[r] = drive(&null_table, ctx, abi, n, nch, steps, &gpu0);
    per_coll[r] = drive(&t, ctx, abi, n, nch, steps, &gpu);
    added[r] = per_coll[r] - base[r];
    struct timespec pause = {1, 500000000}; /* the writer streams the repeat to disk */
    nanosleep(&pause, NULL);
  }
  double other = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - clock_ns(CLOCK_THREAD_CPUTIME_ID) - other0;
  qsort(per_coll, (size_t)reps, sizeof per_coll[0], cmp);
  qsort(base, (size_t)reps, sizeof base[0], cmp);
  qsort(added, (size_t)reps, sizeof added[0], cmp);
  double med = added[reps / 2];
  printf("abi=%ld channels=%ld steps=%ld events_per_collective=%ld ns_per_collective=%.1f ns_per_event=%.1f "
         "raw_ns_per_event=%.1f baseline_ns_per_event=%.1f other_cpu_ns_per_event=%.1f\n",
         abi, nch, steps, events, med, med / (double)events, per_coll[reps / 2] / (double)events,
         base[reps / 2] / (double)events, other / (double)(n * reps * events));
  t.finalize(ctx);
  return 0;
}
