/*
 * Bandwidth versus message size, per operation and communicator, from the finished table.
 *
 * A point is one message size (rows that differ only in datatype, reduction or root are pooled,
 * weighted by their timed calls).  Bandwidth should grow with size and then level off at the
 * link's peak.  When it falls again as sizes grow, time is growing faster than size (t = S /
 * algbw): a point is flagged as a "bandwidth bottleneck" when its busbw is more than 10 % below
 * the best busbw of the smaller sizes, and that best is at least half of the curve's peak (so that
 * noise among latency-bound small messages is not flagged).  The time at stake of a flagged point
 * is what its instances would have saved at the best bandwidth reached before it:
 * instances × (t − S / best algbw).
 */
#ifndef NPKIT_REPORT_CURVE_H
#define NPKIT_REPORT_CURVE_H

#include <stddef.h>
#include <stdint.h>

#include "report_table.h"

#define NPKIT_CURVE_DROP 0.90       /* busbw below this share of the best before: flagged */
#define NPKIT_CURVE_REGIME 0.50     /* ... when that best is at least this share of the peak */

typedef struct npkit_curve_point {
  uint64_t bytes;
  uint64_t samples;        /* timed calls (all ranks) */
  double instances;        /* samples / ranks of the communicator that were logged */
  double time_ns;          /* mean */
  double algbw_gbs, busbw_gbs;
  int flagged;
  double at_stake_ns;
  double expected_ns;      /* S / best algbw of the smaller sizes (flagged points) */
} npkit_curve_point;

typedef struct npkit_curve {
  uint32_t fn, comm;
  int32_t nranks;
  npkit_time_source source; /* gpu when every point is GPU-timed, else cpu */
  npkit_curve_point *pts;   /* by increasing size */
  size_t n;
  double peak_busbw_gbs;
  uint64_t peak_bytes;
  uint64_t knee_bytes;      /* size with the best bandwidth before the first flagged point; 0 if none */
  size_t n_flagged;
  double at_stake_ns;
} npkit_curve;

typedef struct npkit_curves {
  npkit_curve *c;
  size_t n;
} npkit_curves;

/* From a finished table.  logged[comm] = ranks of that communicator found in the logs (to turn
 * per-rank samples into instances).  Returns 0 or -1 (memory). */
int npkit_curves_build(npkit_curves *out, const npkit_table *t, const uint32_t *logged, size_t n_comms);
void npkit_curves_free(npkit_curves *c);

#endif /* NPKIT_REPORT_CURVE_H */
