/*
 * The trace sink: what every renderer of src/trace writes to, whatever the output format.  A
 * renderer says what an event is (a slice, an instant, a counter, a track's metadata), where it
 * goes (pid, tid) and when, and gives its arguments typed; the sink chooses the bytes.  The Chrome
 * JSON sink (trace_sink_json.h) is the first implementation; a protobuf sink is the next.
 *
 * An event is one sequence of calls:
 *
 *   npkit_sink_begin(s, &head)      name, category, phase, scope, pid, tid, ts, dur
 *   npkit_sink_args(s)              optional: the arguments follow
 *     npkit_sink_arg_*(s, key, v)   typed arguments, in the order they are to be shown
 *   npkit_sink_end(s)               closes the arguments and the event
 *
 * Keys are this build's own (no escaping needed); names and string values may come from a log
 * and any sink makes them safe (npkit_sink_arg_strn: at most n bytes, up to a NUL).  Times are trace
 * nanoseconds (npkit_trace_rel: after the clock offset, relative to the trace's base).
 *
 * The hot path (millions of NCCL calls of a few shapes) writes each event whole instead:
 *
 *   npkit_sink_intern(s, text, n)          once per string it repeats: a name, a category, a key,
 *                                          a communicator's label; a call stack (intern_stack); a
 *                                          set of arguments that come together (intern_args)
 *   npkit_sink_slice_write(s, &slice)      name, category, pid, tid, ts, dur, args as an array
 *
 * The JSON sink keeps an interned string as its escaped text, a protobuf sink as the id of its
 * interned data, so neither formats a repeated string twice.
 */
#ifndef NPKIT_TRACE_SINK_H
#define NPKIT_TRACE_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "tree_writer.h"

typedef struct npkit_sink npkit_sink;

/* The phases, as Chrome's trace event format names them (a protobuf sink maps them onto track
 * events: slice begin/end, instant, counter, track descriptors). */
enum {
  NPKIT_SINK_SLICE = 'X',   /* ts .. ts + dur on (pid, tid) */
  NPKIT_SINK_INSTANT = 'i', /* at ts; scope 'p' (process) or 't' (thread) */
  NPKIT_SINK_COUNTER = 'C', /* values at ts on the process's counter track `name`: one per arg */
  NPKIT_SINK_META = 'M',    /* a track's or process's metadata: process_name, thread_name, ... */
  NPKIT_SINK_FLOW_START = 's', /* a flow's start, on the slice enclosing ts of (pid, tid) */
  NPKIT_SINK_FLOW_END = 'f',   /* its end, on the slice that starts at ts (bind 'e': enclosing) */
};

/* The head of an event, written with designated initializers: a field left out is absent from
 * the output (cat NULL, scope 0, no ts, no dur, no flow id), except tid, which is to be set (-1:
 * the process's level: counters, process metadata, process-scoped instants). */
typedef struct npkit_sink_head {
  const char *name;
  const char *cat;
  char ph;
  char scope;
  char bind;      /* a flow's end: 'e' binds it to the enclosing slice */
  int scope_last; /* the JSON sink writes "s" after ts and dur, where the thread-scoped instants
                     and the recording changes have always had it, instead of after "ph" */
  uint64_t id;    /* flows: the id joining start and end */
  uint64_t flow_in; /* a slice: the flow that ends on it (its 'f' event follows), 0: none; a sink
                       that attaches flows to slices (Perfetto) uses it, the JSON sink does not */
  int64_t pid;
  int64_t tid;
  int has_ts, has_dur;
  int64_t ts;  /* trace ns */
  int64_t dur; /* ns */
} npkit_sink_head;

/* An interned string (npkit_sink_intern); 0: none, or memory was short (then left out). */
typedef uint32_t npkit_sink_str;

/* npkit_sink_arg.type */
enum {
  NPKIT_SINK_ARG_INT = 1, /* v.i */
  NPKIT_SINK_ARG_UINT,    /* v.u */
  NPKIT_SINK_ARG_BOOL,    /* v.i */
  NPKIT_SINK_ARG_STR,     /* v.str: an interned string */
  NPKIT_SINK_ARG_TEXT,    /* v.text: from a log, at most len bytes, up to a NUL */
  NPKIT_SINK_ARG_HEX,     /* v.u as a "0x…" string, at least `width` digits */
  NPKIT_SINK_ARG_MILLI,   /* v.i thousandths: a number with three decimals */
  NPKIT_SINK_ARG_SET,     /* v.str: a fixed set of arguments (npkit_sink_intern_args), in place; no key */
};

typedef struct npkit_sink_arg {
  npkit_sink_str key;
  uint8_t type;
  uint8_t width;
  uint32_t len;
  union {
    int64_t i;
    uint64_t u;
    npkit_sink_str str;
    const char *text;
  } v;
} npkit_sink_arg;

/* A whole slice (phase X) or thread instant with its arguments, shown in their order. */
typedef struct npkit_sink_slice {
  char ph;                  /* 0 or NPKIT_SINK_SLICE: ts .. ts + dur; NPKIT_SINK_INSTANT: at ts, on its thread */
  npkit_sink_str name, cat; /* cat 0: none */
  int64_t pid, tid;
  int64_t ts, dur;          /* trace ns */
  const npkit_sink_arg *args;
  size_t nargs;
  npkit_sink_str frame;     /* the innermost frame of its call stack as the trace's stack frames
                               name it (trace_stacks.h), 0: none */
} npkit_sink_slice;

typedef struct npkit_sink_ops {
  void (*begin)(npkit_sink *s, const npkit_sink_head *h);
  void (*args)(npkit_sink *s);
  void (*end)(npkit_sink *s);
  void (*arg_str)(npkit_sink *s, const char *key, const char *v);
  void (*arg_strn)(npkit_sink *s, const char *key, const char *v, size_t n); /* from a log: at most n bytes, to a NUL */
  void (*arg_int)(npkit_sink *s, const char *key, int64_t v);
  void (*arg_uint)(npkit_sink *s, const char *key, uint64_t v);
  void (*arg_double)(npkit_sink *s, const char *key, double v);
  void (*arg_bool)(npkit_sink *s, const char *key, int v);
  void (*arg_us)(npkit_sink *s, const char *key, int64_t ns);             /* a duration, shown in µs */
  void (*arg_hex)(npkit_sink *s, const char *key, uint64_t v, int width); /* "0x…", width digits at least */
  void (*arg_fixed)(npkit_sink *s, const char *key, double v, int decimals); /* a rate: so many decimals */
  void (*arg_uints)(npkit_sink *s, const char *key, const uint64_t *v, size_t n); /* a list */
  void (*arg_strs)(npkit_sink *s, const char *key, const char *const *v, size_t n); /* a list */
  void (*arg_milli)(npkit_sink *s, const char *key, int64_t thousandths); /* a number with three decimals */
  npkit_sink_str (*intern)(npkit_sink *s, const char *v, size_t n); /* at most n bytes, up to a NUL */
  npkit_sink_str (*intern_stack)(npkit_sink *s, const char *const *frames, size_t depth); /* the caller first */
  npkit_sink_str (*intern_args)(npkit_sink *s, const npkit_sink_arg *args, size_t n); /* no SET among them */
  void (*slice)(npkit_sink *s, const npkit_sink_slice *e);
  void (*free)(npkit_sink *s); /* what the sink keeps (its interned strings) */
  /* the document around the events (see "A whole trace" below) */
  void (*open)(npkit_sink *s);
  npkit_tree *(*meta_begin)(npkit_sink *s);
  void (*meta_end)(npkit_sink *s);
  void (*events_begin)(npkit_sink *s);
  void (*events_end)(npkit_sink *s);
  void (*frames_begin)(npkit_sink *s);
  void (*frame)(npkit_sink *s, int64_t pid, uint32_t node, const char *name, uint32_t parent1);
  void (*frames_end)(npkit_sink *s);
  void (*close)(npkit_sink *s);
  void (*forget)(npkit_sink *s);
  int (*failed)(npkit_sink *s); /* the output is lost (a write failed): a long renderer may stop */
  /* NULL, or the sink attaches a flow's start to its slice when it writes the slice, so must know
   * the flows before the slices (see npkit_sink_flow_ahead) */
  void (*flow_ahead)(npkit_sink *s, int64_t pid, int64_t tid, int64_t at, int exact, uint64_t id);
} npkit_sink_ops;

/* Every sink starts with this: sinks are small structs that embed it first. */
struct npkit_sink {
  const npkit_sink_ops *ops;
};

static inline void npkit_sink_begin(npkit_sink *s, const npkit_sink_head *h) { s->ops->begin(s, h); }
static inline void npkit_sink_args(npkit_sink *s) { s->ops->args(s); }
static inline void npkit_sink_end(npkit_sink *s) { s->ops->end(s); }
static inline void npkit_sink_arg_str(npkit_sink *s, const char *key, const char *v) { s->ops->arg_str(s, key, v); }
static inline void npkit_sink_arg_strn(npkit_sink *s, const char *key, const char *v, size_t n) {
  s->ops->arg_strn(s, key, v, n);
}
static inline void npkit_sink_arg_int(npkit_sink *s, const char *key, int64_t v) { s->ops->arg_int(s, key, v); }
static inline void npkit_sink_arg_uint(npkit_sink *s, const char *key, uint64_t v) { s->ops->arg_uint(s, key, v); }
static inline void npkit_sink_arg_double(npkit_sink *s, const char *key, double v) { s->ops->arg_double(s, key, v); }
static inline void npkit_sink_arg_bool(npkit_sink *s, const char *key, int v) { s->ops->arg_bool(s, key, v); }
static inline void npkit_sink_arg_us(npkit_sink *s, const char *key, int64_t ns) { s->ops->arg_us(s, key, ns); }
static inline void npkit_sink_arg_hex(npkit_sink *s, const char *key, uint64_t v, int width) {
  s->ops->arg_hex(s, key, v, width);
}
static inline void npkit_sink_arg_fixed(npkit_sink *s, const char *key, double v, int decimals) {
  s->ops->arg_fixed(s, key, v, decimals);
}
static inline void npkit_sink_arg_uints(npkit_sink *s, const char *key, const uint64_t *v, size_t n) {
  s->ops->arg_uints(s, key, v, n);
}
static inline void npkit_sink_arg_strs(npkit_sink *s, const char *key, const char *const *v, size_t n) {
  s->ops->arg_strs(s, key, v, n);
}
static inline void npkit_sink_arg_milli(npkit_sink *s, const char *key, int64_t thousandths) {
  s->ops->arg_milli(s, key, thousandths);
}

static inline npkit_sink_str npkit_sink_intern(npkit_sink *s, const char *v, size_t n) { return s->ops->intern(s, v, n); }
/* A key, a name or a word of this build. */
npkit_sink_str npkit_sink_intern_name(npkit_sink *s, const char *v);
/* A call stack as one readable string argument: its frames one per line, the caller of the NCCL
 * function first, cut (whole frames, then "...") where a sink's format sets a limit. */
static inline npkit_sink_str npkit_sink_intern_stack(npkit_sink *s, const char *const *frames, size_t depth) {
  return s->ops->intern_stack(s, frames, depth);
}
/* Arguments that always come together (a communicator's label, id, rank and size), interned as one
 * set that a slice's argument of type NPKIT_SINK_ARG_SET puts in place. */
static inline npkit_sink_str npkit_sink_intern_args(npkit_sink *s, const npkit_sink_arg *args, size_t n) {
  return s->ops->intern_args(s, args, n);
}
static inline void npkit_sink_slice_write(npkit_sink *s, const npkit_sink_slice *e) { s->ops->slice(s, e); }
static inline void npkit_sink_free(npkit_sink *s) { s->ops->free(s); }

/* A whole trace:
 *   npkit_sink_open                  the document
 *   npkit_sink_meta_begin / _end     what describes the trace (the tool, the clock, each log's
 *                                    summary, the merge's alignment): one value, an object, written
 *                                    to the tree (tree_writer.h) that meta_begin returns
 *   npkit_sink_events_begin / _end   the events, from any number of logs
 *   npkit_sink_frames_begin / _end   the call stacks' frames, one npkit_sink_frame per node:
 *                                    frame `node` of trace process `pid`, its caller node + 1
 *                                    (0: a root); written only when a log has stacks
 *   npkit_sink_close                 the end of the document
 * npkit_sink_forget drops what was interned: between the logs of a merge, whose renderers intern
 * their strings again, so that the memory of a merge does not grow with the number of logs. */
static inline void npkit_sink_open(npkit_sink *s) { s->ops->open(s); }
static inline npkit_tree *npkit_sink_meta_begin(npkit_sink *s) { return s->ops->meta_begin(s); }
static inline void npkit_sink_meta_end(npkit_sink *s) { s->ops->meta_end(s); }
static inline void npkit_sink_events_begin(npkit_sink *s) { s->ops->events_begin(s); }
static inline void npkit_sink_events_end(npkit_sink *s) { s->ops->events_end(s); }
static inline void npkit_sink_frames_begin(npkit_sink *s) { s->ops->frames_begin(s); }
static inline void npkit_sink_frame(npkit_sink *s, int64_t pid, uint32_t node, const char *name, uint32_t parent1) {
  s->ops->frame(s, pid, node, name, parent1);
}
static inline void npkit_sink_frames_end(npkit_sink *s) { s->ops->frames_end(s); }
static inline void npkit_sink_close(npkit_sink *s) { s->ops->close(s); }
static inline void npkit_sink_forget(npkit_sink *s) { s->ops->forget(s); }
static inline int npkit_sink_failed(npkit_sink *s) { return s->ops->failed(s); }

/* Flows told ahead.  Chrome's JSON draws a flow from separate 's' and 'f' events bound to the
 * slices around them, written whenever the renderer knows the flow; Perfetto's protobuf puts the
 * flow's id on the slices themselves (TrackEvent.flow_ids), and a call's slice is written long
 * before the kernel it launched is read.  So, for a sink that wants them, the renderer reads the
 * log once before rendering it and tells each flow that will start: on the slice of (pid, tid)
 * whose middle is `at` (exact: a call's slice, which is where the flow starts), or that contains
 * `at` (the first slice written there that does).  The flow's end is the slice whose head has
 * flow_in = id.  The sink forgets them at npkit_sink_forget. */
static inline int npkit_sink_wants_flows_ahead(const npkit_sink *s) { return s->ops->flow_ahead != NULL; }
static inline void npkit_sink_flow_ahead(npkit_sink *s, int64_t pid, int64_t tid, int64_t at, int exact, uint64_t id) {
  s->ops->flow_ahead(s, pid, tid, at, exact, id);
}

/* The commonest shapes, in the sink's terms (trace_sink.c). */
/* A counter event of the process's counter track `name` (cat NULL: none); the caller adds one
 * value per arg after npkit_sink_args, then npkit_sink_end. */
void npkit_sink_counter(npkit_sink *s, const char *name, const char *cat, int64_t pid, int64_t ts);
/* A metadata event with one string (or integer) argument; tid < 0: the process's. */
void npkit_sink_meta_str(npkit_sink *s, const char *name, int64_t pid, int64_t tid, const char *key, const char *v);
void npkit_sink_meta_int(npkit_sink *s, const char *name, int64_t pid, int64_t tid, const char *key, int64_t v);
/* A track's name and its place among the process's tracks (thread_name, thread_sort_index). */
void npkit_sink_track(npkit_sink *s, int64_t pid, int64_t tid, const char *name, int64_t sort_index);

#endif /* NPKIT_TRACE_SINK_H */
