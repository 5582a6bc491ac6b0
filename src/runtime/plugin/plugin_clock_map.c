#include "plugin_clock_map.h"

#include <stdlib.h>
#include <string.h>

void npkit_plugin_clock_map_init(npkit_plugin_clock_map *m) {
  memset(m, 0, sizeof *m);
  m->max_error = -1;
}

/* Offsets are differences of two epoch-like times: they fit int64 whatever the stamps hold. */
static int64_t diff(uint64_t a, uint64_t b) { return (int64_t)(a - b); }

/* The prediction of the closed windows for GPU time g, in the open window's frame. */
static int predict(const npkit_plugin_clock_map *m, int64_t *out) {
  if (m->nhist == 0) return 0;
  const npkit_plugin_clock_point *p = &m->hist[(m->hhead + NPKIT_PLUGIN_CLOCK_HISTORY - 1) % NPKIT_PLUGIN_CLOCK_HISTORY];
  *out = p->offset + (int64_t)(m->slope * (double)diff(m->gref, p->gpu));
  return 1;
}

/* The offset at gref and its error from the open window's bounds. */
static int64_t estimate(const npkit_plugin_clock_map *m, int64_t *err) {
  int64_t pred;
  if (m->has_lo && m->has_hi) {
    *err = (m->hi - m->lo) / 2;
    return m->lo + (m->hi - m->lo) / 2;
  }
  *err = -1;
  if (m->has_hi) return predict(m, &pred) && pred < m->hi ? pred : m->hi;
  if (m->has_lo) return predict(m, &pred) && pred > m->lo ? pred : m->lo;
  return predict(m, &pred) ? pred : 0;
}

static void open_window(npkit_plugin_clock_map *m, uint64_t host, uint64_t gref) {
  m->open = 1;
  m->w_host0 = host;
  m->gref = gref;
  m->has_lo = m->has_hi = 0;
}

/* Weighted least squares over the window estimates, once they span 50 ms of GPU time.  A window's
 * half width is taken as its standard error (an overestimate: the truth is anywhere inside), so
 * the slope's uncertainty is sqrt(S / (S Sxx - Sx^2)) with S, Sx, Sxx the weighted sums. */
static void fit(npkit_plugin_clock_map *m) {
  if (m->nhist < 3) return;
  const npkit_plugin_clock_point *first = &m->hist[(m->hhead + NPKIT_PLUGIN_CLOCK_HISTORY - m->nhist) % NPKIT_PLUGIN_CLOCK_HISTORY];
  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  uint64_t g_last = 0;
  for (uint32_t i = 0; i < m->nhist; i++) {
    const npkit_plugin_clock_point *p = &m->hist[(m->hhead + NPKIT_PLUGIN_CLOCK_HISTORY - m->nhist + i) % NPKIT_PLUGIN_CLOCK_HISTORY];
    double x = (double)diff(p->gpu, first->gpu), y = (double)(p->offset - first->offset);
    double e = p->error > 100 ? (double)p->error : 100.0; /* the host clock's own resolution */
    double w = 1.0 / (e * e);
    s += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    g_last = p->gpu;
  }
  double den = s * sxx - sx * sx;
  if (diff(g_last, first->gpu) < 50000000 || den <= 0) return;
  double slope = (s * sxy - sx * sy) / den, var = s / den;
  if (var > (NPKIT_PLUGIN_CLOCK_SLOPE_PPB * 1e-9) * (NPKIT_PLUGIN_CLOCK_SLOPE_PPB * 1e-9)) return;
  if (slope > -1e-3 && slope < 1e-3) m->slope = slope; /* beyond 1000 ppm is not a clock */
}

static void close_window(npkit_plugin_clock_map *m) {
  int64_t err;
  int64_t off = estimate(m, &err);
  if (m->has_lo && m->has_hi) { /* only two-sided estimates shape the drift */
    m->hist[m->hhead] = (npkit_plugin_clock_point){m->gref, off, err};
    m->hhead = (m->hhead + 1) % NPKIT_PLUGIN_CLOCK_HISTORY;
    if (m->nhist < NPKIT_PLUGIN_CLOCK_HISTORY) m->nhist++;
    fit(m);
  }
  m->windows++;
  m->open = 0;
}

static void lower(npkit_plugin_clock_map *m, int64_t v) {
  if (!m->has_lo || v > m->lo) m->lo = v;
  m->has_lo = 1;
}

static void upper(npkit_plugin_clock_map *m, int64_t v) {
  if (!m->has_hi || v < m->hi) m->hi = v;
  m->has_hi = 1;
}

/* A bound at GPU time g, moved to the window's frame. */
static int64_t at_ref(const npkit_plugin_clock_map *m, uint64_t host, uint64_t g) {
  return diff(host, g) - (int64_t)(m->slope * (double)diff(g, m->gref));
}

static void add_bounds(npkit_plugin_clock_map *m, uint64_t g0, uint64_t g1, uint64_t h0, uint64_t h1,
                       uint64_t lb) {
  if (h0 != 0) upper(m, at_ref(m, h0, g0));
  if (h1 != 0) upper(m, at_ref(m, h1, g1));
  if (lb != 0) lower(m, at_ref(m, lb, g0));
}

void npkit_plugin_clock_map_add(npkit_plugin_clock_map *m, uint64_t g0, uint64_t g1, uint64_t h0, uint64_t h1,
                   uint64_t lb, npkit_plugin_clock_fix *fix, uint64_t *out0, uint64_t *out1,
                   int64_t *error_ns) {
  uint64_t host = h1 > h0 ? h1 : h0;
  if (m->open && host - m->w_host0 >= NPKIT_PLUGIN_CLOCK_WINDOW_NS) close_window(m);
  if (!m->open) open_window(m, host, g0);
  add_bounds(m, g0, g1, h0, h1, lb);
  if (m->has_lo && m->has_hi && m->lo > m->hi) {
    /* Contradiction: the newest event is believed, with its own lower bound if that agrees.  The
     * old estimates no longer predict this clock (the drift is kept: a jump does not change it). */
    m->inconsistent++;
    m->nhist = 0;
    open_window(m, host, g0);
    add_bounds(m, g0, g1, h0, h1, lb);
    if (m->has_lo && m->has_hi && m->lo > m->hi) {
      open_window(m, host, g0);
      add_bounds(m, g0, g1, h0, h1, 0);
    }
  }
  m->samples++;
  int64_t err;
  int64_t off = estimate(m, &err);
  m->last_offset = off;
  m->last_gpu = m->gref;
  npkit_plugin_clock_fix mine = {1, off, m->gref, m->slope, err};
  if (fix != NULL && fix->valid) mine = *fix;
  else if (fix != NULL) *fix = mine;
  *out0 = g0 + (uint64_t)(mine.offset + (int64_t)(mine.slope * (double)diff(g0, mine.gref)));
  *out1 = g1 + (uint64_t)(mine.offset + (int64_t)(mine.slope * (double)diff(g1, mine.gref)));
  *error_ns = mine.error;
  if (err < 0) {
    m->one_sided++;
  } else {
    if (err > m->max_error) m->max_error = err;
    m->errors[m->ehead] = err;
    m->ehead = (m->ehead + 1) % NPKIT_PLUGIN_CLOCK_ERRORS;
    if (m->nerrors < NPKIT_PLUGIN_CLOCK_ERRORS) m->nerrors++;
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

void npkit_plugin_clock_map_stats(const npkit_plugin_clock_map *m, npkit_ev_plugin_clock *out) {
  memset(out, 0, sizeof *out);
  out->samples = m->samples;
  out->offset_ns = m->last_offset;
  out->gpu_ref_ns = m->last_gpu;
  out->drift_ppb = (int64_t)(m->slope * 1e9);
  out->max_error_ns = m->max_error;
  out->median_error_ns = -1;
  if (m->nerrors > 0) {
    int64_t tmp[NPKIT_PLUGIN_CLOCK_ERRORS];
    memcpy(tmp, m->errors, m->nerrors * sizeof tmp[0]);
    qsort(tmp, m->nerrors, sizeof tmp[0], cmp_i64);
    out->median_error_ns = tmp[m->nerrors / 2];
  }
  out->windows = m->windows;
  out->inconsistent = m->inconsistent;
  out->one_sided = m->one_sided;
}
