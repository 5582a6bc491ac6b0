#include "metrics_source.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "clock.h"
#include "diag.h"
#include "grow.h"
#include "metrics_files.h"
#include "metrics_ops.h"
#include "notes.h"
#include "recorder.h"
#include "signals.h"
#include "state.h"

/* An operation is written once its latest activity is this old: CUPTI hands kernels over a flush
 * period late (NPKIT_FLUSH_MS, twice for a buffer that was being filled), and NCCL's kernel
 * channels come from its own threads through the writer, every flush. */
#define HOLD_EXTRA_NS 1000000000ull
/* An operation without GPU activity whose communicator's GPU work has not gone past it (no GPU
 * timing at all, or a kernel CUPTI keeps back) is written after two intervals, at least this. */
#define LONG_HOLD_MIN_NS 30000000000ull
/* Events waiting for the thread, at most (about 100 MB): beyond, the live metrics stop with a note
 * rather than hold the job's memory. */
#define QUEUE_MAX (1u << 20)

static struct {
  pthread_mutex_t lock;          /* the operations and the identity: the tap and the dumps */
  pthread_cond_t wake;
  unsigned what;                 /* NPKIT_METRICS_* */
  char dir[512];
  uint64_t interval_ns, hold_ns, long_hold_ns;
  int expect_gpu;                /* CUPTI, or NCCL's kernel-channel events, may time operations */
  uint64_t min_bytes;            /* NPKIT_METRICS_MIN_BYTES */
  char slurm_job_id[64];
  int has_slurm;
  /* from attach to detach */
  npkit_log_writer *log;
  npkit_metrics_ops *ops;
  npkit_metrics_prom *prom;
  char host[64];
  int32_t pid, rank, device;
  int failed;                    /* memory ran out: no more dumps (said once) */
  int stop, thread_started;
  pthread_t thread;
  /* for the exit line */
  uint64_t dumps, dump_errors, colls, p2ps, small;
  char last_error[256];
  /* The events of interest the tap copied, folded in by the thread every flush period: the
   * writer only copies them, under a lock of their own, and never waits for a fold or a dump. */
  pthread_mutex_t qlock;
  npkit_event *q, *spare;
  size_t nq, capq, cap_spare;
  int q_over;                    /* the thread fell behind by QUEUE_MAX events: metrics stop */
  uint64_t fold_ns;
} M = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .qlock = PTHREAD_MUTEX_INITIALIZER};

static void configure(const npkit_config *cfg) {
  char err[128];
  if (npkit_metrics_parse(cfg->metrics, &M.what, err, sizeof err) != 0)
    npkit_warn("NPKIT_METRICS='%.64s': %s; no live metrics", cfg->metrics, err);
  snprintf(M.dir, sizeof M.dir, "%s", cfg->metrics_dir[0] != '\0' ? cfg->metrics_dir : cfg->trace_dir);
  M.interval_ns = cfg->metrics_interval_s * 1000000000ull;
  M.expect_gpu = cfg->cupti != NPKIT_CUPTI_OFF || (cfg->plugin && (cfg->plugin_events & NPKIT_PEV_KERNEL));
  M.min_bytes = cfg->metrics_min_bytes;
  M.fold_ns = cfg->flush_ms * 1000000ull;
  M.hold_ns = 2 * cfg->flush_ms * 1000000ull + HOLD_EXTRA_NS;
  M.long_hold_ns = 2 * M.interval_ns > LONG_HOLD_MIN_NS ? 2 * M.interval_ns : LONG_HOLD_MIN_NS;
  const char *slurm = getenv("SLURM_JOB_ID");
  M.has_slurm = slurm != NULL && slurm[0] != '\0';
  if (M.has_slurm) snprintf(M.slurm_job_id, sizeof M.slurm_job_id, "%s", slurm);
}

/* On the appending thread (the writer, the CUPTI drain; a communicator's record on the thread that
 * created it): the events of interest are copied for the thread; communicators and the identity
 * are taken at once.  No note, no log append here (they come back to the tap). */
static void tap(void *ctx, npkit_block_type type, const void *payload, uint32_t count) {
  (void)ctx;
  if (type == NPKIT_BLOCK_EVENTS) {
    const npkit_event *ev = payload;
    pthread_mutex_lock(&M.qlock);
    for (uint32_t i = 0; i < count && !M.q_over; i++) {
      if (!npkit_metrics_ops_wants(&ev[i])) continue;
      if (M.nq == M.capq && (M.nq >= QUEUE_MAX || NPKIT_GROW(M.q, M.capq, M.nq + 1, 4096) != 0)) {
        M.q_over = 1;
        break;
      }
      M.q[M.nq++] = ev[i];
    }
    pthread_mutex_unlock(&M.qlock);
    return;
  }
  if (type != NPKIT_BLOCK_COMM && type != NPKIT_BLOCK_PROCESS) return;
  pthread_mutex_lock(&M.lock);
  if (M.ops != NULL && !M.failed) {
    int rc = 0;
    if (type == NPKIT_BLOCK_COMM) {
      const npkit_comm_rec *c = payload;
      for (uint32_t i = 0; i < count && rc == 0; i++) rc = npkit_metrics_ops_comm(M.ops, &c[i]);
    } else {
      const npkit_process_rec *p = payload;
      if (p->rank >= 0) M.rank = p->rank;
      if (p->device >= 0) M.device = p->device;
    }
    if (rc != 0) M.failed = 1;
  }
  pthread_mutex_unlock(&M.lock);
}

/* The queued events into the operations (on the thread, or at detach). */
static void fold(void) {
  pthread_mutex_lock(&M.qlock);
  npkit_event *batch = M.q;
  size_t n = M.nq, cap = M.capq;
  M.q = M.spare;
  M.capq = M.cap_spare;
  M.nq = 0;
  int over = M.q_over;
  pthread_mutex_unlock(&M.qlock);
  pthread_mutex_lock(&M.lock);
  if (M.ops != NULL && !M.failed && npkit_metrics_ops_events(M.ops, batch, n) != 0) M.failed = 1;
  if (over && !M.failed) {
    M.failed = 1;
    snprintf(M.last_error, sizeof M.last_error, "they fell %u events behind the job and stopped", QUEUE_MAX);
  }
  pthread_mutex_unlock(&M.lock);
  M.spare = batch; /* only the thread, then detach, fold: one at a time */
  M.cap_spare = cap;
}

/* One dump: the operations taken under the lock, the files written outside it (the writer thread
 * must not wait on a disk for the tap).  0, or -1 with the message in M.last_error. */
static int dump(int final) {
  pthread_mutex_lock(&M.lock);
  if (M.ops == NULL || M.failed) {
    int failed = M.failed;
    pthread_mutex_unlock(&M.lock);
    if (failed && M.last_error[0] == '\0') snprintf(M.last_error, sizeof M.last_error, "out of memory");
    return failed ? -1 : 0;
  }
  const npkit_metrics_op *ops;
  size_t n = 0, nc = 0;
  npkit_metrics_comm *comms = NULL;
  int rc = npkit_metrics_ops_take(M.ops, npkit_now_ns(), M.hold_ns, M.long_hold_ns, final, &ops, &n);
  if (rc == 0) { /* a copy: the tap may add communicators once the lock is let go */
    const npkit_metrics_comm *c = npkit_metrics_ops_comms(M.ops, &nc);
    comms = malloc((nc ? nc : 1) * sizeof(*comms));
    if (comms == NULL) rc = -1;
    else if (nc > 0) memcpy(comms, c, nc * sizeof(*comms));
  }
  if (rc != 0) M.failed = 1;
  npkit_metrics_proc proc = {.hostname = M.host, .pid = M.pid, .rank = M.rank, .device = M.device,
                             .slurm_job_id = M.has_slurm ? M.slurm_job_id : NULL, .min_bytes = M.min_bytes};
  pthread_mutex_unlock(&M.lock);
  if (rc != 0) {
    snprintf(M.last_error, sizeof M.last_error, "out of memory");
    return -1;
  }
  /* ops stay valid: only dumps take, and they run one at a time (the thread, then detach) */
  struct timeval tv;
  gettimeofday(&tv, NULL);
  proc.dump_us = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
  npkit_recorder_totals(&proc.events_recorded, &proc.events_dropped);
  proc.dumps = M.dumps + 1;
  rc = npkit_metrics_dump_files(M.dir, M.what, M.prom, &proc, comms, nc, ops, n, M.last_error, sizeof M.last_error);
  if (rc == 0) {
    M.dumps++;
    for (size_t i = 0; i < nc; i++) {
      M.colls += comms[i].coll_new;
      M.p2ps += comms[i].p2p_new;
      M.small += comms[i].coll_small_new + comms[i].p2p_small_new;
    }
  }
  free(comms);
  return rc;
}

static void *metrics_main(void *arg) {
  (void)arg;
  npkit_own_thread_mark();      /* NCCL calls made here are not the job's */
  npkit_signals_mask_thread();  /* the job's signals are not ours to receive */
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  uint64_t next_dump = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + M.interval_ns;
  pthread_mutex_lock(&M.lock);
  while (!M.stop) {
    /* the condition waits on CLOCK_MONOTONIC (attach): a clock set back does not stall it */
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + M.fold_ns;
    if (t > next_dump) t = next_dump;
    struct timespec at = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (!M.stop && pthread_cond_timedwait(&M.wake, &M.lock, &at) != ETIMEDOUT) {
    }
    if (M.stop) break;
    pthread_mutex_unlock(&M.lock);
    fold();
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec >= next_dump) {
      next_dump += M.interval_ns;
      int rc = dump(0);
      if (rc != 0 && M.dump_errors++ == 0) /* one note, not one per interval */
        npkit_note(NPKIT_LEVEL_WARN, "live metrics: %s; the job and its log go on", M.last_error);
    }
    pthread_mutex_lock(&M.lock);
  }
  pthread_mutex_unlock(&M.lock);
  return NULL;
}

static void attach(const npkit_source_log *at) {
  if (M.what == 0) return;
  int e = npkit_mkdirs(M.dir);
  if (e != 0) {
    npkit_note(NPKIT_LEVEL_WARN, "NPKIT_METRICS_DIR '%s': %s; no live metrics", M.dir, strerror(e));
    return;
  }
  const npkit_log_header *h = npkit_logw_header(at->log);
  npkit_metrics_ops *ops = npkit_metrics_ops_new();
  npkit_metrics_prom *prom = (M.what & NPKIT_METRICS_PROMETHEUS) ? npkit_metrics_prom_new() : NULL;
  if (ops == NULL || ((M.what & NPKIT_METRICS_PROMETHEUS) && prom == NULL)) {
    npkit_metrics_ops_free(ops);
    npkit_metrics_prom_free(prom);
    npkit_note(NPKIT_LEVEL_WARN, "live metrics: out of memory; none are written");
    return;
  }
  pthread_mutex_lock(&M.lock);
  snprintf(M.host, sizeof M.host, "%s", h->host[0] != '\0' ? h->host : "unknown");
  M.pid = h->pid;
  M.rank = h->rank;
  M.device = -1;
  M.ops = ops;
  npkit_metrics_ops_expect_gpu(ops, M.expect_gpu);
  npkit_metrics_ops_min_bytes(ops, M.min_bytes);
  M.prom = prom;
  M.log = at->log;
  M.stop = 0;
  pthread_mutex_unlock(&M.lock);
  npkit_logw_set_tap(at->log, tap, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_destroy(&M.wake);
  pthread_cond_init(&M.wake, &ca);
  pthread_condattr_destroy(&ca);
  e = pthread_create(&M.thread, NULL, metrics_main, NULL);
  if (e != 0) {
    npkit_note(NPKIT_LEVEL_WARN, "live metrics: cannot start their thread (%s); only the last dump is written",
               strerror(e));
    return;
  }
  pthread_setname_np(M.thread, "npkit-metrics");
  M.thread_started = 1;
}

/* Every event is in the log now: the thread is stopped and the last dump written, with every
 * operation still waiting for its GPU time. */
static void detach(npkit_log_writer *log) {
  if (M.log == NULL || M.log != log) return;
  if (M.thread_started) {
    pthread_mutex_lock(&M.lock);
    M.stop = 1;
    pthread_cond_signal(&M.wake);
    pthread_mutex_unlock(&M.lock);
    pthread_join(M.thread, NULL);
    M.thread_started = 0;
  }
  npkit_logw_set_tap(log, NULL, NULL);
  fold();
  if (dump(1) != 0 && M.dump_errors++ == 0)
    npkit_note(NPKIT_LEVEL_WARN, "live metrics: the last dump: %s", M.last_error);
  /* the state is freed under the lock: a late append of another thread may still be in the tap */
  pthread_mutex_lock(&M.lock);
  npkit_metrics_ops_free(M.ops);
  npkit_metrics_prom_free(M.prom);
  M.ops = NULL;
  M.prom = NULL;
  M.log = NULL;
  pthread_mutex_unlock(&M.lock);
  pthread_mutex_lock(&M.qlock); /* a late append of another thread may still be in the tap */
  free(M.q);
  free(M.spare);
  M.q = M.spare = NULL;
  M.nq = M.capq = M.cap_spare = 0;
  pthread_mutex_unlock(&M.qlock);
}

static void summary(char *buf, size_t len) {
  if (M.what == 0 || M.dumps + M.dump_errors == 0) {
    buf[0] = '\0';
    return;
  }
  char small[96] = "";
  if (M.small > 0)
    snprintf(small, sizeof small, " (and %llu below NPKIT_METRICS_MIN_BYTES)", (unsigned long long)M.small);
  snprintf(buf, len, "; metrics: %llu dump%s, %llu collectives, %llu sends/receives%s in %s%s",
           (unsigned long long)M.dumps, M.dumps == 1 ? "" : "s", (unsigned long long)M.colls,
           (unsigned long long)M.p2ps, small, M.dir, M.dump_errors ? " (write errors: see the notes)" : "");
}

const npkit_source_ops npkit_source_metrics = {
    .name = "metrics",
    .configure = configure,
    .attach = attach,
    .detach = detach,
    .summary = summary,
};
