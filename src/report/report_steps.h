/* The analysis steps that npkit_report_run() chains after reading the logs (one file each). */
#ifndef NPKIT_REPORT_STEPS_H
#define NPKIT_REPORT_STEPS_H

#include "report_model.h"

/* report_align.c: host clock offsets from the ends of shared collectives (when there are several
 * hosts and alignment is on) and the end spread among ranks of one host.  0 or -1 (memory). */
int npkit_report_align(npkit_report *rep);

/* report_diagnose.c: the findings, from everything else.  0 or -1 (memory). */
int npkit_report_diagnose(npkit_report *rep);

/* report_run.c: appends a warning about the input.  0 or -1 (memory). */
int npkit_report_warn(npkit_report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* NPKIT_REPORT_STEPS_H */
