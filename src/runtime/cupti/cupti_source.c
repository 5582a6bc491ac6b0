#include "cupti_source.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti_buffers.h"
#include "cupti_clock.h"
#include "cupti_corr.h"
#include "cupti_drain.h"
#include "cupti_hook.h"
#include "cupti_launch_api.h"
#include "cupti_loader.h"
#include "cupti_peers.h"
#include "diag.h"
#include "notes.h"
#include "signals.h"
#include "state.h"

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static int tried;          /* start was attempted */
static int running;        /* CUPTI delivers activity to npkit */
static int ever_ran;
static int finished;
static npkit_log_writer *log_out;
static CUpti_SubscriberHandle subscriber;
static npkit_launch_api_mode launch_api; /* which API records carry the correlation */
static _Atomic int comms_alive;
static _Atomic int exit_flush_registered;

/* The flusher thread: forced flush and drain every NPKIT_FLUSH_MS, or a drain when CUPTI runs out
 * of free buffers. */
static pthread_t flusher;
static int flusher_running;
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flush_cond;
static int flush_stop, flush_wake;

static const CUpti_ActivityKind optional_kinds[] = {
    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET};

static void attach(const npkit_source_log *at) {
  pthread_mutex_lock(&state_lock);
  log_out = at->log;
  pthread_mutex_unlock(&state_lock);
}

/* ---- flushing ---- */

static _Atomic int clock_noted;

/* Says once that CUPTI's clock is another client's (cupti_clock.h). */
static void note_clock(void) {
  npkit_cupti_clock_stats st;
  npkit_cupti_clock_stats_get(&st);
  if (st.foreign && !atomic_exchange(&clock_noted, 1))
    npkit_note(NPKIT_LEVEL_INFO, "CUPTI's records carry another clock than CLOCK_REALTIME (a CUPTI "
               "client registered a timestamp callback, as PyTorch's profiler does with time-stamp-"
               "counter ticks): their times are mapped onto CLOCK_REALTIME");
}

static void drain(npkit_drain_mode mode) {
  npkit_cupti_drain(mode);
  note_clock();
}

/* While the job runs, a default flush: a forced one hands back the records of kernels still
 * running without their times, which are lost (cupti_activity.h of CUDA 13, cuptiActivityFlushAll;
 * on an H200 the periodic forced flush left 25 of 48 NCCL kernels untimed).  A default flush keeps
 * back a buffer with unfinished work in it, and with it correlation records that may belong to
 * the buffers it does hand back: the drain waits for it (cupti_drain.h).  Forced only at the end. */
static void flush_and_drain(int forced) {
  npkit_cupti.ActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  drain(NPKIT_DRAIN_FLUSHED);
}

static void wake_flusher(void) {
  pthread_mutex_lock(&flush_lock);
  flush_wake = 1;
  pthread_cond_signal(&flush_cond);
  pthread_mutex_unlock(&flush_lock);
}

static struct timespec deadline_after(uint64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t ns = (uint64_t)ts.tv_nsec + ms * 1000000ull;
  ts.tv_sec += (time_t)(ns / 1000000000ull);
  ts.tv_nsec = (long)(ns % 1000000000ull);
  return ts;
}

static void *flusher_main(void *arg) {
  (void)arg;
  npkit_own_thread_mark();
  npkit_signals_mask_thread(); /* the job's signals are not ours to receive, but its stop signals */
  pthread_mutex_lock(&flush_lock);
  /* Early drains do not move the next periodic flush: it comes every period however often CUPTI
   * runs short of buffers. */
  struct timespec next = deadline_after(npkit_cfg.flush_ms);
  while (!flush_stop) {
    int rc = 0;
    while (!flush_stop && !flush_wake && rc != ETIMEDOUT)
      rc = pthread_cond_timedwait(&flush_cond, &flush_lock, &next);
    if (flush_stop) break;
    int woken = flush_wake;
    flush_wake = 0;
    pthread_mutex_unlock(&flush_lock);
    if (woken && rc != ETIMEDOUT) {
      drain(NPKIT_DRAIN_EARLY); /* buffers are short: recycle the completed ones */
    } else {
      flush_and_drain(0);
      next = deadline_after(npkit_cfg.flush_ms);
    }
    pthread_mutex_lock(&flush_lock);
  }
  pthread_mutex_unlock(&flush_lock);
  return NULL;
}

static void start_flusher(void) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&flush_cond, &ca);
  pthread_condattr_destroy(&ca);
  int e = pthread_create(&flusher, NULL, flusher_main, NULL);
  if (e != 0) {
    npkit_warn("cannot start the GPU flush thread (%s): GPU events are written at the end only",
               strerror(e));
    return;
  }
  pthread_setname_np(flusher, "npkit-cupti");
  flusher_running = 1;
}

static void stop_flusher(void) {
  if (!flusher_running) return;
  pthread_mutex_lock(&flush_lock);
  flush_stop = 1;
  pthread_cond_signal(&flush_cond);
  pthread_mutex_unlock(&flush_lock);
  pthread_join(flusher, NULL);
  flusher_running = 0;
}

/* At exit, before the CUDA runtime's own exit handlers: registered at CUPTI's first request for a
 * buffer, which comes after CUDA has initialised (and registered them), so it runs earlier. */
static void exit_flush(void) {
  pthread_mutex_lock(&state_lock);
  int on = running && !finished;
  pthread_mutex_unlock(&state_lock);
  if (on) flush_and_drain(1);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  if (!atomic_exchange(&exit_flush_registered, 1)) atexit(exit_flush);
  npkit_cupti_buffer_requested(buffer, size, max_records);
}

/* ---- graph nodes created while a wrapped call captures a stream ---- */

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata) {
  (void)userdata;
  if (domain != CUPTI_CB_DOMAIN_RESOURCE || cbdata == NULL || npkit_cupti.GetGraphNodeId == NULL) return;
  const CUpti_ResourceData *r = cbdata;
  const CUpti_GraphData *g = r->resourceDescriptor;
  if (g == NULL) return;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    uint64_t ext = npkit_cupti_corr_current();
    uint64_t id = 0;
    if (ext != 0 && npkit_cupti.GetGraphNodeId(g->node, &id) == CUPTI_SUCCESS)
      npkit_cupti_node_created(id, ext);
  } else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    uint64_t orig = 0, id = 0;
    if (npkit_cupti.GetGraphNodeId(g->originalNode, &orig) == CUPTI_SUCCESS &&
        npkit_cupti.GetGraphNodeId(g->node, &id) == CUPTI_SUCCESS)
      npkit_cupti_node_cloned(orig, id);
  }
}

/* ---- start ---- */

static void off(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void off(const char *fmt, ...) {
  char why[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  /* NCCL's own timings of its kernels do not need CUPTI (plugin_core.c). */
  npkit_note(NPKIT_LEVEL_INFO, "GPU timing is off: %s; %s", why,
             npkit_cfg.plugin ? "no kernels, copies or memsets are recorded (NCCL's profiler plugin "
                                "still times NCCL's own kernels where NCCL supports it)"
                              : "the trace has CPU events only");
}

static void in_child(void) {
  /* CUPTI does not survive fork: the child must not push or flush. */
  atomic_store(&npkit_cupti_active, 0);
  running = 0;
  flusher_running = 0;
}

/* CUPTI's versions before CUDA 12.9 (API 27) could crash on a NULL buffer. */
static int cupti_accepts_null_buffer(uint32_t v) { return v >= 27; }

/* Why a CUPTI call may have failed, for the message: " (...)" or "". */
static const char *failure_hint(CUptiResult r, char *buf, size_t len) {
  int v = npkit_cuda_driver_version();
  if (!npkit_cuda_driver_loaded())
    snprintf(buf, len, " (no CUDA driver is loaded in this process: no GPU?)");
  else if (r == CUPTI_ERROR_NOT_INITIALIZED && v > 0)
    snprintf(buf, len, " (a CUPTI newer than the CUDA driver, which is for CUDA %d.%d?)", v / 1000,
             v % 1000 / 10);
  else if (r == CUPTI_ERROR_NOT_INITIALIZED)
    snprintf(buf, len, " (a CUPTI newer than the CUDA driver?)");
  else
    buf[0] = '\0';
  return buf;
}

typedef enum start_result {
  START_OK,
  START_BUSY,   /* another client holds CUPTI */
  START_FAILED, /* this copy cannot work here: the next one may */
} start_result;

/* Subscribes to the copy in npkit_cupti and lets it trace kernels into npkit's buffers. */
static start_result start_copy(char *why, size_t whylen) {
  char res[96], hint[128];
  CUptiResult r = npkit_cupti.Subscribe(&subscriber, on_callback, NULL);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return START_BUSY;
  if (r != CUPTI_SUCCESS) {
    snprintf(why, whylen, "CUPTI (%.200s) cannot start: cuptiSubscribe returned %s%s", npkit_cupti.path,
             npkit_cupti_result(r, res, sizeof res), failure_hint(r, hint, sizeof hint));
    return START_FAILED;
  }
  npkit_cupti_bufs_config((size_t)npkit_cfg.cupti_buffer_kb << 10, (uint32_t)npkit_cfg.cupti_buffers,
                          cupti_accepts_null_buffer(npkit_cupti.version), wake_flusher);
  r = npkit_cupti.ActivityRegisterCallbacks(buffer_requested, npkit_cupti_buffer_completed);
  if (r == CUPTI_SUCCESS) {
    /* Never CUPTI_ACTIVITY_KIND_KERNEL: it serialises all kernels. */
    r = npkit_cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  if (r != CUPTI_SUCCESS) {
    npkit_cupti.Unsubscribe(subscriber);
    snprintf(why, whylen, "CUPTI (%.200s) cannot trace kernels: %s%s", npkit_cupti.path,
             npkit_cupti_result(r, res, sizeof res), failure_hint(r, hint, sizeof hint));
    return START_FAILED;
  }
  return START_OK;
}

/* Walks the copies of libcupti until one starts (cupti_loader.h).  0 with npkit_cupti started;
 * -1 after the one `npkit:` line that says why none did. */
static int start_some_copy(void) {
  char why[512], first[512] = "";
  unsigned failed = 0;
  npkit_cupti_search search;
  npkit_cupti_search_init(&search, npkit_cfg.cupti_library);
  for (;;) {
    if (npkit_cupti_load_next(&search, why, sizeof why) != 0) {
      if (failed == 0 || (failed == 1 && !npkit_cuda_driver_loaded()))
        off("%s", failed == 0 ? why : first);
      else if (failed == 1)
        off("%s, and no other libcupti was found to try (NPKIT_CUPTI_LIBRARY takes a list of "
            "paths: add one that matches the driver, such as a CUDA 12 libcupti.so.12)", first);
      else
        off("%s, and %u other cop%s of libcupti found could not start either", first, failed - 1,
            failed == 2 ? "y" : "ies");
      return -1;
    }
    start_result st = start_copy(why, sizeof why);
    if (st == START_OK) break;
    if (st == START_BUSY) {
      /* Not a matter of the copy: another one would take CUPTI from its holder, or fail alike. */
      char peer[64];
      if (npkit_cupti_peer_loaded(peer, sizeof peer))
        off("another CUPTI client holds CUPTI (PyTorch's profiler, %s, most likely)", peer);
      else
        off("another CUPTI client holds CUPTI (Nsight Systems, Nsight Compute, compute-sanitizer or "
            "a profiler inside the application)");
      npkit_cupti_drop();
      return -1;
    }
    if (failed++ == 0) snprintf(first, sizeof first, "%s", why);
    npkit_cupti_drop();
  }
  if (failed > 0)
    npkit_note(NPKIT_LEVEL_INFO, "GPU activity through CUPTI %s (API version %u), the next copy "
               "of libcupti found, because %s%s",
               npkit_cupti.path, npkit_cupti.version, first,
               failed > 1 ? ", and so could other copies" : "");
  return 0;
}

static int start_cupti(npkit_cupti_origin origin) {
  char why[512], res[96], peer[64];
  if (npkit_cfg.cupti == NPKIT_CUPTI_OFF) {
    off("NPKIT_CUPTI=0");
    return -1;
  }
  if (npkit_cfg.cupti == NPKIT_CUPTI_AUTO && npkit_cupti_peer_loaded(peer, sizeof peer)) {
    off("PyTorch is loaded (%s), and its profiler (torch.profiler) needs CUPTI, which serves one "
        "client at a time; NPKIT_CUPTI=1 traces with CUPTI anyway, and torch.profiler then "
        "records no CUDA activity", peer);
    return -1;
  }
  if (npkit_cupti_corr_init() != 0) {
    off("out of memory for the correlation tables");
    return -1;
  }
  if (start_some_copy() != 0) return -1;
  CUptiResult r;
  if (npkit_cupti.GetGraphNodeId != NULL) {
    npkit_cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                               CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
    npkit_cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                               CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  }
  for (size_t i = 0; i < sizeof optional_kinds / sizeof optional_kinds[0]; i++)
    if ((r = npkit_cupti.ActivityEnable(optional_kinds[i])) != CUPTI_SUCCESS)
      npkit_debug("CUPTI activity kind %d not enabled: %s", (int)optional_kinds[i],
                  npkit_cupti_result(r, res, sizeof res));
  int correlate = 1;
  r = npkit_cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  if (r != CUPTI_SUCCESS) {
    correlate = 0;
    npkit_note(NPKIT_LEVEL_WARN, "CUPTI external correlation is not available (%s): kernels are "
               "recorded but not tied to the NCCL calls that launched them",
               npkit_cupti_result(r, res, sizeof res));
  } else {
    /* Correlation records come only in front of API records: trace the launch calls. */
    launch_api = npkit_cupti_trace_launch_api(why, sizeof why);
    if (launch_api == NPKIT_LAUNCH_API_NONE) {
      correlate = 0;
      npkit_cupti.ActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
      npkit_note(NPKIT_LEVEL_WARN, "%s: kernels are recorded but not tied to the NCCL calls that "
                 "launched them", why);
    }
  }
  npkit_cupti_clock_start();
  note_clock(); /* another client registered its timestamp callback before npkit started */
  npkit_cupti_hook_prepare();
  pthread_atfork(NULL, NULL, in_child);
  start_flusher();
  atomic_store(&npkit_cupti_active, correlate);
  npkit_debug("GPU activity through CUPTI %s (API version %u), started by %s; API records of %s",
              npkit_cupti.path, npkit_cupti.version,
              origin == NPKIT_CUPTI_FROM_DRIVER ? "the CUDA driver" : "the first communicator",
              npkit_launch_api_mode_name(launch_api));
  return 0;
}

void npkit_cupti_start(npkit_cupti_origin origin) {
  pthread_mutex_lock(&state_lock);
  if (tried || finished || log_out == NULL) {
    pthread_mutex_unlock(&state_lock);
    return;
  }
  tried = 1;
  npkit_cupti_drain_attach(log_out);
  if (start_cupti(origin) == 0)
    running = ever_ran = 1;
  else
    npkit_cupti_drain_attach(NULL);
  pthread_mutex_unlock(&state_lock);
}

void npkit_cupti_comm_created(void) {
  atomic_fetch_add(&comms_alive, 1);
  npkit_cupti_start(NPKIT_CUPTI_FROM_COMM);
}

void npkit_cupti_comm_destroyed(void) {
  if (atomic_fetch_sub(&comms_alive, 1) != 1) return;
  pthread_mutex_lock(&state_lock);
  int on = running && !finished;
  pthread_mutex_unlock(&state_lock);
  /* The job may end without ever reaching our exit handlers (a launcher's SIGKILL): the GPU events
   * of all its communication are on disk now. */
  if (on) flush_and_drain(0);
}

/* ---- the end ---- */

/* Final flush and drain, then detaches from the log; `totals` of what was stored (zeros if the
 * source never ran).  Safe to call more than once. */
static void finish_cupti(npkit_cupti_counts *totals) {
  memset(totals, 0, sizeof *totals);
  pthread_mutex_lock(&state_lock);
  if (finished) {
    pthread_mutex_unlock(&state_lock);
    return;
  }
  finished = 1;
  int was_running = running;
  running = 0;
  pthread_mutex_unlock(&state_lock);
  if (!was_running) return;

  atomic_store(&npkit_cupti_active, 0);
  stop_flusher();
  npkit_cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  npkit_cupti_bufs_count_dropped(NULL, 0); /* the global queue */
  drain(NPKIT_DRAIN_FINAL);
  npkit_cupti_drain_counts(totals);
  /* The process may go on (a signal its handler survives): what CUPTI still hands back is reused
   * unread, so memory stays bounded.  No activity kind is disabled: at exit the real CUPTI 13.0
   * crashed in cuptiActivityDisable (called from this exit handler after the application had
   * destroyed its communicators and streams; H200, driver 580, CUDA 13.0, static cudart), while
   * the flush above worked; a process that goes on pays for CUPTI's records, not for a crash. */
  npkit_cupti_bufs_discard();

  npkit_cupti_buf_stats bs;
  npkit_cupti_bufs_stats(&bs);
  uint64_t stored = totals->kernels + totals->memcpys + totals->memsets;
  if (totals->cupti_dropped > 0)
    npkit_note(NPKIT_LEVEL_WARN, "CUPTI lost %llu GPU activity records%s; raise NPKIT_CUPTI_BUFFERS "
               "(now %llu) or NPKIT_CUPTI_BUFFER_KB (now %llu)",
               (unsigned long long)totals->cupti_dropped,
               bs.refused > 0 ? " (its requests for buffers found the limit reached)" : "",
               (unsigned long long)npkit_cfg.cupti_buffers,
               (unsigned long long)npkit_cfg.cupti_buffer_kb);
  if (bs.over_limit > 0)
    npkit_note(NPKIT_LEVEL_WARN, "%llu CUPTI buffers beyond NPKIT_CUPTI_BUFFERS were allocated "
               "(this CUPTI cannot be refused a buffer safely)", (unsigned long long)bs.over_limit);
  if (totals->write_failed > 0)
    npkit_note(NPKIT_LEVEL_WARN, "%llu GPU events could not be written to the log",
               (unsigned long long)totals->write_failed);
  npkit_cupti_clock_stats cs;
  npkit_cupti_clock_stats_get(&cs);
  uint64_t untimed = totals->untimed > cs.unmapped ? totals->untimed - cs.unmapped : 0;
  if (untimed > 0)
    npkit_note(NPKIT_LEVEL_WARN, "%llu kernels were not timed by CUPTI (start or end missing): "
               "they are counted but not drawn", (unsigned long long)untimed);
  if (cs.unmapped > 0)
    npkit_note(NPKIT_LEVEL_WARN, "%llu GPU records carry another clock than CLOCK_REALTIME (a "
               "CUPTI client's timestamp callback) that this CUPTI does not tell (no "
               "cuptiGetTimestamp): they are counted but not drawn", (unsigned long long)cs.unmapped);
  if (totals->calls_lost > 0)
    npkit_note(NPKIT_LEVEL_INFO, "%llu GPU events came too late to be tied to their NCCL call",
               (unsigned long long)totals->calls_lost);
  npkit_debug("GPU: %llu buffers from CUPTI, %llu records waited for their call, %llu for a "
              "correlation record; %llu API records", (unsigned long long)bs.completed,
              (unsigned long long)totals->held_call, (unsigned long long)totals->held_record,
              (unsigned long long)totals->api_records);
  if (stored == 0 && bs.completed == 0 && npkit_cupti_corr_issued() > 0)
    npkit_note(NPKIT_LEVEL_INFO, "no GPU activity arrived from CUPTI although NCCL calls ran: "
               "another CUPTI client (a profiler started inside the application) may have taken "
               "over CUPTI's activity buffers");
  npkit_cupti_drain_attach(NULL);
}

static npkit_cupti_counts final_counts; /* of the finish, for the exit line */

static void finish(npkit_source_totals *totals) {
  npkit_cupti_counts c;
  finish_cupti(&c);
  pthread_mutex_lock(&state_lock);
  final_counts = c;
  pthread_mutex_unlock(&state_lock);
  totals->recorded += c.kernels + c.memcpys + c.memsets;
  totals->dropped += c.cupti_dropped + c.write_failed;
}

/* "; GPU: 12 kernels, 3 copies, 0 memsets, 0 lost"; "" if the source never ran. */
static void summary(char *buf, size_t len) {
  pthread_mutex_lock(&state_lock);
  int ran = ever_ran;
  npkit_cupti_counts c = final_counts;
  pthread_mutex_unlock(&state_lock);
  if (len == 0) return;
  buf[0] = '\0';
  if (!ran) return;
  snprintf(buf, len, "; GPU: %llu kernels, %llu copies, %llu memsets, %llu lost",
           (unsigned long long)c.kernels, (unsigned long long)c.memcpys,
           (unsigned long long)c.memsets, (unsigned long long)(c.cupti_dropped + c.write_failed));
}

const npkit_source_ops npkit_source_cupti = {"cupti", NULL, attach, finish, NULL, summary, NULL};
