/* The map from another CUPTI clock onto CLOCK_REALTIME (src/runtime/cupti_clock_map.c), driven by
 * simulated clocks whose truth is known: a 2.9 GHz time-stamp counter (what PyTorch's profiler
 * makes CUPTI stamp with) against a CLOCK_REALTIME that runs 30 ppm fast, then 20 ppm slow, read
 * every 200 ms with +-25 ns of noise.  Checks the error of mapped stamps between readings, before
 * the first and after the last, that readings themselves map exactly, monotonicity, the ring of
 * readings overflowing, and a restart when a clock goes backwards. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "cupti_clock_map.h"


/* The simulated world: true time t in ns since the start. */
#define TICKS_PER_NS 2.9
#define T0 987654321098ull
#define R0 1764671234000000000ull
/* through int64_t: times before the start are negative, and a negative double converted to an
 * unsigned integer is undefined */
static uint64_t tsc_at(double t) { return T0 + (uint64_t)(int64_t)(t * TICKS_PER_NS); }
static double realtime_exact(double t) {
  return t < 5e9 ? t * (1 + 30e-6) : 5e9 * (1 + 30e-6) + (t - 5e9) * (1 - 20e-6);
}
static uint64_t realtime_at(double t) { return R0 + (uint64_t)(int64_t)realtime_exact(t); }
static unsigned rng = 4242;
static int64_t noise(void) {
  rng = rng * 1103515245u + 12345u;
  return (int64_t)((rng >> 16) % 51) - 25;
}
static double uniform(void) {
  rng = rng * 1103515245u + 12345u;
  return (double)(rng >> 8) / (double)(1u << 24);
}

static int64_t error_at(const npkit_cclock *m, double t) {
  uint64_t ns = 0;
  if (!npkit_cclock_map(m, tsc_at(t), &ns)) return INT64_MAX;
  return (int64_t)(ns - realtime_at(t));
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

static void test_too_few_readings(void) {
  npkit_cclock m;
  npkit_cclock_init(&m);
  uint64_t ns = 7;
  CHECKF(!npkit_cclock_map(&m, 5, &ns) && ns == 7, "mapped without readings");
  npkit_cclock_add(&m, tsc_at(0), realtime_at(0));
  CHECKF(!npkit_cclock_map(&m, tsc_at(0), &ns), "mapped with one reading");
}

static void test_between_and_beyond(void) {
  npkit_cclock m;
  npkit_cclock_init(&m);
  const double period = 200e6;
  uint64_t read_c[64], read_r[64];
  for (int i = 0; i < 50; i++) { /* 10 s: the drift changes at 5 s */
    double t = i * period;
    read_c[i] = tsc_at(t);
    read_r[i] = (uint64_t)((int64_t)realtime_at(t) + noise());
    npkit_cclock_add(&m, read_c[i], read_r[i]);
  }
  CHECKF(m.n == 50 && m.restarts == 0, "n %u restarts %u", m.n, m.restarts);
  /* a reading maps onto itself */
  for (int i = 0; i < 50; i++) {
    uint64_t ns;
    CHECKF(npkit_cclock_map(&m, read_c[i], &ns) && ns == read_r[i], "reading %d: %" PRIu64 " for %" PRIu64,
          i, ns, read_r[i]);
  }
  /* between readings: within the noise of the two around it (and a tick of rounding) */
  int64_t worst = 0;
  for (int k = 0; k < 20000; k++) {
    double t = uniform() * 49 * period;
    int64_t e = abs64(error_at(&m, t));
    if (e > worst) worst = e;
  }
  CHECKF(worst <= 26, "error between readings up to %" PRId64 " ns", worst);
  /* before the first and after the last (200 ms out): the rate over all readings, whose drift
   * changed at 5 s, so the error grows with the distance: 25 ppm average off the last drift */
  int64_t before = error_at(&m, -period), after = error_at(&m, 49 * period + period);
  CHECKF(abs64(before) < 12000, "200 ms before the first reading: %" PRId64 " ns off", before);
  CHECKF(abs64(after) < 12000, "200 ms after the last reading: %" PRId64 " ns off", after);
  /* monotonic */
  uint64_t prev = 0;
  for (double t = -period; t < 50 * period; t += 997e3) {
    uint64_t ns;
    npkit_cclock_map(&m, tsc_at(t), &ns);
    CHECKF(ns >= prev, "not monotonic at %.0f", t);
    prev = ns;
  }
}

static void test_ring_overflow(void) {
  npkit_cclock m;
  npkit_cclock_init(&m);
  const double period = 10e6;
  int total = NPKIT_CCLOCK_READINGS + 100;
  for (int i = 0; i < total; i++) npkit_cclock_add(&m, tsc_at(i * period), realtime_at(i * period));
  CHECKF(m.n == NPKIT_CCLOCK_READINGS, "n %u", m.n);
  /* the kept readings are the newest: stamps among them map exactly (no noise here) */
  for (int i = 100; i < total - 1; i += 7) {
    int64_t e = error_at(&m, i * period + period / 3);
    CHECKF(abs64(e) <= 2, "reading %d: %" PRId64 " ns off", i, e);
  }
  /* older ones are extrapolated: still close, the drift being steady before 5 s */
  int64_t e = error_at(&m, 10 * period);
  CHECKF(abs64(e) <= 2, "before the kept readings: %" PRId64 " ns off", e);
}

static void test_restart(void) {
  npkit_cclock m;
  npkit_cclock_init(&m);
  npkit_cclock_add(&m, tsc_at(0), realtime_at(0));
  npkit_cclock_add(&m, tsc_at(1e9), realtime_at(1e9));
  /* another counter, starting low: a new callback replaced the clock */
  npkit_cclock_add(&m, 1000, realtime_at(2e9));
  CHECKF(m.restarts == 1 && m.n == 1, "restarts %u n %u", m.restarts, m.n);
  uint64_t ns;
  CHECKF(!npkit_cclock_map(&m, 1500, &ns), "mapped with one reading after the restart");
  npkit_cclock_add(&m, 1000 + 3000000000ull, realtime_at(3e9));
  CHECKF(npkit_cclock_map(&m, 1000 + 1500000000ull, &ns), "no map after the restart");
  int64_t e = (int64_t)(ns - (realtime_at(2e9) + (realtime_at(3e9) - realtime_at(2e9)) / 2));
  CHECKF(abs64(e) <= 1, "halfway after the restart: %" PRId64 " ns off", e);
  /* CLOCK_REALTIME set back restarts too */
  npkit_cclock_add(&m, 1000 + 4000000000ull, realtime_at(1e9));
  CHECKF(m.restarts == 2 && m.n == 1, "restarts %u n %u", m.restarts, m.n);
}

int main(void) {
  test_too_few_readings();
  test_between_and_beyond();
  test_ring_overflow();
  test_restart();
  return check_exit_code("test_cupti_clock_map");
}
