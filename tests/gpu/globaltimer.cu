// The GPU's %globaltimer against the host's CLOCK_REALTIME: NCCL's kernel-channel stamps are
// %globaltimer readings (NCCL 2.28 src/device/common.h), which the library maps onto the host
// clock (src/runtime/gpu_clock_map.c).  This measures what that map has to absorb on this machine.
//
// A one-thread kernel writes %globaltimer into host-mapped memory; the host reads CLOCK_REALTIME
// just before the launch and just after the stamp becomes visible, so each sample bounds
// (host - GPU) from both sides.  Over SECONDS seconds (default 3) it prints, per second, the
// offset (the middle of the tightest bounds) and its half width, then the drift in ppm from a
// least-squares fit.
//   globaltimer [SECONDS]
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void stamp(volatile unsigned long long *out) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  *out = t;
}

static long long realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3.0;
  volatile unsigned long long *h = NULL;
  if (cudaHostAlloc((void **)&h, sizeof *h, cudaHostAllocMapped) != cudaSuccess) {
    fprintf(stderr, "globaltimer: cudaHostAlloc failed (no GPU?)\n");
    return 1;
  }
  unsigned long long *d = NULL;
  cudaHostGetDevicePointer((void **)&d, (void *)h, 0);
  stamp<<<1, 1>>>(d); /* warm up: module load, first launch */
  cudaDeviceSynchronize();
  enum { MAXS = 4096 };
  static double xs[MAXS], ys[MAXS];
  int n = 0;
  long long t_end = realtime_ns() + (long long)(seconds * 1e9);
  long long sec_lo = -(1ll << 62), sec_hi = 1ll << 62, next_print = realtime_ns() + 1000000000ll;
  while (realtime_ns() < t_end && n < MAXS) {
    *h = 0;
    long long before = realtime_ns();
    stamp<<<1, 1>>>(d);
    while (*h == 0) {
    }
    long long after = realtime_ns();
    long long g = (long long)*h;
    long long lo = before - g, hi = after - g; /* lo <= host - GPU <= hi */
    if (lo > sec_lo) sec_lo = lo;
    if (hi < sec_hi) sec_hi = hi;
    xs[n] = (double)g;
    ys[n] = 0.5 * ((double)lo + (double)hi);
    n++;
    if (after >= next_print) {
      printf("globaltimer: offset (host - GPU) %.3f us, bounds half width %.3f us\n",
             0.5 * ((double)sec_lo + (double)sec_hi) / 1e3, 0.5 * ((double)sec_hi - (double)sec_lo) / 1e3);
      sec_lo = -(1ll << 62);
      sec_hi = 1ll << 62;
      next_print = after + 1000000000ll;
    }
    struct timespec pause = {0, 1000000}; /* 1 ms between samples */
    nanosleep(&pause, NULL);
  }
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++) {
    double x = xs[i] - xs[0], y = ys[i] - ys[0];
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  double den = n * sxx - sx * sx;
  double slope = den > 0 ? (n * sxy - sx * sy) / den : 0;
  printf("globaltimer: %d samples over %.1f s: offset %.3f us at the start, drift %.3f ppm "
         "(host clock minus GPU clock per GPU second)\n",
         n, seconds, ys[0] / 1e3, slope * 1e6);
  return 0;
}
