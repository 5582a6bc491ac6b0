/*
 * The application's marks and the recording windows in a trace (docs/trace-format.md, "Marks"
 * and "Recording windows"), and the pairing of mark begin/end that the report shares:
 *  - npkit_mark_begin/end(name) → one "X" slice named after the mark on the thread's track, from
 *    the begin to the end that closes it (the latest open range of the same name on the same
 *    thread); a range still open when recording pauses is closed there (args.cut_by_pause), one
 *    still open at the end of the log is closed there (args.unterminated);
 *  - npkit_mark_instant(name) → a thread-scoped instant;
 *  - NPKIT_EV_RECORDING → a process-scoped instant "npkit recording paused" / "... resumed" with
 *    args.reason (NPKIT_START_AFTER, NPKIT_STOP_AFTER, npkit_pause(), npkit_resume(),
 *    NPKIT_TOGGLE_SIGNAL), args.collectives and args.signal where they apply.
 * The mark renderer also owns the call-stack fragments of the log's API events (trace_stacks.h):
 * creating it points the API formatter at them.
 */
#ifndef NPKIT_TRACE_MARKS_H
#define NPKIT_TRACE_MARKS_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"
#include "trace_api.h"
#include "trace_sink.h"

/* Ranges open at the same time that are kept; further begins are ignored (and counted). */
#define NPKIT_MARKS_MAX_OPEN 65536

typedef struct npkit_mark_range {
  uint32_t thread;     /* process thread index */
  uint32_t name;       /* string id */
  uint64_t start_ns, end_ns;
  int cut;             /* not closed by npkit_mark_end: NPKIT_MARK_OPEN_AT_END or _CUT_BY_PAUSE */
} npkit_mark_range;

#define NPKIT_MARK_OPEN_AT_END 1  /* still open when the log ends */
#define NPKIT_MARK_CUT_BY_PAUSE 2 /* open when recording was paused (its end was not recorded) */

typedef struct npkit_mark_pairer {
  npkit_mark_range *open;  /* in begin order */
  size_t n, cap;
  uint64_t unmatched_ends; /* ends without an open range of their name */
  uint64_t ignored_begins; /* begins beyond NPKIT_MARKS_MAX_OPEN */
} npkit_mark_pairer;

void npkit_mark_pairer_init(npkit_mark_pairer *p);
void npkit_mark_pairer_free(npkit_mark_pairer *p);
/* Feeds a MARK_BEGIN or MARK_END event (others are ignored).  Returns 1 and fills *out when an end
 * closes a range, else 0. */
int npkit_mark_pair(npkit_mark_pairer *p, const npkit_event *ev, npkit_mark_range *out);
/* Closes the ranges still open: returns 1 and the next one, closed at end_ns (not before its
 * start) with `cut` set to how, until none is left.  Used when recording pauses (the ends that
 * follow are not recorded) and after the last event. */
int npkit_mark_pair_flush(npkit_mark_pairer *p, uint64_t end_ns, int cut, npkit_mark_range *out);

/* The name of a mark: its string, or "mark <id>" when the log lacks it; into buf. */
const char *npkit_mark_name(const npkit_log_reader *r, uint32_t id, char *buf, size_t len);

typedef struct npkit_marks_render npkit_marks_render;

/* NULL when memory is short or the call stacks cannot be read (marks and stacks are then left out
 * of the trace; everything else renders).  Sets f->stacks while it lives. */
npkit_marks_render *npkit_marks_render_new(const npkit_log_reader *r, npkit_api_fmt *f);
/* Writes a mark or recording event; returns 1 if ev was one (m may be NULL: returns 0). */
int npkit_marks_render_event(npkit_marks_render *m, npkit_sink *s, const npkit_event *ev);
/* Closes the ranges still open, at the log's END time (or its latest mark). */
void npkit_marks_render_finish(npkit_marks_render *m, npkit_sink *s);
void npkit_marks_render_free(npkit_marks_render *m);

#endif /* NPKIT_TRACE_MARKS_H */
