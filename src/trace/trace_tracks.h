/*
 * What every trace source of a rank's trace shares: the render context (the trace pid, the time
 * base and the clock offset of the log) and the bands of track ids each source draws in (the
 * metadata events that name and order tracks are the sink's: trace_sink.h).  The one home of these facts: the sources
 * (trace_api.c, trace_cupti.c, trace_plugin*.c, trace_npkit_dump.c, trace_marks.c) and the dispatcher
 * (trace_render.c) include this and nothing of one another for them.
 */
#ifndef NPKIT_TRACE_TRACKS_H
#define NPKIT_TRACE_TRACKS_H

#include <stdint.h>

#include "log_reader.h"

/* Track ids are tid = pid × 1000 + track, in bands (docs/trace-format.md):
 *   0..398    host threads, by thread index; 399 shared by the rest      (trace_api.c)
 *   400..699  GPU streams of CUPTI; the 300th and later share the last    (trace_cupti.c)
 *   700..898  profiler-plugin channels; 899 shared by the rest           (trace_plugin*.c)
 *   900..948  profiler-plugin proxy lanes; 949 shared by the rest        (trace_plugin*.c)
 *   950..998  NPKit dump tracks; the 49th and later share the last        (trace_npkit_dump.c)
 *   999       the flight recorder: work in flight at dumps, the dumps    (trace_flight.c) */
#define NPKIT_TRACE_SHARED_TRACK 399
#define NPKIT_TRACE_GPU_BAND 400
#define NPKIT_TRACE_GPU_TRACKS 300
#define NPKIT_TRACE_CHANNEL_BAND 700
#define NPKIT_TRACE_CHANNEL_TRACKS 199
#define NPKIT_TRACE_PROXY_BAND 900
#define NPKIT_TRACE_PROXY_TRACKS 49
#define NPKIT_TRACE_NPKIT_BAND 950
#define NPKIT_TRACE_NPKIT_TRACKS 49
#define NPKIT_TRACE_FLIGHT_TRACK 999

#define NPKIT_TRACE_MIDDOT "\xc2\xb7" /* U+00B7, the separator of track names */

/* Where a log's events go in a trace. */
typedef struct npkit_trace_ctx {
  int64_t pid;
  uint64_t base_ns;   /* log time shown as trace time 0 (after the offset) */
  int64_t offset_ns;  /* added to every time of the log (clock alignment between hosts) */
} npkit_trace_ctx;

/* Trace time of a log time, in signed ns relative to the base. */
static inline int64_t npkit_trace_time(uint64_t base_ns, int64_t offset_ns, uint64_t t) {
  return (int64_t)(t - base_ns + (uint64_t)offset_ns);
}
static inline int64_t npkit_trace_rel(const npkit_trace_ctx *c, uint64_t t) {
  return npkit_trace_time(c->base_ns, c->offset_ns, t);
}

/* tid of slot `slot` of a band. */
static inline int64_t npkit_trace_band_tid(int64_t pid, int band, uint32_t slot) {
  return pid * 1000 + band + (int64_t)slot;
}
/* tid of a host thread's track (indices from NPKIT_TRACE_SHARED_TRACK up share one). */
int64_t npkit_trace_tid(int64_t pid, uint32_t thread_index);

/* pid of a log's process in the trace: rank + 1 when the rank is known, else 1 + OS pid mod 2e6. */
int64_t npkit_trace_pid(const npkit_log_reader *r);

#endif /* NPKIT_TRACE_TRACKS_H */
