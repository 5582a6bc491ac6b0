/* The map from time-stamp counter ticks to CLOCK_REALTIME (src/runtime/tsc_model.c), driven by
 * simulated clocks whose truth is known: a 2.9 GHz counter, a CLOCK_REALTIME that runs 30 ppm
 * fast, then 20 ppm slow (NTP changing its mind), jumps forward and back (set by hand), and
 * readings with +-25 ns of noise.  Checks the error of the map against the truth between
 * comparisons, its continuity and monotonicity, the jump handling and the reported quality. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "tsc_model.h"


/* The simulated world: true time t in ns since the start. */
#define TICKS_PER_NS 2.9
#define T0 123456789012ull
#define R0 1764671234000000000ull
static int64_t realtime_jump; /* set by hand, in ns */
static uint64_t tsc_at(double t) { return T0 + (uint64_t)(t * TICKS_PER_NS); }
/* CLOCK_REALTIME: the integral of 1 + drift, plus the jumps. */
static uint64_t realtime_at(double t) {
  double rt = t < 5e9 ? t * (1 + 30e-6) : 5e9 * (1 + 30e-6) + (t - 5e9) * (1 - 20e-6);
  return R0 + (uint64_t)rt + (uint64_t)realtime_jump;
}
static unsigned rng = 12345;
static int64_t noise(void) {
  rng = rng * 1103515245u + 12345u;
  return (int64_t)((rng >> 16) % 51) - 25;
}

static int64_t error_at(const npkit_tsc_model *m, double t) {
  return (int64_t)(npkit_tsc_segment_ns(&m->seg, tsc_at(t)) - realtime_at(t));
}

static void test_tracking(void) {
  npkit_tsc_model m;
  CHECKF(npkit_tsc_model_init(&m, tsc_at(0), realtime_at(0) + noise(), tsc_at(1e6),
                             realtime_at(1e6) + noise()) == 0, "init");
  /* The writer's schedule: 10, 40, 160 ms, then every 200 ms. */
  double t = 1e6, worst_early = 0, worst_late = 0, worst_transition = 0;
  uint64_t prev_map = npkit_tsc_segment_ns(&m.seg, tsc_at(t));
  int jumps_done = 0;
  for (int pass = 0; t < 20e9; pass++) {
    double period = pass < 3 ? 10e6 * (1 << (2 * pass)) : 200e6;
    /* Samples inside the segment: error against the truth, and monotonic. */
    for (int i = 1; i <= 20; i++) {
      double ts = t + period * i / 20.0;
      int64_t e = error_at(&m, ts);
      double ae = (double)llabs(e);
      if (ts < 1e9) {
        if (ae > worst_early) worst_early = ae;
      } else if (ts > 5e9 && ts < 10e9) {
        if (ae > worst_transition) worst_transition = ae; /* the rate has changed by 50 ppm */
      } else if (!(ts > 12e9 && ts < 12.5e9) && !(ts > 15e9 && ts < 15.5e9)) {
        if (ae > worst_late) worst_late = ae; /* not the periods in which the clock was set */
      }
      uint64_t v = npkit_tsc_segment_ns(&m.seg, tsc_at(ts));
      CHECKF(v > prev_map, "map not increasing at t=%.0f", ts);
      prev_map = v;
    }
    t += period;
    if (t > 12e9 && jumps_done == 0) {
      realtime_jump = 5000000000ll; /* someone set the clock 5 s ahead */
      jumps_done = 1;
    } else if (t > 15e9 && jumps_done == 1) {
      realtime_jump = 5000000000ll - 3000000000ll; /* ... then 3 s back */
      jumps_done = 2;
    }
    uint64_t before = npkit_tsc_segment_ns(&m.seg, tsc_at(t));
    uint32_t steps = m.steps;
    /* The writer says when its next comparison comes: the next period. */
    double next = pass + 1 < 3 ? 10e6 * (1 << (2 * (pass + 1))) : 200e6;
    int64_t err = npkit_tsc_model_update(&m, tsc_at(t), realtime_at(t) + noise(), (uint64_t)next);
    uint64_t after = npkit_tsc_segment_ns(&m.seg, tsc_at(t));
    if (m.steps == steps) {
      /* Continuous: the new segment starts where the old one ended. */
      CHECKF(after == before, "segment switch jumped by %" PRId64 " ns at t=%.0f", (int64_t)(after - before), t);
    } else {
      CHECKF(llabs(err) > 1000000000ll, "a jump of %" PRId64 " ns was taken for a clock step", err);
      prev_map = after;
    }
  }
  printf("tracking: worst error %.0f ns in the first second, %.0f ns while the rate changed, %.0f ns "
         "otherwise; %u checks, %u jumps, reported max %" PRIu64 " ns\n",
         worst_early, worst_transition, worst_late, m.checks, m.steps, m.max_error_ns);
  /* First second: the frequency was measured over 1 ms with +-25 ns readings (up to 50 ppm). */
  CHECKF(worst_early < 2000, "error %.0f ns in the first second", worst_early);
  /* A sudden 50 ppm change of CLOCK_REALTIME's rate (far more than NTP does at once) costs 10 us
   * in the period it happens, then the history learns the new rate within 16 comparisons. */
  CHECKF(worst_transition < 15000, "error %.0f ns while the rate changed", worst_transition);
  CHECKF(worst_late < 500, "error %.0f ns in steady state", worst_late);
  CHECKF(m.steps == 2, "%u jumps, expected 2 (forward and back)", m.steps);
  CHECKF(m.checks > 90 && m.checks < 110, "%u checks", m.checks);
  /* The reported worst error is what the comparisons found: bounded by the true worst plus noise,
   * and not zero (the initial frequency is never exact). */
  CHECKF(m.max_error_ns > 5000 && (double)m.max_error_ns <= worst_transition + 60,
        "reported max error %" PRIu64, m.max_error_ns);
}

static void test_slew_limit(void) {
  /* The map is 900 us ahead (under the jump threshold) of a clock whose rate it knows: the
   * correction is capped at 500 ppm, so one 200 ms period removes 100 us of it. */
  npkit_tsc_model m;
  CHECKF(npkit_tsc_model_init(&m, 1000, 1000000, 1000 + 2900000, 2000000) == 0, "init");
  m.seg.ns += 900000;
  uint64_t tsc = 1000 + 2900000ull * 1000; /* 1 s after the start */
  uint64_t truth = 1000000 + 1000000000ull;
  int64_t err = npkit_tsc_model_update(&m, tsc, truth, 200000000);
  CHECKF(llabs(err + 900000) <= 1, "err %" PRId64, err);
  CHECKF(m.steps == 0, "a 900 us error was slewed, not jumped");
  uint64_t later = tsc + 2900000ull * 200; /* 200 ms on */
  int64_t left = (int64_t)(npkit_tsc_segment_ns(&m.seg, later) - (truth + 200000000));
  CHECKF(left > 799000 && left < 801000, "after one period %" PRId64 " ns left, expected 800000", left);
  CHECKF(m.max_error_ns >= 899999 && m.max_error_ns <= 900001, "max error %" PRIu64, m.max_error_ns);
  /* The next comparison is 2 s late (writer stalled): the correction stopped at the end of its
   * period instead of running on, so 800 us are still left, not overshot to -3.1 ms. */
  uint64_t late = tsc + 2900000ull * 2200;
  left = (int64_t)(npkit_tsc_segment_ns(&m.seg, late) - (truth + 2200000000ull));
  CHECKF(left > 799000 && left < 801000, "2 s late %" PRId64 " ns left, expected 800000", left);
}

static void test_bad_readings(void) {
  npkit_tsc_model m;
  CHECKF(npkit_tsc_model_init(&m, 5000, 100, 5000, 200) == -1, "counter that did not move");
  CHECKF(npkit_tsc_model_init(&m, 5000, 200, 9000, 100) == -1, "realtime that went back");
  CHECKF(npkit_tsc_model_init(&m, 5000, 0, 5001, 1000000000) == -1, "a 1 Hz counter");
  CHECKF(npkit_tsc_model_init(&m, 0, 0, 1000000000000ull, 1) == -1, "a 10^12 GHz counter");
  /* Ticks before the segment's start (read just before a new segment was published). */
  CHECKF(npkit_tsc_model_init(&m, 0, 1000000, 2900000, 2000000) == 0, "init");
  uint64_t at = npkit_tsc_segment_ns(&m.seg, 2900000 - 29);
  CHECKF(at == 1999990 || at == 1999989, "10 ns before the start maps to %" PRIu64, at);
}

static void test_restart_and_jump(void) {
  npkit_tsc_model m;
  CHECKF(npkit_tsc_model_init(&m, 0, 1000000000, 2900000, 1001000000) == 0, "init");
  uint64_t tsc = 2900000ull * 1000;
  npkit_tsc_model_update(&m, tsc, 1000000000 + 1000000000ull + 50000, 200000000); /* 50 us behind */
  npkit_tsc_segment prev = {0, 1000000000, m.seg.mult, 0, 0};
  npkit_tsc_segment made = m.seg;
  /* Published 3 ms after the comparison: the segment starts where `prev` is then, and its
   * correction still ends where it would have. */
  uint64_t now = tsc + 2900000ull * 3;
  npkit_tsc_model_restart_at(&m, &prev, now);
  CHECKF(m.seg.tsc == now, "restarted at %" PRIu64, m.seg.tsc);
  CHECKF(npkit_tsc_segment_ns(&m.seg, now) == npkit_tsc_segment_ns(&prev, now), "continuous with prev");
  CHECKF(m.seg.tsc + m.seg.span == made.tsc + made.span, "correction ends where it did");
  CHECKF(m.seg.corr == made.corr && made.corr > 0, "correction kept (%" PRId64 ")", made.corr);
  npkit_tsc_model_restart_at(&m, &prev, now - 10); /* not later: nothing moves */
  CHECKF(m.seg.tsc == now, "not moved back");
  /* A jump: follows the reading at once, with the measured rate and no correction. */
  uint64_t t2 = now + 2900000ull * 200;
  uint64_t jumped = npkit_tsc_segment_ns(&m.seg, t2) + 7000000000ull;
  npkit_tsc_model_update(&m, t2, jumped, 200000000);
  CHECKF(m.steps == 1 && m.seg.ns == jumped && m.seg.corr == 0, "jump followed without correction");
  CHECKF(m.seg.mult == made.mult, "the jump keeps the measured rate");
}

int main(void) {
  test_tracking();
  test_slew_limit();
  test_bad_readings();
  test_restart_and_jump();
  return check_exit_code("test_tsc_model");
}
