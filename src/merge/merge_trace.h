/*
 * `npkit merge`: the logs of all ranks as one Chrome trace, every rank its own process (sorted by
 * rank), on one time axis.
 *
 * Host clocks are aligned first (report_model.h, clock_align.h): each log is rendered with its
 * host's offset, and the offsets with their uncertainty go into otherData.clock_alignment.  Each
 * log's own summary (as `npkit json` writes it) is kept in otherData.logs.  The trace is streamed:
 * memory does not depend on the size of the logs.
 */
#ifndef NPKIT_MERGE_TRACE_H
#define NPKIT_MERGE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "merge_filter.h"
#include "trace_writer.h"

typedef struct npkit_merge_options {
  int align;                 /* estimate clock offsets between hosts */
  npkit_merge_filter filter;
  npkit_trace_format format; /* json (the default) or perfetto: otherData is JSON's alone */
} npkit_merge_options;

typedef struct npkit_merge_stats {
  size_t logs;               /* merged */
  size_t skipped;            /* unreadable, duplicates, or not selected by --ranks */
  size_t hosts;
  int aligned;               /* offsets were estimated */
  double max_uncertainty_ns;
  uint64_t events_in;        /* in the merged logs */
  uint64_t events_kept;      /* after the operation and window filters */
  uint64_t calls, groups;    /* trace events written for NCCL calls and ncclGroup slices */
  uint64_t bytes;            /* bytes written */
  char **warnings;           /* to show the user; freed by npkit_merge_stats_free */
  size_t n_warnings, cap_warnings;
} npkit_merge_stats;

void npkit_merge_defaults(npkit_merge_options *o);

/* Merges the logs into fd.  Returns 0, or -1 with a message; never prints. */
int npkit_merge_write(char *const *paths, size_t n_paths, const npkit_merge_options *o, int fd, npkit_merge_stats *st,
                      char *err, size_t errlen);
/* The same for the logs of a job already open (of n_paths named); the job stays the caller's. */
struct npkit_job;
int npkit_merge_write_job(struct npkit_job *job, size_t n_paths, const npkit_merge_options *o, int fd,
                          npkit_merge_stats *st, char *err, size_t errlen);
void npkit_merge_stats_free(npkit_merge_stats *st);

#endif /* NPKIT_MERGE_TRACE_H */
