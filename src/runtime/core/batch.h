/* Events a source collects itself, on its own thread and in bulk (the CUPTI drain, the NPKit dump
 * source), gathered and appended to the log one block at a time, with the counts of what
 * the log stored and what it refused.  Not thread-safe: the source's lock guards its batch. */
#ifndef NPKIT_BATCH_H
#define NPKIT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "log_writer.h"
#include "npkit/event_log.h"

typedef struct npkit_batch {
  npkit_event *ev;        /* cap slots, the producer's */
  size_t cap, n;
  npkit_log_writer *log;  /* NULL: nothing is stored */
  uint64_t stored;        /* events the log took */
  uint64_t failed;        /* events the log refused, or with no log */
} npkit_batch;

/* The initializer of a batch over the array `slots`, with no log yet. */
#define NPKIT_BATCH_OF(slots) {(slots), sizeof(slots) / sizeof((slots)[0]), 0, NULL, 0, 0}
/* The next free slot: an event may be built in place there before npkit_batch_add. */
static inline npkit_event *npkit_batch_slot(npkit_batch *b) { return &b->ev[b->n]; }
/* Adds ev (a copy unless it is the free slot); 1 when the batch is now full and must be flushed. */
static inline int npkit_batch_add(npkit_batch *b, const npkit_event *ev) {
  if (ev != &b->ev[b->n]) b->ev[b->n] = *ev;
  return ++b->n == b->cap;
}
/* Appends what the batch holds to the log (npkit_logw_events) and empties it: the count of events moved, 0
 * when empty, -(count) when the log refused them (counted in `failed`). */
long npkit_batch_flush(npkit_batch *b);

#endif
