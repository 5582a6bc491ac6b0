/* callsite_prog: one process, one rank (ncclCommInitAll on one device), whose NCCL calls come from
 * known functions and lines, with marks, pauses and signals at known iterations, so that the tests
 * can tell exactly which stacks, marks and recording changes the trace must show.
 *
 * Per iteration i (0-based):
 *   mark_begin("step"), mark_begin("GEMM"), busy work, mark_end("GEMM"),
 *   issue_allreduce() → ncclAllReduce, issue_broadcast() → ncclBroadcast,
 *   mark_instant("iteration done"), mark_end("step")
 * Options:
 *   --iters N          iterations (default 10)
 *   --no-marks         no mark calls
 *   --pause-at I       npkit_pause() before iteration I's collectives; --resume-at J resumes
 *   --raise-at I       raise(--signal, default SIGUSR2) before iteration I's collectives; repeatable
 *   --gemm-us U        busy work per iteration (default 200)
 *   --unterminated     leaves one "open range" mark open at exit
 *   --compute-thread   a second thread marks "background GEMM" ranges of busy work while the main
 *                      thread communicates (until the last iteration is done)
 * The lines of the two NCCL calls carry the comments the tests look for ("callsite: ..."). */
#define _GNU_SOURCE
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npkit_preload.h"

#define MAX_RAISES 16

static volatile unsigned long completed; /* work after each call: no tail calls into NCCL */

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static __attribute__((noinline)) int issue_allreduce(float *buf, size_t n, ncclComm_t comm) {
  ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, NULL); /* callsite: allreduce */
  completed++;
  return r == ncclSuccess ? 0 : -1;
}

static __attribute__((noinline)) int issue_broadcast(float *buf, size_t n, ncclComm_t comm) {
  ncclResult_t r = ncclBroadcast(buf, buf, n, ncclFloat32, 0, comm, NULL); /* callsite: broadcast */
  completed++;
  return r == ncclSuccess ? 0 : -1;
}

static __attribute__((noinline)) void gemm(double us) {
  double end = now_us() + us;
  volatile double x = 1.0;
  while (now_us() < end) x = x * 1.0000001 + 1e-9;
}

static atomic_int stop_compute;

static void *compute_thread(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_compute)) {
    npkit_mark_begin("background GEMM");
    gemm(300);
    npkit_mark_end("background GEMM");
  }
  return NULL;
}

static long parse(const char *what, const char *v, long lo, long hi) {
  char *end;
  long x = v != NULL ? strtol(v, &end, 10) : 0;
  if (v == NULL || *v == '\0' || *end != '\0' || x < lo || x > hi) {
    fprintf(stderr, "callsite_prog: %s needs a number from %ld to %ld\n", what, lo, hi);
    exit(2);
  }
  return x;
}

int main(int argc, char **argv) {
  long iters = 10, pause_at = -1, resume_at = -1, gemm_us = 200, raises[MAX_RAISES];
  int n_raises = 0, marks = 1, unterminated = 0, sig = SIGUSR2, background = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--iters")) iters = parse(a, v, 0, 1000000), i++;
    else if (!strcmp(a, "--pause-at")) pause_at = parse(a, v, 0, 1000000), i++;
    else if (!strcmp(a, "--resume-at")) resume_at = parse(a, v, 0, 1000000), i++;
    else if (!strcmp(a, "--gemm-us")) gemm_us = parse(a, v, 0, 1000000), i++;
    else if (!strcmp(a, "--signal")) sig = (int)parse(a, v, 1, 64), i++;
    else if (!strcmp(a, "--raise-at") && n_raises < MAX_RAISES) raises[n_raises++] = parse(a, v, 0, 1000000), i++;
    else if (!strcmp(a, "--no-marks")) marks = 0;
    else if (!strcmp(a, "--unterminated")) unterminated = 1;
    else if (!strcmp(a, "--compute-thread")) background = 1;
    else {
      fprintf(stderr, "usage: callsite_prog [--iters N] [--no-marks] [--pause-at I] [--resume-at J]\n"
                      "       [--raise-at I]... [--signal N] [--gemm-us U] [--unterminated]\n"
                      "       [--compute-thread]\n");
      return 2;
    }
  }
  ncclComm_t comm;
  if (ncclCommInitAll(&comm, 1, NULL) != ncclSuccess) {
    fprintf(stderr, "callsite_prog: ncclCommInitAll failed\n");
    return 1;
  }
  float buf[1024];
  for (int k = 0; k < 1024; k++) buf[k] = (float)k;
  if (unterminated) npkit_mark_begin("open range");
  pthread_t worker;
  if (background && pthread_create(&worker, NULL, compute_thread, NULL) != 0) {
    fprintf(stderr, "callsite_prog: cannot start the compute thread\n");
    return 1;
  }
  for (long i = 0; i < iters; i++) {
    if (marks) npkit_mark_begin("step");
    if (marks) npkit_mark_begin("GEMM");
    gemm((double)gemm_us);
    if (marks) npkit_mark_end("GEMM");
    if (i == pause_at) npkit_pause();
    if (i == resume_at) npkit_resume();
    for (int k = 0; k < n_raises; k++)
      if (raises[k] == i) raise(sig);
    if (issue_allreduce(buf, 1024, comm) != 0 || issue_broadcast(buf, 256, comm) != 0) {
      fprintf(stderr, "callsite_prog: an NCCL call failed at iteration %ld\n", i);
      return 1;
    }
    if (marks) npkit_mark_instant("iteration done");
    if (marks) npkit_mark_end("step");
  }
  if (background) {
    atomic_store(&stop_compute, 1);
    pthread_join(worker, NULL);
  }
  ncclCommDestroy(comm);
  return completed == (unsigned long)(2 * iters) ? 0 : 1;
}
