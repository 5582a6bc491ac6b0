/* plugin_tags: an MPI job with the collectives of NCCL 2.31 that carry a user profiler tag
 * (nccl*Config, looked up at run time: see tests/programs/test_newer_api.h), next to plain ones:
 *   AllReduceConfig tag 0x1001 (large: 4 channels), AllReduce (untagged), AllGatherConfig 0x2002,
 *   a group of AllReduceConfig 0x1001 and ReduceScatterConfig 0x3003, a Send/Recv ring (which has
 *   no Config variant), AlltoAllConfig 0x4004 (P2p tasks in NCCL), AllReduceConfig tag 0 (NCCL's
 *   default: untagged) and BroadcastConfig with a tag whose top bit is set (reserved by NCCL, passed
 *   on untouched).
 * Each tagged call is made --iters times (default 2).  Prints nothing on stdout; exit status 0, or
 * 1 when a call failed or the NCCL lacks the Config functions. */
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_job.h"
#include "test_newer_api.h"

typedef ncclResult_t (*reduce_cfg)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                   cudaStream_t, const npkit_test_coll_cfg *);
typedef ncclResult_t (*plain_cfg)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t,
                                  const npkit_test_coll_cfg *);
typedef ncclResult_t (*rooted_cfg)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                                   cudaStream_t, const npkit_test_coll_cfg *);


int main(int argc, char **argv) {
  long iters = 2;
  if (argc == 3 && strcmp(argv[1], "--iters") == 0) iters = strtol(argv[2], NULL, 10);
  else if (argc != 1) {
    fprintf(stderr, "usage: plugin_tags [--iters N]\n");
    return 2;
  }
  int rank, size;
  npkit_job_start(&argc, &argv, &rank, &size);
  reduce_cfg all_reduce = (reduce_cfg)npkit_test_sym("ncclAllReduceConfig");
  reduce_cfg reduce_scatter = (reduce_cfg)npkit_test_sym("ncclReduceScatterConfig");
  plain_cfg all_gather = (plain_cfg)npkit_test_sym("ncclAllGatherConfig");
  plain_cfg all_to_all = (plain_cfg)npkit_test_sym("ncclAlltoAllConfig");
  rooted_cfg broadcast = (rooted_cfg)npkit_test_sym("ncclBroadcastConfig");
  if (!all_reduce || !reduce_scatter || !all_gather || !all_to_all || !broadcast) {
    fprintf(stderr, "plugin_tags: this NCCL has no nccl*Config collectives\n");
    MPI_Finalize();
    return 1;
  }
  const size_t n = 1u << 20;
  float *a = calloc(n * (size_t)size, sizeof *a), *b = calloc(n * (size_t)size, sizeof *b);
  if (a == NULL || b == NULL) return 1;
  ncclComm_t c = npkit_job_world(rank, size);
  cudaStream_t s = NULL;
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  npkit_test_coll_cfg t1 = npkit_test_coll_cfg_make(0x1001), t2 = npkit_test_coll_cfg_make(0x2002);
  npkit_test_coll_cfg t3 = npkit_test_coll_cfg_make(0x3003), t4 = npkit_test_coll_cfg_make(0x4004);
  npkit_test_coll_cfg t0 = npkit_test_coll_cfg_make(0), top = npkit_test_coll_cfg_make(0x8000000000000005ull);
  for (long i = 0; i < iters; i++) {
    NC(all_reduce(a, b, 300000, ncclFloat32, ncclSum, c, s, &t1));
    NC(ncclAllReduce(a, b, 1000, ncclFloat32, ncclSum, c, s));
    NC(all_gather(a, b, 20000, ncclFloat32, c, s, &t2));
    NC(ncclGroupStart());
    NC(all_reduce(a, b, 4000, ncclFloat32, ncclSum, c, s, &t1));
    NC(reduce_scatter(a, b, 70000, ncclFloat32, ncclSum, c, s, &t3));
    NC(ncclGroupEnd());
    NC(ncclGroupStart());
    NC(ncclSend(a, 30000, ncclFloat32, next, c, s));
    NC(ncclRecv(b, 30000, ncclFloat32, prev, c, s));
    NC(ncclGroupEnd());
    NC(all_to_all(a, b, 5000, ncclFloat32, c, s, &t4));
  }
  NC(all_reduce(a, b, 2000, ncclFloat32, ncclSum, c, s, &t0));
  NC(broadcast(a, b, 7000, ncclFloat32, 0, c, s, &top));
  NC(ncclCommDestroy(c));
  free(a);
  free(b);
  return npkit_job_end();
}
