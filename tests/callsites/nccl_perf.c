/* nccl_perf: a small stand-in for nccl-tests, to run the test matrix (scripts/nccl_matrix.sh) where
 * nccl-tests is not built.  One binary, several names: like nccl-tests it is started as
 * all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf,
 * alltoall_perf or sendrecv_perf (links to it), and takes nccl-tests' main options:
 *
 *   -b MINBYTES  -e MAXBYTES  -f FACTOR  -n ITERS  -w WARMUP  -c CHECK(0|1)  -g GPUS(1)
 *
 * Sizes take K, M, G suffixes (powers of 1024) and are the nccl-tests message size S (the whole
 * gathered buffer for AllGather, the whole input for ReduceScatter and AlltoAll).  One rank per MPI
 * process, float32 sum.  Rank 0 prints one line per size on stdout: size, count, time per call (us),
 * algbw and busbw (GB/s) as nccl-tests computes them.  Exit 1 when a call fails or (with -c 1) the
 * data is wrong, 2 on a usage error. */
#define _GNU_SOURCE
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_job.h"

typedef enum op { ALLREDUCE, ALLGATHER, REDUCESCATTER, BROADCAST, REDUCE, ALLTOALL, SENDRECV } op;

static const struct {
  const char *name;
  op op;
} names[] = {{"all_reduce_perf", ALLREDUCE}, {"all_gather_perf", ALLGATHER},
             {"reduce_scatter_perf", REDUCESCATTER}, {"broadcast_perf", BROADCAST},
             {"reduce_perf", REDUCE}, {"alltoall_perf", ALLTOALL}, {"sendrecv_perf", SENDRECV}};

static int parse_size(const char *s, size_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return -1;
  if (*end == 'K' || *end == 'k') v <<= 10, end++;
  else if (*end == 'M' || *end == 'm') v <<= 20, end++;
  else if (*end == 'G' || *end == 'g') v <<= 30, end++;
  if (*end != '\0' || v == 0) return -1;
  *out = (size_t)v;
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Elements each rank sends for message size S. */
static size_t count_for(op o, size_t bytes, int nranks) {
  size_t elems = bytes / sizeof(float);
  return (o == ALLGATHER || o == REDUCESCATTER || o == ALLTOALL) ? elems / (size_t)nranks : elems;
}

static ncclResult_t run_op(op o, float *send, float *recv, size_t count, int rank, int nranks, ncclComm_t comm) {
  switch (o) {
  case ALLREDUCE: return ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, NULL);
  case ALLGATHER: return ncclAllGather(send, recv, count, ncclFloat32, comm, NULL);
  case REDUCESCATTER: return ncclReduceScatter(send, recv, count, ncclFloat32, ncclSum, comm, NULL);
  case BROADCAST: return ncclBroadcast(send, recv, count, ncclFloat32, 0, comm, NULL);
  case REDUCE: return ncclReduce(send, recv, count, ncclFloat32, ncclSum, 0, comm, NULL);
  case ALLTOALL: return ncclAlltoAll(send, recv, count, ncclFloat32, comm, NULL);
  case SENDRECV: {
    ncclResult_t r = ncclGroupStart();
    if (r == ncclSuccess) r = ncclSend(send, count, ncclFloat32, (rank + 1) % nranks, comm, NULL);
    if (r == ncclSuccess) r = ncclRecv(recv, count, ncclFloat32, (rank + nranks - 1) % nranks, comm, NULL);
    ncclResult_t e = ncclGroupEnd();
    return r != ncclSuccess ? r : e;
  }
  }
  return ncclInvalidArgument;
}

/* With every rank's send buffer filled with rank + 1: does recv hold what the operation gives? */
static int check(op o, const float *recv, size_t count, int rank, int nranks) {
  float sum = (float)nranks * (float)(nranks + 1) / 2;
  for (size_t i = 0; i < count; i++) {
    float want;
    switch (o) {
    case ALLREDUCE: case REDUCESCATTER: want = sum; break;
    case REDUCE: if (rank != 0) return 0; want = sum; break;
    case BROADCAST: want = 1; break;
    case ALLGATHER: case ALLTOALL: want = (float)(i / (count / (size_t)nranks) + 1); break;
    case SENDRECV: want = (float)((rank + nranks - 1) % nranks + 1); break;
    default: return -1;
    }
    if (recv[i] != want) return -1;
  }
  return 0;
}

static int usage(const char *prog) {
  fprintf(stderr, "usage: %s [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS] [-w WARMUP] [-c 0|1] [-g 1]\n"
                  "  started as one of: all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf\n"
                  "  reduce_perf alltoall_perf sendrecv_perf\n", prog);
  return 2;
}

int main(int argc, char **argv) {
  const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  int found = -1;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(base, names[i].name) == 0) found = (int)i;
  if (found < 0) return usage(base);
  op o = names[found].op;
  size_t minb = 1 << 20, maxb = 1 << 20;
  long factor = 2, iters = 5, warmup = 1, do_check = 0;
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (v == NULL || argv[i][0] != '-' || argv[i][2] != '\0') return usage(base);
    switch (argv[i][1]) {
    case 'b': if (parse_size(v, &minb)) return usage(base); break;
    case 'e': if (parse_size(v, &maxb)) return usage(base); break;
    case 'f': factor = strtol(v, &end, 10); break;
    case 'n': iters = strtol(v, &end, 10); break;
    case 'w': warmup = strtol(v, &end, 10); break;
    case 'c': do_check = strtol(v, &end, 10); break;
    case 'g': if (strcmp(v, "1") != 0) return usage(base); break;
    default: return usage(base);
    }
    if (end != NULL && (*end != '\0' || end == v)) return usage(base);
  }
  if (factor < 2 || iters < 1 || warmup < 0 || minb > maxb) return usage(base);

  int rank, nranks;
  npkit_job_start(&argc, &argv, &rank, &nranks);
  ncclComm_t comm = npkit_job_world(rank, nranks);
  if (comm == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  int failed = 0;
  float *send = malloc(maxb), *recv = malloc(maxb);
  if (send == NULL || recv == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  if (rank == 0) printf("# %s: %d ranks\n#%12s %12s %12s %10s %10s\n", base, nranks, "size", "count", "time(us)", "algbw", "busbw");
  for (size_t bytes = minb; bytes <= maxb && !failed; bytes *= (size_t)factor) {
    size_t count = count_for(o, bytes, nranks);
    size_t in = (o == ALLGATHER || o == SENDRECV) ? count : (o == REDUCESCATTER || o == ALLTOALL) ? count * (size_t)nranks : count;
    for (size_t i = 0; i < in; i++) send[i] = (float)(rank + 1);
    for (long k = 0; k < warmup && !failed; k++) failed = run_op(o, send, recv, count, rank, nranks, comm) != ncclSuccess;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    for (long k = 0; k < iters && !failed; k++) failed = run_op(o, send, recv, count, rank, nranks, comm) != ncclSuccess;
    double us = (now_s() - t0) * 1e6 / (double)iters;
    size_t out = (o == ALLGATHER || o == ALLTOALL) ? count * (size_t)nranks : count;
    if (!failed && do_check && check(o, recv, out, rank, nranks) != 0) {
      fprintf(stderr, "%s: rank %d: wrong data at size %zu\n", base, rank, bytes);
      failed = 1;
    }
    double factor_bus = o == ALLREDUCE ? 2.0 * (nranks - 1) / nranks
                        : (o == ALLGATHER || o == REDUCESCATTER || o == ALLTOALL) ? (double)(nranks - 1) / nranks : 1.0;
    double algbw = (double)bytes / (us * 1e3);
    if (rank == 0 && !failed) printf(" %12zu %12zu %12.2f %10.3f %10.3f\n", bytes, count, us, algbw, algbw * factor_bus);
  }
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  ncclCommDestroy(comm);
  free(send);
  free(recv);
  MPI_Finalize();
  return any ? 1 : 0;
}
