/* NPKit dumps, as an NCCL built with NPKit's patch for 2.17.1 writes them (microsoft/NPKit v0.2.0,
 * nccl_samples/npkit-for-nccl-2.17.1-1.diff: src/misc/npkit.cc, src/init.cc).
 *
 * With FAKE_NCCL_NPKIT=1 the fake keeps NPKit's state as the patch does: process-global (NpKit's
 * static members) and re-initialised for every communicator.
 *  - NpKit::Init(comm->rank) runs when a communicator is set up (devCommSetup, called from
 *    initTransportsRank; here: when its ranks have all joined).  It allocates fresh buffers,
 *    makes them the process's current ones and sets rank_, without freeing or guarding what an
 *    earlier communicator still uses.  The communicator's kernels write into the buffers of its own
 *    Init (devCommSetup copies their address into its device structure), the network proxy into the
 *    process's current ones (NpKit::CollectCpuEvent, net.cc).  So with two communicators alive the
 *    GPU events of the first go to buffers nobody dumps, and the network events of both, from
 *    the second Init on, to the second's.
 *  - NpKit::Dump(NPKIT_DUMP_DIR) then NpKit::Shutdown() run in commDestroySync (no dump but
 *    NCCL's warning "NPKIT_DUMP_DIR is empty" when unset; Shutdown always).  Dump writes the current
 *    buffers under rank_; Shutdown frees them without resetting the pointers.  A later Dump before
 *    the next Init reads freed memory (and the later Shutdown joins a joined thread, which ends
 *    in std::terminate): the fake writes nothing then, and says so with FAKE_NCCL_DEBUG=1.
 *  - commDestroySync is reached as in NCCL v2.17.1-1 src/init.cc: from ncclCommFinalize
 *    (commFinalize, userCalled), from ncclCommDestroy through commReclaim → commFinalize when the
 *    communicator is healthy, not aborted and not finalized, and from commReclaim's loop over the
 *    process's ranks of the communicator ("every comm aborts, commDestroySync should not be
 *    blocked"), run by the last of them to be destroyed or aborted, for every one not finalized.
 *    So ncclCommAbort dumps too (with one rank per process, at once).
 * The files: cpu_events_rank_<r>_channel_<0..31>, the host clock period (1/1000000000),
 * gpu_events_rank_<r>_buf_<0..511> (most of them empty) and gpu_clock_rate_rank_<r>, r = rank_.
 *
 * The events of one operation, which ran from t0 to t1 (CLOCK_REALTIME ns), with d = t1 - t0:
 *  - GPU buffers 0 and 1 (send/recv: 0 and 16, as NPKit numbers them per block): TIME_SYNC_CPU
 *    with t0 as host clock ticks (ns), TIME_SYNC_GPU with the SM clock at t0, then ENTRY/EXIT pairs
 *    at fixed fractions of d (AllReduce: ALL_REDUCE_RING over [1/16, 15/16] holding
 *    ALL_REDUCE_RING_SEND [2/16, 4/16], ALL_REDUCE_RING_RECV_REDUCE_SEND [5/16, 9/16] (more than 2
 *    ranks) and ALL_REDUCE_RING_DIRECT_RECV [10/16, 14/16], and PRIM_LL_DATA_PROCESS [3/16, 6/16],
 *    which overlaps the send without nesting in it; other collectives: COPY_SEND holding
 *    DIRECT_RECV; send/recv: SEND_RECV_SEND or SEND_RECV_RECV holding SEND or RECV).  SM clock
 *    ticks are G0 + (ns - E) × kHz / 10^6, rounded down (E: the first operation's t0, G0: 5×10^9 +
 *    10^6 × rank), kHz = FAKE_NCCL_NPKIT_KHZ (1410000).  Sizes are the operation's bytes (the
 *    steps: a share of them); the inner EXITs' rsvd is 1000 + buffer.
 *  - CPU channels 0 and 1: the first 8 transfers j of the operation alternate between them as
 *    NET_SEND or NET_RECV pairs of the transfer's bytes, nested around the middle of the operation
 *    (ENTRY at t0 + d(j+1)/(2m+2), EXIT at t1 - d(j+1)/(2m+2), m transfers), each with a proxy slot
 *    counted per channel modulo 8 in rsvd; operations follow each other in the order they ended.
 * FAKE_NCCL_NPKIT_SYNC=0 leaves the TIME_SYNC events out (a build without
 * -DENABLE_NPKIT_EVENT_TIME_SYNC_*); FAKE_NCCL_NPKIT_LOSE=1 loses the last operation's outermost
 * EXIT on GPU buffer 0 and the first NET_RECV ENTRY of the buffers, as a full buffer would. */
#include "fake_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_BUFFERS 512
#define CPU_CHANNELS 32
#define MAX_OPS 8192 /* operations kept per communicator: NPKit's buffers are finite too */
#define OP_XFERS 8   /* transfers per operation shown on the CPU channels */
#define EV_MAX 64    /* events of one operation on one buffer or channel */

/* Event ids of NPKit's patch for NCCL 2.17.1. */
enum {
  EV_ALL_REDUCE_RING_ENTRY = 0x1,
  EV_COPY_SEND_ENTRY = 0x7,
  EV_DIRECT_RECV_ENTRY = 0xB,
  EV_RECV_ENTRY = 0x15,
  EV_SEND_ENTRY = 0x1F,
  EV_PRIM_LL_DATA_PROCESS_ENTRY = 0x29,
  EV_NET_SEND_ENTRY = 0x2F,
  EV_NET_RECV_ENTRY = 0x31,
  EV_TIME_SYNC_GPU = 0x33,
  EV_TIME_SYNC_CPU = 0x34,
  EV_ALL_REDUCE_RING_SEND_ENTRY = 0x35,
  EV_ALL_REDUCE_RING_RECV_REDUCE_SEND_ENTRY = 0x37,
  EV_ALL_REDUCE_RING_DIRECT_RECV_ENTRY = 0x3D,
  EV_SEND_RECV_SEND_ENTRY = 0x4B,
  EV_SEND_RECV_RECV_ENTRY = 0x4D,
}; /* each EXIT is its ENTRY + 1 */

typedef struct npk_settings {
  int on;
  int sync;
  int lose;
  uint64_t khz;
} npk_settings;

typedef struct npk_xfer {
  uint64_t len;
  int is_send;
} npk_xfer;

typedef struct npk_op {
  npkit_fake_kind kind;
  uint64_t bytes, t0, t1;
  int nxfers;
  npk_xfer xfers[OP_XFERS];
} npk_op;

typedef struct npk_ops {
  npk_op *v;
  size_t n, cap;
} npk_ops;

/* What one NpKit::Init allocated. */
typedef struct npk_bufs {
  int refs;          /* the communicator that captured them; the process while they are current */
  bool freed;        /* NpKit::Shutdown freed them: nothing is written any more */
  int rank, nranks;  /* of the communicator whose Init allocated them */
  npk_ops gpu;       /* that communicator's operations, from its kernels */
  npk_ops cpu;       /* operations whose network events the proxy wrote here */
} npk_bufs;

/* The ranks of one communicator in this process: commReclaim's intraComm0, intraRanks and
 * finalizeRankCnt (v2.17.1-1 src/init.cc). */
typedef struct npk_intra {
  struct npk_intra *next;
  char name[NPKIT_FAKE_NAME_MAX];
  int ranks, reclaimed, unsynced;
} npk_intra;

struct npkit_fake_npkit_comm {
  npk_bufs *bufs;    /* the buffers of its Init, which its kernels keep writing into */
  npk_intra *intra;  /* NULL once reclaimed */
  bool synced;       /* commDestroySync ran (NCCL's finalizeCalled) */
};

typedef struct npk_event {
  uint64_t ts;
  uint32_t size, rsvd;
  uint8_t id;
  uint16_t order; /* ties keep the order of creation */
} npk_event;

static npk_settings cfg;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t epoch_ns; /* E: the first operation's t0 */

/* NpKit's static members; `lock` stands for the ordering NCCL's own locks give. */
static struct {
  pthread_mutex_t lock;
  npk_bufs *cur;     /* the buffers the static pointers point to (freed ones too, after Shutdown) */
  int rank;          /* rank_ */
  bool live;         /* Init ran since the last Shutdown */
  npk_intra *intra;
} npk = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, false, NULL};

static void read_settings(void) {
  const char *m = getenv("FAKE_NCCL_NPKIT");
  cfg.on = m != NULL && strcmp(m, "1") == 0;
  const char *s = getenv("FAKE_NCCL_NPKIT_SYNC");
  cfg.sync = s == NULL || strcmp(s, "0") != 0;
  const char *l = getenv("FAKE_NCCL_NPKIT_LOSE");
  cfg.lose = l != NULL && strcmp(l, "1") == 0;
  const char *k = getenv("FAKE_NCCL_NPKIT_KHZ");
  cfg.khz = k != NULL ? strtoull(k, NULL, 10) : 0;
  if (cfg.khz < 1000 || cfg.khz > 10000000) cfg.khz = 1410000;
}

static const npk_settings *settings(void) {
  pthread_once(&cfg_once, read_settings);
  return &cfg;
}

static bool is_data(npkit_fake_kind k) { return k >= NPKIT_FAKE_K_ALLREDUCE && k <= NPKIT_FAKE_K_RECV; }

static void release(npk_bufs *b) {
  if (b == NULL || --b->refs > 0) return;
  free(b->gpu.v);
  free(b->cpu.v);
  free(b);
}

/* ---- NpKit::Init, per communicator ---- */

void npkit_fake_npkit_init(ncclComm_t comm) {
  if (!settings()->on) return;
  struct npkit_fake_npkit_comm *h = calloc(1, sizeof *h);
  npk_bufs *b = calloc(1, sizeof *b);
  if (h == NULL || b == NULL) {
    free(h);
    free(b);
    return;
  }
  b->refs = 2;
  b->rank = comm->rank;
  b->nranks = comm->nranks;
  h->bufs = b;
  pthread_mutex_lock(&npk.lock);
  if (comm->npkit != NULL) { /* set up once */
    pthread_mutex_unlock(&npk.lock);
    free(h);
    free(b);
    return;
  }
  release(npk.cur); /* not freed by NpKit: the communicator that captured them still writes there */
  npk.cur = b;
  npk.rank = comm->rank;
  npk.live = true;
  npk_intra *g = npk.intra;
  while (g != NULL && strcmp(g->name, comm->name) != 0) g = g->next;
  if (g == NULL && (g = calloc(1, sizeof *g)) != NULL) {
    snprintf(g->name, sizeof g->name, "%s", comm->name);
    g->next = npk.intra;
    npk.intra = g;
  }
  if (g != NULL) {
    g->ranks++;
    g->unsynced++;
  }
  h->intra = g;
  comm->npkit = h;
  pthread_mutex_unlock(&npk.lock);
}

/* ---- recording ---- */

static void keep(npk_ops *l, const npkit_fake_op *op, uint64_t t0, uint64_t t1) {
  if (l->n == MAX_OPS) return;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    npk_op *v = realloc(l->v, cap * sizeof *v);
    if (v == NULL) return;
    l->v = v;
    l->cap = cap;
  }
  npk_op *o = &l->v[l->n++];
  memset(o, 0, sizeof *o);
  o->kind = op->kind;
  o->bytes = (uint64_t)op->count * op->esize;
  o->t0 = t0;
  o->t1 = t1;
  for (int i = 0; i < op->nxfers && o->nxfers < OP_XFERS; i++)
    o->xfers[o->nxfers++] = (npk_xfer){op->xfers[i].len, op->xfers[i].is_send};
}

void npkit_fake_npkit_record(const npkit_fake_op *list, uint64_t t0_ns) {
  if (!settings()->on) return;
  uint64_t expected = 0, t1 = npkit_fake_gpu_now();
  atomic_compare_exchange_strong(&epoch_ns, &expected, t0_ns);
  pthread_mutex_lock(&npk.lock);
  /* The operations of one communicator in a run share its time, one after the other. */
  for (const npkit_fake_op *op = list; op != NULL; op = op->next) {
    if (op->comm == NULL || op->comm->npkit == NULL || !is_data(op->kind)) continue;
    int k = 0, nk = 0;
    for (const npkit_fake_op *o = list; o != NULL; o = o->next) {
      if (o->comm != op->comm || !is_data(o->kind)) continue;
      if (o == op) k = nk;
      nk++;
    }
    uint64_t d = t1 > t0_ns ? t1 - t0_ns : 0;
    uint64_t a = t0_ns + d * (uint64_t)k / (uint64_t)nk, b = t0_ns + d * (uint64_t)(k + 1) / (uint64_t)nk;
    npk_bufs *own = op->comm->npkit->bufs;
    if (!own->freed) keep(&own->gpu, op, a, b);
    if (npk.live) keep(&npk.cur->cpu, op, a, b);
  }
  pthread_mutex_unlock(&npk.lock);
}

void npkit_fake_npkit_free(ncclComm_t comm) {
  pthread_mutex_lock(&npk.lock);
  struct npkit_fake_npkit_comm *h = comm->npkit;
  comm->npkit = NULL;
  if (h != NULL) release(h->bufs);
  pthread_mutex_unlock(&npk.lock);
  free(h);
}

/* ---- the dump ---- */

static uint64_t gpu_tick(uint64_t ns, int rank) {
  uint64_t e = atomic_load(&epoch_ns), khz = settings()->khz;
  uint64_t d = ns > e ? ns - e : 0;
  return 5000000000ull + 1000000ull * (uint64_t)rank + d / 1000000 * khz + d % 1000000 * khz / 1000000;
}

static void add(npk_event *ev, int *n, uint8_t id, uint32_t size, uint32_t rsvd, uint64_t ts) {
  if (*n >= EV_MAX) return;
  ev[*n] = (npk_event){ts, size, rsvd, id, (uint16_t)*n};
  (*n)++;
}

static int cmp_event(const void *a, const void *b) {
  const npk_event *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static void write_events(FILE *f, npk_event *ev, int n, int sort) {
  if (sort) qsort(ev, (size_t)n, sizeof *ev, cmp_event);
  for (int i = 0; i < n; i++) {
    uint64_t lo = (uint64_t)ev[i].id | (uint64_t)ev[i].size << 8 | (uint64_t)(ev[i].rsvd & 0xffffff) << 40;
    unsigned char rec[16];
    for (int b = 0; b < 8; b++) {
      rec[b] = (unsigned char)(lo >> (8 * b));
      rec[8 + b] = (unsigned char)(ev[i].ts >> (8 * b));
    }
    fwrite(rec, 1, sizeof rec, f);
  }
}

static uint64_t at(const npk_op *o, unsigned sixteenths) {
  return o->t0 + (o->t1 - o->t0) * sixteenths / 16;
}

/* ENTRY id over [a, b] sixteenths of the operation, in ticks. */
static void pair(npk_event *ev, int *n, const npk_op *o, int rank, uint8_t entry, unsigned a, unsigned b,
                 uint32_t size, uint32_t rsvd) {
  add(ev, n, entry, size, 0, gpu_tick(at(o, a), rank));
  add(ev, n, (uint8_t)(entry + 1), size, rsvd, gpu_tick(at(o, b), rank));
}

/* The events of operation i on GPU buffer buf; returns the number. */
static int gpu_op_events(const npk_bufs *bufs, size_t i, int buf, npk_event *ev) {
  const npk_op *o = &bufs->gpu.v[i];
  int n = 0, rank = bufs->rank, nranks = bufs->nranks;
  uint32_t size = (uint32_t)(o->bytes > UINT32_MAX ? UINT32_MAX : o->bytes);
  uint32_t part = size / (uint32_t)nranks;
  uint32_t rsvd = 1000u + (uint32_t)buf;
  int lose_exit = settings()->lose && buf == 0 && i + 1 == bufs->gpu.n;
  if (settings()->sync) {
    add(ev, &n, EV_TIME_SYNC_CPU, 0, 0, o->t0); /* host clock ticks are ns */
    add(ev, &n, EV_TIME_SYNC_GPU, 0, 0, gpu_tick(o->t0, rank));
  }
  uint8_t top;
  if (o->kind == NPKIT_FAKE_K_ALLREDUCE) {
    top = EV_ALL_REDUCE_RING_ENTRY;
    pair(ev, &n, o, rank, EV_ALL_REDUCE_RING_SEND_ENTRY, 2, 4, part, rsvd);
    pair(ev, &n, o, rank, EV_PRIM_LL_DATA_PROCESS_ENTRY, 3, 6, part, rsvd);
    if (nranks > 2)
      pair(ev, &n, o, rank, EV_ALL_REDUCE_RING_RECV_REDUCE_SEND_ENTRY, 5, 9,
           part * (uint32_t)(nranks - 2), rsvd);
    pair(ev, &n, o, rank, EV_ALL_REDUCE_RING_DIRECT_RECV_ENTRY, 10, 14, part, rsvd);
  } else if (o->kind == NPKIT_FAKE_K_SEND || o->kind == NPKIT_FAKE_K_RECV) {
    int send = o->kind == NPKIT_FAKE_K_SEND;
    top = send ? EV_SEND_RECV_SEND_ENTRY : EV_SEND_RECV_RECV_ENTRY;
    pair(ev, &n, o, rank, send ? EV_SEND_ENTRY : EV_RECV_ENTRY, 3, 13, size, rsvd);
  } else {
    top = EV_COPY_SEND_ENTRY;
    pair(ev, &n, o, rank, EV_DIRECT_RECV_ENTRY, 4, 12, part, rsvd);
  }
  add(ev, &n, top, size, 0, gpu_tick(at(o, 1), rank));
  if (!lose_exit) add(ev, &n, (uint8_t)(top + 1), size, 0, gpu_tick(at(o, 15), rank));
  /* TIME_SYNC first, then by time */
  int skip = settings()->sync ? 2 : 0;
  qsort(ev + skip, (size_t)(n - skip), sizeof *ev, cmp_event);
  return n;
}

static FILE *open_dump(const char *dir, const char *fmt, int a, int b) {
  char path[4096], name[128];
  snprintf(name, sizeof name, fmt, a, b);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f == NULL) npkit_fake_debug_log("NPKit dump: cannot write %s", path);
  return f;
}

static void write_text(const char *dir, const char *fmt, int rank, unsigned long long v) {
  FILE *f = open_dump(dir, fmt, rank, 0);
  if (f == NULL) return;
  fprintf(f, "%llu", v);
  fclose(f);
}

static void write_cpu_channels(const char *dir, const npk_bufs *bufs, int rank) {
  int lost_recv = !settings()->lose;
  uint32_t slots[2] = {0, 0};
  FILE *files[2] = {NULL, NULL};
  for (int c = 0; c < CPU_CHANNELS; c++) {
    FILE *f = open_dump(dir, "cpu_events_rank_%d_channel_%d", rank, c);
    if (c < 2)
      files[c] = f;
    else if (f != NULL)
      fclose(f);
  }
  for (size_t i = 0; i < bufs->cpu.n; i++) {
    const npk_op *o = &bufs->cpu.v[i];
    npk_event ev[2][EV_MAX];
    int n[2] = {0, 0}, m = o->nxfers;
    uint64_t d = o->t1 - o->t0;
    for (int j = 0; j < m; j++) {
      int c = j % 2;
      uint8_t entry = o->xfers[j].is_send ? EV_NET_SEND_ENTRY : EV_NET_RECV_ENTRY;
      uint32_t len = (uint32_t)(o->xfers[j].len > UINT32_MAX ? UINT32_MAX : o->xfers[j].len);
      uint32_t slot = slots[c]++ % 8;
      uint64_t off = d * (uint64_t)(j + 1) / (uint64_t)(2 * m + 2);
      if (entry == EV_NET_RECV_ENTRY && !lost_recv)
        lost_recv = 1;
      else
        add(ev[c], &n[c], entry, len, slot, o->t0 + off);
      add(ev[c], &n[c], (uint8_t)(entry + 1), len, slot, o->t1 - off);
    }
    for (int c = 0; c < 2; c++)
      if (files[c] != NULL) write_events(files[c], ev[c], n[c], 1);
  }
  for (int c = 0; c < 2; c++)
    if (files[c] != NULL) fclose(files[c]);
}

static void write_gpu_buffers(const char *dir, const npk_bufs *bufs, int rank) {
  for (int b = 0; b < GPU_BUFFERS; b++) {
    FILE *f = open_dump(dir, "gpu_events_rank_%d_buf_%d", rank, b);
    if (f == NULL) continue;
    for (size_t i = 0; i < bufs->gpu.n; i++) {
      int p2p = bufs->gpu.v[i].kind == NPKIT_FAKE_K_SEND || bufs->gpu.v[i].kind == NPKIT_FAKE_K_RECV;
      int first = 0, second = p2p ? 16 : 1; /* block 1's buffer */
      if (b != first && b != second) continue;
      npk_event ev[EV_MAX];
      int n = gpu_op_events(bufs, i, b, ev);
      write_events(f, ev, n, 0);
    }
    fclose(f);
  }
}

/* NpKit::Dump into NPKIT_DUMP_DIR, then NpKit::Shutdown, as commDestroySync does; npk.lock held. */
static void dump_and_shutdown(void) {
  if (!npk.live) {
    npkit_fake_debug_log("NPKit: NpKit::Dump after NpKit::Shutdown reads freed buffers (the patch then "
                         "ends in std::terminate): no dump");
    return;
  }
  const char *dir = getenv("NPKIT_DUMP_DIR");
  if (dir == NULL) {
    npkit_fake_debug_log("NPKIT_DUMP_DIR is empty"); /* NCCL's own warning */
  } else {
    write_cpu_channels(dir, npk.cur, npk.rank);
    write_text(dir, "cpu_clock_period_num_rank_%d", npk.rank, 1);
    write_text(dir, "cpu_clock_period_den_rank_%d", npk.rank, 1000000000ull);
    write_gpu_buffers(dir, npk.cur, npk.rank);
    write_text(dir, "gpu_clock_rate_rank_%d", npk.rank, settings()->khz);
  }
  npk.live = false; /* NpKit::Shutdown: the pointers stay */
  npk.cur->freed = true;
}

/* commDestroySync of one communicator; npk.lock held. */
static void destroy_sync(struct npkit_fake_npkit_comm *h) {
  if (h->synced) return;
  h->synced = true;
  if (h->intra != NULL) h->intra->unsynced--;
  dump_and_shutdown();
}

void npkit_fake_npkit_finalized(ncclComm_t comm) {
  pthread_mutex_lock(&npk.lock);
  if (comm->npkit != NULL) destroy_sync(comm->npkit);
  pthread_mutex_unlock(&npk.lock);
}

void npkit_fake_npkit_reclaimed(ncclComm_t comm, bool aborted_or_failed) {
  pthread_mutex_lock(&npk.lock);
  struct npkit_fake_npkit_comm *h = comm->npkit;
  if (h == NULL) {
    pthread_mutex_unlock(&npk.lock);
    return;
  }
  if (!aborted_or_failed) destroy_sync(h); /* commReclaim → commFinalize(comm, false) */
  npk_intra *g = h->intra;
  h->intra = NULL;
  if (g != NULL && ++g->reclaimed == g->ranks) {
    /* the last rank of the process: commDestroySync for each one not finalized yet */
    for (; g->unsynced > 0; g->unsynced--) dump_and_shutdown();
    npk_intra **p = &npk.intra;
    while (*p != g) p = &(*p)->next;
    *p = g->next;
    free(g);
  }
  pthread_mutex_unlock(&npk.lock);
}
