/* NCCL's API-level profiler events (ABI v5+, NCCL 2.28+): GroupApi, CollApi, P2pApi and
 * KernelLaunch.  Each gets a handle of its own (an id, NPKIT_PLUGIN_H_API) and, at its stop, a record
 * (NPKIT_EV_PLUGIN_API) naming the wrapped call that was running on the thread, so that NCCL's
 * tasks, whose parent is their CollApi/P2pApi, are joined to the calls by what NCCL links rather
 * than by counting.  What later events need of them (graph capture, the correlation id of the
 * launching call) is kept in a ring of entries after their stop: NCCL names a stopped CollApi as
 * the parent of its tasks, and of every graph replay's tasks long after.
 *
 * A KernelLaunch on a thread of NCCL's own (non-blocking communicators launch from a thread of
 * the group, v2.28.9-1 src/group.cc) pushes the correlation id of the call whose group it
 * launches, so that CUPTI ties those kernels to that call as it ties the kernels launched inside
 * a wrapped call. */
#ifndef NPKIT_PROFILER_PLUGIN_API_H
#define NPKIT_PROFILER_PLUGIN_API_H

#include <stdint.h>

#include "plugin_descr.h"

void npkit_plugin_api_start(uint32_t ctx, void **handle, const npkit_plugin_descr *d);
void npkit_plugin_api_state(void *handle, int state);
void npkit_plugin_api_stop(void *handle);

/* The id of an API handle, 0 for anything else (or a stale one). */
uint64_t npkit_plugin_api_id(const void *handle);
/* 1 when that API event was captured into a CUDA graph. */
int npkit_plugin_api_graph(uint64_t id);
/* A CollApi's communicator (local id) and the sequence number its call took: 1, or 0 when unknown. */
int npkit_plugin_api_call_seq(uint64_t id, uint32_t *comm, uint64_t *seq);
/* When the calling thread last started a KernelLaunch (0: never). */
uint64_t npkit_plugin_last_launch_ns(void);

#endif
