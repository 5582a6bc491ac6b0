#include "stats_robust.h"

#include <math.h>
#include <stdlib.h>

/* k-th smallest of x[0..n) by quickselect (Hoare partition around the middle element); reorders x. */
static double select_kth(double *x, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    double pivot = x[lo + (hi - lo) / 2];
    size_t i = lo, j = hi;
    while (i <= j) {
      while (x[i] < pivot) i++;
      while (x[j] > pivot) j--;
      if (i <= j) {
        double t = x[i];
        x[i] = x[j];
        x[j] = t;
        i++;
        if (j == 0) break;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return x[k];
  }
  return x[k];
}

double npkit_median_inplace(double *x, size_t n) {
  if (n == 0) return NAN;
  double hi = select_kth(x, n, n / 2);
  if (n % 2) return hi;
  /* the other middle value is the largest of the lower half, which select_kth left below n / 2 */
  double lo = x[0];
  for (size_t i = 1; i < n / 2; i++)
    if (x[i] > lo) lo = x[i];
  return (lo + hi) / 2;
}

/* Median and sigma (1.4826 × MAD) of x[0..n), using tmp[0..n) as scratch. */
static void median_sigma(double *x, size_t n, double *tmp, double *median, double *sigma) {
  *median = npkit_median_inplace(x, n);
  for (size_t i = 0; i < n; i++) tmp[i] = fabs(x[i] - *median);
  *sigma = NPKIT_MAD_TO_SIGMA * npkit_median_inplace(tmp, n);
}

void npkit_robust_estimate(double *x, size_t n, double floor, npkit_robust *out) {
  out->center = out->sigma = out->stderr_ = NAN;
  out->kept = out->rejected = 0;
  if (n == 0) return;
  double *tmp = malloc(n * sizeof(*tmp));
  double med, sigma;
  if (tmp == NULL) { /* no scratch: the median alone, without rejection or spread */
    out->center = npkit_median_inplace(x, n);
    out->kept = n;
    return;
  }
  median_sigma(x, n, tmp, &med, &sigma);
  double bound = NPKIT_ROBUST_REJECT_SIGMAS * sigma;
  if (bound < floor) bound = floor;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs(x[i] - med) <= bound) x[kept++] = x[i];
  if (kept < n && kept > 0) median_sigma(x, kept, tmp, &med, &sigma);
  free(tmp);
  out->center = med;
  out->sigma = sigma;
  out->kept = kept;
  out->rejected = n - kept;
  /* the median's standard error is sqrt(pi/2) times the mean's for normal noise */
  out->stderr_ = kept > 0 ? 1.2533 * sigma / sqrt((double)kept) : NAN;
}
