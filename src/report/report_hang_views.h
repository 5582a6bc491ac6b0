/*
 * The views of the hang analysis (report_hang.h): which collective of which communicator some rank
 * did not complete, and every rank's state in it.  The text and the HTML print nothing for a job
 * without hangs; the JSON always has the members "hangs" and "comm_progress" (docs/report.md).
 */
#ifndef NPKIT_REPORT_HANG_VIEWS_H
#define NPKIT_REPORT_HANG_VIEWS_H

#include <stdio.h>

#include "json_writer.h"
#include "report_model.h"

/* "== Hangs ...": per hang its title and a table of its ranks.  0, or -1 if writing failed. */
int npkit_report_hangs_text(npkit_report *rep, FILE *out);
/* The members of the JSON object w has open:
 *   "hangs":[{"comm_id":"..16 hex..","comm":"comm 3f2a0b1c (3 ranks)","nranks":3,"op":"AllReduce",
 *             "seq":14,"missing_ranks":[1],"no_log_ranks":[],"waiting_ranks":[0,2],"failed_ranks":[],
 *             "mismatched_ranks":[],"stuck_ranks":[],"since_ns":..,"stuck_ns":..,"title":"..",
 *             "ranks":[{"rank":0,"global_rank":0,"status":"waiting","mismatched":false,"stuck":false,
 *                       "last_entered":14,"last_completed":13,"since_ns":..,"waited_ns":..,
 *                       "call":{"op":..,"count":..,"datatype":..,"redop":..,"root":..,"result":..}|null,
 *                       "where":[".."]}]}],
 *   "comm_progress":[{"comm_id":..,"comm":..,"nranks":..,"ranks":[{"rank":0,"log":true,
 *                     "last_entered":14,"last_completed":13}]}] */
void npkit_report_hangs_json(npkit_report *rep, npkit_json *w);
/* <section id="hangs"> with a table "hang-ranks" per hang.  0, or -1 if writing failed. */
int npkit_report_hangs_html(npkit_report *rep, FILE *out);

#endif /* NPKIT_REPORT_HANG_VIEWS_H */
