/* nonblocking_job: NCCL with non-blocking communicators (ncclConfig_t.blocking = 0), as
 * frameworks use them: every call may return ncclInProgress, and the application polls
 * ncclCommGetAsyncError until the communicator is ready again.  NCCL creates the communicator and
 * launches the work from threads of its own.
 *   init (poll), then per iteration: AllReduce (poll), a group of AllReduce + AllGather (poll)
 *   nonblocking_job [--iters N] [--polls-out FILE]
 * --polls-out writes to FILE.rank<R> how many times this program called ncclCommGetAsyncError.
 * Prints nothing on stdout; exit status 0, or 1 when a call failed. */
#include <nccl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_job.h"

#define S_NCCL ((cudaStream_t)(uintptr_t)0x1000)
#define COUNT 4096

static long polls;

/* A non-blocking communicator's calls may return ncclInProgress: not a failure. */
static void expect(ncclResult_t r, const char *what) {
  if (r != ncclInProgress) npkit_job_check(r, what);
}

static void wait_ready(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    polls++;
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) {
      npkit_job_failures++;
      return;
    }
    if (state == ncclInProgress) sched_yield();
  }
  if (state != ncclSuccess) {
    fprintf(stderr, "nonblocking_job: the communicator failed: %s\n", ncclGetErrorString(state));
    npkit_job_failures++;
  }
}

int main(int argc, char **argv) {
  long iters = 3;
  const char *polls_out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--polls-out") && i + 1 < argc) polls_out = argv[++i];
    else {
      fprintf(stderr, "usage: nonblocking_job [--iters N] [--polls-out FILE]\n");
      return 2;
    }
  }
  int rank, size;
  npkit_job_start(&argc, &argv, &rank, &size);
  ncclUniqueId id = npkit_job_unique_id(rank);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  expect(ncclCommInitRankConfig(&comm, size, id, rank, &config), "ncclCommInitRankConfig");
  wait_ready(comm);
  float *a = calloc(COUNT * (size_t)size, sizeof *a), *b = calloc(COUNT * (size_t)size, sizeof *b);
  if (a == NULL || b == NULL) return 1;
  for (long it = 0; it < iters; it++) {
    expect(ncclAllReduce(a, b, COUNT, ncclFloat32, ncclSum, comm, S_NCCL), "ncclAllReduce");
    wait_ready(comm);
    expect(ncclGroupStart(), "ncclGroupStart");
    expect(ncclAllReduce(a, b, COUNT / 2, ncclFloat32, ncclSum, comm, S_NCCL), "ncclAllReduce");
    expect(ncclAllGather(a, b, COUNT / 4, ncclFloat32, comm, S_NCCL), "ncclAllGather");
    expect(ncclGroupEnd(), "ncclGroupEnd");
    wait_ready(comm);
  }
  expect(ncclCommDestroy(comm), "ncclCommDestroy");
  if (polls_out != NULL) {
    char name[1024];
    snprintf(name, sizeof name, "%s.rank%d", polls_out, rank);
    FILE *f = fopen(name, "w");
    if (f == NULL) npkit_job_failures++;
    else {
      fprintf(f, "%ld\n", polls);
      fclose(f);
    }
  }
  free(a);
  free(b);
  return npkit_job_end();
}
