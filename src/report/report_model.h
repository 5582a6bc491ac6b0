/*
 * Analysis of the event logs of a job (job.h opens them, once): one streaming pass over each log's
 * events (report_scan.c) fills the model: compact per-call statistics (the nccl-tests table),
 * per-collective records (for the joins across ranks), GPU activity, the call sites of the stacks
 * and the overlap of communication with marked computation.  Then the clocks of the hosts are
 * aligned, arrival spreads and stragglers computed, the bandwidth curves built, GPU timelines
 * analysed, and the findings ranked.  The result is a plain data structure that the text, JSON
 * and HTML views only render (report_render.h).
 *
 * Memory: per log, the reader's fixed buffer; overall, the table rows (bounded quantile sketches)
 * and 17 bytes per collective per rank.  Nothing here prints or exits.
 */
#ifndef NPKIT_REPORT_MODEL_H
#define NPKIT_REPORT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "duration.h"
#include "job.h"
#include "json_writer.h"
#include "report_callsites.h"
#include "report_curve.h"
#include "report_findings.h"
#include "report_gpu.h"
#include "report_hang.h"
#include "job_instances.h"
#include "report_machine.h"
#include "report_marks.h"
#include "report_straggler.h"
#include "report_table.h"
#include "report_tags.h"
#include "report_timeline.h"
#include "stats_quantile.h"

#define NPKIT_REPORT_DEFAULT_THRESHOLD_NS 5000.0
#define NPKIT_REPORT_DEFAULT_TOP 10
/* Lost events above this share of a source's events call for a bigger buffer. */
#define NPKIT_REPORT_LOSS_LIMIT 0.03
/* Not a source id of the log format: the events the profiler plugin says it lost (PLUGIN_STATS). */
#define NPKIT_REPORT_SRC_PLUGIN 0x10000u

typedef struct npkit_report_options {
  double threshold_ns;  /* arrival spread that counts as synchronisation delay */
  int align;            /* estimate clock offsets between hosts */
  uint32_t top;         /* instances with the largest spread to list */
  int timeline;         /* build the timeline strip of the HTML view (a second walk of the events:
                           docs/architecture.md, "The report", says why) */
  unsigned jobs;        /* threads reading the logs (0 or 1: the scan alone); the same report at any */
} npkit_report_options;

/* What the scan found in one log (the log itself: job.logs[] of the same index). */
typedef struct npkit_rep_log {
  uint64_t first_ns, last_ns;   /* earliest start and latest end of its events, own clock */
  uint64_t api_calls, data_calls, failed_calls, untimed_calls, other_events;
  uint64_t gpu_events;          /* GPU activity records (kernels, copies, memsets) */
  uint64_t gpu_untimed;         /* ... that CUPTI could not time */
  uint64_t plugin_events, plugin_lost; /* profiler-plugin events, and those it reports lost */
  uint64_t marks;               /* the application's own marks */
  uint64_t npkit_reads;         /* NPKit dump readings that found files */
  uint64_t npkit_shared_reads;  /* ... of a dump NPKit's one state per process may have mixed */
  int has_gpu;
  npkit_gpu_rank gpu;           /* valid when has_gpu */
  npkit_mark_overlap overlap;   /* communication against marked computation (report_marks.h) */
  npkit_rep_machine machine;    /* its snapshot and sampled counters (report_machine.h) */
} npkit_rep_log;

typedef struct npkit_report {
  npkit_report_options opts;
  npkit_job job;                /* the logs, hosts, communicators, instances and clock alignment */
  npkit_rep_log *logs;          /* one per job.logs[] */
  npkit_table table;

  npkit_straggler strag;
  npkit_curves curves;
  npkit_tag_sum *tags;          /* the rows by user tag (report_tags.h), NULL when untagged */
  size_t n_tags;
  uint32_t gpu_ranks;           /* logs with GPU activity */
  npkit_callsites sites;        /* the call-site table (NPKIT_STACK_DEPTH) */
  npkit_timeline timeline;      /* with opts.timeline: the strip of the HTML view */
  npkit_hang_scan hscan;        /* what the scan keeps for the hang analysis */
  npkit_hangs hangs;            /* collectives some rank did not complete (report_hang.h) */
  npkit_findings findings;
} npkit_report;

void npkit_report_defaults(npkit_report_options *o);

/* Opens the logs (each once), scans them and runs the analyses.  Logs that cannot be read are
 * skipped with a warning (job.warnings); returns 0, or -1 with a message when none could be read
 * or memory is short. */
int npkit_report_run(npkit_report *rep, char *const *paths, size_t n_paths, const npkit_report_options *o,
                     char *err, size_t errlen);
/* The same for a job already open: the report takes it over (*job is left empty). */
int npkit_report_run_job(npkit_report *rep, npkit_job *job, const npkit_report_options *o, char *err, size_t errlen);
void npkit_report_free(npkit_report *rep);

/* Helpers for the renderers. */
/* "rank 3" or "host:pid" */
void npkit_report_log_label(const npkit_report *rep, size_t log, char *buf, size_t len);
/* The ranks of a host as ranges, "0-3,8"; "?" when none is known. */
void npkit_report_host_ranks(const npkit_report *rep, uint32_t host, char *buf, size_t len);
/* "comm 1f2e3d4c (8 ranks)" or with the communicator's name */
void npkit_report_comm_label(const npkit_report *rep, uint32_t comm, char *buf, size_t len);
/* "4 B", "1 KiB", "8 MiB" when a binary unit divides the size, else the exact byte count below
 * 10 MB ("4000 B") and three digits above ("95.4 MiB") */
void npkit_report_bytes(uint64_t bytes, char *buf, size_t len);
/* "12.3 us", "4.56 ms", "1.23 s" */
void npkit_report_duration(double ns, char *buf, size_t len);
/* "4 logs on 1 host, 18419 events (501 NCCL calls), 3.89 s of activity, 2.26 MiB read" */
void npkit_report_overview(const npkit_report *rep, char *buf, size_t len);
/* "N collective instances compared across ranks (GPU times); arrival spread median .., p99 .., max ...
 * M (x %) exceed the threshold of .., .. of delay in all." (with the instances skipped when some are) */
void npkit_report_straggler_summary(npkit_report *rep, char *buf, size_t len);
/* A duration in the JSON views: nanoseconds written as microseconds (the key ends in _us; NaN,
 * no data, is written as null). */
void npkit_report_json_us(npkit_json *w, const char *key, double ns);
/* What times the table when no log holds GPU activity of the application (gpu_ranks == 0): the
 * rows (and their calls) whose time comes from NCCL's own GPU stamps (profiler plugin), of all. */
typedef struct npkit_gpu_coverage {
  size_t rows, gpu_rows;
  uint64_t calls, gpu_calls;
  uint32_t plugin_ranks;        /* logs with profiler-plugin events */
} npkit_gpu_coverage;
void npkit_report_gpu_coverage(const npkit_report *rep, npkit_gpu_coverage *c);
/* Why overlap and idle are not computed (gpu_ranks == 0), as a clause: "these logs hold NCCL API
 * events only", or what NCCL's own GPU stamps time and what is missing. */
void npkit_report_no_gpu_reason(const npkit_report *rep, char *buf, size_t len);
/* Logs recorded with NPKIT_SIMULATED: a report of them describes a simulation, and says so first. */
size_t npkit_report_simulated_logs(const npkit_report *rep);
/* The sentence that says so ("" when no log is simulated). */
void npkit_report_simulated_note(const npkit_report *rep, char *buf, size_t len);
const char *npkit_source_name(uint32_t source);

#endif /* NPKIT_REPORT_MODEL_H */
