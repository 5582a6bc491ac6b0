#include "stats_quantile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* The exact samples grow by doubling from 16 (NPKIT_GROW), which lands on their limit. */
_Static_assert(NPKIT_QUANT_EXACT_MAX % 16 == 0 && ((NPKIT_QUANT_EXACT_MAX / 16) & (NPKIT_QUANT_EXACT_MAX / 16 - 1)) == 0,
               "NPKIT_QUANT_EXACT_MAX: 16 times a power of two");

void npkit_quantile_init(npkit_quantile *q) {
  memset(q, 0, sizeof(*q));
}

void npkit_quantile_free(npkit_quantile *q) {
  free(q->exact);
  free(q->hist);
  npkit_quantile_init(q);
}

uint32_t npkit_quantile_bucket(uint64_t v) {
  if (v < 64) return (uint32_t)v;
  unsigned e = 63u - (unsigned)__builtin_clzll(v);
  unsigned sub = (unsigned)(v >> (e - NPKIT_QUANT_SUB_BITS)) & 63u;
  return 64u + (e - NPKIT_QUANT_SUB_BITS) * 64u + sub;
}

double npkit_quantile_bucket_value(uint32_t b) {
  if (b < 64) return (double)b;
  unsigned e = (b - 64u) / 64u + NPKIT_QUANT_SUB_BITS, sub = (b - 64u) % 64u;
  double width = ldexp(1.0, (int)(e - NPKIT_QUANT_SUB_BITS));
  double lower = (64.0 + sub) * width;
  return lower + (width - 1.0) / 2.0; /* the bucket holds the integers lower .. lower + width - 1 */
}

/* Moves the exact values into a histogram: from now on quantiles are approximate. */
static int to_histogram(npkit_quantile *q) {
  q->hist = calloc(NPKIT_QUANT_BUCKETS, sizeof(*q->hist));
  if (q->hist == NULL) return -1;
  for (uint32_t i = 0; i < q->n_exact; i++) q->hist[npkit_quantile_bucket(q->exact[i])]++;
  free(q->exact);
  q->exact = NULL;
  q->n_exact = q->cap_exact = 0;
  return 0;
}

static void count_only(npkit_quantile *q, uint64_t v) {
  if (q->n == 0 || v < q->min) q->min = v;
  if (q->n == 0 || v > q->max) q->max = v;
  q->n++;
  q->sum += (double)v;
}

int npkit_quantile_add(npkit_quantile *q, uint64_t v) {
  int rc = 0;
  if (q->hist == NULL) {
    size_t cap = q->cap_exact; /* doubles from 16 and so stops at NPKIT_QUANT_EXACT_MAX exactly */
    if (q->n_exact == q->cap_exact && q->n_exact < NPKIT_QUANT_EXACT_MAX && /* no call per sample */
        NPKIT_GROW(q->exact, cap, q->n_exact + 1, 16) == 0)
      q->cap_exact = (uint32_t)cap; /* on failure the sample is only counted (rc -1 below) */
    if (q->n_exact < q->cap_exact) {
      q->exact[q->n_exact++] = v;
      q->sorted = 0;
    } else if (q->cap_exact == NPKIT_QUANT_EXACT_MAX && to_histogram(q) == 0) {
      q->hist[npkit_quantile_bucket(v)]++;
    } else {
      rc = -1;
    }
  } else {
    uint32_t *h = &q->hist[npkit_quantile_bucket(v)];
    if (*h < UINT32_MAX) (*h)++;
  }
  count_only(q, v);
  return rc;
}

int npkit_quantile_merge(npkit_quantile *dst, const npkit_quantile *src) {
  if (src->n == 0) return 0;
  if (src->hist == NULL) {
    int rc = 0;
    for (uint32_t i = 0; i < src->n_exact; i++)
      if (npkit_quantile_add(dst, src->exact[i]) != 0) rc = -1;
    return rc;
  }
  if (dst->hist == NULL && to_histogram(dst) != 0) return -1;
  for (uint32_t b = 0; b < NPKIT_QUANT_BUCKETS; b++) {
    uint64_t s = (uint64_t)dst->hist[b] + src->hist[b];
    dst->hist[b] = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
  }
  if (dst->n == 0 || src->min < dst->min) dst->min = src->min;
  if (dst->n == 0 || src->max > dst->max) dst->max = src->max;
  dst->n += src->n;
  dst->sum += src->sum;
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

double npkit_quantile_get(npkit_quantile *q, double p) {
  if (q->n == 0) return NAN;
  if (p <= 0) return (double)q->min;
  if (p >= 1) return (double)q->max;
  if (q->hist == NULL) {
    if (q->n_exact == 0) return NAN; /* every value was lost to a memory shortage */
    if (!q->sorted) {
      qsort(q->exact, q->n_exact, sizeof(*q->exact), cmp_u64);
      q->sorted = 1;
    }
    double h = p * (double)(q->n_exact - 1);
    size_t lo = (size_t)h;
    if (lo + 1 >= q->n_exact) return (double)q->exact[q->n_exact - 1];
    double f = h - (double)lo;
    return (double)q->exact[lo] + f * ((double)q->exact[lo + 1] - (double)q->exact[lo]);
  }
  uint64_t total = 0;
  for (uint32_t b = 0; b < NPKIT_QUANT_BUCKETS; b++) total += q->hist[b];
  if (total == 0) return NAN;
  /* the bucket holding the order statistic of (0-based) rank round(p × (total − 1)) */
  uint64_t want = (uint64_t)llround(p * (double)(total - 1)), seen = 0;
  for (uint32_t b = 0; b < NPKIT_QUANT_BUCKETS; b++) {
    seen += q->hist[b];
    if (seen > want) {
      double v = npkit_quantile_bucket_value(b);
      if (v < (double)q->min) v = (double)q->min;
      if (v > (double)q->max) v = (double)q->max;
      return v;
    }
  }
  return (double)q->max;
}

double npkit_quantile_mean(const npkit_quantile *q) {
  return q->n ? q->sum / (double)q->n : NAN;
}

int npkit_quantile_is_exact(const npkit_quantile *q) {
  return q->hist == NULL && q->n_exact == q->n;
}
