/* hang_job: an MPI job of AllReduces on one communicator that goes wrong on purpose, for the tests
 * of the flight recorder and the hang diagnosis.  At collective --at of rank --rank:
 *   none      nothing happens
 *   skip      the rank stops calling NCCL (stuck in its own computation) until it is killed: the
 *             others wait in that collective
 *   mismatch  the rank passes twice the count (a desync at that sequence number)
 *   kill      the rank kills itself with SIGKILL (a dead node)
 *   segv      the rank crashes with a segmentation fault
 *   pause     the rank stops for --pause-ms before collective --at and again before --at2, then
 *             goes on (the others wait in each, then make progress)
 * A GPU-side stall comes from the fake NCCL (FAKE_NCCL_STALL); after its loop every rank then
 * "synchronizes its stream" (npkitFakeNcclStreamSynchronize, when the fake has it), which a rank
 * with stalled GPU work never gets through.  --ready-dir D: after --ready-after calls each rank
 * writes D/ready.<rank> with its pid.  --hold: after the loop, wait to be killed.  --sleep-us U
 * between calls.  A failed call ends the loop (the communicator is broken).  Prints nothing on
 * stdout. */
#define _GNU_SOURCE /* RTLD_DEFAULT, nanosleep */
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "test_job.h"

static void ready(const char *dir, int rank) {
  if (dir == NULL) return;
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/ready.%d", dir, rank);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (f == NULL) return;
  fprintf(f, "%d\n", (int)getpid());
  if (fclose(f) == 0) rename(tmp, path); /* whole, or not there */
}

static void forever(void) {
  for (;;) sleep(1);
}

int main(int argc, char **argv) {
  const char *mode = "none", *ready_dir = NULL;
  long at = -1, at2 = -1, calls = 20, ready_after = 1, sleep_us = 0, pause_ms = 0, queries = 0;
  int bad_rank = -1, hold = 0, rank, nranks;
  npkit_job_start(&argc, &argv, &rank, &nranks);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
    else if (!strcmp(argv[i], "--rank") && i + 1 < argc) bad_rank = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--at") && i + 1 < argc) at = atol(argv[++i]);
    else if (!strcmp(argv[i], "--at2") && i + 1 < argc) at2 = atol(argv[++i]);
    else if (!strcmp(argv[i], "--pause-ms") && i + 1 < argc) pause_ms = atol(argv[++i]);
    else if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atol(argv[++i]);
    else if (!strcmp(argv[i], "--ready-dir") && i + 1 < argc) ready_dir = argv[++i];
    else if (!strcmp(argv[i], "--ready-after") && i + 1 < argc) ready_after = atol(argv[++i]);
    else if (!strcmp(argv[i], "--sleep-us") && i + 1 < argc) sleep_us = atol(argv[++i]);
    else if (!strcmp(argv[i], "--queries") && i + 1 < argc) queries = atol(argv[++i]);
    else if (!strcmp(argv[i], "--hold")) hold = 1;
    else {
      fprintf(stderr, "usage: hang_job [--mode none|skip|mismatch|kill|segv|pause] [--rank R] [--at N] "
                      "[--at2 N] [--pause-ms P] [--calls N] [--queries Q] [--ready-dir D] [--ready-after N] [--sleep-us U] "
                      "[--hold]\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  ncclComm_t comm = npkit_job_world(rank, nranks);
  if (comm == NULL) return 1;
  static float buf[2048];
  const int count = 1024;
  for (long i = 0; i < calls; i++) {
    if (i == ready_after) ready(ready_dir, rank);
    int n = count;
    if (rank == bad_rank && (i == at || i == at2) && !strcmp(mode, "pause"))
      nanosleep(&(struct timespec){pause_ms / 1000, pause_ms % 1000 * 1000000}, NULL);
    if (rank == bad_rank && i == at) {
      if (!strcmp(mode, "skip")) {
        ready(ready_dir, rank);
        forever();
      }
      if (!strcmp(mode, "kill")) raise(SIGKILL);
      if (!strcmp(mode, "segv")) { /* a real fault, without undefined behaviour (UBSan's null check) */
        volatile int *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page != MAP_FAILED) page[0] = 1;
      }
      if (!strcmp(mode, "mismatch")) n = 2 * count;
    }
    if (ncclAllReduce(buf, buf, (size_t)n, ncclFloat32, ncclSum, comm, 0) != ncclSuccess) {
      fprintf(stderr, "hang_job: rank %d: AllReduce %ld failed\n", rank, i);
      break;
    }
    for (long q = 0; q < queries; q++) { /* cheap recorded calls: fill a ring without the fake's
                                           * per-collective rendezvous (shared files, 0.4 ms) */
      int nr;
      ncclCommCount(comm, &nr);
    }
    if (sleep_us > 0) nanosleep(&(struct timespec){sleep_us / 1000000, sleep_us % 1000000 * 1000}, NULL);
  }
  if (calls <= ready_after) ready(ready_dir, rank);
  void (*sync)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "npkitFakeNcclStreamSynchronize");
  if (sync != NULL) sync();
  if (hold) forever();
  ncclCommDestroy(comm);
  return npkit_job_end();
}
