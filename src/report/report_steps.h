/* The analysis steps that npkit_report_run() chains after reading the logs (one file each). */
#ifndef NPKIT_REPORT_STEPS_H
#define NPKIT_REPORT_STEPS_H

#include "report_model.h"

/* report_hang_find.c: the hangs (report_hang.h), from the scan's hang tracker.  0 or -1 (memory). */
int npkit_report_hangs(npkit_report *rep);

/* report_diagnose.c: the findings, from everything else.  0 or -1 (memory). */
int npkit_report_diagnose(npkit_report *rep);

#endif /* NPKIT_REPORT_STEPS_H */
