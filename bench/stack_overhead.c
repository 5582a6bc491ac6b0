/* Cost of call stacks (NPKIT_STACK_DEPTH): the same wrapped NCCL call as bench/overhead.c, but issued
 * from LEVELS nested levels (two frames each), so that the stack always has more frames than the
 * depth asked for, and from SITES distinct call paths (at most 16: paths differ within the
 * innermost 8 frames).  Run it with the library at
 * NPKIT_STACK_DEPTH=0 and =8 against the fake NCCL in no-op mode: the difference per call is what
 * capturing, hashing and looking up a stack costs (bench/stack_overhead.sh does it all).
 *
 *   stack_overhead [--calls N] [--repeats R] [--sites S] [--pause-ms P]
 * prints: calls=N sites=S median_ns_per_call=X min_ns_per_call=Y */
#define _GNU_SOURCE
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEVELS 12
#define MAX_SITES 16

static ncclComm_t comm;
static float buf[4];
static volatile int sink;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int level(int d, unsigned path);

/* Two callers of the next level: which one level d goes through is bit d of `path`, so paths differ
 * in return addresses.  Separate functions, because a compiler may merge two identical calls of
 * one function. */
static __attribute__((noinline)) int via_a(int d, unsigned path) {
  int r = level(d - 1, path);
  sink = d; /* work after the call: no tail calls */
  return r;
}

static __attribute__((noinline)) int via_b(int d, unsigned path) {
  int r = level(d - 1, path);
  sink = -d;
  return r;
}

static __attribute__((noinline)) int level(int d, unsigned path) {
  if (d == 0) return ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, NULL) == ncclSuccess ? 0 : 1;
  int r = ((path >> d) & 1u) ? via_a(d, path) : via_b(d, path);
  sink = r;
  return r;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  long calls = 1000000, repeats = 7, sites = 1, pause_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--calls")) calls = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--repeats")) repeats = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--sites")) sites = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--pause-ms")) pause_ms = atol(argv[i + 1]);
    else {
      fprintf(stderr, "usage: stack_overhead [--calls N] [--repeats R] [--sites S] [--pause-ms P]\n");
      return 2;
    }
  }
  if (argc % 2 == 0 || calls < 1 || repeats < 1 || repeats > 64 || sites < 1 || sites > MAX_SITES) {
    fprintf(stderr, "stack_overhead: calls >= 1, 1 <= repeats <= 64, 1 <= sites <= %d\n", MAX_SITES);
    return 2;
  }
  if (ncclCommInitAll(&comm, 1, NULL) != ncclSuccess) {
    fprintf(stderr, "stack_overhead: ncclCommInitAll failed\n");
    return 1;
  }
  double per_call[64];
  for (long r = 0; r < repeats; r++) {
    if (pause_ms > 0) {
      struct timespec ts = {pause_ms / 1000, pause_ms % 1000 * 1000000L};
      nanosleep(&ts, NULL);
    }
    double t0 = now_ns();
    for (long i = 0; i < calls; i++)
      /* paths differ in the innermost levels (bits 1 to 4), which a stack of 8 frames holds */
      if (level(LEVELS, (unsigned)(i % sites) << 1) != 0) {
        fprintf(stderr, "stack_overhead: ncclAllReduce failed\n");
        return 1;
      }
    per_call[r] = (now_ns() - t0) / (double)calls;
  }
  qsort(per_call, (size_t)repeats, sizeof per_call[0], cmp);
  printf("calls=%ld sites=%ld median_ns_per_call=%.2f min_ns_per_call=%.2f\n", calls, sites,
         per_call[repeats / 2], per_call[0]);
  ncclCommDestroy(comm);
  return 0;
}
