/*
 * Rendering of NCCL's own events (NPKIT_EV_PLUGIN_*, recorded through the profiler plugin):
 * kernel-channel slices on one track per (communicator, channel), a "collectives (GPU)" track per
 * communicator, proxy operations and their network steps on lanes per (communicator, channel,
 * peer, direction) — and the algorithm, protocol, channels and GPU time of each collective added
 * to the args of the NCCL API call that issued it.
 *
 * Joining a call with NCCL's task happens here, not while the job runs.  A communicator's plugin
 * context is bound to the communicator created around the same time with the same rank and size.
 * NCCL numbers a communicator's collectives per function (seqNumber), so calls are numbered the
 * same way: per (communicator, NCCL function), counting only calls NCCL turns into a task (count >
 * 0, more than one rank, accepted, and not inside a group that failed or was only simulated).  A
 * group's calls of one function take a consecutive range of numbers, matched to NCCL's tasks in
 * that range by (count, datatype, root), because NCCL launches a group's tasks largest first.
 * The events of one collective lie close together in the log, but the writer appends each
 * thread's events in turn, so the proxy thread's kernel-channel and proxy records may come before
 * the task they belong to, and a call before its task.  Both are held back until the task and the
 * stops of all its channels have been read, and written then.  Memory is bounded: at most
 * NPKIT_PLUGIN_PENDING calls and NPKIT_PLUGIN_HELD records are held (the oldest is written without
 * its task's data when more come) and the latest NPKIT_PLUGIN_TASKS tasks are remembered.
 */
#ifndef NPKIT_TRACE_PLUGIN_H
#define NPKIT_TRACE_PLUGIN_H

#include "log_reader.h"
#include "npkit/event_log.h"
#include "trace_api.h"

#include "trace_plugin_api.h" /* NPKIT_PLUGIN_TASKS */
#include "trace_sink.h"

typedef struct npkit_plugin_render npkit_plugin_render;

/* State for one log; NULL if memory is short (then the functions below still write every call,
 * without NCCL's data, and ignore plugin events).  `fmt` must outlive it. */
npkit_plugin_render *npkit_plugin_render_new(const npkit_log_reader *r, npkit_api_fmt *fmt);
void npkit_plugin_render_free(npkit_plugin_render *p);

/* An API call, in log order: written now, or held back until NCCL's task for it has been read.
 * p may be NULL: the call is then written at once with fmt. */
void npkit_plugin_render_call(npkit_plugin_render *p, npkit_api_fmt *fmt, npkit_sink *w,
                              const npkit_event *ev);
/* An event of a plugin kind: returns 1 (rendered or absorbed), or 0 for any other kind. */
int npkit_plugin_render_event(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev);
/* At the end of the log: writes the calls still held, the unfinished tasks and the plugin's own
 * counters. */
void npkit_plugin_render_finish(npkit_plugin_render *p, npkit_sink *w);


#endif /* NPKIT_TRACE_PLUGIN_H */
