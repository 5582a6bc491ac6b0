/*
 * Quantiles of a stream of non-negative integers (durations in ns, spreads in ns) in bounded
 * memory.
 *
 * The first NPKIT_QUANT_EXACT_MAX values are kept as they are, so small sets (most table rows)
 * get exact quantiles.  Beyond that the values move into a log-linear histogram: values below 64
 * have a bucket each, larger ones 64 buckets per power of two.  A quantile read from the histogram
 * is the middle of its bucket, so its relative error is at most 1/128 (0.8 %); the mean, minimum
 * and maximum stay exact.  Memory: at most 32 KiB of values, then a 15 KiB histogram.
 *
 * Quantile definition (exact mode): linear interpolation between the order statistics at
 * rank p × (n − 1), 0-based (what numpy calls 'linear').
 */
#ifndef NPKIT_STATS_QUANTILE_H
#define NPKIT_STATS_QUANTILE_H

#include <stddef.h>
#include <stdint.h>

#define NPKIT_QUANT_EXACT_MAX 4096u
#define NPKIT_QUANT_SUB_BITS 6u
#define NPKIT_QUANT_BUCKETS (64u + (64u - NPKIT_QUANT_SUB_BITS) * 64u)

typedef struct npkit_quantile {
  uint64_t n;
  uint64_t min, max;
  double sum;
  uint64_t *exact;    /* the values while n <= NPKIT_QUANT_EXACT_MAX; NULL afterwards */
  uint32_t n_exact, cap_exact;
  uint32_t *hist;     /* NPKIT_QUANT_BUCKETS counts once the exact set overflowed */
  uint8_t sorted;     /* exact[] is sorted */
} npkit_quantile;

void npkit_quantile_init(npkit_quantile *q);
void npkit_quantile_free(npkit_quantile *q);
/* Returns 0, or -1 when memory is short (the value is then counted in n, sum, min and max only). */
int npkit_quantile_add(npkit_quantile *q, uint64_t v);
/* Adds every value of src to dst.  Returns 0 or -1 (memory). */
int npkit_quantile_merge(npkit_quantile *dst, const npkit_quantile *src);
/* p in [0, 1]; NaN when empty.  Sorts the exact values on first use. */
double npkit_quantile_get(npkit_quantile *q, double p);
double npkit_quantile_mean(const npkit_quantile *q);
/* 1 while quantiles are exact. */
int npkit_quantile_is_exact(const npkit_quantile *q);

/* The histogram bucket of v and the value that stands for a bucket (exposed for tests). */
uint32_t npkit_quantile_bucket(uint64_t v);
double npkit_quantile_bucket_value(uint32_t b);

#endif /* NPKIT_STATS_QUANTILE_H */
