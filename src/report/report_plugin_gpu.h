/* GPU times of collectives from NCCL's own kernel-channel events (profiler plugin, NCCL 2.28+),
 * for `npkit report`: the span of a task's GPU-timed channels (mapped onto the host clock by the
 * library) is its collective's GPU time.
 *  - A task whose CollApi names a wrapped call (NCCL's link, trace_plugin_api.h) times that call's
 *    instance, as CUPTI kernels do (the union when both are there).
 *  - A task of a CollApi captured into a CUDA graph is a replay: it adds a GPU-timed sample to the
 *    captured call's table row and counts as a replay, without being a call.
 * Tasks and their channels may come in either order in a log; a task is settled when its slot in
 * a ring of NPKIT_PLUGIN_TASKS is needed again, or at the end of the log. */
#ifndef NPKIT_REPORT_PLUGIN_GPU_H
#define NPKIT_REPORT_PLUGIN_GPU_H

#include <stdint.h>

#include "npkit/event_log.h"
#include "report_model.h"

typedef struct npkit_plugin_gpu npkit_plugin_gpu;

npkit_plugin_gpu *npkit_plugin_gpu_new(npkit_report *rep);
/* Events in log order; each returns 0, or -1 when memory ran out. */
int npkit_plugin_gpu_api(npkit_plugin_gpu *g, const npkit_event *ev);
/* A call that moved data: its instance member (UINT32_MAX if none) and table row. */
int npkit_plugin_gpu_call(npkit_plugin_gpu *g, const npkit_event *ev, uint32_t member, uint32_t row);
int npkit_plugin_gpu_task(npkit_plugin_gpu *g, const npkit_event *ev);
int npkit_plugin_gpu_channel(npkit_plugin_gpu *g, const npkit_event *ev);
/* Settles every task; 0 or -1. */
int npkit_plugin_gpu_finish(npkit_plugin_gpu *g);
void npkit_plugin_gpu_free(npkit_plugin_gpu *g);

#endif
