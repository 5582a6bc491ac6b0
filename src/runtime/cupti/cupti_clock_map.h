/* Mapping the stamps of CUPTI records onto CLOCK_REALTIME when CUPTI runs on another clock (a
 * client registered a timestamp callback, cupti_clock.h): pure arithmetic over pairs of readings,
 * so that tests can drive it with made-up clocks (cupti_clock.c takes the readings).
 *
 * A reading pairs CUPTI's clock (cuptiGetTimestamp) with CLOCK_REALTIME at one moment.  One is
 * taken before every drain, and the records a drain reads were stamped before it, so a stamp
 * lies between two readings: it is mapped by linear interpolation between them (CUPTI converts
 * the GPU's stamps onto its clock the same way, cupti_activity.h of CUDA 13, lines 8125-8131),
 * exact up to the uncertainty of the readings themselves for any clock that runs at a steady
 * rate against CLOCK_REALTIME, a time-stamp counter or CLOCK_MONOTONIC.  Stamps before the first
 * reading kept or after the last are extrapolated at the rate between those two.  (tsc_model.h
 * maps the other way round: forward from its newest reading, for stamps taken from then on;
 * stamps older than that reading would be extrapolated at its newest rate.) */
#ifndef NPKIT_CUPTI_CLOCK_MAP_H
#define NPKIT_CUPTI_CLOCK_MAP_H

#include <stdint.h>

#define NPKIT_CCLOCK_READINGS 256 /* readings kept: about a minute at the default flush period */

typedef struct npkit_cclock {
  uint64_t c[NPKIT_CCLOCK_READINGS]; /* CUPTI's clock */
  uint64_t r[NPKIT_CCLOCK_READINGS]; /* CLOCK_REALTIME ns at the same moment */
  unsigned n, head;                  /* readings kept; the slot of the oldest */
  unsigned restarts;                 /* readings that went backwards on either clock */
} npkit_cclock;

void npkit_cclock_init(npkit_cclock *m);

/* A new reading: later than the last one on both clocks, else the readings restart from it (a
 * clock was set back, or another callback replaced the clock). */
void npkit_cclock_add(npkit_cclock *m, uint64_t c, uint64_t r);

/* CUPTI stamp -> CLOCK_REALTIME ns into *ns: 1, or 0 while fewer than two readings are kept. */
int npkit_cclock_map(const npkit_cclock *m, uint64_t stamp, uint64_t *ns);

#endif
