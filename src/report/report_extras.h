/*
 * The sections of `npkit report` that come from what the application adds to its logs: the call-site
 * table (report_callsites.h, NPKIT_STACK_DEPTH) and the overlap of communication with marked
 * computation (report_marks.h, npkit_mark_begin/end).  One pass over each log's events feeds both;
 * a log without stacks and without marks adds nothing, and nothing is printed for a job that has
 * neither.
 */
#ifndef NPKIT_REPORT_EXTRAS_H
#define NPKIT_REPORT_EXTRAS_H

#include <stddef.h>
#include <stdio.h>

#include "json_writer.h"
#include "report_callsites.h"
#include "report_marks.h"

typedef struct npkit_extras_log {
  char label[96];      /* "rank 3", or "host:pid" */
  int32_t rank;
  npkit_mark_overlap overlap;
} npkit_extras_log;

typedef struct npkit_report_extras {
  npkit_callsites sites;
  npkit_extras_log *logs;  /* in the order of the paths */
  size_t n_logs;
  char **warnings;         /* logs that could not be read */
  size_t n_warnings;
} npkit_report_extras;

/* Reads the logs (a log that cannot be read becomes a warning).  0, or -1 with a message when memory
 * is short. */
int npkit_report_extras_run(npkit_report_extras *x, char *const *paths, size_t n, char *err, size_t errlen);
void npkit_report_extras_free(npkit_report_extras *x);
/* The same for the logs of a report (its readable logs, in its order). */
struct npkit_report;
int npkit_report_extras_run_report(npkit_report_extras *x, const struct npkit_report *rep, char *err, size_t errlen);

/* The sections as text ("Call sites", "Overlap with marked computation").  0, or -1 if writing
 * failed. */
int npkit_report_extras_text(npkit_report_extras *x, FILE *out);
/* The members "call_sites" and "mark_overlap" of the JSON object w has open:
 *   "mark_overlap":[{"log":"rank 0","rank":0,"ranges":..,"comm_us":..,"compute_us":..,"overlap_us":..,
 *                    "exposed_us":..,"overlap_ratio":..,"gpu_events":..,"marks":[{"name":..,"ranges":..,
 *                    "total_us":..}]}] (logs with marks only). */
void npkit_report_extras_json(npkit_report_extras *x, npkit_json *w);

/* The sections as HTML: <section id="call-sites"> with the tables "call-site-rows" and
 * "call-site-frames", and <section id="marks"> with the table "mark-overlap"; each says what to set
 * when the logs hold no stacks or no marks.  0, or -1 if writing failed. */
int npkit_report_extras_html(npkit_report_extras *x, FILE *out);

/* run + text + free: what `npkit report` prints after its own sections.  0, or -1 with a message. */
int npkit_report_extras_print(char *const *paths, size_t n, FILE *out, char *err, size_t errlen);

#endif /* NPKIT_REPORT_EXTRAS_H */
