/*
 * What every trace source of a rank's trace shares: the render context (the trace pid, the time
 * base and the clock offset of the log), the bands of track ids each source draws in, and the
 * metadata events that name and order tracks.  The one home of these facts: the sources
 * (trace_api.c, trace_cupti.c, trace_plugin*.c, trace_npkit_dump.c, trace_marks.c) and the dispatcher
 * (trace_render.c) include this and nothing of one another for them.
 */
#ifndef NPKIT_TRACE_TRACKS_H
#define NPKIT_TRACE_TRACKS_H

#include <stdint.h>

#include "json_writer.h"
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

/* Opens {"name":N,"cat":C,"ph":PH,"pid":P,"tid":T,"ts":… with the trace time of ts_ns (tid < 0
 * leaves tid out); the caller adds the rest and closes the object. */
void npkit_trace_event_head(npkit_json *w, const npkit_trace_ctx *c, const char *name, const char *cat,
                            const char *ph, int64_t tid, uint64_t ts_ns);
/* Opens a process-scoped instant {"name":N,"cat":"npkit","ph":"i","s":"p","pid":P,"ts":ts; the
 * caller adds args and closes the object. */
void npkit_trace_process_instant(npkit_json *w, int64_t pid, int64_t ts, const char *name);
/* Opens a metadata event {"name":N,"ph":"M","pid":P,"tid":T,"args":{ (tid < 0: none); the caller
 * adds the args and closes both with npkit_trace_args_end. */
void npkit_trace_meta_begin(npkit_json *w, const char *name, int64_t pid, int64_t tid);
/* Opens a counter event {"name":N,"ph":"C","pid":P,"ts":ts,"args":{ (a value per arg); close with
 * npkit_trace_args_end. */
void npkit_trace_counter_begin(npkit_json *w, int64_t pid, int64_t ts, const char *name);
/* "args":{ after the head of an event, and the end of both the args and the event. */
void npkit_trace_args_begin(npkit_json *w);
void npkit_trace_args_end(npkit_json *w);
/* One metadata event ("ph":"M") with a single string or integer arg; tid < 0 leaves tid out. */
void npkit_trace_meta_string(npkit_json *w, const char *name, int64_t pid, int64_t tid,
                             const char *key, const char *value);
void npkit_trace_meta_int(npkit_json *w, const char *name, int64_t pid, int64_t tid, const char *key,
                          int64_t value);
/* A track's name and its place: thread_name and thread_sort_index. */
void npkit_trace_track_meta(npkit_json *w, int64_t pid, int64_t tid, const char *name, int64_t sort_index);

#endif /* NPKIT_TRACE_TRACKS_H */
