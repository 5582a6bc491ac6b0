/*
 * The writers of the operations of one dump (metrics_ops.h): NCCL Inspector's JSON lines and a
 * Prometheus textfile.  Both write to a FILE; the owner puts it in place (metrics_files.h: lines
 * appended, a failed dump cut back; the textfile renamed over the last one, so that no scraper
 * reads half of it).
 */
#ifndef NPKIT_METRICS_OUT_H
#define NPKIT_METRICS_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "metrics_ops.h"

/* Who writes: the process and its totals. */
typedef struct npkit_metrics_proc {
  const char *hostname;
  int32_t pid;
  int32_t rank;            /* global rank, -1 if unknown */
  int32_t device;          /* CUDA device, -1 if unknown */
  const char *slurm_job_id; /* NULL: "unknown", as the Inspector writes it */
  uint64_t dump_us;        /* wall clock of the dump, microseconds since the epoch */
  uint64_t events_recorded, events_dropped; /* the log's totals so far */
  uint64_t dumps;          /* this one included */
  uint64_t min_bytes;      /* the size threshold in force (npkit_metrics_ops_min_bytes), 0: none */
  /* across the ranks, where known (npkit metrics): collectives this process arrived last at, of
   * those with two ranks or more, and the time it waited for the last rank */
  int has_strag;
  uint64_t arrived_last, strag_instances;
  double waited_ns;
} npkit_metrics_proc;

/* The Inspector's JSON lines of one dump (format v4.2; see metrics_inspector.c): per
 * communicator with something new, a dump_stats line, then a coll_perf or p2p_perf line per
 * operation.  0, or -1 when the FILE failed. */
int npkit_metrics_inspector_write(FILE *f, const npkit_metrics_proc *proc, const npkit_metrics_comm *comms,
                                  size_t n_comms, const npkit_metrics_op *ops, size_t n_ops);

/* The Prometheus side keeps the last interval's buckets: a dump without operations writes them
 * again (the Inspector leaves its file as it was then). */
typedef struct npkit_metrics_prom npkit_metrics_prom;
npkit_metrics_prom *npkit_metrics_prom_new(void);
void npkit_metrics_prom_free(npkit_metrics_prom *p);
/* The operations of a dump; with n_ops > 0 they replace the buckets.  0 or -1 (memory). */
int npkit_metrics_prom_add(npkit_metrics_prom *p, const npkit_metrics_comm *comms, size_t n_comms,
                           const npkit_metrics_op *ops, size_t n_ops);
/* The textfile: the Inspector's metrics (names, labels, geometric mean of the bandwidths and
 * mean time per bucket, NVIDIA/nccl plugins/profiler/inspector/inspector_prom.cc) and this
 * library's npkit_* ones, with HELP and TYPE.  0, or -1 when the FILE failed. */
int npkit_metrics_prom_write(const npkit_metrics_prom *p, FILE *f, const npkit_metrics_proc *proc,
                             const npkit_metrics_comm *comms, size_t n_comms);

/* The Inspector's message-size label: "2-3KB" (inspectorPromFormatMessageSizeRange). */
void npkit_metrics_size_range(uint64_t bytes, char *out, size_t len);

#endif /* NPKIT_METRICS_OUT_H */
