/* nonblocking_job: NCCL with non-blocking communicators (ncclConfig_t.blocking = 0), as
 * frameworks use them: every call may return ncclInProgress, and the application polls
 * ncclCommGetAsyncError until the communicator is ready again.  NCCL creates the communicator and
 * launches the work from threads of its own.
 *   init (poll), then per iteration: AllReduce (poll), a group of AllReduce + AllGather (poll)
 *   nonblocking_job [--iters N] [--polls-out FILE]
 * --polls-out writes to FILE.rank<R> how many times this program called ncclCommGetAsyncError.
 * Prints nothing on stdout; exit status 0, or 1 when a call failed. */
#include <mpi.h>
#include <nccl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_NCCL ((cudaStream_t)(uintptr_t)0x1000)
#define COUNT 4096

static int failures;
static long polls;

static void expect(ncclResult_t r, const char *what) {
  if (r != ncclSuccess && r != ncclInProgress) {
    fprintf(stderr, "nonblocking_job: %s failed: %s\n", what, ncclGetErrorString(r));
    failures++;
  }
}

static void wait_ready(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    polls++;
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) {
      failures++;
      return;
    }
    if (state == ncclInProgress) sched_yield();
  }
  if (state != ncclSuccess) {
    fprintf(stderr, "nonblocking_job: the communicator failed: %s\n", ncclGetErrorString(state));
    failures++;
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
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id;
  if (rank == 0) expect(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
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
    if (f == NULL) failures++;
    else {
      fprintf(f, "%ld\n", polls);
      fclose(f);
    }
  }
  free(a);
  free(b);
  MPI_Finalize();
  return failures ? 1 : 0;
}
