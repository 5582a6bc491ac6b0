/*
 * The Perfetto sink: the trace sink (trace_sink.h) as Perfetto's protobuf trace, `Trace { repeated
 * TracePacket packet = 1 }` streamed packet by packet through proto_writer.h.  Field numbers are
 * those of google/perfetto protos/perfetto/trace/perfetto_trace.proto (../shared/reference/
 * perfetto.md lists the ones used; each is named where it is written, trace_sink_perfetto.c).
 *
 * What it writes:
 *  - a process track per pid (TrackDescriptor.process: pid, name, labels, sort index; its children
 *    in the explicit order of their sort indexes); below it a thread track per host thread
 *    (TrackDescriptor.thread) and a named track of its own for every other lane of the trace
 *    (GPU streams, NCCL channels, proxy lanes, NPKit dump lanes, the flight recorder: tids from
 *    NPKIT_TRACE_GPU_BAND up, trace_tracks.h), described before their first event and again when a
 *    metadata event names them later;
 *  - slices as SLICE_BEGIN and SLICE_END on their track, instants (thread or process scope),
 *    counters on counter tracks (one per process, counter name and value key);
 *  - flows (call -> kernel) as flow_ids on the call's slice, told ahead (npkit_sink_flow_ahead),
 *    and terminating_flow_ids on the kernel's (npkit_sink_head.flow_in);
 *  - every argument as a debug annotation (strings, integers, doubles, booleans; lists as arrays);
 *  - event names, categories, annotation names and string values up to 4 KB interned on one
 *    sequence (sequence_flags 3 on its first packet that uses them, 2 after), every string as valid
 *    UTF-8 (a byte that is not becomes U+FFFD), timestamps in absolute ns (the trace's base added).
 * Not written: the trace's metadata tree (otherData of the JSON) and the stack frames table (each
 * call's stack is its `stack` argument already).
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
/* Changes the base for the packets still to come. */
void npkit_perfetto_sink_set_base(npkit_perfetto_sink *p, uint64_t base_ns);
/* Flushes and frees; the bytes written go to *bytes when not NULL.  0, or -1 with a message. */
int npkit_perfetto_sink_finish(npkit_perfetto_sink *p, uint64_t *bytes, char *err, size_t errlen);

#endif /* NPKIT_TRACE_SINK_PERFETTO_H */
