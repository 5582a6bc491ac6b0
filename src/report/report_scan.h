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

/* Reads every event of the job's log `log` into rep.  Returns 0, or -1 with a message (memory, or
 * the file changed since it was opened). */
int npkit_report_scan(npkit_report *rep, uint32_t log, char *err, size_t errlen);

#endif /* NPKIT_REPORT_SCAN_H */
