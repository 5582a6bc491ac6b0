#include "cupti_clock_map.h"

#include <string.h>

void npkit_cclock_init(npkit_cclock *m) { memset(m, 0, sizeof *m); }

static unsigned slot(const npkit_cclock *m, unsigned i) { return (m->head + i) % NPKIT_CCLOCK_READINGS; }

void npkit_cclock_add(npkit_cclock *m, uint64_t c, uint64_t r) {
  if (m->n > 0) {
    unsigned last = slot(m, m->n - 1);
    if (c <= m->c[last] || r <= m->r[last]) {
      m->restarts++;
      m->n = 0;
      m->head = 0;
    }
  }
  if (m->n == NPKIT_CCLOCK_READINGS) { /* forget the oldest */
    m->head = (m->head + 1) % NPKIT_CCLOCK_READINGS;
    m->n--;
  }
  unsigned s = slot(m, m->n);
  m->c[s] = c;
  m->r[s] = r;
  m->n++;
}

/* The value at `stamp` of the line through readings a and b. */
static uint64_t line(const npkit_cclock *m, unsigned a, unsigned b, uint64_t stamp) {
  __int128 dc = (__int128)m->c[b] - (__int128)m->c[a];
  __int128 dr = (__int128)m->r[b] - (__int128)m->r[a];
  __int128 v = (__int128)m->r[a] + ((__int128)stamp - (__int128)m->c[a]) * dr / dc;
  return v < 0 ? 0 : (uint64_t)v;
}

int npkit_cclock_map(const npkit_cclock *m, uint64_t stamp, uint64_t *ns) {
  if (m->n < 2) return 0;
  unsigned first = slot(m, 0), last = slot(m, m->n - 1);
  if (stamp <= m->c[first] || stamp >= m->c[last]) {
    *ns = line(m, first, last, stamp);
    return 1;
  }
  /* The readings increase: the last one at or before the stamp, by bisection. */
  unsigned lo = 0, hi = m->n - 1; /* c[lo] < stamp < c[hi] */
  while (hi - lo > 1) {
    unsigned mid = lo + (hi - lo) / 2;
    if (m->c[slot(m, mid)] <= stamp)
      lo = mid;
    else
      hi = mid;
  }
  *ns = line(m, slot(m, lo), slot(m, hi), stamp);
  return 1;
}
