/* What every generated NCCL wrapper does around the real call (see nccl_wrappers.c).
 *
 * begin: 0 = pass the call through untouched (recording off, or NCCL calling its own public API
 *        from inside a wrapped call, which must not be recorded twice); 1 = track it.
 * A tracked call always updates the bookkeeping that must stay identical on every rank (sequence
 * numbers, groups, communicators), and is stored only if NPKIT_OPS selects its function and
 * recording is not paused (window.h: npkit_rec_ops, npkit_rec_paused).
 *
 * The per-call work beyond the mask (a recording window's checks, pending signal toggles, the call
 * stack) runs only when npkit_call_extras_on is set: with no window, no toggle signal and no
 * stacks, a call pays one predictable branch for all of it. */
#ifndef NPKIT_API_CALL_H
#define NPKIT_API_CALL_H

#include <string.h>

#include "clock.h"
#include "comm_registry.h"
#include "cupti_hook.h"
#include "emit.h"
#include "lifecycle.h"
#include "nccl_names.h"
#include "recorder.h"
#include "window.h"

typedef struct npkit_call {
  npkit_thread *t;
  npkit_comm *comm;
  npkit_event ev;
} npkit_call;

/* npkit_call_extras() must run for every tracked call (set when recording starts). */
extern int npkit_call_extras_on;
void npkit_call_extras_setup(void);

/* Applies the recording window to the call and attaches its call stack when it is to be stored.
 * Returns whether recording is paused now (`paused`: as the caller read it). */
int npkit_call_extras(npkit_thread *t, npkit_event *ev, int paused);

static inline int npkit_call_begin(npkit_call *c, unsigned fn) {
  if (!npkit_recording()) {
    npkit_wait_for_stop(); /* the process ends after the finish: the call must not outrun the log */
    return 0;
  }
  npkit_thread *t = npkit_thread_self();
  if (t == NULL || t->depth > 0) return 0;
  t->depth++;
  c->t = t;
  c->comm = NULL;
  npkit_event_zero(&c->ev);
  c->ev.kind = NPKIT_EV_API;
  c->ev.func = (uint16_t)fn;
  c->ev.thread = t->index;
  c->ev.u.api.seq = NPKIT_NO_SEQ;
  c->ev.u.api.peer = -1;
  c->ev.u.api.datatype = -1;
  c->ev.u.api.redop = -1;
  c->ev.u.api.call_no = ++t->calls;
  if (t->group_depth > 0) {
    c->ev.u.api.group = t->group_id;
    c->ev.u.api.flags = NPKIT_API_IN_GROUP;
  }
  return 1;
}

/* The next number of a communicator's counter.  A load and a store, not an atomic increment: NCCL
 * forbids using one communicator from two threads at once ("multiple threads should use separate
 * communicator objects", NCCL's documentation on thread safety), so calls on one communicator
 * follow each other, and a locked increment cost 5 ns a call: it waits until the previous
 * event's stores into the chunk have left the store buffer (perf, bench/RESULTS.md). */
static inline uint64_t npkit_call_next(_Atomic uint64_t *counter) {
  uint64_t v = atomic_load_explicit(counter, memory_order_relaxed);
  atomic_store_explicit(counter, v + 1, memory_order_relaxed);
  return v;
}

/* A call NCCL did not accept: a collective says which sequence number it was made at
 * (NPKIT_API_SEQ_AT), and an error of the job (not of the arguments) asks for a dump. */
void npkit_call_failed(npkit_call *c);
/* ncclUnhandledCudaError, ncclSystemError, ncclInternalError, ncclInvalidUsage, ncclRemoteError:
 * the job is broken (a call the caller got wrong, ncclInvalidArgument, is not; nor a function the
 * loaded NCCL lacks). */
int npkit_call_job_error(int result);

/* Sequence numbers advance only for calls NCCL accepted, so that a call rejected on one rank
 * (bad argument) does not shift the numbering against the other ranks. */
static inline void npkit_call_sequence(npkit_call *c) {
  npkit_ev_api *a = &c->ev.u.api;
  if (__builtin_expect(a->result != 0 && a->result != 7 /* ncclInProgress */, 0)) {
    npkit_call_failed(c);
    return;
  }
  if (c->comm == NULL) return;
  npkit_fn_class cls = npkit_fn_class_of(c->ev.func);
  if (cls == NPKIT_CLASS_coll) {
    a->seq = npkit_call_next(&c->comm->coll_seq);
  } else if (cls == NPKIT_CLASS_p2p && (a->flags & (NPKIT_API_P2P_SEND | NPKIT_API_P2P_RECV)) &&
             a->peer >= 0 && a->peer < c->comm->nranks && c->comm->send_seq != NULL) {
    _Atomic uint64_t *s = (a->flags & NPKIT_API_P2P_SEND) ? c->comm->send_seq : c->comm->recv_seq;
    a->seq = npkit_call_next(&s[a->peer]);
  }
}

/* Right after the first clock reading: NCCL's events of this thread and the hang watchdog can name
 * the call (npkit_thread_in_call reads the three words; the call number goes last). */
static inline void npkit_call_started(npkit_call *c) {
  npkit_thread *t = c->t;
  atomic_store_explicit(&t->cur_call_start, c->ev.start_ns, memory_order_relaxed);
  atomic_store_explicit(&t->cur_what, (uint64_t)c->ev.u.api.comm << 16 | c->ev.func, memory_order_relaxed);
  atomic_store_explicit(&t->cur_call, c->ev.u.api.call_no, memory_order_release);
}

static inline void npkit_call_end(npkit_call *c) {
  int on = atomic_load_explicit(&npkit_state, memory_order_relaxed) == NPKIT_STATE_ON;
  /* Ended after a stop's finish turned recording off: the call stays in flight for the finish's
   * snapshot (its sequence number not yet taken), and returns once the finish is over. */
  if (__builtin_expect(!on, 0)) npkit_wait_for_stop();
  npkit_call_sequence(c);
  atomic_store_explicit(&c->t->cur_call, 0, memory_order_relaxed);
  c->t->depth--;
  int paused = atomic_load_explicit(&npkit_rec_paused, memory_order_relaxed);
  if (__builtin_expect(npkit_call_extras_on, 0)) paused = npkit_call_extras(c->t, &c->ev, paused);
  int store = !paused && npkit_fn_set_has(&npkit_rec_ops, c->ev.func) && on;
  npkit_cupti_publish(&c->ev, store);
  if (store) npkit_emit_on(c->t, &c->ev);
}

#endif
