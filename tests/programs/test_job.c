/* See test_job.h. */
#define _GNU_SOURCE
#include "test_job.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>

int npkit_job_failures;

void npkit_job_check(ncclResult_t r, const char *call) {
  if (r == ncclSuccess) return;
  /* the program's own name, as every job named itself in its messages */
  fprintf(stderr, "%s: %s failed: %s\n", program_invocation_short_name, call, ncclGetErrorString(r));
  npkit_job_failures++;
}

void npkit_job_start(int *argc, char ***argv, int *rank, int *size) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

ncclUniqueId npkit_job_unique_id(int rank) {
  ncclUniqueId id;
  if (rank == 0) NC(ncclGetUniqueId(&id));
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  return id;
}

ncclComm_t npkit_job_world(int rank, int size) {
  ncclUniqueId id = npkit_job_unique_id(rank);
  ncclComm_t comm = NULL;
  NC(ncclCommInitRank(&comm, size, id, rank));
  return comm;
}

int npkit_job_end(void) {
  MPI_Finalize();
  return npkit_job_failures ? 1 : 0;
}
