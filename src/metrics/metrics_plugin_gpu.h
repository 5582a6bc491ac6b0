/* Inside metrics_ops: GPU times of collectives from NCCL's own kernel-channel events (the profiler
 * plugin, NCCL 2.28+), where CUPTI is off (as next to PyTorch's profiler): the span of a task's
 * GPU-timed channels, mapped onto the host clock by the library, times the wrapped call its
 * CollApi names, as the report joins them, and a Send/Recv its P2pApi names (inside a group too,
 * where CUPTI's one kernel times the whole group) (report_plugin_gpu.c; NCCL's links: trace_plugin_api.h).
 * Tasks, channels and calls come in any order; a task is settled once complete and its call known,
 * when its slot is needed again, or at the final take. */
#ifndef NPKIT_METRICS_PLUGIN_GPU_H
#define NPKIT_METRICS_PLUGIN_GPU_H

#include <stdint.h>

#include "npkit/event_log.h"

/* An operation's GPU span, by its call's communicator (local id) and the key (kind, id) the call
 * was given.  0 or -1 (memory). */
typedef int (*npkit_mpgpu_put_fn)(void *ctx, uint32_t comm, uint32_t kind, uint64_t id, uint64_t start_ns,
                                  uint64_t end_ns);

typedef struct npkit_mpgpu npkit_mpgpu;

npkit_mpgpu *npkit_mpgpu_new(npkit_mpgpu_put_fn put, void *ctx);
void npkit_mpgpu_free(npkit_mpgpu *g);
/* NPKIT_EV_PLUGIN_API, _TASK and _KERNEL_CH events; 0 or -1. */
int npkit_mpgpu_event(npkit_mpgpu *g, const npkit_event *ev);
/* A collective or send/receive call (NPKIT_EV_API) and the key of its operation. */
void npkit_mpgpu_call(npkit_mpgpu *g, const npkit_event *ev, uint32_t kind, uint64_t id);
/* Settles the tasks whose call is known and that are complete, or whose channels' latest stop is
 * before `before`; with `final`, every task.  0 or -1. */
int npkit_mpgpu_settle(npkit_mpgpu *g, uint64_t before, int final);

#endif
