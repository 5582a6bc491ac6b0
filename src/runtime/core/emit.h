/* How a producer (the API wrappers, marks, the profiler plugin, the CUPTI drain, the NPKit dump
 * source) makes an event and hands it on, with the count of what did not get through:
 *
 *  - an event made on a thread at the moment it happens goes to that thread's recorder buffer
 *    (npkit_emit_on, npkit_emit); the recorder counts what its full pool drops, per thread;
 *  - events a source collects itself, on its own thread and in bulk, go through an npkit_batch
 *    (batch.h), which counts what the log stored and what it refused. */
#ifndef NPKIT_EMIT_H
#define NPKIT_EMIT_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"
#include "recorder.h"
#include "state.h"
#include "zero.h"

/* A zeroed event (zero.h: no `rep stos`). */
static inline void npkit_event_zero(npkit_event *ev) { npkit_zero_small(ev, sizeof *ev); }

/* A zeroed event of `kind`. */
static inline void npkit_event_init(npkit_event *ev, uint16_t kind, uint64_t start_ns, uint64_t end_ns) {
  npkit_event_zero(ev);
  ev->kind = kind;
  ev->start_ns = start_ns;
  ev->end_ns = end_ns;
}
/* ... stamped now: an instant. */
void npkit_event_now(npkit_event *ev, uint16_t kind);

/* Records ev on thread t, whose event it becomes. */
static inline void npkit_emit_on(npkit_thread *t, npkit_event *ev) {
  ev->thread = t->index;
  npkit_record(t, ev);
}

/* Records ev on the calling thread while recording is on: 1 when handed to the recorder, 0 when
 * recording is off, -1 when the thread has no recorder state (out of memory, or after its exit
 * handlers): the caller counts that as lost. */
int npkit_emit(npkit_event *ev);

/* npkit_emit with the event made in place, in the calling thread's recorder buffer (no copy): 1 and
 * *out a zeroed record of `kind` to fill, then npkit_emit_commit; 0 when recording is off or the
 * pool is full (the recorder counts the drop); -1 as npkit_emit.  Nothing else may be emitted on
 * the thread between the two. */
static inline int npkit_emit_begin(uint16_t kind, uint64_t start_ns, uint64_t end_ns, npkit_event **out) {
  if (!npkit_state_on()) return 0;
  npkit_thread *t = npkit_thread_self();
  if (t == NULL) return -1;
  npkit_event *ev = npkit_record_begin(t);
  if (ev == NULL) return 0;
  npkit_event_init(ev, kind, start_ns, end_ns);
  ev->thread = t->index;
  *out = ev;
  return 1;
}
static inline void npkit_emit_commit(void) { npkit_record_commit(npkit_tls_self); }

#endif
