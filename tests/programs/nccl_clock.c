/* Brackets NCCL calls with the program's own CLOCK_REALTIME readings, so that a test can check the
 * times of the traced calls against an independent clock.
 *
 *   nccl_clock --out FILE [--calls N] [--every K] [--sleep-us U]
 * Makes N ncclAllReduce calls on a one-rank communicator (ncclCommInitAll), sleeping U us after
 * every K calls (so that the run spans many of the library's clock comparisons), and writes one
 * line per call to FILE: "<ns before the call> <ns after it>".  Exit status 0 when every call
 * succeeded. */
#define _POSIX_C_SOURCE 200809L
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
  const char *out = NULL;
  long calls = 2000, every = 100, sleep_us = 50000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--out")) out = argv[i + 1];
    else if (!strcmp(argv[i], "--calls")) calls = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--every")) every = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--sleep-us")) sleep_us = atol(argv[i + 1]);
  }
  if (out == NULL || calls < 1 || every < 1 || sleep_us < 0) {
    fprintf(stderr, "usage: nccl_clock --out FILE [--calls N] [--every K] [--sleep-us U]\n");
    return 2;
  }
  uint64_t *t = malloc(2 * (size_t)calls * sizeof *t);
  ncclComm_t comm;
  if (t == NULL || ncclCommInitAll(&comm, 1, NULL) != ncclSuccess) {
    fprintf(stderr, "nccl_clock: cannot set up\n");
    return 1;
  }
  float buf[4] = {1, 2, 3, 4};
  int failed = 0;
  for (long i = 0; i < calls; i++) {
    t[2 * i] = realtime_ns();
    failed |= ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, 0) != ncclSuccess;
    t[2 * i + 1] = realtime_ns();
    if ((i + 1) % every == 0 && sleep_us > 0) {
      struct timespec ts = {sleep_us / 1000000, sleep_us % 1000000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  ncclCommDestroy(comm);
  FILE *f = fopen(out, "w");
  if (f == NULL) {
    perror(out);
    return 1;
  }
  for (long i = 0; i < calls; i++) fprintf(f, "%llu %llu\n", (unsigned long long)t[2 * i], (unsigned long long)t[2 * i + 1]);
  free(t);
  if (fclose(f) != 0 || failed) return 1;
  return 0;
}
