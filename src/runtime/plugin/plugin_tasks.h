/* The tasks NCCL launched lately (Coll/P2p events), kept after their record was written for what
 * later events and other threads need of them: a host time before the task's kernel started (the
 * lower bound of the GPU clock map), the communicator and sequence number of the call it came
 * from, and whether any of its kernel channels started (the work in flight).
 *
 * A ring of the last 4096 tasks, written by the thread that starts a task (and, for the channel
 * mark, NCCL's proxy thread), read by any thread under a sequence lock on the task id. */
#ifndef NPKIT_PLUGIN_TASKS_H
#define NPKIT_PLUGIN_TASKS_H

#include <stdint.h>

#include "inflight.h"

typedef struct npkit_plugin_task_info {
  uint64_t id;          /* task id, from 1 */
  uint64_t before_ns;   /* a host time before its kernel started, 0 if unknown */
  uint64_t start_ns;    /* when NCCL started its event (the launch) */
  uint64_t nccl_seq;    /* Coll: NCCL's seqNumber; NPKIT_NO_SEQ */
  uint64_t seq;         /* the collective's sequence number on its communicator, NPKIT_NO_SEQ */
  uint64_t comm_id;     /* its communicator's id (npkit_comm.comm_id), 0 if unknown */
  uint64_t count;
  uint32_t ctx, comm;   /* plugin context; local communicator id, 0 */
  int32_t rank, nranks, peer; /* rank and size in the communicator (-1); P2p: peer, Coll: root */
  uint16_t fn;          /* npkit_fn */
  uint8_t nchannels;
  uint8_t flags;        /* NPKIT_PTASK_* of its record (the low byte) */
} npkit_plugin_task_info;

/* A task started (its record written). */
void npkit_plugin_task_note(const npkit_plugin_task_info *t);
/* Its host time before the kernel, 0 when the task is no longer in the ring. */
uint64_t npkit_plugin_task_before(uint64_t id);
/* A channel of its kernel started: the task is no longer queued. */
void npkit_plugin_task_channel_started(uint64_t id, uint32_t ctx);
/* A copy of its entry; 0 when it is no longer in the ring. */
int npkit_plugin_task_get(uint64_t id, npkit_plugin_task_info *out);

/* Names an in-flight item after the task's collective: communicator, sequence numbers, count. */
void npkit_plugin_task_name_item(const npkit_plugin_task_info *t, npkit_ev_inflight *f);

/* Tasks whose kernel has started on none of their channels, as NPKIT_INFL_QUEUED items: only
 * tasks with kernel-channel events (not symmetric kernels), of communicators whose kernels NCCL
 * did report, and later than the latest task it reported a start of (a communicator's kernels run
 * in launch order: an earlier one that never got a report is not queued, NCCL reports none of its
 * channels). */
void npkit_plugin_tasks_queued(npkit_inflight_sink *sink);

#endif
