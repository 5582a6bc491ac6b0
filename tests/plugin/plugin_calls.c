/* plugin_calls: an MPI job whose NCCL calls cover what NCCL reports through the profiler plugin:
 * collectives of every function and of sizes that make the (fake) NCCL pick different protocols,
 * algorithms and channel counts, a group of collectives that NCCL reorders by size (two of them
 * equal), a send/recv ring, AlltoAll, a zero-count call and a simulated group (neither launches
 * anything), and a split communicator (of one rank when the job has 3 ranks).
 *
 *   plugin_calls [--cycle | --loops N]
 *   --cycle    afterwards destroys everything and creates a new world communicator for one more
 *              AllReduce: NCCL unloads the plugin when its last communicator goes and loads it again.
 *   --loops N  afterwards N more AllReduce of 4 MB on the world communicator (with a network,
 *              hundreds of proxy records each: enough to fill a small event pool).
 * Prints nothing on stdout; exit status 0, or 1 when a call failed. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_job.h"


int main(int argc, char **argv) {
  int cycle = argc == 2 && strcmp(argv[1], "--cycle") == 0;
  long loops = argc == 3 && strcmp(argv[1], "--loops") == 0 ? atol(argv[2]) : 0;
  if (argc > 3 || (argc == 2 && !cycle) || (argc == 3 && loops <= 0)) {
    fprintf(stderr, "usage: plugin_calls [--cycle | --loops N]\n");
    return 2;
  }
  int rank, size;
  npkit_job_start(&argc, &argv, &rank, &size);
  const size_t n = 1u << 20;
  float *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
  if (a == NULL || b == NULL) return 1;
  for (size_t i = 0; i < n; i++) a[i] = (float)(i % 7);
  cudaStream_t s = NULL;
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;

  ncclComm_t world = npkit_job_world(rank, size);
  NC(ncclAllReduce(a, b, 1000, ncclFloat32, ncclSum, world, s));
  NC(ncclAllReduce(a, b, 100000, ncclFloat32, ncclSum, world, s));
  NC(ncclAllReduce(a, b, 300000, ncclFloat32, ncclSum, world, s));
  NC(ncclBroadcast(a, b, 70000, ncclInt8, 1 % size, world, s));
  NC(ncclReduce(a, b, 5000, ncclFloat32, ncclSum, size - 1, world, s));
  NC(ncclAllGather(a, b, 20000, ncclFloat32, world, s));
  NC(ncclReduceScatter(a, b, 70000, ncclFloat32, ncclSum, world, s));
  NC(ncclBcast(b, 3000, ncclFloat32, 0, world, s));
  NC(ncclAllReduce(a, b, 0, ncclFloat32, ncclSum, world, s));

  /* NCCL launches these largest first; two are equal */
  NC(ncclGroupStart());
  NC(ncclAllReduce(a, b, 2000, ncclFloat32, ncclSum, world, s));
  NC(ncclAllReduce(a + 2000, b + 2000, 70000, ncclFloat32, ncclSum, world, s));
  NC(ncclAllReduce(a + 80000, b + 80000, 2000, ncclFloat32, ncclSum, world, s));
  NC(ncclBroadcast(a + 90000, b + 90000, 500, ncclFloat32, 0, world, s));
  NC(ncclAllReduce(a + 100000, b + 100000, 9, ncclFloat32, ncclSum, world, s));
  NC(ncclGroupEnd());

  NC(ncclGroupStart());
  NC(ncclSend(a, 30000, ncclFloat32, next, world, s));
  NC(ncclRecv(b, 30000, ncclFloat32, prev, world, s));
  NC(ncclGroupEnd());
  NC(ncclAlltoAll(a, b, 5000, ncclFloat32, world, s));

  /* estimated, never launched: NCCL numbers nothing */
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  NC(ncclGroupStart());
  NC(ncclAllReduce(a, b, 4096, ncclFloat32, ncclSum, world, s));
  NC(ncclGroupSimulateEnd(&sim));
  NC(ncclAllReduce(a, b, 1000, ncclFloat32, ncclSum, world, s));

  ncclComm_t half = NULL;
  NC(ncclCommSplit(world, rank % 2, rank, &half, NULL));
  if (half != NULL) NC(ncclAllReduce(a, b, 777, ncclFloat32, ncclSum, half, s));
  NC(ncclCommDestroy(half));
  for (long i = 0; i < loops; i++) NC(ncclAllReduce(a, b, n, ncclFloat32, ncclSum, world, s));
  NC(ncclCommDestroy(world));

  if (cycle) {
    world = npkit_job_world(rank, size);
    NC(ncclAllReduce(a, b, 1000, ncclFloat32, ncclSum, world, s));
    NC(ncclCommDestroy(world));
  }
  free(a);
  free(b);
  return npkit_job_end();
}
