#include "flight.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "diag.h"
#include "log_ring.h"
#include "recorder.h"
#include "signals.h"
#include "state.h"

/* Items one snapshot holds; more are counted.  A hang of 2,048 collectives queued behind a stuck
 * one fits with room to spare. */
#define SNAPSHOT_ITEMS 4096u
#define TRIGGERS (NPKIT_FLIGHT_FATAL + 1)

static npkit_log_writer *flight_log;
static npkit_log_ring *flight_ring;
static npkit_flight_collect_fn flight_collect;
static char flight_path[1024];
static _Atomic int flight_on;

/* Dumps asked for and not yet taken (bit per trigger), with what each said; the reasons are
 * written under req_lock (never from a signal handler), the signals atomically. */
static _Atomic uint32_t pending;
static _Atomic int pending_signal[TRIGGERS];
static _Atomic int pending_result[TRIGGERS];
static pthread_mutex_t req_lock = PTHREAD_MUTEX_INITIALIZER;
static char pending_reason[TRIGGERS][48];
static uint64_t pending_key[TRIGGERS];
static _Atomic int error_taken, abort_taken;
static _Atomic int fatal_taken; /* a fatal signal's dump was written, or may no longer be */

/* One dump at a time: the writer's and the finish's share the snapshot buffer. */
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static npkit_event snapshot[SNAPSHOT_ITEMS];
static _Atomic uint32_t dumps;

static const char *trigger_name(uint32_t trigger) {
  static const char *const names[TRIGGERS] = {"", "exit", "signal", "hang", "NCCL error", "ncclCommAbort", "fatal signal"};
  return trigger < TRIGGERS ? names[trigger] : "?";
}

uint32_t npkit_flight_dumps(void) { return atomic_load(&dumps); }

/* The snapshot and the FLIGHT event, appended to the log; with `to_disk`, a ring is written as the
 * log.  Returns the dump's number (0: none was needed), with what the ring lost in *st (zero
 * without a ring) and the error of its writing in *err.  A streamed log that ends normally with
 * nothing in flight and no dump before gets nothing: it holds everything already (after an earlier
 * dump, the last one says that nothing is in flight any more). */
static uint32_t dump(uint32_t trigger, int signal, int result, const char *reason, uint64_t key, int to_disk,
                     npkit_ring_stats *st, int *err) {
  pthread_mutex_lock(&dump_lock);
  npkit_inflight_sink sink = {snapshot, SNAPSHOT_ITEMS, 0, 0, npkit_now_ns()};
  if (flight_collect != NULL) flight_collect(&sink);
  *err = 0;
  memset(st, 0, sizeof *st);
  if (trigger == NPKIT_FLIGHT_EXIT && signal == 0 && flight_ring == NULL && sink.n == 0 && sink.omitted == 0 &&
      atomic_load(&dumps) == 0) {
    pthread_mutex_unlock(&dump_lock);
    return 0;
  }
  uint32_t n = atomic_fetch_add(&dumps, 1) + 1;
  for (size_t i = 0; i < sink.n; i++) {
    snapshot[i].u.inflight.dump = n;
    if (key != 0 && npkit_inflight_key(&snapshot[i]) == key) snapshot[i].u.inflight.flags |= NPKIT_INFL_F_HANG;
  }
  if (flight_ring != NULL) npkit_ring_get_stats(flight_ring, st);
  if (sink.n > 0) npkit_logw_append(flight_log, NPKIT_BLOCK_EVENTS, (uint32_t)sink.n, snapshot, sink.n * sizeof *snapshot);
  npkit_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = NPKIT_EV_FLIGHT;
  ev.start_ns = ev.end_ns = sink.now_ns;
  npkit_ev_flight *f = &ev.u.flight;
  f->ring_bytes = st->bytes;
  f->events_kept = st->kept;
  f->events_overwritten = st->overwritten;
  f->meta_lost = st->meta_lost;
  f->trigger = trigger;
  f->signal = signal;
  f->result = result;
  f->dump = n;
  f->inflight = (uint32_t)sink.n;
  f->inflight_omitted = (uint32_t)sink.omitted;
  if (reason != NULL) snprintf(f->reason, sizeof f->reason, "%s", reason);
  npkit_logw_append(flight_log, NPKIT_BLOCK_EVENTS, 1, &ev, sizeof ev);
  *err = to_disk ? npkit_logw_dump(flight_log) : 0;
  pthread_mutex_unlock(&dump_lock);
  return n;
}

/* Every dump asked for, one per trigger; with `to_disk`, a ring is written at each. */
static void take_pending(int to_disk) {
  uint32_t bits = atomic_exchange(&pending, 0);
  for (uint32_t t = 1; t < TRIGGERS; t++) {
    if (!(bits & (1u << t))) continue;
    char reason[48];
    uint64_t key;
    pthread_mutex_lock(&req_lock);
    memcpy(reason, pending_reason[t], sizeof reason);
    key = pending_key[t];
    pthread_mutex_unlock(&req_lock);
    int sig = atomic_load(&pending_signal[t]);
    npkit_ring_stats st;
    int err;
    uint32_t n = dump(t, sig, atomic_load(&pending_result[t]), reason, key, to_disk, &st, &err);
    if (err != 0)
      npkit_warn("dump %u (%s) could not be written to %s: %s; the job continues", n, trigger_name(t),
                 flight_path, strerror(err));
    else if (flight_ring != NULL && to_disk)
      npkit_info("dump %u (%s): %llu events written to %s (%llu older ones overwritten)", n, trigger_name(t),
                 (unsigned long long)st.kept, flight_path, (unsigned long long)st.overwritten);
    else
      npkit_info("dump %u (%s): what was in flight added to %s", n, trigger_name(t), flight_path);
  }
}

/* The writer's task. */
static void take_pending_task(void) { take_pending(1); }

void npkit_flight_request(uint32_t trigger, int signal, int result, const char *reason, uint64_t key) {
  if (trigger == 0 || trigger >= NPKIT_FLIGHT_FATAL || !atomic_load(&flight_on) || !npkit_state_on()) return;
  if (trigger == NPKIT_FLIGHT_ERROR && atomic_exchange(&error_taken, 1)) return;
  if (trigger == NPKIT_FLIGHT_ABORT && atomic_exchange(&abort_taken, 1)) return;
  if (reason != NULL) {
    pthread_mutex_lock(&req_lock);
    snprintf(pending_reason[trigger], sizeof pending_reason[trigger], "%s", reason);
    pending_key[trigger] = key;
    pthread_mutex_unlock(&req_lock);
  }
  atomic_store(&pending_signal[trigger], signal);
  atomic_store(&pending_result[trigger], result);
  atomic_fetch_or(&pending, 1u << trigger);
  npkit_recorder_kick();
}

void npkit_flight_finish(int signal) {
  if (!atomic_exchange(&flight_on, 0) || flight_log == NULL) return;
  /* From here the log's close writes the last dump; a fatal signal must not replace it by a raw
   * one without its END. */
  atomic_store(&fatal_taken, 1);
  /* A dump asked for just before the end (an NCCL error, then the process returned) that the
   * writer had no pass left to take: its FLIGHT event still says why, before the exit's.  Not
   * written to disk here: the log's close writes a ring, with the END block. */
  take_pending(0);
  npkit_ring_stats st;
  int err;
  dump(NPKIT_FLIGHT_EXIT, signal, 0, NULL, 0, 0, &st, &err);
}

/* ---- NPKIT_DUMP_SIGNAL ---- */

static struct sigaction dump_previous;

static void on_dump_signal(int sig, siginfo_t *info, void *uc) {
  int saved = errno;
  npkit_flight_request(NPKIT_FLIGHT_SIGNAL, sig, 0, NULL, 0);
  errno = saved;
  npkit_signals_call_old(&dump_previous, sig, info, uc);
}

/* ---- fatal signals: the raw ring, from the handler ---- */

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction fatal_previous[N_FATAL];
static pid_t owner; /* a child of fork() has a copy of the ring, not the log */
static char fatal_line[1200]; /* "npkit: ... <path>\n", made at the start: no snprintf in a handler */
static size_t fatal_line_len;

static void write_pending(void *ctx, const npkit_event *ev, size_t n) { npkit_ring_out_events(ctx, ev, n); }

static void fatal_dump(int sig) {
  npkit_ring_out o;
  if (npkit_ring_out_begin(flight_ring, &o, npkit_logw_header(flight_log)) != 0) return;
  /* What the threads recorded since the writer's last pass, then why the log was written. */
  npkit_recorder_each_pending(write_pending, &o);
  npkit_ring_stats st;
  npkit_ring_get_stats(flight_ring, &st);
  npkit_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = NPKIT_EV_FLIGHT;
  ev.start_ns = ev.end_ns = npkit_now_ns();
  ev.u.flight.ring_bytes = st.bytes;
  ev.u.flight.events_kept = st.kept;
  ev.u.flight.events_overwritten = st.overwritten;
  ev.u.flight.meta_lost = st.meta_lost;
  ev.u.flight.trigger = NPKIT_FLIGHT_FATAL;
  ev.u.flight.signal = sig;
  ev.u.flight.dump = atomic_fetch_add(&dumps, 1) + 1;
  npkit_ring_out_events(&o, &ev, 1);
  if (npkit_ring_out_finish(flight_ring, &o, NULL) == 0 && fatal_line_len > 0) {
    npkit_diag_write(fatal_line, fatal_line_len);
  }
}

static void on_fatal(int sig, siginfo_t *info, void *uc) {
  int saved = errno;
  size_t i = 0;
  while (i < N_FATAL && fatal_signals[i] != sig) i++;
  if (i == N_FATAL) return;
  if (!atomic_exchange(&fatal_taken, 1) && flight_ring != NULL && getpid() == owner) fatal_dump(sig);
  /* The signal's own effect: the handler the application had (called here once), or the default
   * action, delivered when this handler returns (a fault recurs at once anyway). */
  sigaction(sig, &fatal_previous[i], NULL);
  errno = saved;
  const struct sigaction *old = &fatal_previous[i];
  if (!(old->sa_flags & SA_SIGINFO) && (old->sa_handler == SIG_DFL || old->sa_handler == SIG_IGN))
    raise(sig);
  else
    npkit_signals_call_old(old, sig, info, uc);
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *), struct sigaction *previous, const char *what) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fn;
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, previous) != 0)
    npkit_warn("cannot install the handler of signal %d (%s): %s; %s", sig, what, strerror(errno),
               "the job continues without it");
}

void npkit_flight_start(const npkit_config *cfg, npkit_log_writer *log, const char *path,
                        npkit_flight_collect_fn collect) {
  flight_log = log;
  flight_ring = npkit_logw_ring(log);
  flight_collect = collect;
  snprintf(flight_path, sizeof flight_path, "%s", path);
  owner = getpid();
  npkit_recorder_set_task(take_pending_task);
  atomic_store(&flight_on, 1);
  if (cfg->dump_signal > 0) install(cfg->dump_signal, on_dump_signal, &dump_previous, "NPKIT_DUMP_SIGNAL");
  if (flight_ring != NULL) {
    int w = snprintf(fatal_line, sizeof fatal_line,
                     "npkit: fatal signal: the flight recorder's ring was written to %s (npkit json renders it)\n", path);
    fatal_line_len = w > 0 && (size_t)w < sizeof fatal_line ? (size_t)w : 0;
    for (size_t i = 0; i < N_FATAL; i++) install(fatal_signals[i], on_fatal, &fatal_previous[i], "fatal signal dump");
  }
}
