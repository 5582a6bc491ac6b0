/*
 * The nccl-tests table: one row per operation × message size × communicator (and datatype, reduction
 * and root, which nccl-tests also shows, and the user tag of nccl*Config calls), with calls, time
 * (mean, p50, p99), algbw and busbw.
 *
 * Each call adds one sample per rank.  A row keeps GPU and CPU samples apart and reports GPU time
 * when it has any (kernel or channel activity), else the API call's CPU time, and says which.
 * algbw = S / mean time (GB/s, 1 GB = 1e9 B) and busbw = algbw × the nccl-tests factor of the
 * operation for the communicator's size, as nccl-tests computes them.
 */
#ifndef NPKIT_REPORT_TABLE_H
#define NPKIT_REPORT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "job_instances.h"
#include "slots.h"
#include "stats_quantile.h"

#define NPKIT_TABLE_NO_COMM UINT32_MAX


typedef struct npkit_table_key {
  uint32_t fn;          /* npkit_fn */
  uint32_t comm;        /* report communicator index, NPKIT_TABLE_NO_COMM if unknown */
  uint64_t bytes;       /* S of nccl-tests */
  uint64_t count;
  int32_t datatype, redop, root; /* -1 when they do not apply */
  uint64_t tag;         /* the calls' user profiler tag (nccl*Config, NCCL 2.31), 0: untagged */
} npkit_table_key;

/* The network and NVLink throughput the machine's sampled counters (NPKIT_GPU_SAMPLE_RATE) measured
 * while a row's calls ran (report_machine.h): sums weighted by call time, then the means. */
typedef struct npkit_row_links {
  double net_w, net_tx, net_rx;   /* Gb/s × ns: the data ports of the rank's host */
  double nvl_w, nvl_tx, nvl_rx;   /* GB/s × ns: the rank's GPU */
  double net_tx_gbps, net_rx_gbps, nvlink_tx_gbs, nvlink_rx_gbs; /* NaN when not measured */
} npkit_row_links;

typedef struct npkit_table_row {
  npkit_table_key key;
  int32_t nranks;       /* of the communicator, for the busbw factor */
  uint64_t calls;       /* successful calls, summed over ranks */
  uint64_t untimed;     /* of them, calls whose CPU time is not the collective's (in a group, non-blocking) */
  uint64_t replays;     /* CUDA graph replays of a captured call of the row, timed by NCCL's
                           kernel-channel events: GPU samples that are not calls */
  npkit_quantile cpu, gpu;
  char algo[16], proto[16]; /* "" unknown, "mixed" when calls differ */
  int channels_min, channels_max; /* channels NCCL's tasks of the row used (profiler plugin), 0 unknown */
  npkit_row_links links;
  /* npkit_table_finish() */
  npkit_time_source source;
  uint64_t samples;     /* timed calls behind the statistics */
  double mean_ns, p50_ns, p99_ns;
  double algbw_gbs, busbw_gbs; /* NaN without time or bytes */
  int exact;            /* quantiles are exact (else within 0.8 %) */
} npkit_table_row;

/* Algorithm and protocol NCCL chose, as the profiler plugin reports them per task: kept per
 * (operation, communicator size, bytes) and given to the rows that match at the end. */
typedef struct npkit_table_algo {
  uint32_t fn;
  int32_t nranks;
  uint64_t bytes;
  char algo[16], proto[16];
  int ch_min, ch_max;   /* channels of its tasks, 0 unknown */
} npkit_table_algo;

typedef struct npkit_table {
  npkit_table_row *rows;
  size_t n, cap;
  npkit_slots index;    /* of rows, by key_hash */
  npkit_table_algo *algos;
  size_t n_algos, cap_algos, last_algo;
} npkit_table;

void npkit_table_init(npkit_table *t);
void npkit_table_free(npkit_table *t);
/* The row of k, created (with nranks) on first use; NULL when memory is short.  The pointer is
 * valid until the next call. */
npkit_table_row *npkit_table_row_for(npkit_table *t, const npkit_table_key *k, int32_t nranks);
/* Notes an algorithm / protocol name for a row ("mixed" once they differ). */
void npkit_table_note_algo(npkit_table_row *row, const char *algo, const char *proto);
/* Notes the algorithm, protocol and channels (0 unknown) of one task the profiler plugin saw.
 * Returns 0 or -1 (memory). */
int npkit_table_note_task(npkit_table *t, uint32_t fn, int32_t nranks, uint64_t bytes, const char *algo,
                          const char *proto, int channels);
/* Computes the derived columns, gives rows their algorithm and protocol, and sorts rows by
 * operation, communicator, size. */
void npkit_table_finish(npkit_table *t);

const char *npkit_time_source_name(npkit_time_source s);

#endif /* NPKIT_REPORT_TABLE_H */
