/*
 * NPKit dump events of a log (NPKIT_EV_NPKIT_DUMP_SLICE, NPKIT_EV_NPKIT_DUMP_READ) as Chrome trace events,
 * under the process that read them (docs/trace-format.md, "NPKit dumps"):
 *  - one track per NPKit rank, GPU buffer or network channel, and lane, in the tid band 950-998:
 *    "NPKit GPU buf 5", "NPKit GPU buf 5 · lane 1", "NPKit net channel 2 · lane 3" (prefixed with
 *    "NPKit rank 3 · " when the process holds other ranks than its own, suffixed "· unaligned" for
 *    GPU events without a time base); from the 49th track on they share the last one;
 *  - ENTRY/EXIT pairs as "X" slices named after their kind, with size, rsvd or slot, and the
 *    bandwidth size / duration; unpaired ENTRYs and EXITs and single events as instants;
 *  - each reading of the dump folder as an "X" slice "NPKit dump read" on the thread whose
 *    ncclCommDestroy did it (a process-scoped instant at exit) with what was read and lost.
 * Tracks are named at the end, when it is known whether the process holds several ranks.
 */
#ifndef NPKIT_TRACE_NPKIT_DUMP_H
#define NPKIT_TRACE_NPKIT_DUMP_H

#include "log_reader.h"
#include "trace_api.h"
#include "trace_sink.h"

typedef struct npkit_dump_render npkit_dump_render;

/* NULL if memory is short (NPKit events are then skipped).  fmt gives pid and time base. */
npkit_dump_render *npkit_dump_render_new(const npkit_log_reader *r, const npkit_api_fmt *fmt);
/* Writes ev if it is an NPKit dump event and returns 1; returns 0 for any other event (and when
 * n is NULL). */
int npkit_dump_render_event(npkit_dump_render *n, npkit_sink *s, const npkit_event *ev);
/* Names the tracks (NULL is fine). */
void npkit_dump_render_finish(npkit_dump_render *n, npkit_sink *s);
void npkit_dump_render_free(npkit_dump_render *n);

#endif /* NPKIT_TRACE_NPKIT_DUMP_H */
