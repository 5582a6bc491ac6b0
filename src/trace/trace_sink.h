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
 * During the move of the sources onto the sink (issue 34) the ones not yet moved reach the JSON
 * writer underneath through npkit_sink_json(); once all have moved, that bridge goes.
 */
#ifndef NPKIT_TRACE_SINK_H
#define NPKIT_TRACE_SINK_H

#include <stddef.h>
#include <stdint.h>

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
  int64_t pid;
  int64_t tid;
  int has_ts, has_dur;
  int64_t ts;  /* trace ns */
  int64_t dur; /* ns */
} npkit_sink_head;

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

/* The commonest shapes, in the sink's terms (trace_sink.c). */
/* A counter event of the process's counter track `name` (cat NULL: none); the caller adds one
 * value per arg after npkit_sink_args, then npkit_sink_end. */
void npkit_sink_counter(npkit_sink *s, const char *name, const char *cat, int64_t pid, int64_t ts);
/* A metadata event with one string (or integer) argument; tid < 0: the process's. */
void npkit_sink_meta_str(npkit_sink *s, const char *name, int64_t pid, int64_t tid, const char *key, const char *v);
void npkit_sink_meta_int(npkit_sink *s, const char *name, int64_t pid, int64_t tid, const char *key, int64_t v);
/* A track's name and its place among the process's tracks (thread_name, thread_sort_index). */
void npkit_sink_track(npkit_sink *s, int64_t pid, int64_t tid, const char *name, int64_t sort_index);

struct npkit_json;
/* The JSON writer under a JSON sink, NULL under any other: the bridge of the sources not yet
 * moved onto the sink (see above). */
struct npkit_json *npkit_sink_json(npkit_sink *s);

#endif /* NPKIT_TRACE_SINK_H */
