/* dlopen_job: an MPI job that loads NCCL the way frameworks do that bind it at run time: dlopen
 * of libnccl.so.2 and every function through dlsym(handle, ...), so that no call reaches a
 * preloaded wrapper.  Per iteration (--iters N, default 3): AllReduce of 1000 and of 300000
 * floats, Broadcast of 7000 bytes from rank 1, a group of two AllReduces, and a Send/Recv ring.
 * Prints nothing on stdout; exit status 0, or 1 when a call failed or NCCL could not be loaded. */
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef ncclResult_t (*get_id_fn)(ncclUniqueId *);
typedef ncclResult_t (*init_fn)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*destroy_fn)(ncclComm_t);
typedef ncclResult_t (*all_reduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                      cudaStream_t);
typedef ncclResult_t (*broadcast_fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*group_fn)(void);
typedef ncclResult_t (*send_fn)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*recv_fn)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);

static int failures;
#define NC(call)                                                  \
  do {                                                            \
    ncclResult_t r_ = (call);                                     \
    if (r_ != ncclSuccess) {                                      \
      fprintf(stderr, "dlopen_job: %s failed (%d)\n", #call, r_); \
      failures++;                                                 \
    }                                                             \
  } while (0)

int main(int argc, char **argv) {
  long iters = 3;
  if (argc == 3 && strcmp(argv[1], "--iters") == 0) iters = strtol(argv[2], NULL, 10);
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (nccl == NULL) {
    fprintf(stderr, "dlopen_job: %s\n", dlerror());
    MPI_Finalize();
    return 1;
  }
  get_id_fn get_id = (get_id_fn)dlsym(nccl, "ncclGetUniqueId");
  init_fn init = (init_fn)dlsym(nccl, "ncclCommInitRank");
  destroy_fn destroy = (destroy_fn)dlsym(nccl, "ncclCommDestroy");
  all_reduce_fn all_reduce = (all_reduce_fn)dlsym(nccl, "ncclAllReduce");
  broadcast_fn broadcast = (broadcast_fn)dlsym(nccl, "ncclBroadcast");
  group_fn group_start = (group_fn)dlsym(nccl, "ncclGroupStart"), group_end = (group_fn)dlsym(nccl, "ncclGroupEnd");
  send_fn send = (send_fn)dlsym(nccl, "ncclSend");
  recv_fn recv = (recv_fn)dlsym(nccl, "ncclRecv");
  if (!get_id || !init || !destroy || !all_reduce || !broadcast || !group_start || !group_end || !send || !recv) {
    fprintf(stderr, "dlopen_job: a function is missing from libnccl.so.2\n");
    MPI_Finalize();
    return 1;
  }
  const size_t n = 1u << 20;
  float *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
  if (a == NULL || b == NULL) return 1;
  ncclUniqueId id;
  if (rank == 0) NC(get_id(&id));
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t c = NULL;
  NC(init(&c, size, id, rank));
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (long i = 0; i < iters; i++) {
    NC(all_reduce(a, b, 1000, ncclFloat32, ncclSum, c, NULL));
    NC(all_reduce(a, b, 300000, ncclFloat32, ncclSum, c, NULL));
    NC(broadcast(a, b, 7000, ncclInt8, 1 % size, c, NULL));
    NC(group_start());
    NC(all_reduce(a, b, 2000, ncclFloat32, ncclSum, c, NULL));
    NC(all_reduce(a + 4000, b + 4000, 70000, ncclFloat32, ncclSum, c, NULL));
    NC(group_end());
    NC(group_start());
    NC(send(a, 3000, ncclFloat32, next, c, NULL));
    NC(recv(b, 3000, ncclFloat32, prev, c, NULL));
    NC(group_end());
  }
  NC(destroy(c));
  free(a);
  free(b);
  MPI_Finalize();
  return failures ? 1 : 0;
}
