/*
 * gen_report_logs OUT_DIR [options]: writes the event logs of a synthetic multi-rank job whose
 * truth is known, for the tests (and the benchmark) of `npkit report` and `npkit merge`.
 *
 * The model: instance k of the world communicator (an AllReduce of the k-th size in the list)
 * starts at true time T.  Rank r arrives at T + late(r) + jitter; the collective runs for
 * t(S) = lat + S / bw after the last arrival, and every rank leaves at that instant plus an exit
 * jitter.  The next instance starts `gap` later.  Each host's clock reads true time + its offset,
 * so the logs of host h carry that offset, which `npkit merge` must find again (as −offset).
 *
 * With --gpu each instance is also a training step on the GPU: a compute kernel of --compute ns
 * on stream 7 from T, and the collective's kernel (named like NCCL's) on stream 13 from
 * T + compute − overlap for t(S); the API call then only launches it (a few µs of CPU), so times
 * must come from the GPU; with --late the late rank launches it that much later and every rank's
 * kernel lasts until t(S) after the late one started.  The step repeats every --period ns.  GPU records use the layout of
 * include/npkit/event_log.h (npkit_ev_gpu); --plugin adds the profiler plugin's Coll tasks with
 * an algorithm and protocol.
 *
 * Options (times in ns):
 *   --ranks N (8)  --hosts H (1)  --offset HOST:NS (repeatable)  --iters N per size (20)
 *   --sizes B1,B2,... (1048576)  --lat NS (5000)  --bw GBPS (100)  --bw-above BYTES:GBPS
 *   --late RANK:NS  --jitter NS (arrival, uniform 0..NS)  --exit-jitter NS (uniform 0..NS)
 *   --gap NS (20000)  --subcomm  --gpu  --compute NS (400000)  --overlap NS (100000)
 *   --period NS (0: no fixed period)  --plugin ALGO:PROTO  --drop RANK:PERCENT  --seed N
 *   --stacks N (0..16: call k comes from call site k mod N, "step_<i>" called from "main")
 *   --marks  (without --gpu: a "forward" mark range from 10 us to 1 us before each arrival; needs
 *            a --gap above 10 us)
 *   --events N  (keeps issuing instances until every log holds at least N events; for benchmarks)
 *   --spread-offsets NS (hosts without --offset get one drawn in -NS..NS)
 *   --unpacked (EVENTS blocks as version 4 wrote them; packed, as the library writes, by default)
 *   --jobs N (threads writing ranks; default: the cores)
 *
 * Up to 16,384 ranks on 2,048 hosts.  Every random value is drawn for its (seed, instance, rank)
 * alone, and the instances' start times and last arrivals are computed first, so that each rank
 * is written on its own (by --jobs threads, a few files open at a time) and the logs are the same
 * bytes whatever the order.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "log_builder.h"
#include "nccl_names.h"

#define MAX_RANKS 16384
#define MAX_HOSTS 2048
#define MAX_SIZES 64
#define BLOCK 4096
#define WORLD_ID 0x1f2e3d4c5b6a7988ull
#define SUB_ID 0x5a5a12345678abcdull
#define T0 1764671234000000000ull
#define NAME_COMPUTE (NPKIT_STRING_ID_GPU_BASE + 1)
#define NAME_NCCL (NPKIT_STRING_ID_GPU_BASE + 2)
#define NAME_MARK 1                     /* the "forward" mark */
#define FRAME_MAIN 2                    /* frames of the call sites: main, then step_<i> from 3 */
#define MAX_STACKS 16
/* --marks: a "forward" range from MARK_LEAD to MARK_TAIL ns before each API-timed arrival */
#define MARK_LEAD 10000.0
#define MARK_TAIL 1000.0

typedef struct opts {
  int ranks, hosts;
  int64_t offset[MAX_HOSTS];
  long iters;
  uint64_t sizes[MAX_SIZES];
  int n_sizes;
  double lat, bw, bw_above_gbps;
  uint64_t bw_above;
  int late_rank;
  double late_ns, jitter, exit_jitter, gap;
  int subcomm, gpu, marks;
  int stacks;
  double compute, overlap, period;
  char algo[16], proto[8];
  int drop_rank;
  double drop_pct;
  uint64_t seed, min_events;
  double spread; /* --spread-offsets: hosts without --offset get one in -NS..NS */
  int unpacked, jobs;
} opts;

/* One rank's log while it is written (by one thread). */
typedef struct rank_out {
  npkit_lb *b;
  npkit_event *ev;
  size_t n;
  uint64_t written, api, gpu, seq_sub, corr;
} rank_out;

/* What every rank needs to know of instance k: computed first, for all ranks, so that each rank
 * is then written on its own. */
typedef struct instance_plan {
  double t;    /* its start (true time) */
  double last; /* the last arrival (without --gpu) */
  double t2;   /* the sub-communicator's instance after it (--subcomm) */
} instance_plan;

static opts o = {.ranks = 8, .hosts = 1, .iters = 20, .n_sizes = 1, .sizes = {1048576}, .lat = 5000, .bw = 100,
                 .late_rank = -1, .gap = 20000, .compute = 400000, .overlap = 100000, .drop_rank = -1, .seed = 1};
static int has_offset[MAX_HOSTS];
static instance_plan *plan;
static uint64_t n_instances;
static double t_end;

/* The random draws: one value per (seed, instance, rank, what), whatever the order in which the
 * ranks are written (splitmix64's finaliser over the four). */
enum { R_ARRIVE = 1, R_EXIT, R_SUB_ARRIVE, R_SUB_EXIT, R_HOST_OFFSET };

static uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static double uniform_at(uint64_t k, int r, int what, double max) {
  uint64_t x = mix(o.seed * 0x9E3779B97F4A7C15ull + 1);
  x = mix(x ^ (k + 0x632be59bd9b4e019ull));
  x = mix(x ^ ((uint64_t)(uint32_t)r * 0x85ebca6bull + (uint64_t)what));
  return max * (double)(x >> 11) / 9007199254740992.0;
}

/* Absolute log time of a true time `rel` ns after T0 on a host with clock offset `off`; true times
 * stay relative in doubles, which would lose nanoseconds at the magnitude of epoch times. */
static uint64_t at(double rel, int64_t off) {
  return (uint64_t)((int64_t)T0 + (int64_t)llround(rel) + off);
}

static int host_of(int r) {
  return (int)((long)r * o.hosts / o.ranks);
}

static int flush_events(rank_out *ro) {
  if (ro->n == 0) return 0;
  int rc = npkit_lb_events(ro->b, ro->ev, ro->n);
  ro->written += ro->n;
  ro->n = 0;
  return rc;
}

static int push(rank_out *ro, const npkit_event *e) {
  ro->ev[ro->n++] = *e;
  return ro->n == BLOCK ? flush_events(ro) : 0;
}

/* Collective time of S bytes: algbw = S / t, with the bottleneck above bw_above. */
static double coll_time(uint64_t s) {
  double gbps = o.bw_above && s > o.bw_above ? o.bw_above_gbps : o.bw;
  return o.lat + (double)s / gbps; /* bytes / (GB/s) = ns */
}

static npkit_event api(unsigned fn, uint64_t start, uint64_t end, uint32_t comm, uint64_t seq, uint64_t bytes) {
  npkit_event e = npkit_lb_api_event(fn, 1, start, end);
  npkit_ev_api *a = &e.u.api;
  a->comm = comm;
  a->count = bytes / 4;
  a->datatype = 7; /* float32 */
  a->redop = 0;
  a->bytes = bytes;
  a->seq = seq;
  a->stream = 0x7f0000000d00ull;
  return e;
}

static npkit_event kernel(uint64_t start, uint64_t end, uint32_t stream, uint32_t name, unsigned fn, uint64_t seq,
                          uint64_t corr, uint64_t bytes) {
  const int recorded = fn != NPKIT_FN_NONE;
  npkit_event e = {.start_ns = start, .end_ns = end, .kind = NPKIT_EV_CUPTI_KERNEL, .func = (uint16_t)fn,
                   .thread = recorded ? 1 : 0};
  npkit_ev_gpu *g = &e.u.gpu;
  g->ext_id = corr;
  g->call_bytes = bytes;
  g->call_seq = recorded ? seq : NPKIT_NO_SEQ;
  g->correlation = (uint32_t)corr;
  g->stream = stream;
  g->comm = recorded ? 1 : 0;
  g->flags = recorded ? NPKIT_GPU_CALL_RECORDED : 0;
  g->x.kernel.name = name;
  g->x.kernel.grid_x = 8;
  g->x.kernel.grid_y = g->x.kernel.grid_z = 1;
  g->x.kernel.block_x = 256;
  g->x.kernel.block_y = g->x.kernel.block_z = 1;
  return e;
}

static double arrival(uint64_t k, int r, double t) {
  return t + (r == o.late_rank ? o.late_ns : 0) + uniform_at(k, r, R_ARRIVE, o.jitter);
}

/* The instances' times, for all ranks: their starts follow from the last arrivals. */
static int make_plan(void) {
  uint64_t want = (uint64_t)o.iters * (uint64_t)o.n_sizes;
  if (o.min_events) { /* rank 0 (host 0: no sub-communicator) has a fixed number of events an instance */
    uint64_t per = o.gpu ? 3 + (o.algo[0] ? 1 : 0) : 1 + (o.marks ? 2 : 0), first = o.algo[0] ? 1 : 0;
    want = o.min_events > first ? (o.min_events - first + per - 1) / per : 0;
  }
  plan = calloc(want ? want : 1, sizeof *plan);
  if (plan == NULL) return -1;
  double t = 1000000;
  for (uint64_t k = 0; k < want; k++) {
    uint64_t s = o.sizes[k % (uint64_t)o.n_sizes];
    double last = 0, d = coll_time(s);
    plan[k].t = t;
    if (!o.gpu)
      for (int r = 0; r < o.ranks; r++) {
        double a = arrival(k, r, t);
        if (a > last) last = a;
      }
    plan[k].last = last;
    double step_end = o.gpu ? t + o.compute - o.overlap + d : last + d;
    t = o.gpu && o.period > 0 ? t + o.period : step_end + o.gap;
    if (o.subcomm && o.hosts > 1) {
      plan[k].t2 = t;
      t = t + o.jitter + coll_time(4096) + o.gap;
    }
  }
  n_instances = want;
  t_end = t;
  return 0;
}

/* Instance k on rank r: its events. */
static int instance(rank_out *ro, int r, uint64_t k) {
  const instance_plan *pl = &plan[k];
  uint64_t s = o.sizes[k % (uint64_t)o.n_sizes];
  double d = coll_time(s), arrive = arrival(k, r, pl->t), last = pl->last;
  int64_t off = o.offset[host_of(r)];
  if (!o.gpu) {
    double end = last + d + uniform_at(k, r, R_EXIT, o.exit_jitter);
    if (o.marks) {
      npkit_event mb, me;
      memset(&mb, 0, sizeof(mb));
      mb.kind = NPKIT_EV_MARK_BEGIN;
      mb.thread = 1;
      mb.u.mark.name = NAME_MARK;
      me = mb;
      me.kind = NPKIT_EV_MARK_END;
      mb.start_ns = mb.end_ns = at(arrive - MARK_LEAD, off);
      me.start_ns = me.end_ns = at(arrive - MARK_TAIL, off);
      if (push(ro, &mb) != 0 || push(ro, &me) != 0) return -1;
    }
    npkit_event e = api(NPKIT_FN_AllReduce, at(arrive, off), at(end, off), 1, k, s);
    if (o.stacks) e.u.api.stack_id = k % (uint64_t)o.stacks + 1;
    if (push(ro, &e) != 0) return -1;
    ro->api++;
  } else {
    /* the step: compute, then the collective's kernel starting `overlap` before compute ends; a
     * late rank launches it --late later, and every rank's kernel runs until the last one came */
    double c0 = pl->t, k0 = c0 + o.compute - o.overlap, kr = k0 + (r == o.late_rank ? o.late_ns : 0);
    double k1 = k0 + (o.late_rank >= 0 ? o.late_ns : 0) + d + uniform_at(k, r, R_EXIT, o.exit_jitter);
    uint64_t corr = ++ro->corr;
    npkit_event e = api(NPKIT_FN_AllReduce, at(kr - 5000, off), at(kr - 2000, off), 1, k, s);
    e.u.api.corr_id = corr;
    if (o.stacks) e.u.api.stack_id = k % (uint64_t)o.stacks + 1;
    npkit_event kc = kernel(at(c0, off), at(c0 + o.compute, off), 7, NAME_COMPUTE, NPKIT_FN_NONE, 0, 0, 0);
    npkit_event kn = kernel(at(kr, off), at(k1, off), 13, NAME_NCCL, NPKIT_FN_AllReduce, k, corr, s);
    if (push(ro, &e) != 0 || push(ro, &kc) != 0 || push(ro, &kn) != 0) return -1;
    ro->api++;
    ro->gpu += 2;
    if (o.algo[0]) {
      npkit_event pt;
      memset(&pt, 0, sizeof(pt));
      pt.kind = NPKIT_EV_PLUGIN_TASK;
      pt.func = NPKIT_FN_AllReduce;
      pt.start_ns = pt.end_ns = at(k0 - 3000, off);
      pt.u.plugin_task.task = k + 1;
      pt.u.plugin_task.nccl_seq = k;
      pt.u.plugin_task.count = s / 4;
      pt.u.plugin_task.ctx = 1;
      pt.u.plugin_task.rank = r;
      pt.u.plugin_task.root = -1;
      pt.u.plugin_task.datatype = 7;
      pt.u.plugin_task.nchannels = 2;
      snprintf(pt.u.plugin_task.algo, sizeof(pt.u.plugin_task.algo), "%s", o.algo);
      memcpy(pt.u.plugin_task.proto, o.proto, sizeof(pt.u.plugin_task.proto));
      snprintf(pt.u.plugin_task.func, sizeof(pt.u.plugin_task.func), "AllReduce");
      if (push(ro, &pt) != 0) return -1;
    }
  }
  if (o.subcomm && o.hosts > 1 && host_of(r) != 0) { /* ranks of hosts 1.. only: a second path between hosts */
    double t2 = pl->t2, sd = coll_time(4096);
    double a = t2 + uniform_at(k, r, R_SUB_ARRIVE, o.jitter), end = t2 + o.jitter + sd + uniform_at(k, r, R_SUB_EXIT, o.exit_jitter);
    npkit_event e = api(NPKIT_FN_AllReduce, at(a, off), at(end, off), 2, ro->seq_sub++, 4096);
    if (push(ro, &e) != 0) return -1;
    ro->api++;
  }
  return 0;
}

static int parse_pair(const char *v, const char *what, double *a, double *b) {
  char *end;
  *a = strtod(v, &end);
  if (end == v || *end != ':') goto bad;
  *b = strtod(end + 1, &end);
  if (*end != '\0') goto bad;
  return 0;
bad:
  fprintf(stderr, "gen_report_logs: %s takes A:B, not '%s'\n", what, v);
  return -1;
}

static int parse(int argc, char **argv) {
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    double x, y;
    if (!strcmp(a, "--gpu")) { o.gpu = 1; continue; }
    if (!strcmp(a, "--subcomm")) { o.subcomm = 1; continue; }
    if (!strcmp(a, "--marks")) { o.marks = 1; continue; }
    if (!strcmp(a, "--unpacked")) { o.unpacked = 1; continue; }
    if (v == NULL) {
      fprintf(stderr, "gen_report_logs: %s needs a value\n", a);
      return -1;
    }
    i++;
    if (!strcmp(a, "--ranks")) o.ranks = atoi(v);
    else if (!strcmp(a, "--hosts")) o.hosts = atoi(v);
    else if (!strcmp(a, "--iters")) o.iters = atol(v);
    else if (!strcmp(a, "--lat")) o.lat = atof(v);
    else if (!strcmp(a, "--bw")) o.bw = atof(v);
    else if (!strcmp(a, "--jitter")) o.jitter = atof(v);
    else if (!strcmp(a, "--exit-jitter")) o.exit_jitter = atof(v);
    else if (!strcmp(a, "--gap")) o.gap = atof(v);
    else if (!strcmp(a, "--compute")) o.compute = atof(v);
    else if (!strcmp(a, "--overlap")) o.overlap = atof(v);
    else if (!strcmp(a, "--period")) o.period = atof(v);
    else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--stacks")) o.stacks = atoi(v);
    else if (!strcmp(a, "--events")) o.min_events = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--spread-offsets")) o.spread = atof(v);
    else if (!strcmp(a, "--jobs")) o.jobs = atoi(v);
    else if (!strcmp(a, "--offset")) {
      if (parse_pair(v, a, &x, &y) || x < 0 || x >= MAX_HOSTS) return -1;
      o.offset[(int)x] = (int64_t)y;
      has_offset[(int)x] = 1;
    } else if (!strcmp(a, "--late")) {
      if (parse_pair(v, a, &x, &y)) return -1;
      o.late_rank = (int)x;
      o.late_ns = y;
    } else if (!strcmp(a, "--drop")) {
      if (parse_pair(v, a, &x, &y)) return -1;
      o.drop_rank = (int)x;
      o.drop_pct = y;
    } else if (!strcmp(a, "--bw-above")) {
      if (parse_pair(v, a, &x, &y)) return -1;
      o.bw_above = (uint64_t)x;
      o.bw_above_gbps = y;
    } else if (!strcmp(a, "--plugin")) {
      const char *c = strchr(v, ':');
      if (c == NULL || c == v || (size_t)(c - v) >= sizeof(o.algo) || strlen(c + 1) >= sizeof(o.proto)) return -1;
      memcpy(o.algo, v, (size_t)(c - v));
      strcpy(o.proto, c + 1);
    } else if (!strcmp(a, "--sizes")) {
      o.n_sizes = 0;
      for (char *p = (char *)v; *p && o.n_sizes < MAX_SIZES;) {
        o.sizes[o.n_sizes++] = strtoull(p, &p, 10);
        if (*p == ',') p++;
        else if (*p) return -1;
      }
    } else {
      fprintf(stderr, "gen_report_logs: unknown option %s\n", a);
      return -1;
    }
  }
  if (o.ranks < 1 || o.ranks > MAX_RANKS || o.hosts < 1 || o.hosts > MAX_HOSTS || o.hosts > o.ranks || o.n_sizes < 1 ||
      o.bw <= 0 || o.stacks < 0 || o.stacks > MAX_STACKS) {
    fprintf(stderr, "gen_report_logs: bad ranks, hosts, sizes or bandwidth\n");
    return -1;
  }
  return 0;
}

static int open_rank(rank_out *ro, const char *dir, int r) {
  char path[4096], host[16];
  snprintf(path, sizeof(path), "%s/npkit_host%d_%d.npkit", dir, host_of(r), 1000 + r);
  snprintf(host, sizeof(host), "host%d", host_of(r));
  npkit_lb_options lo;
  npkit_lb_defaults(&lo);
  lo.clock_base_ns = (uint64_t)((int64_t)T0 + o.offset[host_of(r)]);
  lo.pid = 1000 + r;
  lo.rank = r;
  lo.world_size = o.ranks;
  lo.local_rank = r - (int)((long)host_of(r) * o.ranks / o.hosts);
  lo.host = host;
  lo.packed = !o.unpacked;
  ro->b = npkit_lb_create(path, &lo);
  ro->ev = malloc(BLOCK * sizeof(*ro->ev));
  if (ro->b == NULL || ro->ev == NULL) {
    fprintf(stderr, "gen_report_logs: %s: %s\n", path, strerror(errno));
    return -1;
  }
  npkit_comm_rec c[2] = {{1, 0, WORLD_ID, 0x7f0000001000ull, r, o.ranks, r % 8, NPKIT_FN_CommInitRank, 0, lo.clock_base_ns + 10, "world"}};
  size_t nc = 1;
  if (o.subcomm && host_of(r) > 0) {
    int first = 0;
    while (host_of(first) == 0) first++;
    c[1] = (npkit_comm_rec){2, 1, SUB_ID, 0x7f0000002000ull, r - first, o.ranks - first, r % 8, NPKIT_FN_CommSplit, 0,
                            lo.clock_base_ns + 20, "remote"};
    nc = 2;
  }
  npkit_thread_rec th = {1, 20000 + r, "train"};
  if (npkit_lb_comms(ro->b, c, nc) != 0 || npkit_lb_threads(ro->b, &th, 1) != 0) return -1;
  if (o.marks || o.stacks) { /* the mark's name and the frames of the call sites */
    char text[MAX_STACKS + 2][48];
    const char *texts[MAX_STACKS + 2];
    uint32_t ids[MAX_STACKS + 2];
    size_t lens[MAX_STACKS + 2], n = 0;
    snprintf(text[n], sizeof(text[n]), "forward");
    ids[n++] = NAME_MARK;
    snprintf(text[n], sizeof(text[n]), "main+0x5eb (train+0x1962) train.c:101");
    ids[n++] = FRAME_MAIN;
    for (int i = 0; i < o.stacks; i++) {
      snprintf(text[n], sizeof(text[n]), "step_%d+0x1f (train+0x%x) train.c:%d", i, 0x1300 + 0x40 * i, 40 + i);
      ids[n++] = (uint32_t)(FRAME_MAIN + 1 + i);
    }
    for (size_t i = 0; i < n; i++) {
      texts[i] = text[i];
      lens[i] = strlen(text[i]);
    }
    if (npkit_lb_strings(ro->b, ids, texts, lens, n) != 0) return -1;
  }
  if (o.gpu) {
    static const char *const names[] = {"sgemm_128x64_nn", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
    uint32_t ids[] = {NAME_COMPUTE, NAME_NCCL};
    size_t lens[] = {strlen(names[0]), strlen(names[1])};
    if (npkit_lb_strings(ro->b, ids, names, lens, 2) != 0) return -1;
  }
  if (o.algo[0]) {
    npkit_event e;
    memset(&e, 0, sizeof(e));
    e.kind = NPKIT_EV_PLUGIN_INIT;
    e.start_ns = e.end_ns = lo.clock_base_ns + 30;
    e.u.plugin_comm.ctx = 1;
    e.u.plugin_comm.rank = r;
    e.u.plugin_comm.nranks = o.ranks;
    e.u.plugin_comm.nnodes = o.hosts;
    e.u.plugin_comm.abi = 5;
    if (push(ro, &e) != 0) return -1;
  }
  return 0;
}

static int close_rank(rank_out *ro, int r, double end) {
  if (flush_events(ro) != 0) return -1;
  /* lost events: PERCENT of what the rank tried to record */
  uint64_t dropped = r == o.drop_rank ? (uint64_t)((double)ro->api * o.drop_pct / (100.0 - o.drop_pct) + 0.5) : 0;
  npkit_counter_rec cnt[2] = {{1, NPKIT_SRC_API, ro->api, dropped}, {0, NPKIT_SRC_CUPTI, ro->gpu, 0}};
  if (o.stacks) { /* site i: step_i called from main (ids from 1, as the library numbers them) */
    unsigned char buf[MAX_STACKS * 16];
    size_t len = 0;
    for (int i = 0; i < o.stacks; i++) {
      npkit_stack_rec rec = {(uint32_t)i + 1, 2};
      uint32_t frames[2] = {(uint32_t)(FRAME_MAIN + 1 + i), FRAME_MAIN};
      memcpy(buf + len, &rec, sizeof(rec));
      memcpy(buf + len + sizeof(rec), frames, sizeof(frames));
      len += sizeof(rec) + sizeof(frames);
    }
    if (npkit_lb_raw_block(ro->b, NPKIT_BLOCK_STACK, (uint32_t)o.stacks, buf, (uint32_t)len) != 0) return -1;
  }
  npkit_end_rec er = {.end_ns = at(end, o.offset[host_of(r)]), .events_recorded = ro->written, .events_dropped = dropped};
  int rc = npkit_lb_counters(ro->b, cnt, o.gpu ? 2 : 1) || npkit_lb_end(ro->b, &er) || npkit_lb_close(ro->b);
  free(ro->ev);
  return rc ? -1 : 0;
}

/* The ranks, written by --jobs threads, each taking the next rank not yet taken: a few files
 * open at a time, the same bytes in any order. */
typedef struct pool {
  const char *dir;
  atomic_int next;
  atomic_int failed;
} pool;

static int write_rank(const char *dir, int r) {
  rank_out ro;
  memset(&ro, 0, sizeof ro);
  int rc = open_rank(&ro, dir, r);
  for (uint64_t k = 0; rc == 0 && k < n_instances; k++) rc = instance(&ro, r, k);
  if (ro.b != NULL && close_rank(&ro, r, t_end) != 0) rc = -1;
  else if (ro.b == NULL) free(ro.ev);
  return rc;
}

static void *worker(void *arg) {
  pool *p = arg;
  for (int r; !atomic_load(&p->failed) && (r = atomic_fetch_add(&p->next, 1)) < o.ranks;)
    if (write_rank(p->dir, r) != 0) atomic_store(&p->failed, 1);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: gen_report_logs OUT_DIR [options] (see the comment at the top of the source)\n");
    return 2;
  }
  if (parse(argc, argv) != 0) return 2;
  if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "gen_report_logs: %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  for (int h = 0; h < o.hosts; h++) /* the hosts not given an offset: one in -spread..spread */
    if (!has_offset[h] && o.spread > 0) o.offset[h] = llround(uniform_at(0, h, R_HOST_OFFSET, 2 * o.spread) - o.spread);
  if (make_plan() != 0) {
    fprintf(stderr, "gen_report_logs: out of memory\n");
    return 1;
  }
  int jobs = o.jobs > 0 ? o.jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs < 1) jobs = 1;
  if (jobs > o.ranks) jobs = o.ranks;
  pool p = {argv[1], 0, 0};
  pthread_t *th = calloc((size_t)jobs, sizeof *th);
  int started = 0;
  for (int i = 1; th != NULL && i < jobs; i++)
    if (pthread_create(&th[i], NULL, worker, &p) == 0) started = i;
    else break;
  worker(&p);
  for (int i = 1; i <= started; i++) pthread_join(th[i], NULL);
  free(th);
  free(plan);
  if (atomic_load(&p.failed)) return 1;
  printf("%" PRIu64 " instances\n", n_instances);
  return 0;
}
