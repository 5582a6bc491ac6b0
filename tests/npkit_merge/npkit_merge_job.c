/* npkit_merge_job: an MPI job for the NPKit dump tests.  Each process holds one or more ranks of a
 * world communicator, runs a few iterations of collectives and a send/recv ring, and ends its
 * communicators in the way asked, so that a (fake) NCCL built with NPKit dumps, or does not.
 *
 *   npkit_merge_job [--ranks-per-process N] [--iters K] [--end destroy|abort|finalize|none]
 *                   [--comms C]
 *
 * N (1 or 2, default 1): ranks per process.  With 1, process p is rank p and every call is made
 * alone, except the send/recv ring (a group); with 2, process p holds ranks 2p and 2p+1, created
 * and driven from one thread, every call in a group over both communicators.
 * K (default 3): iterations of AllReduce (1000, 20000 or 300000 floats, in turn), Broadcast and
 * the ring.
 * --end: ncclCommDestroy (default), ncclCommAbort, ncclCommFinalize without destroying, or nothing.
 * C (default 1): world communicators one after the other, each created, used and ended before the
 * next is created.
 * Prints nothing on stdout; exit status 0, 1 when a call failed, 2 on a usage error. */
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_job.h"

#define MAX_LOCAL 2
#define MAX_COUNT 300000


static int usage(void) {
  fprintf(stderr, "usage: npkit_merge_job [--ranks-per-process 1|2] [--iters K] "
                  "[--end destroy|abort|finalize|none] [--comms C]\n");
  return 2;
}

int main(int argc, char **argv) {
  int local = 1, iters = 3, comms = 1;
  const char *end = "destroy";
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) return usage();
    if (strcmp(argv[i], "--ranks-per-process") == 0)
      local = atoi(argv[++i]);
    else if (strcmp(argv[i], "--iters") == 0)
      iters = atoi(argv[++i]);
    else if (strcmp(argv[i], "--end") == 0)
      end = argv[++i];
    else if (strcmp(argv[i], "--comms") == 0)
      comms = atoi(argv[++i]);
    else
      return usage();
  }
  if (local < 1 || local > MAX_LOCAL || iters < 0 || iters > 1000 || comms < 1 || comms > 16 ||
      (strcmp(end, "destroy") && strcmp(end, "abort") && strcmp(end, "finalize") && strcmp(end, "none")))
    return usage();

  int proc, nproc;
  npkit_job_start(&argc, &argv, &proc, &nproc);
  int nranks = nproc * local;
  float *send[MAX_LOCAL], *recv[MAX_LOCAL];
  for (int l = 0; l < local; l++) {
    send[l] = calloc(MAX_COUNT, sizeof(float));
    recv[l] = calloc(MAX_COUNT, sizeof(float));
    if (send[l] == NULL || recv[l] == NULL) return 1;
    for (int i = 0; i < MAX_COUNT; i++) send[l][i] = (float)(i % 5);
  }
  cudaStream_t s = NULL;

  for (int c = 0; c < comms; c++) {
    ncclUniqueId id = npkit_job_unique_id(proc);
    ncclComm_t comm[MAX_LOCAL] = {NULL, NULL};
    if (local > 1) NC(ncclGroupStart());
    for (int l = 0; l < local; l++) NC(ncclCommInitRank(&comm[l], nranks, id, proc * local + l));
    if (local > 1) NC(ncclGroupEnd());

    static const size_t counts[] = {1000, 20000, 300000};
    for (int it = 0; it < iters; it++) {
      size_t count = counts[it % 3];
      if (local > 1) NC(ncclGroupStart());
      for (int l = 0; l < local; l++)
        NC(ncclAllReduce(send[l], recv[l], count, ncclFloat32, ncclSum, comm[l], s));
      if (local > 1) NC(ncclGroupEnd());
      if (local > 1) NC(ncclGroupStart());
      for (int l = 0; l < local; l++) NC(ncclBroadcast(send[l], recv[l], 5000, ncclFloat32, 0, comm[l], s));
      if (local > 1) NC(ncclGroupEnd());
      NC(ncclGroupStart());
      for (int l = 0; l < local; l++) {
        int me = proc * local + l;
        NC(ncclSend(send[l], 3000, ncclFloat32, (me + 1) % nranks, comm[l], s));
        NC(ncclRecv(recv[l], 3000, ncclFloat32, (me + nranks - 1) % nranks, comm[l], s));
      }
      NC(ncclGroupEnd());
    }

    MPI_Barrier(MPI_COMM_WORLD);
    for (int l = 0; l < local; l++) {
      if (strcmp(end, "destroy") == 0) NC(ncclCommDestroy(comm[l]));
      if (strcmp(end, "abort") == 0) NC(ncclCommAbort(comm[l]));
      if (strcmp(end, "finalize") == 0) NC(ncclCommFinalize(comm[l]));
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int l = 0; l < local; l++) {
    free(send[l]);
    free(recv[l]);
  }
  return npkit_job_end();
}
