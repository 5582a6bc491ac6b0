/* The frame that the MPI test jobs share: MPI started, rank 0's NCCL unique id given to every
 * rank, the world communicator created, and every NCCL call that fails counted and named on
 * stderr as "<program>: <call> failed: <error>", so that the job exits 1 without stopping at the
 * first failure (the tests read the logs of everything that ran). */
#ifndef NPKIT_TEST_JOB_H
#define NPKIT_TEST_JOB_H

#include <nccl.h>

/* Failures so far: failed NCCL calls, and whatever else the job counts as one. */
extern int npkit_job_failures;

/* Counts r as a failure, naming `call`, unless it is ncclSuccess. */
void npkit_job_check(ncclResult_t r, const char *call);
#define NC(call) npkit_job_check((call), #call)

/* MPI_Init, then this process's rank in MPI_COMM_WORLD and their number. */
void npkit_job_start(int *argc, char ***argv, int *rank, int *size);
/* Rank 0's ncclGetUniqueId, broadcast to every rank of MPI_COMM_WORLD (a collective call). */
ncclUniqueId npkit_job_unique_id(int rank);
/* A communicator of all `size` ranks: a fresh unique id and ncclCommInitRank (NULL when it failed). */
ncclComm_t npkit_job_world(int rank, int size);
/* MPI_Finalize; the exit status: 0, or 1 when something failed. */
int npkit_job_end(void);

#endif
