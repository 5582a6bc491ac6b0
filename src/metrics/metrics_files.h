/*
 * One dump's files in a folder: NCCL Inspector's JSON lines appended to <host>-pid<pid>.log (a
 * dump that fails is cut back, so that the file holds whole dumps) and the Prometheus
 * textfile npkit_metrics_<host>-pid<pid>.prom written whole as .partial and renamed over the last
 * one (node_exporter's textfile collector reads *.prom only, never half a file).  Used by the
 * preloaded library at each interval and at exit, and by `npkit metrics`.
 */
#ifndef NPKIT_METRICS_FILES_H
#define NPKIT_METRICS_FILES_H

#include <stddef.h>

#include "metrics_out.h"

#define NPKIT_METRICS_INSPECTOR 0x1u
#define NPKIT_METRICS_PROMETHEUS 0x2u
#define NPKIT_METRICS_FRESH 0x4u /* the JSON lines start a new file instead of being appended */

/* Writes the files `what` asks for; prom keeps the buckets between dumps (NULL without
 * NPKIT_METRICS_PROMETHEUS).  0, or -1 with "<file>: <reason>" in err. */
int npkit_metrics_dump_files(const char *dir, unsigned what, npkit_metrics_prom *prom, const npkit_metrics_proc *proc,
                             const npkit_metrics_comm *comms, size_t n_comms, const npkit_metrics_op *ops, size_t n_ops,
                             char *err, size_t errlen);

/* Parses "inspector,prometheus" (either, both, "all"; "" or "off": none) into NPKIT_METRICS_*
 * bits.  0, or -1 with the word it does not know in err. */
int npkit_metrics_parse(const char *s, unsigned *what, char *err, size_t errlen);

#endif /* NPKIT_METRICS_FILES_H */
