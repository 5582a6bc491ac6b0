/*
 * The one pass over one log's events: each event is turned, as it streams by, into table samples,
 * per-collective records (through npkit_job_collective), GPU activity, call sites and marks.  This
 * is the only place of the report that knows event kinds; a new source plugs in here.
 */
#ifndef NPKIT_REPORT_SCAN_H
#define NPKIT_REPORT_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "report_model.h"

/* A log's events read ahead by another thread (report_run.c: `npkit report -j N`): the events in
 * file order, and how the reading ended (0, or the reader's status < 0 with its message). */
typedef struct npkit_scan_events {
  npkit_event *ev;
  size_t n, cap;
  int rc;
  int overlap; /* the log's marks' overlap: 1 computed by the reading thread, -1 it ran out of memory, 0 not */
  char err[512];
} npkit_scan_events;

/* Reads every event of the job's log `log` into rep, from the log, or from `ahead` when it is not
 * NULL (the same events, read by another thread).  Returns 0, or -1 with a message (memory, or
 * the file changed since it was opened). */
int npkit_report_scan(npkit_report *rep, uint32_t log, const npkit_scan_events *ahead, char *err, size_t errlen);

/* Reads the events of r into a (grown as needed, at most max_events: more leaves a->rc 1, the log
 * to be scanned from its file), and computes the log's marks' overlap into o.  For a thread of its
 * own: it touches r's iterator and o only. */
void npkit_scan_read_ahead(npkit_log_reader *r, npkit_mark_overlap *o, npkit_scan_events *a, size_t max_events);

#endif /* NPKIT_REPORT_SCAN_H */
