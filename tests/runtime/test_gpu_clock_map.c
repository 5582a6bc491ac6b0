/* The map from a GPU's %globaltimer onto the host clock (src/runtime/gpu_clock_map.c), driven by
 * simulated kernels whose true times are known.  The GPU clock is host time + an offset + a drift
 * (+7 ms and +50 ppm, -3 ms and -50 ppm); each kernel is launched at a known host time (the lower
 * bound), starts 2-20 us later and runs 5-500 us; NCCL reports its start and stop stamps 0.5-30 us
 * after they were written (the upper bounds).  Checks, for every event: the mapped times against
 * the truth, within the error the map reports; the mapped duration against the true one within
 * 1 us; the event's own bounds respected.  Also a step of the GPU clock (counted, recovered from),
 * events without a lower bound (one-sided, still never after their report) and the fitted drift. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "plugin_clock_map.h"


#define H0 1764671234000000000ull
static unsigned rng = 4242;
static uint64_t uniform(uint64_t lo, uint64_t hi) {
  rng = rng * 1103515245u + 12345u;
  uint64_t r = ((uint64_t)(rng >> 8) << 24) ^ (rng * 2654435761u);
  return lo + r % (hi - lo + 1);
}

typedef struct world {
  int64_t offset_ns;   /* GPU - host at H0 */
  double drift;        /* GPU clock rate - 1 */
  int64_t step_at_ns;  /* host time since H0 when the GPU clock steps, 0: never */
  int64_t step_ns;
} world;

static uint64_t gpu_at(const world *w, uint64_t host) {
  int64_t t = (int64_t)(host - H0);
  int64_t g = t + w->offset_ns + (int64_t)((double)t * w->drift);
  if (w->step_at_ns != 0 && t >= w->step_at_ns) g += w->step_ns;
  return H0 + (uint64_t)g;
}

typedef struct result {
  int64_t worst_error;      /* |mapped - true|, two-sided estimates, after the first 20 ms */
  int64_t worst_excess;     /* how far beyond its own reported error an estimate was */
  int64_t worst_duration;   /* |mapped duration - true duration| */
  int64_t worst_bound;      /* how far a mapped time fell outside the event's own bounds */
  uint64_t events, two_sided;
  npkit_ev_plugin_clock stats;
} result;

static int64_t labs64(int64_t v) { return v < 0 ? -v : v; }

static void run_k(const world *w, double seconds, int with_lower, uint64_t obs_max, uint64_t kmax,
                  result *r) {
  npkit_plugin_clock_map m;
  npkit_plugin_clock_map_init(&m);
  *r = (result){0};
  uint64_t t = H0;
  uint64_t end = H0 + (uint64_t)(seconds * 1e9);
  while (t < end) {
    uint64_t launch = t;
    uint64_t ts = launch + uniform(2000, 20000);
    uint64_t te = ts + uniform(5000, kmax);
    uint64_t h0 = ts + uniform(500, obs_max), h1 = te + uniform(500, obs_max);
    uint64_t g0 = gpu_at(w, ts), g1 = gpu_at(w, te);
    uint64_t m0, m1;
    int64_t err;
    npkit_plugin_clock_map_add(&m, g0, g1, h0, h1, with_lower ? launch : 0, NULL, &m0, &m1, &err);
    r->events++;
    int64_t e0 = (int64_t)(m0 - ts), e1 = (int64_t)(m1 - te);
    int64_t dur = (int64_t)(m1 - m0) - (int64_t)(te - ts);
    if (labs64(dur) > r->worst_duration) r->worst_duration = labs64(dur);
    int64_t out = 0;
    if (m0 > h0) out = (int64_t)(m0 - h0);
    if (m1 > h1 && (int64_t)(m1 - h1) > out) out = (int64_t)(m1 - h1);
    if (with_lower && m0 < launch && (int64_t)(launch - m0) > out) out = (int64_t)(launch - m0);
    if (out > r->worst_bound) r->worst_bound = out;
    int settled = t - H0 > 20000000 && (w->step_at_ns == 0 || (int64_t)(t - H0) < w->step_at_ns ||
                                        (int64_t)(t - H0) > w->step_at_ns + 20000000);
    if (err >= 0) {
      r->two_sided++;
      int64_t e = labs64(e0) > labs64(e1) ? labs64(e0) : labs64(e1);
      if (settled && e > r->worst_error) r->worst_error = e;
      if (settled && e - err > r->worst_excess) r->worst_excess = e - err;
    }
    t = te + uniform(50000, 1000000);
  }
  npkit_plugin_clock_map_stats(&m, &r->stats);
}

static void run(const world *w, double seconds, int with_lower, uint64_t obs_max, result *r) {
  run_k(w, seconds, with_lower, obs_max, 500000, r);
}

static void test_offset_and_drift(int64_t offset, double drift) {
  world w = {offset, drift, 0, 0};
  result r;
  run(&w, 3.0, 1, 30000, &r);
  /* the truth lies within the reported error, up to the drift inside a window (50 ppm x 10 ms) */
  CHECKF(r.worst_excess <= 600, "offset %" PRId64 ": an estimate was %" PRId64 " ns beyond its error",
        offset, r.worst_excess);
  CHECKF(r.worst_error <= 20000, "offset %" PRId64 ": worst error %" PRId64 " ns", offset, r.worst_error);
  CHECKF(r.worst_duration <= 1000, "offset %" PRId64 ": duration off by %" PRId64 " ns", offset,
        r.worst_duration);
  CHECKF(r.worst_bound <= 100, "offset %" PRId64 ": a mapped time %" PRId64 " ns outside its bounds",
        offset, r.worst_bound);
  CHECKF(r.two_sided == r.events, "%" PRIu64 " of %" PRIu64 " two-sided", r.two_sided, r.events);
  CHECKF(r.stats.inconsistent == 0, "%u inconsistent", r.stats.inconsistent);
  CHECKF(r.stats.samples == r.events, "samples %" PRIu64, r.stats.samples);
  CHECKF(r.stats.windows >= 250, "%u windows", r.stats.windows);
  /* offset = host - GPU: the negated offset, less the drift accumulated by gpu_ref */
  double want_ppb = -drift / (1 + drift) * 1e9;
  CHECKF(llabs(r.stats.drift_ppb - (int64_t)want_ppb) <= 5000, "drift %" PRId64 " ppb, want %.0f",
        r.stats.drift_ppb, want_ppb);
  CHECKF(r.stats.max_error_ns > 0 && r.stats.median_error_ns > 0 &&
            r.stats.median_error_ns <= r.stats.max_error_ns,
        "errors: max %" PRId64 " median %" PRId64, r.stats.max_error_ns, r.stats.median_error_ns);
  printf("offset %+.1f ms drift %+.0f ppm: %" PRIu64 " events, worst error %.2f us, median bound "
         "%.2f us, duration within %" PRId64 " ns, drift fitted %.2f ppm\n",
         (double)offset / 1e6, drift * 1e6, r.events, (double)r.worst_error / 1e3,
         (double)r.stats.median_error_ns / 1e3, r.worst_duration, (double)r.stats.drift_ppb / 1e3);
}

static void test_step(void) {
  world w = {7000000, 20e-6, 1500000000, 2000000};
  result r;
  run(&w, 3.0, 1, 30000, &r);
  CHECKF(r.stats.inconsistent >= 1, "the step was not noticed");
  CHECKF(r.worst_excess <= 600, "after the step, an estimate was %" PRId64 " ns beyond its error",
        r.worst_excess);
  CHECKF(r.worst_duration <= 1000, "duration off by %" PRId64 " ns", r.worst_duration);
}

static void test_one_sided(void) {
  world w = {-3000000, -50e-6, 0, 0};
  result r;
  run(&w, 1.0, 0, 5000, &r);
  CHECKF(r.two_sided == 0 && r.stats.one_sided == r.events, "%" PRIu64 " two-sided", r.two_sided);
  CHECKF(r.worst_bound <= 100, "a mapped time %" PRId64 " ns after its report", r.worst_bound);
  CHECKF(r.worst_duration <= 1000, "duration off by %" PRId64 " ns", r.worst_duration);
  CHECKF(r.stats.max_error_ns == -1 && r.stats.median_error_ns == -1, "errors reported");
}

/* A loaded host: NCCL's proxy thread reports stamps up to 3 ms late, so every window's bounds are
 * milliseconds wide and a slope fitted to them is noise of hundreds of ppm.  Applied, it would
 * stretch a 20 ms kernel by microseconds; unapplied, the duration is off by the true drift only. */
static void test_loaded_host(void) {
  world w = {-3000000, -50e-6, 0, 0};
  result r;
  run_k(&w, 1.0, 1, 3000000, 20000000, &r);
  CHECKF(r.stats.drift_ppb == 0, "a drift of %" PRId64 " ppb fitted to loose bounds", r.stats.drift_ppb);
  CHECKF(r.worst_duration <= 1100, "duration off by %" PRId64 " ns (50 ppm of 20 ms is 1000)",
        r.worst_duration);
  CHECKF(r.worst_excess <= 1100, "an estimate was %" PRId64 " ns beyond its error", r.worst_excess);
}

/* Kernels queued on their stream, as on a real GPU where NCCL's calls return at once: bursts of 24
 * launches 10 us apart, each kernel starting when the one before it ends (1-20 ms each), so the
 * launch bounds the offset from below by up to hundreds of milliseconds, while the proxy reports
 * every stamp 15-30 us after the GPU wrote it (an H200 with NCCL 2.28.9: launches 2-44 ms before
 * their kernels, stamps reported 18 us late, device check of 2026-12-04).  The middle of the
 * bounds would put every kernel milliseconds early; the map must stay within tens of microseconds. */
static void test_queued(void) {
  world w = {-65000, 2e-6, 0, 0};
  npkit_plugin_clock_map m;
  npkit_plugin_clock_map_init(&m);
  int64_t worst = 0, excess = 0;
  uint64_t t = H0, events = 0;
  for (int burst = 0; burst < 10; burst++) {
    uint64_t gpu_free = t;
    for (int k = 0; k < 24; k++) {
      uint64_t launch = t + (uint64_t)k * 10000;
      uint64_t ts = launch + 5000 > gpu_free ? launch + 5000 : gpu_free;
      uint64_t te = ts + uniform(1000000, 20000000);
      gpu_free = te;
      uint64_t h0 = ts + uniform(15000, 30000), h1 = te + uniform(15000, 30000);
      uint64_t m0, m1;
      int64_t err;
      npkit_plugin_clock_map_add(&m, gpu_at(&w, ts), gpu_at(&w, te), h0, h1, launch, NULL, &m0, &m1, &err);
      events++;
      int64_t e = labs64((int64_t)(m0 - ts)) > labs64((int64_t)(m1 - te)) ? labs64((int64_t)(m0 - ts))
                                                                        : labs64((int64_t)(m1 - te));
      if (e > worst) worst = e;
      if (err >= 0 && e - err > excess) excess = e - err;
      CHECKF(err >= 0, "event %" PRIu64 ": one-sided", events);
    }
    t = gpu_free + 300000000ull;
  }
  CHECKF(worst <= 40000, "queued kernels: worst error %" PRId64 " ns (want <= 40 us)", worst);
  CHECKF(excess <= 600, "queued kernels: an estimate was %" PRId64 " ns beyond its error", excess);
  printf("queued kernels: %" PRIu64 " events, worst error %.2f us\n", events, (double)worst / 1e3);
}

int main(void) {
  test_offset_and_drift(7000000, 50e-6);
  test_offset_and_drift(-3000000, -50e-6);
  test_offset_and_drift(7000000, -20e-6);
  test_step();
  test_one_sided();
  test_loaded_host();
  test_queued();
  return check_exit_code("test_gpu_clock_map");
}
