/*
 * Robust location of a sample: median, median absolute deviation, outlier rejection and the
 * standard error of the result.  Used to turn many noisy measurements of one quantity (the offset
 * between two clocks, seen once per collective) into one number with an honest uncertainty.
 */
#ifndef NPKIT_STATS_ROBUST_H
#define NPKIT_STATS_ROBUST_H

#include <stddef.h>
#include <stdint.h>

/* Scale that turns a MAD into a standard deviation for normally distributed noise. */
#define NPKIT_MAD_TO_SIGMA 1.4826
/* Samples further than this many sigmas from the median are rejected as outliers. */
#define NPKIT_ROBUST_REJECT_SIGMAS 5.0

typedef struct npkit_robust {
  double center;     /* median of the samples kept */
  double sigma;      /* 1.4826 × MAD of the samples kept: the noise of one sample */
  double stderr_;    /* standard error of the center: 1.2533 × sigma / sqrt(kept) */
  size_t kept;       /* samples within the rejection bound */
  size_t rejected;   /* outliers */
} npkit_robust;

/* Median of x[0..n) (n > 0); reorders x.  The mean of the two middle values for even n. */
double npkit_median_inplace(double *x, size_t n);

/* Median, then MAD around it, then rejection of samples further than 5 sigmas (but never closer
 * than floor), then median and MAD again of what is left.  Reorders x.  n == 0 gives NaNs. */
void npkit_robust_estimate(double *x, size_t n, double floor, npkit_robust *out);

#endif /* NPKIT_STATS_ROBUST_H */
