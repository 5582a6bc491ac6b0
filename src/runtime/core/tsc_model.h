/* Mapping the CPU's time-stamp counter (TSC) onto CLOCK_REALTIME: pure arithmetic, no clock is
 * read here (clock.c reads them), so that tests can drive it with made-up clocks.
 *
 * The map is piecewise linear and continuous.  Each comparison of the two clocks starts a new
 * segment at the value the old one gives (no jump, so times stay monotonic), with the rate of
 * CLOCK_REALTIME against the counter measured over the last NPKIT_TSC_HISTORY comparisons (long
 * enough to average out the noise of one reading, short enough to follow NTP when it changes the
 * clock's frequency) plus a correction that removes the error just found over the next period,
 * the way NTP slews a clock instead of stepping it.  Only an error too large to slew
 * (CLOCK_REALTIME was set by hand or stepped) is followed by a jump. */
#ifndef NPKIT_TSC_MODEL_H
#define NPKIT_TSC_MODEL_H

#include <stdint.h>

/* Errors above this are followed by a jump instead of slewed. */
#define NPKIT_TSC_STEP_NS 1000000ll
/* Most rate change a correction may apply, in parts per million (adjtime's limit). */
#define NPKIT_TSC_MAX_SLEW_PPM 500
/* Readings the rate is measured over (the oldest to the newest). */
#define NPKIT_TSC_HISTORY 16

typedef struct npkit_tsc_segment {
  uint64_t tsc;  /* start of the segment, in ticks */
  uint64_t ns;   /* CLOCK_REALTIME ns at that tick */
  uint64_t mult; /* the measured rate: ns per tick, 32.32 fixed point */
  int64_t corr;  /* the correction added to it, same unit, only over the first `span` ticks: a
                    comparison that comes late (writer thread stalled in I/O) must not let the
                    correction run on and overshoot */
  uint64_t span;
} npkit_tsc_segment;

/* Ticks before the segment's start extrapolate backwards at the measured rate: a thread may read
 * the counter just before another thread starts a new segment. */
static inline uint64_t npkit_tsc_segment_ns(const npkit_tsc_segment *s, uint64_t tsc) {
  int64_t d = (int64_t)(tsc - s->tsc);
  __int128 off = ((__int128)d * (__int128)s->mult) >> 32;
  int64_t c = d <= 0 ? 0 : (uint64_t)d < s->span ? d : (int64_t)s->span;
  off += ((__int128)c * s->corr) >> 32;
  return s->ns + (uint64_t)(int64_t)off;
}

typedef struct npkit_tsc_model {
  npkit_tsc_segment seg; /* the segment in use */
  uint64_t hist_tsc[NPKIT_TSC_HISTORY]; /* the last readings (a jump forgets those before it) */
  uint64_t hist_ns[NPKIT_TSC_HISTORY];
  uint32_t hist_len, hist_next;
  uint32_t checks;       /* comparisons made by npkit_tsc_model_update */
  uint32_t steps;        /* ... of which were jumps */
  uint64_t max_error_ns; /* largest |error| of a comparison that was not a jump */
} npkit_tsc_model;

/* Starts the map from two readings (tick, ns) taken some time apart (a millisecond gives about
 * 20 ppm; the first comparisons improve on it).  -1 when the readings are unusable: not
 * increasing, or a counter slower than 10 MHz or faster than 100 GHz. */
int npkit_tsc_model_init(npkit_tsc_model *m, uint64_t tsc0, uint64_t ns0, uint64_t tsc1, uint64_t ns1);

/* One comparison: `ns` is CLOCK_REALTIME at tick `tsc`; `horizon_ns` is about when the next
 * comparison will come.  Starts a new segment at `tsc` and returns the error found (ns minus
 * what the map gave). */
int64_t npkit_tsc_model_update(npkit_tsc_model *m, uint64_t tsc, uint64_t ns, uint64_t horizon_ns);

/* Moves the start of the segment an update made to a later tick `now`, at the value the previous
 * segment `prev` gives there: until the new segment is published, threads still use `prev`, so
 * the new one must continue it from the moment of publication for times to stay monotonic.  The
 * correction keeps its end.  Not for the segment of a jump (which is meant to jump); nothing is
 * moved when `now` is not later than the segment's start. */
void npkit_tsc_model_restart_at(npkit_tsc_model *m, const npkit_tsc_segment *prev, uint64_t now);

#endif
