/* The analysis steps that npkit_report_run() chains after reading the logs (one file each). */
#ifndef NPKIT_REPORT_STEPS_H
#define NPKIT_REPORT_STEPS_H

#include "report_model.h"

/* report_diagnose.c: the findings, from everything else.  0 or -1 (memory). */
int npkit_report_diagnose(npkit_report *rep);

#endif /* NPKIT_REPORT_STEPS_H */
