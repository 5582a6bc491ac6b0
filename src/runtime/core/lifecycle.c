#include "lifecycle.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "diag.h"
#include "event_pool.h"
#include "flight.h"
#include "identity.h"
#include "log_writer.h"
#include "notes.h"
#include "pool_recover.h"
#include "recorder.h"
#include "self_register.h"
#include "signals.h"
#include "stop_barrier.h"
#include "string_table.h"
#include "trace_files.h"
#include "trace_render.h"
#include "watchdog.h"
#include "window.h"

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "0"
#endif

static const npkit_source_ops *const *sources;
static size_t n_sources;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static npkit_identity ident;
static npkit_log_writer *log_writer;
static npkit_event_pool pool_file = {.fd = -1}; /* the event pool's file, when it has one (fd >= 0) */
static char log_path[1024];
static pid_t owner_pid;
/* Set (release) once start() has set up everything above and the writer runs.  _exit and the stop
 * signals come on any thread, also one created before the library started and never synchronised
 * with it since (Open MPI's progress thread, created in MPI_Init, calls _exit when mpirun is gone):
 * such a thread reads the state above only after an acquire load of this flag. */
static _Atomic int published;
static _Atomic int identity_from_comm_done;
/* Who finishes: 0 nobody yet, 1 the exit path (npkit_finish), 2 a stop signal (on the writer),
 * 3 a call of _exit or _Exit (on the writer). */
static _Atomic int finish_owner;
static _Atomic int finish_done;       /* the finish, whoever ran it, is over */
static _Atomic uint64_t signal_at_ns; /* CLOCK_MONOTONIC when the stop signal or the _exit came */
static _Atomic uint64_t finished_at_ns; /* CLOCK_MONOTONIC when a stop signal's or _exit's finish ended */
/* How long after such a finish an NCCL call is held (npkit_wait_for_stop): the process is ending
 * (the signal's default action, the real _exit), within microseconds as a rule; an application
 * whose own handler lets it go on sees its calls held once, this long. */
#define HOLD_AFTER_FINISH_NS 1000000000ull
/* this thread runs the finish (initial-exec: read in signal handlers, which must not allocate) */
static __thread int finishing_here __attribute__((tls_model("initial-exec")));

static int request_signal_finish(void);

/* Calls the entry `fn` of every source that has one, in the list's order. */
#define EACH_SOURCE(fn, ...)                                                   \
  do {                                                                         \
    for (size_t i_ = 0; i_ < n_sources; i_++)                                  \
      if (sources[i_]->fn != NULL) sources[i_]->fn(__VA_ARGS__);              \
  } while (0)

void npkit_lifecycle_sources(const npkit_source_ops *const *list, size_t n) {
  sources = list;
  n_sources = n;
}

static const char *env(const char *name) { return getenv(name); }

static void off_in_child(void) {
  /* A child of fork() without exec shares our buffers but not the writer thread: it records
   * nothing and writes nothing (documented rule); an exec'd program starts afresh. */
  atomic_store(&npkit_state, NPKIT_STATE_OFF);
}

static void at_exit(void) { npkit_finish(); }

static void fail_log(const char *what) {
  int e = npkit_logw_error(log_writer);
  npkit_warn("%s %s: %s; recording stopped, the job continues", what, log_path,
             e ? strerror(e) : "error");
  atomic_store(&npkit_state, NPKIT_STATE_OFF);
}

static void log_failed(void) { fail_log("cannot write"); }

/* Every source's work in flight, for the hang watchdog and the snapshots of dumps. */
static void collect_inflight(npkit_inflight_sink *sink) { EACH_SOURCE(inflight, sink); }

static void clock_fallback(const char *why) {
  npkit_note(NPKIT_LEVEL_WARN, "%s any more: timestamps from CLOCK_REALTIME from here on", why);
}

/* Where this process's pool file went: the folder the library scans for the pools of killed
 * processes at its finish. */
static char pool_scan_dir[512];

/* The event pool's file (event_pool.h), named in the log's first block so that a reader finds it
 * if this process is killed; NULL with why not.  NPKIT_POOL_DIR=trace puts it beside the log,
 * except on a network file system, where a shared mapping would be written back over the network:
 * then in /dev/shm, as `said` tells.  The flight recorder's ring is in memory anyway, and a ring's
 * dumps rewrite the log whole: there is no log to recover events into. */
static npkit_event_pool *open_pool(const npkit_log_header *h, char *why, size_t whylen, char *said, size_t saidlen) {
  if (npkit_cfg.ring_mb > 0) {
    snprintf(why, whylen, "the flight recorder keeps its log in memory");
    return NULL;
  }
  if (npkit_cfg.pool_dir[0] == '\0') {
    snprintf(why, whylen, "NPKIT_POOL_DIR=none");
    return NULL;
  }
  npkit_pool_layout layout;
  npkit_recorder_pool_layout(&layout);
  uint32_t chunks = npkit_recorder_chunks(npkit_cfg.event_buf_mb << 20);
  const char *dir = strcmp(npkit_cfg.pool_dir, NPKIT_POOL_DIR_TRACE) == 0 ? npkit_cfg.trace_dir : npkit_cfg.pool_dir;
  int rc = npkit_pool_create(&pool_file, dir, chunks, &layout, h, log_path, ident.local_size, why, whylen);
  if (rc == -2 && strcmp(dir, NPKIT_DEFAULT_POOL_DIR) != 0) {
    snprintf(said, saidlen, "event pool in %s: %s", NPKIT_DEFAULT_POOL_DIR, why);
    dir = NPKIT_DEFAULT_POOL_DIR;
    rc = npkit_pool_create(&pool_file, dir, chunks, &layout, h, log_path, ident.local_size, why, whylen);
  }
  if (rc != 0) {
    said[0] = '\0';
    return NULL;
  }
  snprintf(pool_scan_dir, sizeof pool_scan_dir, "%s", dir);
  npkit_pool_rec rec;
  memset(&rec, 0, sizeof rec);
  rec.bytes = pool_file.bytes;
  snprintf(rec.path, sizeof rec.path, "%s", pool_file.path);
  if (npkit_logw_append(log_writer, NPKIT_BLOCK_POOL, 1, &rec, sizeof rec) != 0) {
    snprintf(why, whylen, "the log took no POOL block");
    npkit_pool_closed(&pool_file);
    said[0] = '\0';
    return NULL;
  }
  return &pool_file;
}

/* Pools of this user's processes on this host that died without closing their logs (a rank killed
 * by the OOM killer, a job ended with SIGKILL): their events go into their logs now, so that the
 * memory they hold is given back and their traces are whole. */
/* Debug lines only: the pools are other processes', often of other jobs, and this job's output is no
 * place for them; the log says what was recovered (its RECOVERED block, "by library"), and `npkit`
 * says what could not be when that log is read. */
static void said_recovered(void *ctx, const char *log, const npkit_pool_recovery *rec, const char *err) {
  (void)ctx;
  if (err != NULL)
    npkit_debug("cannot recover the event pool of a killed process into %s: %s", log, err);
  else
    npkit_debug("recovered %llu events of a killed process (pid %d) into %s", (unsigned long long)rec->events,
                (int)rec->pid, log);
}

static void start(void) {
  npkit_config_load(&npkit_cfg, env);
  EACH_SOURCE(configure, &npkit_cfg);
  if (npkit_cfg.disable) {
    atomic_store(&npkit_state, NPKIT_STATE_OFF);
    return;
  }
  npkit_identity_load(&ident, env);
  owner_pid = getpid();

  char why[160];
  int tsc = npkit_clock_start(npkit_cfg.clock_tsc, clock_fallback, why, sizeof why);
  if (tsc)
    npkit_debug("timestamps from the time-stamp counter, mapped onto CLOCK_REALTIME");
  else
    npkit_debug("timestamps from CLOCK_REALTIME: %s", why);

  npkit_log_header h;
  npkit_log_header_init(&h);
  h.clock_base_ns = npkit_now_ns();
  h.mono_base_ns = npkit_mono_ns();
  h.pid = ident.pid;
  h.rank = ident.rank;
  h.world_size = ident.world_size;
  h.local_rank = ident.local_rank;
  h.nccl_header_version = NPKIT_NCCL_HEADER_VERSION;
  if (tsc) h.flags |= NPKIT_LOG_F_TSC_CLOCK;
  if (npkit_cfg.simulated) h.flags |= NPKIT_LOG_F_SIMULATED;
  if (npkit_cfg.write_json && (npkit_cfg.trace_formats & NPKIT_TRACE_FORMAT_JSON)) h.flags |= NPKIT_LOG_F_JSON_AT_EXIT;
  if (npkit_cfg.write_json && (npkit_cfg.trace_formats & NPKIT_TRACE_FORMAT_PERFETTO))
    h.flags |= NPKIT_LOG_F_PERFETTO_AT_EXIT;
  snprintf(h.host, sizeof h.host, "%s", ident.host);
  snprintf(h.launcher, sizeof h.launcher, "%s", ident.source);
  snprintf(h.library_version, sizeof h.library_version, "%s", NPKIT_VERSION_STRING);

  snprintf(log_path, sizeof log_path, "%s/npkit_%s_%d%s", npkit_cfg.trace_dir, ident.host, ident.pid,
           NPKIT_LOG_SUFFIX);
  char err[512];
  if (npkit_cfg.ring_mb > 0)
    log_writer = npkit_logw_open_ring(log_path, &h, npkit_cfg.ring_mb << 20, err, sizeof err);
  else
    log_writer = npkit_logw_open(log_path, &h, err, sizeof err);
  if (log_writer == NULL) {
    npkit_warn("%s (NPKIT_TRACE_DIR='%s'); nothing is recorded, the job continues", err,
               npkit_cfg.trace_dir);
    atomic_store(&npkit_state, NPKIT_STATE_OFF);
    return;
  }
  char pool_why[400] = "", pool_said[500] = "";
  npkit_event_pool *pool = open_pool(&h, pool_why, sizeof pool_why, pool_said, sizeof pool_said);
  npkit_notes_attach(log_writer);
  if (pool_said[0] != '\0') npkit_note(NPKIT_LEVEL_DEBUG, "%s", pool_said);
  if (pool == NULL)
    npkit_note(NPKIT_LEVEL_DEBUG, "event pool in private memory (%s): a process killed with SIGKILL loses what it "
               "recorded after the writer's last pass (NPKIT_FLUSH_MS)", pool_why);
  /* Before the writer starts: it unblocks the stop signals only where the handler is ours. */
  if (npkit_cfg.signals) npkit_signals_install(request_signal_finish);
  int rc = npkit_recorder_start(npkit_cfg.event_buf_mb << 20, npkit_cfg.flush_ms, log_writer, pool,
                                log_failed, err, sizeof err);
  if (rc < 0) {
    npkit_warn("%s; nothing is recorded, the job continues", err);
    npkit_notes_attach(NULL);
    npkit_logw_close(log_writer, NULL);
    npkit_pool_closed(pool);
    log_writer = NULL;
    unlink(log_path);
    atomic_store(&npkit_state, NPKIT_STATE_OFF);
    return;
  }
  if (rc > 0) {
    /* Nobody left to compare the counter with CLOCK_REALTIME; the header already says "counter",
     * so the trace gets a note that says otherwise. */
    if (tsc) {
      npkit_clock_stop_tsc();
      npkit_note(NPKIT_LEVEL_WARN, "%s; timestamps from CLOCK_REALTIME", err);
    } else {
      npkit_warn("%s", err);
    }
  }
  npkit_strings_attach_log(log_writer);
  npkit_window_start(&npkit_cfg);
  npkit_source_log at = {log_writer, &npkit_cfg, h.clock_base_ns};
  EACH_SOURCE(attach, &at);
  npkit_flight_start(&npkit_cfg, log_writer, log_path, collect_inflight);
  if (npkit_cfg.ring_mb > 0)
    npkit_debug("flight recorder: a ring of %llu MB, written to %s at dumps only",
                (unsigned long long)npkit_cfg.ring_mb, log_path);
  if (npkit_cfg.hang_timeout_ns > 0) npkit_watchdog_start(npkit_cfg.hang_timeout_ns, collect_inflight);
  char text[512]; /* what self-registration left alone, said now that the trace can keep it */
  for (int i = 0, level; (level = npkit_self_register_note(i, text, sizeof text)) >= 0; i++)
    if (level > 0) npkit_note(level, "%s", text);
  pthread_atfork(NULL, NULL, off_in_child);
  /* Registered at the first NCCL call, i.e. after the CUDA runtime has registered its own
   * handlers: ours run first at exit, while CUDA is still usable. */
  atexit(at_exit);
  /* quick_exit runs these handlers, then glibc's own _exit without the dynamic linker (so not
   * exit_calls.c's): registered now, ours runs after the application's registered later. */
  at_quick_exit(at_exit);
  atomic_store_explicit(&published, 1, memory_order_release);
  atomic_store(&npkit_state, NPKIT_STATE_ON);
  npkit_debug("recording to %s", log_path);
}

int npkit_start(void) {
  if (sources == NULL) return NPKIT_STATE_NEW; /* before the library's constructors ran */
  pthread_once(&start_once, start);
  return atomic_load(&npkit_state);
}

void npkit_identity_from_comm(int rank, int nranks, int device) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&identity_from_comm_done, &expected, 1)) return;
  npkit_process_rec p;
  memset(&p, 0, sizeof p);
  if (ident.rank < 0) {
    ident.rank = rank;
    ident.world_size = nranks;
    snprintf(ident.source, sizeof ident.source, "comm");
  }
  p.rank = ident.rank;
  p.world_size = ident.world_size;
  p.local_rank = ident.local_rank;
  p.device = device;
  snprintf(p.source, sizeof p.source, "%s", ident.source);
  if (log_writer != NULL) npkit_logw_append(log_writer, NPKIT_BLOCK_PROCESS, 1, &p, sizeof p);
}

/* The finish proper: the log first (GPU activity, NPKit dumps, the last events, the END block),
 * so that it is closed cleanly as early as possible, then the Chrome trace rendered from it. */
/* The traces NPKIT_TRACE_FORMAT asks for, beside the log; `shown` gets what the exit line names:
 * the traces written, or the log when none could be. */
static void write_traces(const char *log_path, char *shown, size_t len) {
  static const struct {
    unsigned bit;
    npkit_trace_format format;
  } formats[] = {{NPKIT_TRACE_FORMAT_JSON, NPKIT_TRACE_JSON}, {NPKIT_TRACE_FORMAT_PERFETTO, NPKIT_TRACE_PERFETTO}};
  shown[0] = '\0';
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    if (!(npkit_cfg.trace_formats & formats[i].bit)) continue;
    char path[1200], err[512];
    npkit_render_stats stats;
    npkit_trace_path(path, sizeof path, npkit_cfg.trace_dir, ident.rank, ident.host, ident.pid,
                     npkit_trace_format_suffix(formats[i].format));
    if (npkit_render_trace_as(log_path, path, formats[i].format, &stats, err, sizeof err) != 0) {
      npkit_warn("cannot write the trace: %s (the binary log %s is kept; `npkit json%s` renders it)", err, log_path,
                 formats[i].format == NPKIT_TRACE_PERFETTO ? " --format perfetto" : "");
      continue;
    }
    size_t used = strlen(shown);
    snprintf(shown + used, len - used, "%s%s", used > 0 ? " and " : "", path);
  }
  if (shown[0] == '\0') snprintf(shown, len, "%s", log_path);
}

static void finish_trace(void) {
  if (log_writer == NULL || getpid() != owner_pid) return;
  npkit_watchdog_stop();
  /* The sources, while the log and the string table still take what they hold (CUPTI's last
   * buffers, NPKit's last dump, the plugin's statistics). */
  npkit_source_totals own = {0, 0};
  EACH_SOURCE(finish, &own);
  int was_on = atomic_exchange(&npkit_state, NPKIT_STATE_OFF) == NPKIT_STATE_ON;
  npkit_end_rec end;
  npkit_recorder_stop(&end);
  /* What was still in flight, and why the log was written, once every event recorded is in the
   * log: the FLIGHT event's counts of a ring are then exact. */
  npkit_flight_finish(npkit_signals_held());
  uint64_t pool_dropped = end.events_dropped;
  npkit_window_finish(log_writer);
  EACH_SOURCE(detach, log_writer);
  npkit_strings_attach_log(NULL);
  end.events_recorded += own.recorded;
  end.events_dropped += own.dropped;
  end.end_ns = npkit_now_ns();
  npkit_clock_quality q;
  npkit_clock_quality_get(&q);
  end.clock_checks = q.checks;
  end.clock_steps = q.steps;
  end.clock_max_error_ns = q.max_error_ns;
  npkit_clock_stop_tsc(); /* no writer any more to keep the map honest, should the process go on */
  end.blocks_written = npkit_logw_blocks(log_writer);
  int healthy = npkit_logw_error(log_writer) == 0;
  if (!healthy && was_on) fail_log("cannot write");
  npkit_logw_close(log_writer, &end);
  npkit_pool_closed(&pool_file); /* everything it held is in the log, or the log took nothing more */
  uint64_t closed_ns = npkit_mono_ns();

  if (!healthy) return;
  char json_path[2500] = "";
  if (npkit_cfg.write_json) write_traces(log_path, json_path, sizeof json_path);
  else snprintf(json_path, sizeof json_path, "%s", log_path);
  uint64_t at = atomic_load(&signal_at_ns);
  if (at != 0)
    npkit_debug("finished on %s: the log was closed after %.1f ms, the trace written after %.1f ms",
                atomic_load(&finish_owner) == 3 ? "a call of _exit" : "a stop signal", (double)(closed_ns - at) / 1e6,
                (double)(npkit_mono_ns() - at) / 1e6);
  char parts[320] = "";
  for (size_t i = 0, used = 0; i < n_sources && used + 1 < sizeof parts; i++)
    if (sources[i]->summary != NULL) {
      sources[i]->summary(parts + used, sizeof parts - used);
      used += strlen(parts + used);
    }
  if (ident.rank >= 0)
    npkit_info("rank %d: wrote %s (%llu events, %llu dropped%s)", ident.rank, json_path,
               (unsigned long long)end.events_recorded, (unsigned long long)end.events_dropped,
               parts);
  else
    npkit_info("wrote %s (%llu events, %llu dropped%s)", json_path,
               (unsigned long long)end.events_recorded, (unsigned long long)end.events_dropped,
               parts);
  if (pool_dropped > 0)
    npkit_warn("%llu events were dropped because the event pool was full; raise "
               "NPKIT_EVENT_BUF_SIZE (now %llu MB)",
               (unsigned long long)pool_dropped, (unsigned long long)npkit_cfg.event_buf_mb);
  /* Last, once this process's own trace is out: another's killed rank costs it nothing before. */
  if (pool_scan_dir[0] != '\0') npkit_pool_recover_dir(pool_scan_dir, NPKIT_RECOVERED_BY_LIBRARY, said_recovered, NULL);
}

/* Until the finish that another thread runs is over, at most until `since_ns` (CLOCK_MONOTONIC)
 * plus the stop signals' deadline.  Polled with nanosleep because this is also reached from
 * signal handlers (an application's SIGTERM handler calling _exit), where no semaphore wait is
 * async-signal-safe. */
static void wait_finished(uint64_t since_ns) {
  uint64_t end = since_ns + (NPKIT_SIGNAL_DEADLINE_MS + 1000ull) * 1000000ull;
  struct timespec ms = {0, 1000000};
  while (!atomic_load(&finish_done) && npkit_mono_ns() < end) nanosleep(&ms, NULL);
}

void npkit_finish(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&finish_owner, &expected, 1)) {
    /* A stop signal's or _exit's finish runs on the writer: the process must not end under it
     * (exit() returning from here ends it), so wait for it; its deadline bounds the wait. */
    if (expected >= 2 && !finishing_here) wait_finished(atomic_load(&signal_at_ns));
    return;
  }
  finishing_here = 1;
  finish_trace();
  atomic_store(&finish_done, 1);
  npkit_signals_redeliver(); /* stop signals that came while the process was exiting */
}

/* The finish of a stop signal or of _exit, on the writer thread (npkit_recorder_request): the
 * ranks of this job on this host finish together (stop_barrier.h), since under mpirun the first
 * rank to end makes Open MPI kill the others. */
static void finish_on_writer(int redeliver) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* the signal delivered again afterwards is the job's */
  finishing_here = 1;
  atomic_store(&npkit_stopping, 1);
  if (redeliver) npkit_signals_deadline(NPKIT_SIGNAL_DEADLINE_MS);
  uint64_t deadline = atomic_load(&signal_at_ns) + (uint64_t)NPKIT_SIGNAL_DEADLINE_MS * 1000000ull;
  int together = npkit_stop_barrier_arrive(ident.job, ident.local_rank, ident.local_size) == 0;
  npkit_recorder_flush(); /* what the threads recorded is on disk before anything slow */
  finish_trace();
  if (together) {
    uint64_t t0 = npkit_mono_ns();
    int late = npkit_stop_barrier_leave(deadline);
    npkit_debug("waited %.1f ms for the other ranks of this host to finish their traces%s", (double)(npkit_mono_ns() - t0) / 1e6,
                late > 0 ? "; some had not by the deadline" : "");
  }
  atomic_store(&finished_at_ns, npkit_mono_ns());
  atomic_store(&finish_done, 1);
  atomic_store(&npkit_stopping, 0);
  /* After _exit the process ends with the caller's status: a stop signal that came meanwhile
   * must not end it first with another. */
  if (redeliver) npkit_signals_redeliver();
}

static void finish_on_signal(void) { finish_on_writer(1); }
static void finish_on_exit_call(void) { finish_on_writer(0); }

/* This process owns the log and the library's state is visible to the calling thread. */
static int owner_here(void) {
  return atomic_load_explicit(&published, memory_order_acquire) && getpid() == owner_pid;
}

void npkit_wait_for_stop(void) {
  if ((!atomic_load(&npkit_stopping) && atomic_load(&finished_at_ns) == 0) || finishing_here || npkit_own_thread ||
      !owner_here())
    return;
  wait_finished(atomic_load(&signal_at_ns));
  /* The finish is over and the process ends now: a call that returned meanwhile would be one the
   * application saw complete and the log has as in flight (seen under `timeout mpirun`: two calls
   * completed between the finish and the signal's default action).  Held until the process is
   * gone, or for HOLD_AFTER_FINISH_NS where the application's own handler lets it go on. */
  uint64_t at = atomic_load(&finished_at_ns);
  struct timespec ms = {0, 1000000};
  while (at != 0 && npkit_mono_ns() < at + HOLD_AFTER_FINISH_NS) nanosleep(&ms, NULL);
}

void npkit_finish_before_exit_call(void) {
  /* Checks first that write nothing: a child of vfork() shares the library's memory with its
   * parent, and getpid() tells it apart; a child of fork() is not the owner either. */
  if (!owner_here() || log_writer == NULL || finishing_here || npkit_own_thread || atomic_load(&finish_done))
    return;
  int expected = 0;
  if (atomic_compare_exchange_strong(&finish_owner, &expected, 3)) {
    atomic_store(&signal_at_ns, npkit_mono_ns());
    /* Without a writer nothing can finish in bounded time; what the log lacks is in the pool. */
    if (npkit_recorder_request(finish_on_exit_call) != 0) return;
    wait_finished(atomic_load(&signal_at_ns));
    return;
  }
  /* exit() on another thread (1), a stop signal (2) or _exit of another thread (3) finishes. */
  wait_finished(expected == 1 ? npkit_mono_ns() : atomic_load(&signal_at_ns));
}

/* From the stop-signal handler (async-signal-safe): the writer thread is to finish.  0 when the
 * trace will be finished (by the writer, or by the exit path already under way), -1 when nobody
 * can finish it (no writer, a forked child). */
static int request_signal_finish(void) {
  if (!owner_here()) return -1;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&finish_owner, &expected, 2)) return expected == 1 ? 0 : -1;
  atomic_store(&signal_at_ns, npkit_mono_ns());
  if (npkit_recorder_request(finish_on_signal) != 0) {
    atomic_store(&finish_owner, 0);
    return -1;
  }
  return 0;
}
