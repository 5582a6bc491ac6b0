/*
 * Per-thread state of the trace renderer: the open ncclGroup of each host thread (to pair
 * GroupStart with GroupEnd), the end of its latest call (to close a group that never ended) and
 * whether the thread was seen at all (to name threads that have no THREAD record).
 *
 * Thread indices come from the file, so the table is capped: a log that claims more threads than
 * NPKIT_TRACE_MAX_THREADS still renders every call, only without group slices for the extra ones.
 */
#ifndef NPKIT_TRACE_THREADS_H
#define NPKIT_TRACE_THREADS_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"

#define NPKIT_TRACE_MAX_THREADS 4096

typedef struct npkit_thread_state {
  uint32_t index;
  uint8_t used;
  uint8_t open;           /* inside an outermost group */
  uint8_t has_deferred;   /* `deferred` holds the group's GroupStart call, not yet written */
  uint32_t depth;         /* GroupStart nesting inside the open group */
  uint64_t group;         /* id of the open group */
  uint64_t start_ns;      /* start of its GroupStart */
  uint64_t calls;         /* non-group calls recorded inside it */
  uint64_t last_end_ns;   /* latest end of a call of this thread */
  npkit_event deferred;
} npkit_thread_state;

typedef struct npkit_thread_table {
  npkit_thread_state *slots;
  size_t cap;             /* power of two, 0 before the first insertion */
  size_t n;
} npkit_thread_table;

void npkit_threads_init(npkit_thread_table *t);
void npkit_threads_free(npkit_thread_table *t);
/* The state of thread `index`, created on first use; NULL when the table is full or memory is
 * short (the caller then renders the thread's calls without group tracking). */
npkit_thread_state *npkit_threads_get(npkit_thread_table *t, uint32_t index);
/* Iteration over used slots: start with *pos = 0; NULL at the end. */
npkit_thread_state *npkit_threads_next(npkit_thread_table *t, size_t *pos);

#endif /* NPKIT_TRACE_THREADS_H */
