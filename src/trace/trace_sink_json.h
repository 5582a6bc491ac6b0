/*
 * The Chrome JSON sink: the trace sink (trace_sink.h) over the streaming JSON writer.  Each event
 * is one element of the traceEvents array the writer has open, on a line of its own, its members
 * in the order Chrome's trace viewer and Perfetto's JSON importer document: name, cat, ph, s, pid,
 * tid, ts, dur, args.  The only renderer code of src/trace that calls the JSON writer.
 */
#ifndef NPKIT_TRACE_SINK_JSON_H
#define NPKIT_TRACE_SINK_JSON_H

#include "json_writer.h"
#include "trace_sink.h"

/* A call stack argument is cut (whole frames, then "...") to stay below this many bytes of JSON,
 * its key included; a string from a log in a whole slice (NPKIT_SINK_ARG_TEXT) keeps this many
 * bytes at most. */
#define NPKIT_JSON_STACK_MAX 12000
#define NPKIT_JSON_TEXT_MAX 2048

typedef struct npkit_json_interned {
  size_t off;   /* in text */
  uint32_t len; /* the escaped string with its quotes */
} npkit_json_interned;

/* A slice head rendered once (trace_sink_json.c head_of), by name id modulo NPKIT_JSON_HEADS, in
 * a slot of its own (a head that does not fit is written without the cache). */
#define NPKIT_JSON_HEADS 512
#define NPKIT_JSON_HEAD_TEXT 256
typedef struct npkit_json_head {
  char ph;
  npkit_sink_str name, cat;
  int64_t pid, tid;
  uint32_t len; /* 0: empty slot */
  char text[NPKIT_JSON_HEAD_TEXT];
} npkit_json_head;

typedef struct npkit_json_sink {
  npkit_sink base;
  npkit_json *w;
  npkit_json own;        /* the writer, where the sink made it (npkit_json_sink_open) */
  npkit_json_tree meta;  /* the trace's metadata */
  int in_args; /* the event's args object is open */
  char *text;  /* the interned strings, escaped and quoted, one after another */
  size_t text_len, text_cap;
  npkit_json_interned *strs;
  size_t n_strs, cap_strs;
  size_t max_intern; /* the longest string of intern(), escaped: the bound of any key */
  npkit_json_head *heads; /* NPKIT_JSON_HEADS, allocated at the first slice */
  int ph_first; /* members in the order ph, s, cat, name (npkit_json_sink_ph_first) */
} npkit_json_sink;

/* A sink writing into w, whose open container takes the events (the traceEvents array, or an array
 * of a test); npkit_sink_free(&s->base) gives back what it interned. */
void npkit_json_sink_init(npkit_json_sink *s, npkit_json *w);

/* A sink writing a whole trace (npkit_sink_open ... npkit_sink_close) to fd, which it does not
 * close.  0, or -1 when memory is short (then only npkit_json_sink_finish may be called). */
int npkit_json_sink_open_fd(npkit_json_sink *s, int fd);
/* Events with their members in the order ph, s, cat, name, pid, ... instead of name, cat, ph, s, pid:
 * the order of the traces of `npkit convert` (docs/npkit-convert.md), which keep it. */
void npkit_json_sink_ph_first(npkit_json_sink *s);
/* Flushes and frees; the bytes written go to *bytes when not NULL.  0, or -1 with a message. */
int npkit_json_sink_finish(npkit_json_sink *s, uint64_t *bytes, char *err, size_t errlen);

#endif /* NPKIT_TRACE_SINK_JSON_H */
