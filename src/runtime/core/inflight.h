/* Work in flight: what the sources report when the hang watchdog looks (watchdog.h) and when a dump
 * takes its snapshot (flight.h).  Each item is an NPKIT_EV_INFLIGHT event (include/npkit/
 * event_log.h): a wrapped call that has not returned, an NCCL task whose kernel has not started, a
 * kernel channel, a proxy operation or step that has not finished.
 *
 * A source reports from whatever thread asks, at any time: it reads only what its producers
 * publish with atomics (the threads' "in a call since" words, the plugin's slots), never locks
 * what its hot path uses and never allocates.  The words for an item are in src/format
 * (inflight_text.h), shared with the report. */
#ifndef NPKIT_INFLIGHT_H
#define NPKIT_INFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"

typedef struct npkit_inflight_sink {
  npkit_event *ev;    /* cap items, the asker's */
  size_t cap, n;
  uint64_t omitted;   /* items that found the sink full */
  uint64_t now_ns;    /* the snapshot's time (end_ns of every item) */
} npkit_inflight_sink;

/* A new item of kind `what` (NPKIT_INFL_*), since `since_ns`, with every field "unknown" (seq
 * NPKIT_NO_SEQ, ranks, channel, peer and steps -1, phase 0xff) for the source to fill in; NULL
 * when the sink is full (counted). */
npkit_event *npkit_inflight_add(npkit_inflight_sink *s, uint8_t what, uint16_t fn, uint64_t since_ns);

/* Names the item's communicator. */
static inline void npkit_inflight_set_comm(npkit_ev_inflight *f, uint32_t local_id, uint64_t comm_id, int32_t rank,
                                           int32_t nranks) {
  f->comm = local_id;
  f->comm_id = comm_id;
  f->rank = rank;
  f->nranks = nranks;
}

/* When the item last moved: its start, or its last progress when later. */
static inline uint64_t npkit_inflight_since(const npkit_event *ev) {
  return ev->u.inflight.progress_ns > ev->start_ns ? ev->u.inflight.progress_ns : ev->start_ns;
}

/* What "the same stuck operation" means: every item of one collective (its communicator, sequence
 * number and function) shares a key; an item without them is keyed by its task, or by its thread
 * and start.  Never 0. */
uint64_t npkit_inflight_key(const npkit_event *ev);

#endif
