/*
 * Stragglers and synchronisation delay.
 *
 * For every collective instance seen on two ranks or more, the arrival of each rank is the start of
 * its part (the API call, or its GPU activity when known), put on the reference clock with its
 * host's offset.  The arrival spread is latest − earliest arrival; the rank that arrived last held
 * everybody else for that long.  Per rank we count the instances it took part in, those where it
 * was last, those where it was last and the spread exceeded the threshold (the delay it caused),
 * and the time it spent waiting for others.  The instances with the largest spread are kept for
 * the report.
 */
#ifndef NPKIT_REPORT_STRAGGLER_H
#define NPKIT_REPORT_STRAGGLER_H

#include <stddef.h>
#include <stdint.h>

#include "job_instances.h"
#include "stats_quantile.h"

#define NPKIT_STRAG_TOP_MAX 64

/* How to read an instance's entries: member → log (process), log → host, host → clock offset. */
typedef struct npkit_strag_ctx {
  const uint32_t *member_log;
  const uint32_t *log_host;
  const int64_t *host_offset_ns;
  const double *host_uncertainty_ns;
} npkit_strag_ctx;

typedef struct npkit_strag_rank {
  uint64_t instances;        /* instances with two ranks or more that it took part in */
  uint64_t last;             /* it arrived last */
  uint64_t last_over;        /* ... and the spread exceeded the threshold */
  double delay_caused_ns;    /* sum of the spreads of the instances counted in last_over */
  double lag_ns;             /* sum of (its arrival − earliest arrival) */
  double waited_ns;          /* sum of (latest arrival − its arrival): time spent waiting */
} npkit_strag_rank;

typedef struct npkit_strag_instance {
  uint32_t comm;
  uint64_t seq;
  uint8_t fn;
  uint8_t gpu;
  uint32_t ranks;            /* entries */
  uint32_t last_log, first_log;
  uint64_t first_arrival_ns; /* on the reference clock */
  double spread_ns;
  double uncertainty_ns;     /* of comparing the ranks' clocks (0 when all share a host) */
} npkit_strag_instance;

typedef struct npkit_strag_comm {
  uint64_t instances, over;
  double over_ns;            /* sum of spreads above the threshold */
  npkit_quantile spread;
  double max_spread_ns;      /* the largest spread, and the log that arrived last there */
  uint32_t max_last_log;
} npkit_strag_comm;

typedef struct npkit_straggler {
  double threshold_ns;
  uint32_t top_max;
  uint64_t instances;        /* with two ranks or more */
  uint64_t over;             /* spread above the threshold */
  uint64_t mixed;            /* skipped: some ranks had GPU times and others CPU times */
  uint64_t cross_host;       /* instances that compare clocks of different hosts */
  uint64_t gpu;              /* instances timed by GPU activity */
  double over_ns;            /* sum of spreads above the threshold */
  double max_uncertainty_ns;
  npkit_quantile spread;
  npkit_strag_rank *ranks;   /* per log */
  size_t n_ranks;
  npkit_strag_comm *comms;   /* per communicator */
  size_t n_comms;
  npkit_strag_instance top[NPKIT_STRAG_TOP_MAX]; /* largest spreads, largest first */
  size_t n_top;
} npkit_straggler;

/* Returns 0 or -1 (memory). */
int npkit_straggler_init(npkit_straggler *s, size_t n_logs, size_t n_comms, double threshold_ns, uint32_t top);
void npkit_straggler_free(npkit_straggler *s);
/* Every instance of the job's communicators (its clocks aligned: npkit_job_align), with `s`
 * initialised.  0 or -1 (memory). */
struct npkit_job;
int npkit_straggler_job(npkit_straggler *s, const struct npkit_job *job);
/* One instance of communicator `comm`.  Returns 0 or -1 (memory). */
int npkit_straggler_add(npkit_straggler *s, const npkit_strag_ctx *ctx, uint32_t comm, uint64_t seq,
                        const npkit_inst_entry *e, size_t n);

#endif /* NPKIT_REPORT_STRAGGLER_H */
