/*
 * The views of the sections that come from what the application adds to its logs: the call-site
 * table (report_callsites.h, NPKIT_STACK_DEPTH) and the overlap of communication with marked
 * computation (report_marks.h, npkit_mark_begin/end).  The report's one scan fills both
 * (rep->sites, rep->logs[].overlap); a log without stacks and without marks adds nothing, and the
 * text prints nothing for a job that has neither.
 */
#ifndef NPKIT_REPORT_EXTRAS_H
#define NPKIT_REPORT_EXTRAS_H

#include <stdio.h>

#include "json_writer.h"
#include "report_model.h"

/* The call-site table (report_callsites.h) as text, nothing when no log has stacks (0, or -1 if
 * writing failed), and as a JSON value: {"sites":[{"site":1,"frames":[...]}...],"rows":[{"site":1,
 * "function":"ncclAllReduce","calls":..,"ranks":..,"bytes":..,"total_us":..,"mean_us":..,
 * "p99_us":..,"max_us":..}...]}. */
int npkit_callsites_text(npkit_callsites *cs, FILE *out);
void npkit_callsites_json(npkit_callsites *cs, npkit_json *w);

/* The sections as text ("Call sites", "Overlap with marked computation").  0, or -1 if writing
 * failed. */
int npkit_report_extras_text(npkit_report *rep, FILE *out);
/* The members "call_sites" and "mark_overlap" of the JSON object w has open:
 *   "mark_overlap":[{"log":"rank 0","rank":0,"ranges":..,"comm_us":..,"compute_us":..,"overlap_us":..,
 *                    "exposed_us":..,"overlap_ratio":..,"gpu_events":..,"marks":[{"name":..,"ranges":..,
 *                    "total_us":..}]}] (logs with marks only). */
void npkit_report_extras_json(npkit_report *rep, npkit_json *w);

/* The sections as HTML: <section id="call-sites"> with the tables "call-site-rows" and
 * "call-site-frames", and <section id="marks"> with the table "mark-overlap"; each says what to set
 * when the logs hold no stacks or no marks.  0, or -1 if writing failed. */
int npkit_report_extras_html(npkit_report *rep, FILE *out);

#endif /* NPKIT_REPORT_EXTRAS_H */
