/* What a wrapped NCCL call does for the GPU source: push an external correlation id to CUPTI
 * around the real call, and publish the call's description under it afterwards (cupti_corr.h).
 * With the source off this costs one relaxed atomic load per call. */
#ifndef NPKIT_CUPTI_HOOK_H
#define NPKIT_CUPTI_HOOK_H

#include <stdatomic.h>

#include "cupti_corr.h"
#include "npkit/event_log.h"

/* 1 while CUPTI traces with external correlation (set by the GPU source, cupti_source.c). */
extern _Atomic int npkit_cupti_active;

/* Before npkit_cupti_active is first set: which functions push. */
void npkit_cupti_hook_prepare(void);

/* Push for a call that may launch GPU work (not queries, not ncclGroupStart): sets corr_id. */
void npkit_cupti_push_slow(npkit_event *ev);
void npkit_cupti_pop_slow(void);

static inline void npkit_cupti_push(npkit_event *ev) {
  if (atomic_load_explicit(&npkit_cupti_active, memory_order_relaxed)) npkit_cupti_push_slow(ev);
}

/* A launch on a thread of NCCL's own (a non-blocking group, NCCL 2.28+ KernelLaunch events):
 * pushes ext, the correlation id of the call whose work it launches, unless the thread already
 * runs inside a wrapped call.  1 when pushed: pop with npkit_cupti_pop_launch. */
int npkit_cupti_push_launch(uint64_t ext);
void npkit_cupti_pop_launch(void);

/* Right after the real call returns. */
static inline void npkit_cupti_pop(const npkit_event *ev) {
  if (ev->u.api.corr_id != 0) npkit_cupti_pop_slow();
}

/* Once the event is complete (sequence number included). */
static inline void npkit_cupti_publish(const npkit_event *ev, int recorded) {
  if (ev->u.api.corr_id != 0) npkit_cupti_corr_publish(ev, recorded);
}

#endif
