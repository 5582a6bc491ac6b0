#include "window.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "clock.h"
#include "diag.h"
#include "nccl_names.h"
#include "signals.h"
#include "state.h"

#define PENDING 64

npkit_fn_set npkit_rec_ops;
_Atomic int npkit_rec_paused = 1; /* nothing is stored before the window is set up */

static uint64_t base_ns;
static npkit_window_point start_pt, stop_pt;
static int window_on;     /* a window or a toggle signal: count collectives, drain toggles */
static _Atomic int start_done, stop_done;
static _Atomic uint64_t collectives;

/* Changes of state that happened where no event can be recorded (signal handler, start-up), kept
 * until the next call records them.  Slot seq + 1 in `ready` marks a slot as filled. */
typedef struct pending {
  _Atomic uint64_t ready;
  /* atomic (relaxed) because a reader may race with a handler refilling the slot: it then sees
   * `ready` change and drops what it read */
  _Atomic uint64_t time_ns, collectives;
  _Atomic uint32_t recording, reason;
  _Atomic int sig;
} pending;

typedef struct pending_copy {
  uint64_t time_ns, collectives;
  uint32_t recording, reason;
  int sig;
} pending_copy;

static pending ring[PENDING];
static _Atomic uint64_t ring_head; /* slots handed out */
static _Atomic uint64_t ring_done; /* slots recorded or given up */
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
static int toggle_sig;
static struct sigaction previous;

int npkit_window_paused(void) { return atomic_load_explicit(&npkit_rec_paused, memory_order_relaxed); }

static void fill_event(npkit_event *ev, uint32_t thread, uint64_t time_ns, uint32_t recording,
                       uint32_t reason, int sig, uint64_t colls) {
  memset(ev, 0, sizeof *ev);
  ev->kind = NPKIT_EV_RECORDING;
  ev->thread = thread;
  ev->start_ns = ev->end_ns = time_ns;
  ev->u.recording.recording = recording;
  ev->u.recording.reason = reason;
  ev->u.recording.signal = sig;
  ev->u.recording.collectives = colls;
}

static void record_change(npkit_thread *t, uint64_t time_ns, uint32_t recording, uint32_t reason,
                          int sig, uint64_t colls) {
  if (t == NULL || atomic_load_explicit(&npkit_state, memory_order_relaxed) != NPKIT_STATE_ON) return;
  npkit_event ev;
  fill_event(&ev, t->index, time_ns, recording, reason, sig, colls);
  npkit_record(t, &ev);
}

/* Async-signal-safe: atomics only. */
static void push_pending(uint64_t time_ns, uint32_t recording, uint32_t reason, int sig) {
  uint64_t seq = atomic_fetch_add(&ring_head, 1);
  pending *p = &ring[seq % PENDING];
  atomic_store_explicit(&p->ready, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&p->time_ns, time_ns, memory_order_relaxed);
  atomic_store_explicit(&p->collectives, atomic_load_explicit(&collectives, memory_order_relaxed),
                        memory_order_relaxed);
  atomic_store_explicit(&p->recording, recording, memory_order_relaxed);
  atomic_store_explicit(&p->reason, reason, memory_order_relaxed);
  atomic_store_explicit(&p->sig, sig, memory_order_relaxed);
  atomic_store_explicit(&p->ready, seq + 1, memory_order_release);
}

/* Takes the pending changes in order; fn(ctx, slot) for each complete one.  A slot overwritten by
 * a later lap of the ring is skipped (more than PENDING toggles between two calls). */
static void take_pending(void (*fn)(void *ctx, const pending_copy *p), void *ctx) {
  if (pthread_mutex_trylock(&drain_lock) != 0) return; /* another thread is at it */
  uint64_t done = atomic_load(&ring_done), head = atomic_load(&ring_head);
  while (done < head) {
    pending *p = &ring[done % PENDING];
    uint64_t ready = atomic_load_explicit(&p->ready, memory_order_acquire);
    if (ready == 0) break; /* still being written */
    if (ready == done + 1) {
      pending_copy copy = {
          atomic_load_explicit(&p->time_ns, memory_order_relaxed),
          atomic_load_explicit(&p->collectives, memory_order_relaxed),
          atomic_load_explicit(&p->recording, memory_order_relaxed),
          atomic_load_explicit(&p->reason, memory_order_relaxed),
          atomic_load_explicit(&p->sig, memory_order_relaxed)};
      atomic_thread_fence(memory_order_acquire);
      if (atomic_load_explicit(&p->ready, memory_order_relaxed) == ready) fn(ctx, &copy);
    }
    done++;
  }
  atomic_store(&ring_done, done);
  pthread_mutex_unlock(&drain_lock);
}

static void record_pending(void *ctx, const pending_copy *p) {
  record_change(ctx, p->time_ns, p->recording, p->reason, p->sig, p->collectives);
}

void npkit_window_drain(npkit_thread *t) {
  if (atomic_load_explicit(&ring_done, memory_order_relaxed) !=
      atomic_load_explicit(&ring_head, memory_order_relaxed))
    take_pending(record_pending, t);
}

/* Sets the state; returns 1 if it changed. */
static int set_recording(int recording) {
  int old = atomic_exchange(&npkit_rec_paused, !recording);
  return (old == 0) != (recording != 0);
}

void npkit_window_set(npkit_thread *t, int recording, uint32_t reason) {
  npkit_window_drain(t);
  if (set_recording(recording))
    record_change(t, npkit_now_ns(), (uint32_t)recording, reason, 0,
                  atomic_load_explicit(&collectives, memory_order_relaxed));
}

static void on_toggle(int sig, siginfo_t *info, void *uc) {
  int saved_errno = errno;
  int old = atomic_load(&npkit_rec_paused);
  while (!atomic_compare_exchange_weak(&npkit_rec_paused, &old, !old)) {
  }
  push_pending(npkit_now_ns(), old /* was paused: now recording */, NPKIT_REC_SIGNAL, sig);
  errno = saved_errno;
  npkit_signals_call_old(&previous, sig, info, uc);
}

void npkit_window_start(const npkit_config *cfg) {
  npkit_rec_ops = cfg->ops;
  base_ns = npkit_now_ns();
  start_pt = cfg->start_after;
  stop_pt = cfg->stop_after;
  int has_start = start_pt.collectives != 0 || start_pt.ns != 0;
  int has_stop = stop_pt.collectives != 0 || stop_pt.ns != 0;
  if (has_start && has_stop &&
      ((start_pt.collectives && stop_pt.collectives && stop_pt.collectives <= start_pt.collectives) ||
       (start_pt.ns && stop_pt.ns && stop_pt.ns <= start_pt.ns)))
    npkit_warn("NPKIT_STOP_AFTER is not after NPKIT_START_AFTER: nothing will be recorded");
  atomic_store(&start_done, !has_start);
  atomic_store(&stop_done, !has_stop);
  atomic_store(&npkit_rec_paused, has_start);
  if (has_start) push_pending(base_ns, 0, NPKIT_REC_START_AFTER, 0);
  if (cfg->toggle_signal > 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_toggle;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(cfg->toggle_signal, &sa, &previous) == 0) {
      toggle_sig = cfg->toggle_signal;
    } else {
      npkit_warn("NPKIT_TOGGLE_SIGNAL: cannot install a handler for signal %d: %s",
                 cfg->toggle_signal, strerror(errno));
    }
  }
  window_on = has_start || has_stop || toggle_sig != 0;
}

int npkit_window_active(void) { return window_on; }

/* Whether the call crosses window point p (once: `done` is set by the first call that does). */
static int crosses(const npkit_window_point *p, _Atomic int *done, uint64_t before, uint64_t now) {
  if (atomic_load_explicit(done, memory_order_relaxed)) return 0;
  int reached = (p->collectives != 0 && before >= p->collectives) ||
                (p->ns != 0 && now >= base_ns + p->ns);
  return reached && !atomic_exchange(done, 1);
}

int npkit_window_apply(npkit_thread *t, const npkit_event *ev, int paused) {
  if (window_on) {
    npkit_window_drain(t);
    uint64_t before;
    if (npkit_fn_class_of(ev->func) == NPKIT_CLASS_coll && ev->u.api.seq != NPKIT_NO_SEQ)
      before = atomic_fetch_add_explicit(&collectives, 1, memory_order_relaxed);
    else
      before = atomic_load_explicit(&collectives, memory_order_relaxed);
    if (crosses(&start_pt, &start_done, before, ev->start_ns) && set_recording(1))
      record_change(t, ev->start_ns, 1, NPKIT_REC_START_AFTER, 0, before);
    if (crosses(&stop_pt, &stop_done, before, ev->start_ns) && set_recording(0))
      record_change(t, ev->start_ns, 0, NPKIT_REC_STOP_AFTER, 0, before);
    paused = atomic_load_explicit(&npkit_rec_paused, memory_order_relaxed);
  }
  return paused;
}

typedef struct pending_block {
  npkit_event ev[PENDING];
  uint32_t n;
} pending_block;

static void collect_pending(void *ctx, const pending_copy *p) {
  pending_block *b = ctx;
  if (b->n < PENDING)
    fill_event(&b->ev[b->n++], 0, p->time_ns, p->recording, p->reason, p->sig, p->collectives);
}

/* The toggle handler stays installed: a signal sent while the job tears down must not kill it. */
void npkit_window_finish(npkit_log_writer *log) {
  static pending_block block; /* 8 KiB: not on the stack of an exiting thread */
  block.n = 0;
  take_pending(collect_pending, &block);
  if (block.n > 0 && log != NULL)
    npkit_logw_events(log, block.ev, block.n);
}
