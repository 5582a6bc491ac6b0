/*
 * Filters of `npkit merge`: which ranks, which NCCL operations, which time window.
 *
 * Ranks select whole logs.  Operations and the window select events: the log reader's iterator
 * passes over the events that do not pass (npkit_reader_filter) and does not read the event
 * blocks that lie wholly outside the window, so the ordinary trace renderer reads a filtered log
 * as it reads any other: a filtered trace looks exactly like an unfiltered one, every event kind
 * the renderer knows is handled in one place, and nothing is written to a temporary file.
 *
 * Window times are on the merged trace's axis: nanoseconds after its base_ns, with each log's
 * clock offset applied.  An event is kept when it overlaps the window.  The operation filter
 * applies to NCCL API calls and to the GPU activity and plugin tasks attributed to a call; other
 * events (compute kernels, channel and proxy events, marks) pass it.
 */
#ifndef NPKIT_MERGE_FILTER_H
#define NPKIT_MERGE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"
#include "nccl_names.h"

#define NPKIT_MERGE_MAX_RANK_RANGES 64

typedef struct npkit_merge_filter {
  int has_window;
  int64_t window_start_ns, window_end_ns;   /* trace time; INT64_MIN / INT64_MAX for open ends */
  int has_ranks;
  int selects_logs;                         /* --ranks or --collective: the others are not read */
  size_t n_ranges;
  int32_t rank_lo[NPKIT_MERGE_MAX_RANK_RANGES], rank_hi[NPKIT_MERGE_MAX_RANK_RANGES];
  int has_ops;
  unsigned char op[NPKIT_FN_COUNT];         /* 1: keep calls of this npkit_fn */
  int has_collective;                       /* --collective COMM:SEQ[-SEQ] */
  char coll_comm[64];                       /* as the report names it (npkit_job_comm_ref) */
  uint64_t coll_seq_lo, coll_seq_hi;
  int has_context;
  int64_t context_ns;                       /* --context, around the instances (default 2 ms) */
} npkit_merge_filter;

#define NPKIT_MERGE_CONTEXT_DEFAULT_NS 2000000

/* "0-3,8,12-15".  Returns 0, or -1 with a message. */
int npkit_merge_parse_ranks(npkit_merge_filter *f, const char *s, char *err, size_t errlen);
/* "AllReduce,ncclSend,p2p": function names (with or without the nccl prefix, any case) and class
 * names (coll, p2p, group, comm, mem, query, misc).  Returns 0, or -1 with a message. */
int npkit_merge_parse_ops(npkit_merge_filter *f, const char *s, char *err, size_t errlen);
/* "START:END" with durations ("1.5s:2s", "200ms:", ":10ms"; a bare number is in seconds).
 * Returns 0, or -1 with a message. */
int npkit_merge_parse_window(npkit_merge_filter *f, const char *s, char *err, size_t errlen);

/* "world:412", "world:400-420", "1f2e3d4c:7": a communicator as the report names it and sequence
 * numbers.  Returns 0, or -1 with a message. */
int npkit_merge_parse_collective(npkit_merge_filter *f, const char *s, char *err, size_t errlen);
/* "2ms", "500us" (a bare number is in milliseconds).  Returns 0, or -1 with a message. */
int npkit_merge_parse_context(npkit_merge_filter *f, const char *s, char *err, size_t errlen);

/* Whether a log of this rank (-1: unknown) is merged. */
int npkit_merge_rank_selected(const npkit_merge_filter *f, int32_t rank);
/* Whether events must be filtered one by one (operations or window given). */
int npkit_merge_filters_events(const npkit_merge_filter *f);

/* Whether an event of a log passes f; the trace time of a log time t is t + offset_ns − base_ns. */
int npkit_merge_keeps(const npkit_merge_filter *f, const npkit_event *ev, int64_t offset_ns, uint64_t base_ns);
/* The window of f in the log's time (0 and UINT64_MAX for open ends, and without a window): an
 * event outside it is refused by npkit_merge_keeps(). */
void npkit_merge_log_window(const npkit_merge_filter *f, int64_t offset_ns, uint64_t base_ns, uint64_t *lo_ns,
                            uint64_t *hi_ns);

#endif /* NPKIT_MERGE_FILTER_H */
