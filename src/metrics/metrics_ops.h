/*
 * The operations a process completed, per communicator, from the events its log holds: each
 * collective call joined with the GPU activity CUPTI attributed to it (by communicator and
 * sequence number, as the report's instance store joins them), each send/receive with the kernel
 * it launched (by the external correlation id), and the algorithm and protocol NCCL's profiler
 * plugin named for the operation and size.  Fed in any order (calls come from the writer thread,
 * kernels later from the CUPTI drain); npkit_metrics_ops_take hands over what completed.
 * Nothing is dropped silently: a call that has no time (enqueued in a group whose kernel was not
 * attributed to it, or on a non-blocking communicator, without GPU activity) is counted as a drop
 * of its communicator.  Not thread safe: the owner locks.
 */
#ifndef NPKIT_METRICS_OPS_H
#define NPKIT_METRICS_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"

enum { NPKIT_MTIME_KERNEL_GPU = 0, NPKIT_MTIME_COLLECTIVE_CPU = 1 };
/* where GPU times come from */
enum { NPKIT_MGPU_CUPTI = 0, NPKIT_MGPU_PLUGIN = 1, NPKIT_MGPU_SOURCES = 2 };

typedef struct npkit_metrics_comm {
  uint32_t local_id;
  uint64_t comm_id;
  int32_t rank, nranks, nnodes; /* nnodes 0: unknown */
  int32_t device;               /* CUDA device, -1 if unknown */
  char name[72];
  /* cumulative */
  uint64_t coll_records, p2p_records, coll_dropped, p2p_dropped;
  /* since the previous take */
  uint64_t coll_new, p2p_new, coll_dropped_new, p2p_dropped_new;
  uint64_t busy_ns_new, busy_ns; /* the timed operations' summed times */
  /* operations below the size threshold (npkit_metrics_ops_min_bytes): counted, not written */
  uint64_t coll_small, p2p_small, coll_small_new, p2p_small_new;
  /* across the ranks, where the owner knows them (npkit metrics, from every rank's log): the
   * largest arrival spread of its collectives and the global rank that arrived last there */
  int has_spread;
  double spread_max_ns;
  int32_t spread_last_rank;
  /* per GPU source (NPKIT_MGPU_*): whether it had any, the latest start read so far */
  unsigned gpu_seen;
  uint64_t gpu_latest_start[NPKIT_MGPU_SOURCES];
} npkit_metrics_comm;


typedef struct npkit_metrics_op {
  uint32_t comm;        /* index in npkit_metrics_ops_comms */
  uint16_t fn;          /* npkit_fn */
  uint8_t p2p;
  uint8_t timing;       /* NPKIT_MTIME_* */
  int32_t peer;         /* p2p: the peer, else -1 */
  uint64_t seq;         /* collectives: the per-communicator sequence; p2p: per (peer, direction) */
  uint64_t msg_bytes;   /* the Inspector's message size: AllGather/ReduceScatter per rank */
  uint64_t exec_ns;
  uint64_t end_ns;
  double algbw_gbs, busbw_gbs; /* the Inspector's (inspectorComputeOpBw): from whole microseconds */
  char algo[16], proto[8];     /* "unknown" when the plugin did not say */
} npkit_metrics_op;

typedef struct npkit_metrics_ops npkit_metrics_ops;

npkit_metrics_ops *npkit_metrics_ops_new(void);
void npkit_metrics_ops_free(npkit_metrics_ops *m);

/* A communicator of the process (a COMM record).  0 or -1 (memory). */
int npkit_metrics_ops_comm(npkit_metrics_ops *m, const npkit_comm_rec *c);
/* Its node count, when the owner knows it better (the tool, from the job's hosts). */
void npkit_metrics_ops_set_nnodes(npkit_metrics_ops *m, uint32_t local_id, int32_t nnodes);
/* Its largest arrival spread and who arrived last there (the tool, from every rank's log). */
void npkit_metrics_ops_set_spread(npkit_metrics_ops *m, uint32_t local_id, double spread_ns, int32_t last_rank);
/* Whether GPU times may come (CUPTI or NCCL's kernel channels are on; the default): without,
 * operations of communicators that had no GPU activity are not held for it. */
void npkit_metrics_ops_expect_gpu(npkit_metrics_ops *m, int expect);
/* The user's size threshold (NPKIT_METRICS_MIN_BYTES, the Inspector's
 * NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES, 8192 there, 0 here): an operation whose message size (as
 * written: per rank for AllGather and ReduceScatter, count x type size as the Inspector compares
 * it) is smaller is counted in coll_small/p2p_small instead of handed over. */
void npkit_metrics_ops_min_bytes(npkit_metrics_ops *m, uint64_t min_bytes);
/* Whether npkit_metrics_ops_events would look at the event (an owner that queues events keeps
 * only those). */
int npkit_metrics_ops_wants(const npkit_event *ev);
/* Events of any kind; those that say nothing of operations are passed over.  0 or -1 (memory). */
int npkit_metrics_ops_events(npkit_metrics_ops *m, const npkit_event *ev, size_t n);

/* Hands over, sorted by communicator, kind and sequence, the operations settled now: those whose
 * call and GPU activity ended before now_ns - hold_ns (CUPTI delivers kernels late, NCCL's
 * channels come from other threads); with `final`, all of them.  *ops stays valid until the next take.
 * Updates the communicators' counts (the _new ones from zero).  0 or -1 (memory). */
int npkit_metrics_ops_take(npkit_metrics_ops *m, uint64_t now_ns, uint64_t hold_ns, uint64_t long_hold_ns, int final,
                           const npkit_metrics_op **ops, size_t *n);

const npkit_metrics_comm *npkit_metrics_ops_comms(const npkit_metrics_ops *m, size_t *n);

/* The Inspector's bandwidths of one operation (inspectorComputeOpBw, NVIDIA/nccl v2.30.7-1
 * plugins/profiler/inspector/inspector.cc): traffic = S, or S x nranks for AllGather and
 * ReduceScatter, over the whole microseconds; busbw = algbw x the nccl-tests factor (1 for p2p). */
void npkit_metrics_bandwidths(unsigned fn, int32_t nranks, uint64_t msg_bytes, uint64_t exec_us, double *algbw,
                              double *busbw);

#endif /* NPKIT_METRICS_OPS_H */
