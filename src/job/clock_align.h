/*
 * Clock offsets between hosts, estimated from the data itself.
 *
 * Every rank leaves a collective when the last rank has arrived and the data has gone round, so the
 * same collective (same communicator, same sequence number) ends at nearly the same true instant
 * on every rank.  One collective seen on hosts A and B gives one sample of the offset between
 * their clocks: d = end_A − end_B, the amount to add to B's times to put them on A's axis.  Many
 * collectives give many samples; their median (after rejecting outliers beyond 5 sigmas of the
 * MAD) is the estimate, and its standard error (1.2533 × sigma / sqrt(n)) the uncertainty.
 *
 * Samples are collected per pair of hosts (reservoir-sampled beyond NPKIT_ALIGN_RESERVOIR, so the
 * memory does not grow with the run).  Solving picks, for every host, the chain of pairs from the
 * reference host with the smallest accumulated variance; pairs left over close cycles and are used
 * to check consistency: their estimate must match the difference of the two solved offsets within
 * the combined uncertainty.
 *
 * Ranks on the same host read the same CLOCK_REALTIME: offsets are per host, never per rank.
 */
#ifndef NPKIT_CLOCK_ALIGN_H
#define NPKIT_CLOCK_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#define NPKIT_ALIGN_RESERVOIR 16384u
/* A pair needs this many samples to be used. */
#define NPKIT_ALIGN_MIN_SAMPLES 3u
/* Outliers are never rejected closer than this to the median (ns): timestamp quantisation and
 * scheduling noise of a few hundred ns are not outliers. */
#define NPKIT_ALIGN_REJECT_FLOOR_NS 1000.0
/* A cycle check fails when the mismatch exceeds this many combined sigmas plus the floor. */
#define NPKIT_ALIGN_CYCLE_SIGMAS 5.0
#define NPKIT_ALIGN_CYCLE_FLOOR_NS 1000.0

typedef enum npkit_align_status {
  NPKIT_ALIGN_REFERENCE = 0, /* the reference host: offset 0 by definition */
  NPKIT_ALIGN_OK,            /* aligned through shared collectives */
  NPKIT_ALIGN_NONE,          /* no chain of shared collectives to the reference: offset 0 */
} npkit_align_status;

typedef struct npkit_align_host {
  int64_t offset_ns;         /* add to this host's times to put them on the reference clock */
  double uncertainty_ns;     /* standard error of offset_ns (accumulated along the chain) */
  double sigma_ns;           /* noise of one sample on the last link (1.4826 × MAD) */
  uint64_t samples;          /* collectives seen on the last link */
  uint64_t used, rejected;   /* of the (reservoir-sampled) samples: kept, and rejected as outliers */
  int32_t via;               /* host the last link comes from; -1 for the reference and NONE */
  uint32_t hops;             /* links from the reference */
  npkit_align_status status;
} npkit_align_host;

typedef struct npkit_align_summary {
  uint32_t reference;
  uint32_t pairs;            /* host pairs with enough samples */
  uint32_t cycle_checks;     /* pairs not on any chain, checked against the solution */
  uint32_t cycle_failures;
  double worst_cycle_ns;     /* largest mismatch among the cycle checks */
  uint32_t worst_a, worst_b; /* the pair that had it */
} npkit_align_summary;

typedef struct npkit_clock_align npkit_clock_align;

/* NULL when memory is short. */
npkit_clock_align *npkit_align_create(uint32_t n_hosts);
void npkit_align_free(npkit_clock_align *a);

/* One sample: offset(b) − offset(a) ≈ d_ns, i.e. d_ns = end seen on a − end seen on b.  a != b.
 * Returns 0, or -1 when memory is short (the sample is lost). */
int npkit_align_add(npkit_clock_align *a, uint32_t host_a, uint32_t host_b, int64_t d_ns);

/* Solves for every host (out has n_hosts entries).  Returns 0, or -1 when memory is short. */
int npkit_align_solve(npkit_clock_align *a, uint32_t reference, npkit_align_host *out,
                      npkit_align_summary *summary);

const char *npkit_align_status_name(npkit_align_status s);

#endif /* NPKIT_CLOCK_ALIGN_H */
