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

typedef struct npkit_json_sink {
  npkit_sink base;
  npkit_json *w;
  int in_args; /* the event's args object is open */
} npkit_json_sink;

/* A sink writing into w, which must have the traceEvents array open; nothing to free. */
void npkit_json_sink_init(npkit_json_sink *s, npkit_json *w);

#endif /* NPKIT_TRACE_SINK_JSON_H */
