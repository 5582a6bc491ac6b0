/*
 * The report's collectives as NCCL Inspector's JSON lines (NVIDIA/nccl plugins/profiler/inspector,
 * format v4.2: v4.0 of the releases up to v2.30.7-1, with the `dump_stats` line of v4.1 and the
 * `coll_algo`/`coll_proto` keys of v4.2), so that the Inspector's tools (perf_summary_exporter.py)
 * read what this library recorded.  One file per process, `<dir>/<host>-pid<pid>.log`; per
 * communicator of the process, a `dump_stats` line, then one `coll_perf` line per collective
 * instance with a time, in sequence order.  Unlike the Inspector nothing is left out: no size
 * threshold, CPU-timed collectives kept (`collective_cpu`), and the calls that have no time (inside
 * a group without GPU activity) counted in `coll_dropped_total`.  One dump covering the whole run
 * (`npkit metrics`).
 */
#ifndef NPKIT_REPORT_INSPECTOR_H
#define NPKIT_REPORT_INSPECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "report_model.h"

typedef struct npkit_inspector_stats {
  size_t files;
  uint64_t lines;        /* coll_perf lines */
  uint64_t without_time; /* collectives seen without a time: counted, not written */
} npkit_inspector_stats;

/* Writes the files into the folder dir (which must exist).  dump_us is the dump's time
 * (metadata.dump_timestamp_us).  0, or -1 with a message. */
int npkit_report_inspector(const npkit_report *rep, const char *dir, uint64_t dump_us, npkit_inspector_stats *st,
                           char *err, size_t errlen);

#endif /* NPKIT_REPORT_INSPECTOR_H */
