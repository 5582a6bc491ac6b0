#include "tsc_model.h"

/* ns per tick, 32.32 fixed point, for a counter between 10 MHz and 100 GHz. */
#define MULT_MIN ((1ull << 32) / 100)
#define MULT_MAX ((1ull << 32) * 100)

static uint64_t rate(uint64_t dtsc, uint64_t dns) {
  return (uint64_t)(((unsigned __int128)dns << 32) / dtsc);
}

static void remember(npkit_tsc_model *m, uint64_t tsc, uint64_t ns) {
  m->hist_tsc[m->hist_next] = tsc;
  m->hist_ns[m->hist_next] = ns;
  m->hist_next = (m->hist_next + 1) % NPKIT_TSC_HISTORY;
  if (m->hist_len < NPKIT_TSC_HISTORY) m->hist_len++;
}

/* Rate from the oldest remembered reading to (tsc, ns); 0 when it makes no sense. */
static uint64_t rate_since_oldest(const npkit_tsc_model *m, uint64_t tsc, uint64_t ns) {
  uint32_t oldest = (m->hist_next + NPKIT_TSC_HISTORY - m->hist_len) % NPKIT_TSC_HISTORY;
  if (m->hist_len == 0 || tsc <= m->hist_tsc[oldest] || ns <= m->hist_ns[oldest]) return 0;
  uint64_t mult = rate(tsc - m->hist_tsc[oldest], ns - m->hist_ns[oldest]);
  return mult < MULT_MIN || mult > MULT_MAX ? 0 : mult;
}

int npkit_tsc_model_init(npkit_tsc_model *m, uint64_t tsc0, uint64_t ns0, uint64_t tsc1, uint64_t ns1) {
  if (tsc1 <= tsc0 || ns1 <= ns0) return -1;
  uint64_t mult = rate(tsc1 - tsc0, ns1 - ns0);
  if (mult < MULT_MIN || mult > MULT_MAX) return -1;
  *m = (npkit_tsc_model){.seg = {tsc1, ns1, mult, 0, 0}};
  remember(m, tsc0, ns0);
  remember(m, tsc1, ns1);
  return 0;
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

int64_t npkit_tsc_model_update(npkit_tsc_model *m, uint64_t tsc, uint64_t ns, uint64_t horizon_ns) {
  uint64_t model_ns = npkit_tsc_segment_ns(&m->seg, tsc);
  int64_t err = (int64_t)(ns - model_ns);
  m->checks++;
  uint64_t mult = rate_since_oldest(m, tsc, ns);
  if (abs64(err) > NPKIT_TSC_STEP_NS || mult == 0) {
    /* CLOCK_REALTIME jumped: follow it, and measure the rate afresh from here (the readings
     * before span the jump).  The rate of the old segment stays until then. */
    m->steps++;
    m->seg = (npkit_tsc_segment){tsc, ns, m->seg.mult, 0, 0};
    m->hist_len = 0;
    remember(m, tsc, ns);
    return err;
  }
  if ((uint64_t)abs64(err) > m->max_error_ns) m->max_error_ns = (uint64_t)abs64(err);
  remember(m, tsc, ns);
  /* Remove the error over the next period: a rate change of err / horizon, at most the slew
   * limit (a larger error takes several periods). */
  if (horizon_ns < 1000000) horizon_ns = 1000000;
  __int128 corr = (__int128)err * ((__int128)1 << 32) / (__int128)horizon_ns; /* ns per ns, 32.32 */
  corr = corr * (__int128)mult >> 32;                             /* ns per tick, 32.32 */
  __int128 limit = (__int128)mult * NPKIT_TSC_MAX_SLEW_PPM / 1000000;
  if (corr > limit) corr = limit;
  if (corr < -limit) corr = -limit;
  uint64_t span = (uint64_t)(((unsigned __int128)horizon_ns << 32) / mult);
  m->seg = (npkit_tsc_segment){tsc, model_ns, mult, (int64_t)corr, span};
  return err;
}

void npkit_tsc_model_restart_at(npkit_tsc_model *m, const npkit_tsc_segment *prev, uint64_t now) {
  npkit_tsc_segment *s = &m->seg;
  if (now <= s->tsc) return;
  uint64_t moved = now - s->tsc;
  s->span = s->span > moved ? s->span - moved : 0;
  s->ns = npkit_tsc_segment_ns(prev, now);
  s->tsc = now;
}
