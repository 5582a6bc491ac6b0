/* The GPU span of each of NCCL's tasks from its kernel-channel events (profiler plugin, NCCL
 * 2.26+): the earliest start and latest stop of its GPU-timed channels, mapped onto the host clock
 * by the library.  Tasks and their channels come in either order; a task is settled (handed to
 * its owner) once all the channels it announced came and the owner knows its call (`ready`), when
 * its slot of the ring of NPKIT_PLUGIN_TASKS is needed again, or when the owner settles the rest.
 * The report's GPU times of collectives (report_plugin_gpu.c) and the live metrics'
 * (metrics_plugin_gpu.c) are made from it. */
#ifndef NPKIT_TRACE_PLUGIN_SPANS_H
#define NPKIT_TRACE_PLUGIN_SPANS_H

#include <stdint.h>

#include "npkit/event_log.h"

typedef struct npkit_task_span {
  uint64_t id;          /* 0: empty */
  uint64_t api;         /* the CollApi or P2pApi NCCL names as its parent */
  uint64_t start, stop; /* of the GPU-timed channels */
  uint32_t seen, nch;   /* channels seen, and announced (0: kernel-channel events off) */
  uint8_t have_task;
} npkit_task_span;

/* settle: hands over a task (its span may have no channel); 0 or -1 (memory).  ready: whether the
 * owner knows the task's call, so that a complete task can be settled at once. */
typedef struct npkit_task_spans {
  npkit_task_span *spans; /* NPKIT_PLUGIN_TASKS slots, slot = id mod the size */
  int (*settle)(void *ctx, const npkit_task_span *t);
  int (*ready)(void *ctx, const npkit_task_span *t);
  void *ctx;
} npkit_task_spans;

/* 0 or -1 (memory). */
int npkit_task_spans_init(npkit_task_spans *s, int (*settle)(void *, const npkit_task_span *),
                          int (*ready)(void *, const npkit_task_span *), void *ctx);
void npkit_task_spans_free(npkit_task_spans *s);
/* An NPKIT_EV_PLUGIN_TASK or NPKIT_EV_PLUGIN_KERNEL_CH event (others are passed over).  0 or -1. */
int npkit_task_spans_event(npkit_task_spans *s, const npkit_event *ev);
/* Settles a task now and empties its slot.  0 or -1. */
int npkit_task_spans_settle(npkit_task_spans *s, npkit_task_span *t);
/* All its channels came and its call is known. */
int npkit_task_spans_complete(const npkit_task_spans *s, const npkit_task_span *t);

#endif /* NPKIT_TRACE_PLUGIN_SPANS_H */
