/*
 * Analysis of the event logs of a job: every rank's log is read once, streaming, into compact
 * per-call statistics (the nccl-tests table) and per-collective records (for the joins across
 * ranks); then the clocks of the hosts are aligned, arrival spreads and stragglers computed, the
 * bandwidth curves built, GPU timelines analysed when there is GPU activity, and the findings
 * ranked.  The result is a plain data structure that the text, JSON and HTML renderers read
 * (report_render.h).  `npkit merge` uses the same reading and alignment, without the analyses.
 *
 * Memory: per log, the reader's fixed buffer; overall, the table rows (bounded quantile sketches)
 * and 17 bytes per collective per rank.  Nothing here prints or exits.
 */
#ifndef NPKIT_REPORT_MODEL_H
#define NPKIT_REPORT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "clock_align.h"
#include "report_curve.h"
#include "report_findings.h"
#include "report_gpu.h"
#include "report_instances.h"
#include "report_straggler.h"
#include "report_table.h"
#include "report_tags.h"
#include "stats_quantile.h"

#define NPKIT_REPORT_DEFAULT_THRESHOLD_NS 5000.0
#define NPKIT_REPORT_DEFAULT_TOP 10
/* Lost events above this share of a source's events call for a bigger buffer. */
#define NPKIT_REPORT_LOSS_LIMIT 0.03
#define NPKIT_REPORT_MAX_SOURCES 8
/* Not a source id of the log format: the events the profiler plugin says it lost (PLUGIN_STATS). */
#define NPKIT_REPORT_SRC_PLUGIN 0x10000u

typedef struct npkit_report_options {
  double threshold_ns;  /* arrival spread that counts as synchronisation delay */
  int align;            /* estimate clock offsets between hosts */
  int analyses;         /* 0: only what clock alignment needs (npkit merge) */
  uint32_t top;         /* instances with the largest spread to list */
} npkit_report_options;

typedef struct npkit_rep_loss {
  uint32_t source;      /* npkit_source */
  uint64_t recorded, dropped;
} npkit_rep_loss;

/* One log: one process, usually one rank. */
typedef struct npkit_rep_log {
  char *path;
  uint32_t host;
  int32_t rank, world_size, local_rank, pid, device;
  uint64_t clock_base_ns;
  uint64_t first_ns, last_ns;   /* earliest start and latest end of its events, own clock */
  uint64_t events, recorded, dropped;
  int truncated, closed_cleanly;
  int simulated;                /* recorded with NPKIT_SIMULATED (fake NCCL and CUPTI) */
  char truncation[160];
  uint32_t log_version;         /* the format version the log says it has */
  uint64_t skipped_blocks, skipped_bytes; /* corrupt blocks the reader skipped (log_reader.h) */
  npkit_rep_loss loss[NPKIT_REPORT_MAX_SOURCES];
  uint32_t n_loss;
  uint64_t api_calls, data_calls, failed_calls, untimed_calls, other_events;
  uint64_t gpu_events;          /* GPU activity records (kernels, copies, memsets) */
  uint64_t gpu_untimed;         /* ... that CUPTI could not time */
  uint64_t plugin_events, plugin_lost; /* profiler-plugin events, and those it reports lost */
  uint64_t marks;               /* the application's own marks */
  uint64_t npkit_reads;         /* NPKit dump readings that found files */
  uint64_t npkit_shared_reads;  /* ... of a dump NPKit's one state per process may have mixed */
  int has_gpu;
  npkit_gpu_rank gpu;           /* valid when has_gpu */
} npkit_rep_log;

typedef struct npkit_rep_host {
  char name[64];
  uint32_t n_logs;
  int32_t min_rank;             /* smallest known rank on it, -1 if none */
  npkit_align_host align;
} npkit_rep_host;

typedef struct npkit_rep_comm {
  uint64_t comm_id;
  int32_t nranks;
  char name[32];
  uint32_t *members;            /* member ids, by comm rank */
  uint32_t n_members;
  uint64_t collectives;         /* collective calls recorded, all ranks */
} npkit_rep_comm;

typedef struct npkit_rep_member {
  uint32_t comm, log;
  int32_t comm_rank;
} npkit_rep_member;

typedef struct npkit_report {
  npkit_report_options opts;
  npkit_rep_log *logs;          /* sorted by rank (unknown ranks last, by host and pid) */
  size_t n_logs;
  npkit_rep_host *hosts;
  size_t n_hosts;
  npkit_rep_comm *comms;        /* by comm_id */
  size_t n_comms;
  npkit_rep_member *members;
  size_t n_members;
  npkit_inst_store *inst;
  npkit_table table;
  uint64_t input_bytes;

  /* clock alignment */
  int align_done;               /* estimated (several hosts, alignment on) */
  npkit_time_source align_source; /* GPU activity or API call ends */
  npkit_align_summary align;
  npkit_quantile host_end_spread; /* end spread of one instance among the ranks of one host */

  npkit_straggler strag;
  npkit_curves curves;
  npkit_tag_sum *tags;          /* the rows by user tag (report_tags.h), NULL when untagged */
  size_t n_tags;
  uint32_t gpu_ranks;           /* logs with GPU activity */
  npkit_findings findings;

  char **warnings;              /* about the input (unreadable files, duplicates) */
  size_t n_warnings;
} npkit_report;

void npkit_report_defaults(npkit_report_options *o);

/* Expands directories (their *.npkit files, not recursive) and files into a sorted list of log
 * paths.  Returns the count (>= 1), or -1 with a message (nothing found, unreadable folder). */
int npkit_report_inputs(char *const *args, size_t n_args, char ***paths, size_t *n_paths, char *err, size_t errlen);
void npkit_report_free_inputs(char **paths, size_t n);

/* Reads the logs and runs the analyses.  Logs that cannot be read are skipped with a warning;
 * returns 0, or -1 with a message when none could be read or memory is short. */
int npkit_report_run(npkit_report *rep, char *const *paths, size_t n_paths, const npkit_report_options *o,
                     char *err, size_t errlen);
void npkit_report_free(npkit_report *rep);

/* Member ids of a communicator (indices into members, ids of the instance store), in comm-rank
 * order, without the ranks that have no log; out has room for c->n_members.  Returns the count. */
size_t npkit_report_comm_members(const npkit_rep_comm *c, uint32_t *out);

/* Helpers for the renderers. */
/* "rank 3" or "host:pid" */
void npkit_report_log_label(const npkit_report *rep, size_t log, char *buf, size_t len);
/* "comm 1f2e3d4c (8 ranks)" or with the communicator's name */
void npkit_report_comm_label(const npkit_report *rep, uint32_t comm, char *buf, size_t len);
/* "4 B", "1 KiB", "8 MiB" when a binary unit divides the size, else the exact byte count below
 * 10 MB ("4000 B") and three digits above ("95.4 MiB") */
void npkit_report_bytes(uint64_t bytes, char *buf, size_t len);
/* "12.3 us", "4.56 ms", "1.23 s" */
void npkit_report_duration(double ns, char *buf, size_t len);
/* "4 logs on 1 host, 18419 events (501 NCCL calls), 3.89 s of activity, 2.26 MiB read" */
void npkit_report_overview(const npkit_report *rep, char *buf, size_t len);
/* Logs recorded with NPKIT_SIMULATED: a report of them describes a simulation, and says so first. */
size_t npkit_report_simulated_logs(const npkit_report *rep);
/* The sentence that says so ("" when no log is simulated). */
void npkit_report_simulated_note(const npkit_report *rep, char *buf, size_t len);
const char *npkit_source_name(uint32_t source);
/* Parses a duration such as "5us", "2.5ms", "1s", "300ns"; a bare number is in default_unit
 * ("ns", "us", "ms" or "s").  Returns 0 and sets *ns, or -1 if s is not a duration. */
int npkit_parse_duration(const char *s, const char *default_unit, double *ns);

#endif /* NPKIT_REPORT_MODEL_H */
