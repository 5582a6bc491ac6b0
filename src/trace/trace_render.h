/*
 * Chrome trace of an event log, as docs/trace-format.md specifies it.  Rendering streams: memory
 * does not depend on the number of events.
 *
 * Two levels:
 *  - npkit_render_trace(): one log file → one JSON file (what the preloaded library calls at exit
 *    and what `npkit json` runs);
 *  - npkit_render_summary() / npkit_render_log(): the summary object (otherData) and the trace
 *    events of one opened log, written to a caller's tree writer and trace sink with the caller's
 *    pid and time base, so that many logs can share one trace.
 */
#ifndef NPKIT_TRACE_RENDER_H
#define NPKIT_TRACE_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "tree_writer.h"
#include "log_reader.h"
#include "trace_sink.h"
#include "trace_tracks.h"
#include "trace_writer.h"

typedef struct npkit_render_stats {
  uint64_t events;    /* NCCL API calls written */
  uint64_t groups;    /* ncclGroup slices written */
  uint64_t skipped;   /* events of kinds this build does not render */
  uint64_t plugin;    /* NCCL profiler plugin events read (trace_plugin.h) */
  uint64_t gpu;       /* GPU activity events read: kernels, copies, memsets (trace_cupti.h) */
  uint64_t marks;     /* user marks and recording changes read (trace_marks.h) */
  uint64_t npkit;     /* NPKit dump events read (trace_npkit_dump.h) */
  uint64_t flight;    /* in-flight snapshots' items and dumps read (trace_flight.h) */
  uint64_t machine;   /* sampled machine counters read (trace_machine.c) */
  uint64_t dropped;   /* events the recorder lost, from the log's counters */
  int truncated;      /* the log ended in an incomplete or corrupt block */
  int closed_cleanly; /* the log has its END block */
  uint64_t skipped_blocks; /* corrupt blocks skipped in the middle of the log */
  char damage[400];   /* npkit_reader_damage(), "" for an intact log */
  char version_note[160]; /* npkit_reader_version_note(), "" unless the log is of a later version */
} npkit_render_stats;

typedef struct npkit_render_opts {
  int64_t pid;        /* trace pid; <= 0: npkit_trace_pid() of the log */
  uint64_t base_ns;   /* log time shown as ts 0; 0: the log's clock_base_ns */
  int64_t offset_ns;  /* added to every time of the log first (clock alignment between hosts) */
} npkit_render_opts;


/* Writes the log's summary object (a trace's otherData) as the next value of w (after a key or in an
 * array). */
void npkit_render_summary(const npkit_log_reader *r, npkit_tree *w, uint64_t base_ns);

/* Writes the log's trace events (metadata, notes, calls, groups, drop counter) into the sink (a
 * JSON sink: as elements of the array its writer has open).  Rewinds the log's event iterator.  Returns 0, or -1 with a message if
 * events could not be read or memory is short; the JSON written so far stays well formed. */
int npkit_render_log(npkit_log_reader *r, npkit_sink *sink, const npkit_render_opts *opts,
                     npkit_render_stats *stats, char *err, size_t errlen);

/* Renders log_path into json_path ("-": standard output).  The file appears complete or not at all:
 * it is written as json_path.partial and renamed at the end.  Returns 0, or -1 with a message.
 * stats may be NULL.  Never exits, never prints. */
int npkit_render_trace(const char *log_path, const char *json_path, npkit_render_stats *stats, char *err,
                       size_t errlen);
/* The same in the format asked for (trace_writer.h): Perfetto's trace keeps the events, not the
 * summary object (otherData) nor the stack frames table (each call's stack is an argument). */
int npkit_render_trace_as(const char *log_path, const char *out_path, npkit_trace_format format,
                          npkit_render_stats *stats, char *err, size_t errlen);

#endif /* NPKIT_TRACE_RENDER_H */
