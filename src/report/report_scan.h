/*
 * The pass over one log's events: each event is turned, as it streams by, into table samples and
 * per-collective records.  This is the only place that knows event kinds; a new source (GPU
 * activity, profiler-plugin records) plugs in here.
 */
#ifndef NPKIT_REPORT_SCAN_H
#define NPKIT_REPORT_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"
#include "report_model.h"

#define NPKIT_SCAN_NONE UINT32_MAX

/* The log's communicators (index = position in r->comms): report communicator and member ids,
 * NPKIT_SCAN_NONE when unknown. */
typedef struct npkit_scan_comms {
  const uint32_t *comm;
  const uint32_t *member;
} npkit_scan_comms;

/* Reads every event of r into rep for log `log`.  Returns 0, or -1 with a message. */
int npkit_report_scan(npkit_report *rep, uint32_t log, npkit_log_reader *r, const npkit_scan_comms *map, char *err,
                      size_t errlen);

#endif /* NPKIT_REPORT_SCAN_H */
