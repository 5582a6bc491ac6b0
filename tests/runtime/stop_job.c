/* stop_job: an MPI job that keeps calling ncclAllReduce until it is stopped from outside (mpirun's
 * kill sequence, a Slurm-like SIGTERM then SIGKILL), the way a training job is stopped at its time
 * limit.  Rank 0 creates the unique id, MPI broadcasts it.  After --ready-after calls each rank
 * creates READY_DIR/ready.<rank> (and writes its pid into it) so that the test knows the job
 * runs.  With --count-dir each rank keeps the number of calls it has completed, as it goes, in
 * COUNT_DIR/count.<rank> (8 bytes, little endian, mapped shared: the value is there whatever ends
 * the process), the number it has begun in the next 8 bytes, and its pid in the 8 after.  A failed call (a peer gone) ends the rank with status 1, as a job's error handling would.
 * Prints nothing on stdout. */
#define _GNU_SOURCE
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_job.h"

int main(int argc, char **argv) {
  const char *ready_dir = NULL, *count_dir = NULL;
  long ready_after = 1000;
  int rank, nranks;
  npkit_job_start(&argc, &argv, &rank, &nranks);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--ready-dir") && i + 1 < argc) ready_dir = argv[++i];
    else if (!strcmp(argv[i], "--ready-after") && i + 1 < argc) ready_after = atol(argv[++i]);
    else if (!strcmp(argv[i], "--count-dir") && i + 1 < argc) count_dir = argv[++i];
    else {
      fprintf(stderr, "usage: stop_job --ready-dir DIR [--ready-after N] [--count-dir DIR]\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  ncclComm_t comm = npkit_job_world(rank, nranks);
  if (comm == NULL) return 1;
  volatile int64_t *count = (int64_t[3]){0, 0, 0};
  if (count_dir != NULL) {
    char path[4096];
    snprintf(path, sizeof path, "%s/count.%d", count_dir, rank);
    FILE *f = fopen(path, "w+");
    if (f == NULL || ftruncate(fileno(f), 4096) != 0) return 1;
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
    if (page == MAP_FAILED) return 1;
    count = page;
    count[2] = getpid();
    fclose(f);
  }
  float buf[64] = {0};
  for (long calls = 1;; calls++) {
    count[1] = calls;
    if (ncclAllReduce(buf, buf, 64, ncclFloat32, ncclSum, comm, 0) != ncclSuccess) return 1;
    count[0] = calls;
    if (calls == ready_after && ready_dir != NULL) {
      char path[4096], tmp[4200];
      snprintf(path, sizeof path, "%s/ready.%d", ready_dir, rank);
      snprintf(tmp, sizeof tmp, "%s.tmp", path);
      FILE *f = fopen(tmp, "w");
      if (f == NULL) return 1;
      fprintf(f, "%d\n", (int)getpid());
      if (fclose(f) != 0 || rename(tmp, path) != 0) return 1; /* whole, or not there */
    }
  }
}
