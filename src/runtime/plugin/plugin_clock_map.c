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

/* The tightest bounds on the offset at gref: the open window's and those of the closed windows
 * within the horizon, moved to gref with the slope and loosened by the drift that may be left. */
typedef struct bounds {
  int64_t lo, hi;
  int has_lo, has_hi;
} bounds;

/* How far the offset may have moved over GPU time dg beyond what the slope predicts. */
static int64_t drift_allowance(const npkit_plugin_clock_map *m, int64_t dg) {
  double ppb = m->fitted ? NPKIT_PLUGIN_CLOCK_SLOPE_PPB : NPKIT_PLUGIN_CLOCK_DRIFT_PPB;
  return (int64_t)(ppb * 1e-9 * (double)dg) + 1;
}

/* The closed windows' part of the envelope, kept in the map while the window stays open. */
static void history_bounds(npkit_plugin_clock_map *m) {
  bounds b = {0, 0, 0, 0};
  for (uint32_t i = 0; i < m->nhist; i++) {
    const npkit_plugin_clock_point *p = &m->hist[(m->hhead + NPKIT_PLUGIN_CLOCK_HISTORY - 1 - i) % NPKIT_PLUGIN_CLOCK_HISTORY];
    int64_t dg = diff(m->gref, p->gpu), adg = dg < 0 ? -dg : dg;
    if (adg > NPKIT_PLUGIN_CLOCK_HORIZON_NS) continue;
    int64_t shift = (int64_t)(m->slope * (double)dg), slack = drift_allowance(m, adg);
    if (p->has_lo && (!b.has_lo || p->lo + shift - slack > b.lo)) {
      b.lo = p->lo + shift - slack;
      b.has_lo = 1;
    }
    if (p->has_hi && (!b.has_hi || p->hi + shift + slack < b.hi)) {
      b.hi = p->hi + shift + slack;
      b.has_hi = 1;
    }
  }
  m->h_lo = b.lo;
  m->h_hi = b.hi;
  m->h_has_lo = b.has_lo;
  m->h_has_hi = b.has_hi;
}

static void forget_history(npkit_plugin_clock_map *m) {
  m->nhist = 0;
  m->h_has_lo = m->h_has_hi = 0;
}

static bounds envelope(const npkit_plugin_clock_map *m) {
  bounds b = {m->lo, m->hi, m->has_lo, m->has_hi};
  if (m->h_has_lo && (!b.has_lo || m->h_lo > b.lo)) {
    b.lo = m->h_lo;
    b.has_lo = 1;
  }
  if (m->h_has_hi && (!b.has_hi || m->h_hi < b.hi)) {
    b.hi = m->h_hi;
    b.has_hi = 1;
  }
  return b;
}

/* The offset at gref and its error (-1: one-sided) from the envelope. */
static int64_t estimate(const npkit_plugin_clock_map *m, int64_t *err) {
  bounds b = envelope(m);
  int64_t pred;
  if (b.has_lo && b.has_hi) {
    int64_t w = b.hi - b.lo, below = w / 2 < NPKIT_PLUGIN_CLOCK_REPORT_NS ? w / 2 : NPKIT_PLUGIN_CLOCK_REPORT_NS;
    *err = w - below;
    return b.hi - below;
  }
  *err = -1;
  if (b.has_hi) return predict(m, &pred) && pred < b.hi ? pred : b.hi;
  if (b.has_lo) return predict(m, &pred) && pred > b.lo ? pred : b.lo;
  return predict(m, &pred) ? pred : 0;
}

/* 1 when the history's bounds and the open window's leave no offset between them. */
static int history_contradicts(const npkit_plugin_clock_map *m) {
  bounds b = envelope(m);
  return b.has_lo && b.has_hi && b.lo > b.hi;
}

static void open_window(npkit_plugin_clock_map *m, uint64_t host, uint64_t gref) {
  m->open = 1;
  m->w_host0 = host;
  m->gref = gref;
  m->has_lo = m->has_hi = 0;
  history_bounds(m);
}

/* Weighted least squares over the window estimates, once they span 50 ms of GPU time.  A window's
 * half width is taken as its standard error (an overestimate: the truth is anywhere inside), so
 * the slope's uncertainty is sqrt(S / (S Sxx - Sx^2)) with S, Sx, Sxx the weighted sums. */
static void fit(npkit_plugin_clock_map *m) {
  const npkit_plugin_clock_point *first = NULL;
  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  uint64_t g_last = 0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < m->nhist; i++) {
    const npkit_plugin_clock_point *p = &m->hist[(m->hhead + NPKIT_PLUGIN_CLOCK_HISTORY - m->nhist + i) % NPKIT_PLUGIN_CLOCK_HISTORY];
    /* only windows bounded on both sides by their own events, each by the middle of its bounds:
     * the envelope's estimates lean on older windows and would fit the history to itself */
    if (!p->has_lo || !p->has_hi) continue;
    if (first == NULL) first = p;
    n++;
    double x = (double)diff(p->gpu, first->gpu);
    double y = (double)(p->lo + (p->hi - p->lo) / 2) - (double)(first->lo + (first->hi - first->lo) / 2);
    double half = (double)(p->hi - p->lo) / 2;
    double e = half > 100 ? half : 100.0; /* the host clock's own resolution */
    double w = 1.0 / (e * e);
    s += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    g_last = p->gpu;
  }
  double den = s * sxx - sx * sx;
  if (n < 3 || diff(g_last, first->gpu) < 50000000 || den <= 0) return;
  double slope = (s * sxy - sx * sy) / den, var = s / den;
  if (var > (NPKIT_PLUGIN_CLOCK_SLOPE_PPB * 1e-9) * (NPKIT_PLUGIN_CLOCK_SLOPE_PPB * 1e-9)) return;
  if (slope > -1e-3 && slope < 1e-3) { /* beyond 1000 ppm is not a clock */
    m->slope = slope;
    m->fitted = 1;
  }
}

static void close_window(npkit_plugin_clock_map *m) {
  int64_t err;
  int64_t off = estimate(m, &err);
  if (m->has_lo || m->has_hi) {
    m->hist[m->hhead] = (npkit_plugin_clock_point){m->gref, m->lo, m->hi, off, err, (uint8_t)m->has_lo,
                                                   (uint8_t)m->has_hi};
    m->hhead = (m->hhead + 1) % NPKIT_PLUGIN_CLOCK_HISTORY;
    if (m->nhist < NPKIT_PLUGIN_CLOCK_HISTORY) m->nhist++;
    if (m->has_lo && m->has_hi) fit(m);
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
    forget_history(m);
    open_window(m, host, g0);
    add_bounds(m, g0, g1, h0, h1, lb);
    if (m->has_lo && m->has_hi && m->lo > m->hi) {
      open_window(m, host, g0);
      add_bounds(m, g0, g1, h0, h1, 0);
    }
  } else if (history_contradicts(m)) {
    /* The window agrees with itself but not with what came before: the clock moved. */
    m->inconsistent++;
    forget_history(m);
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
  /* and the drift the slope may have missed between the estimate's reference and the stamps */
  int64_t far = diff(g0, mine.gref), far1 = diff(g1, mine.gref);
  if (far < 0) far = -far;
  if (far1 < 0) far1 = -far1;
  if (far1 > far) far = far1;
  *error_ns = mine.error < 0 ? -1 : mine.error + drift_allowance(m, far);
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
