/* Correlation of GPU activity with the NCCL call that launched it.
 *
 * Every wrapped call that may launch GPU work gets a process-unique external id, pushed to CUPTI
 * (kind CUSTOM2) around the real call; CUPTI then ties the CUPTI correlation id of every launch made
 * inside it to that id (EXTERNAL_CORRELATION records).  After the call, the wrapper publishes the
 * call's description under its id in a lock-free ring (the slot is ext_id mod the ring size and is
 * tagged with the id), so the completion path copies function, bytes, communicator, sequence and
 * group into each kernel event and rendering needs no join.
 *
 *   launch ─ correlationId ─(EXTERNAL_CORRELATION)→ ext_id ─(call ring)→ NCCL call
 *   graph replay ─ graphNodeId ─(node map, filled while the call captured it)→ NCCL call
 *
 * Kernels that ncclGroupEnd launched belong to the GroupEnd; when the group held a single
 * collective or send/recv, the GroupEnd's description is that call's (the group id is kept). */
#ifndef NPKIT_CUPTI_CORR_H
#define NPKIT_CUPTI_CORR_H

#include <stdint.h>

#include "npkit/event_log.h"

/* Slots of the call ring: a kernel record must be processed before this many later calls have
 * been published, or its call's description is reported lost (NPKIT_GPU_CALL_LOST). */
#define NPKIT_CUPTI_CALL_RING (1u << 16)
/* Slots of the CUPTI correlation id → external id map (direct mapped). */
#define NPKIT_CUPTI_CORR_MAP (1u << 17)

/* What the completion path copies into a GPU event. */
typedef struct npkit_cupti_call {
  uint64_t start_ns, end_ns; /* the launching call */
  uint64_t bytes;            /* attributed call (a group: the sum over its calls) */
  uint64_t seq;
  uint64_t group;
  uint32_t thread;           /* launching thread index */
  uint32_t comm;
  uint16_t func;             /* attributed function */
  uint16_t flags;            /* NPKIT_GPU_CALL_RECORDED, NPKIT_GPU_VIA_GROUP */
  uint16_t group_calls;
} npkit_cupti_call;

typedef enum npkit_cupti_lookup {
  NPKIT_CUPTI_FOUND = 0,
  NPKIT_CUPTI_PENDING = 1, /* the call has not returned yet: try again later */
  NPKIT_CUPTI_GONE = 2,    /* overwritten by later calls, or never published */
} npkit_cupti_lookup;

/* Allocates the tables; 0 or -1 (out of memory). */
int npkit_cupti_corr_init(void);

/* ---- hot path (wrapper threads) ---- */
/* A new external id; remembered as the thread's current one until npkit_cupti_corr_end. */
uint64_t npkit_cupti_corr_begin(void);
void npkit_cupti_corr_end(void);
/* Makes an id issued earlier (by another thread) the thread's current one. */
void npkit_cupti_corr_enter(uint64_t id);
/* External ids handed out so far. */
uint64_t npkit_cupti_corr_issued(void);
/* The id pushed around the call the calling thread is in, 0 if none (graph node callbacks). */
uint64_t npkit_cupti_corr_current(void);
/* Publishes the finished call `ev` (an NPKIT_EV_API event whose corr_id is set).  `recorded`: the
 * event is stored in the log. */
void npkit_cupti_corr_publish(const npkit_event *ev, int recorded);

/* ---- completion path (one thread at a time) ---- */
npkit_cupti_lookup npkit_cupti_call_find(uint64_t ext_id, npkit_cupti_call *out);
void npkit_cupti_corr_put(uint32_t correlation, uint64_t ext_id);
/* 0 if unknown. */
uint64_t npkit_cupti_corr_get(uint32_t correlation);

/* ---- CUDA graphs ---- */
/* A graph node was created inside the call with external id ext_id (stream capture). */
void npkit_cupti_node_created(uint64_t node_id, uint64_t ext_id);
/* Instantiation cloned `original` into `clone`. */
void npkit_cupti_node_cloned(uint64_t original, uint64_t clone);
/* Copies the description of the calls whose nodes were captured since the last time, while the
 * ring still holds them (completion path). */
void npkit_cupti_nodes_resolve(void);
/* The call a replayed node belongs to: FOUND, or GONE when unknown. */
npkit_cupti_lookup npkit_cupti_node_find(uint64_t node_id, uint64_t *ext_id, npkit_cupti_call *out);

#endif
