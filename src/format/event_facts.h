/*
 * What one event of the log means, where more than one reader asks: each fact has its home here
 * and the renderers, the report and the merge filter ask it rather than testing bits themselves.
 */
#ifndef NPKIT_EVENT_FACTS_H
#define NPKIT_EVENT_FACTS_H

#include <stdint.h>

#include "npkit/event_log.h"

/* A kernel, copy or memset from CUPTI (u.gpu). */
static inline int npkit_ev_is_cupti(unsigned kind) {
  return kind == NPKIT_EV_CUPTI_KERNEL || kind == NPKIT_EV_CUPTI_MEMCPY || kind == NPKIT_EV_CUPTI_MEMSET;
}

/* An event of NCCL's profiler plugin. */
static inline int npkit_ev_is_plugin(unsigned kind) {
  return kind >= NPKIT_EV_PLUGIN_INIT && kind <= NPKIT_EV_PLUGIN_LAST;
}

/* A CUPTI record that CUPTI could not time (flagged, no start, or an end before its start). */
static inline int npkit_cupti_untimed(const npkit_event *ev) {
  return (ev->u.gpu.flags & NPKIT_GPU_UNTIMED) || ev->start_ns == 0 || ev->end_ns < ev->start_ns;
}

/* An API call that did what it was asked: ncclSuccess, or ncclInProgress from a non-blocking
 * communicator (ncclInProgress = 7 in nccl.h). */
static inline int npkit_api_succeeded(const npkit_event *ev) {
  return ev->u.api.result == 0 || (ev->u.api.result == 7 && (ev->u.api.flags & NPKIT_API_ASYNC));
}

/* Whether an API call's CPU time times its operation: inside a group the call only enqueues (the
 * group's end runs it), and a non-blocking communicator returns at once. */
static inline int npkit_api_timed(const npkit_event *ev) {
  return (ev->u.api.flags & (NPKIT_API_IN_GROUP | NPKIT_API_ASYNC)) == 0 && ev->end_ns >= ev->start_ns;
}

/* Bytes per nanosecond is GB/s: the bandwidth of `bytes` moved in `ns`, 0 for no time. */
static inline double npkit_gbps(double bytes, double ns) { return ns > 0 ? bytes / ns : 0.0; }
/* The same in thousandths, rounded half up, for the writers of three decimals: exact in integers,
 * so that `npkit convert` and the trace of the NPKit dump source agree to the last digit. */
static inline uint64_t npkit_gbps_milli(uint64_t bytes, uint64_t ns) { return ns > 0 ? (bytes * 1000 + ns / 2) / ns : 0; }

#endif /* NPKIT_EVENT_FACTS_H */
