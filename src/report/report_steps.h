/* The analysis steps that npkit_report_run() chains after reading the logs (one file each). */
#ifndef NPKIT_REPORT_STEPS_H
#define NPKIT_REPORT_STEPS_H

#include "report_model.h"

/* report_hang_find.c: the hangs (report_hang.h), from the scan's hang tracker.  0 or -1 (memory). */
int npkit_report_hangs(npkit_report *rep);

/* report_diagnose.c: the findings, from everything else.  0 or -1 (memory). */
int npkit_report_diagnose(npkit_report *rep);
/* report_machine_find.c: the machine's findings (ports, NVLinks, settings, host names, open-file
 * limit, link use), called by npkit_report_diagnose.  0 or -1 (memory). */
int npkit_report_machine_findings(npkit_report *rep);
/* report_advice.c: NCCL tuning advice where the data supports it.  0 or -1 (memory). */
int npkit_report_advice(npkit_report *rep);

#endif /* NPKIT_REPORT_STEPS_H */
