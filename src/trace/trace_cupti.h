/*
 * GPU activity (NPKIT_EV_CUPTI_KERNEL, _MEMCPY, _MEMSET) as Chrome trace events, the way the PyTorch
 * profiler shows it: one track per GPU stream (tid band 400-699), complete events with cat
 * "kernel", "gpu_memcpy" or "gpu_memset", and an arrow (flow events, cat "ac2g") from the NCCL
 * call that launched the work to it.  Kernels attributed to a collective also carry the bandwidth
 * of the collective computed from GPU time.  See docs/trace-format.md.
 */
#ifndef NPKIT_TRACE_CUPTI_H
#define NPKIT_TRACE_CUPTI_H

#include <stdint.h>

#include "log_reader.h"
#include "trace_api.h"
#include "trace_sink.h"

typedef struct npkit_cupti_render npkit_cupti_render;

typedef struct npkit_cupti_render_stats {
  uint64_t kernels, memcpys, memsets; /* drawn */
  uint64_t untimed;                   /* counted, not drawn */
  uint64_t flows;                     /* arrows from NCCL calls */
} npkit_cupti_render_stats;

/* NULL if memory is short.  fmt gives pid and time base; r the names and communicators. */
npkit_cupti_render *npkit_cupti_render_new(const npkit_log_reader *r, const npkit_api_fmt *fmt);
/* Writes ev if it is GPU activity and returns 1; returns 0 for any other event. */
int npkit_cupti_render_event(npkit_cupti_render *g, npkit_sink *s, const npkit_event *ev);
/* Tells the sink the flow ev will start, when it has one (npkit_sink_flow_ahead): call it for
 * every event of the log, in order, before the first npkit_cupti_render_event. */
void npkit_cupti_render_ahead(npkit_cupti_render *g, npkit_sink *s, const npkit_event *ev);
/* Writes what is known only at the end (the count of untimed kernels).  stats may be NULL. */
void npkit_cupti_render_finish(npkit_cupti_render *g, npkit_sink *s, npkit_cupti_render_stats *stats);
void npkit_cupti_render_free(npkit_cupti_render *g);

/* Names used in the trace: "Memcpy HtoD", "device"... */
const char *npkit_cupti_copy_kind_name(unsigned copy_kind);
const char *npkit_cupti_memory_kind_name(unsigned memory_kind);

#endif /* NPKIT_TRACE_CUPTI_H */
