/*
 * The Perfetto sink: the trace sink (trace_sink.h) as Perfetto's protobuf trace, `Trace { repeated
 * TracePacket packet = 1 }` streamed packet by packet through proto_writer.h.  Field numbers are
 * those of google/perfetto protos/perfetto/trace/perfetto_trace.proto (../shared/reference/
 * perfetto.md lists the ones used; each is named where it is written, trace_sink_perfetto.c).
 *
 * What it writes so far (issue 35, first step):
 *  - a process track per pid (TrackDescriptor.process: pid, name, labels, sort index) and a
 *    thread track per (pid, tid) below it (TrackDescriptor.thread: name, sort index), described
 *    before their first event and again when a metadata event names them later;
 *  - slices as SLICE_BEGIN and SLICE_END on their track, instants (thread or process scope),
 *    counters on counter tracks (one per process, counter name and value key);
 *  - every argument as a debug annotation (strings, integers, doubles, booleans; lists as arrays);
 *  - event names, categories and annotation names interned on one sequence (sequence_flags 3 on
 *    its first packet, 2 after), timestamps in absolute ns (the trace's base added).
 * Not yet: flows (the JSON sink's separate 's'/'f' events), the trace's metadata tree and stack
 * frames (taken and dropped), the metadata events other than names, labels and sort indexes.
 */
#ifndef NPKIT_TRACE_SINK_PERFETTO_H
#define NPKIT_TRACE_SINK_PERFETTO_H

#include <stdint.h>

#include "proto_writer.h"
#include "trace_sink.h"

typedef struct npkit_perfetto_sink npkit_perfetto_sink;

/* A sink writing to fd (not closed); trace ns + base_ns are the packets' timestamps.  NULL when
 * memory is short. */
npkit_perfetto_sink *npkit_perfetto_sink_open(int fd, uint64_t base_ns);
npkit_sink *npkit_perfetto_sink_base(npkit_perfetto_sink *p);
/* Flushes and frees; the bytes written go to *bytes when not NULL.  0, or -1 with a message. */
int npkit_perfetto_sink_finish(npkit_perfetto_sink *p, uint64_t *bytes, char *err, size_t errlen);

#endif /* NPKIT_TRACE_SINK_PERFETTO_H */
