/*
 * Call stacks in the Chrome trace (docs/trace-format.md, "Call stacks"):
 *  - every NCCL API event with a stack gets args.stack, the frames as one readable string (one
 *    frame per line, the caller of the NCCL function first: Perfetto shows args), and "sf", the
 *    id of its innermost frame in the trace's top-level stackFrames (chrome://tracing shows those);
 *  - stackFrames holds one node per distinct (frame, caller node) path of the log, with ids
 *    "<pid>.<n>" so that the stacks of several logs can share one trace.
 * Both are interned in the sink once per stack (npkit_sink_intern_stack), so an event with a
 * stack costs two copies.
 */
#ifndef NPKIT_TRACE_STACKS_H
#define NPKIT_TRACE_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"
#include "stack_table.h"
#include "trace_sink.h"

typedef struct npkit_stack_frag {
  uint32_t id;
  npkit_sink_str text;  /* the frames, one per line (the "stack" argument) */
  npkit_sink_str frame; /* "<pid>.<node>" of its innermost frame, 0 for an empty stack */
} npkit_stack_frag;

typedef struct npkit_stack_node {
  uint32_t parent;  /* node index + 1, 0 for a root */
  const char *name; /* the frame text (the table's) */
} npkit_stack_node;

typedef struct npkit_stack_fmt {
  int64_t pid;
  npkit_stack_table table;
  npkit_stack_frag *frags;  /* sorted by id, like table.stacks */
  size_t n;
  npkit_stack_node *nodes;
  size_t n_nodes;
} npkit_stack_fmt;

/* Reads the stacks of an opened log (nothing for a log without stacks) and, with a sink, interns
 * each one's text and frame id there.  Returns 0, or -1 with a message.  Valid while the reader is
 * open. */
int npkit_stack_fmt_init(npkit_stack_fmt *f, const npkit_log_reader *r, int64_t pid, npkit_sink *sink, char *err,
                         size_t errlen);
void npkit_stack_fmt_free(npkit_stack_fmt *f);

/* The fragments of stack `id`; NULL if f is NULL or the log has no such stack. */
const npkit_stack_frag *npkit_stack_fmt_find(const npkit_stack_fmt *f, uint64_t id);

/* Gives the nodes to the sink, between npkit_sink_frames_begin and _end (one npkit_sink_frame each). */
void npkit_stack_fmt_write_nodes(const npkit_stack_fmt *f, npkit_sink *s);

/* The frames of a one-log trace (npkit_sink_frames_begin, the nodes, _end), given only when the
 * log has stacks.  `pid` must be the pid its events were rendered with.  Returns 0, or -1 with a
 * message (the output stays well formed). */
int npkit_trace_stack_frames(const npkit_log_reader *r, npkit_sink *s, int64_t pid, char *err, size_t errlen);

#endif /* NPKIT_TRACE_STACKS_H */
