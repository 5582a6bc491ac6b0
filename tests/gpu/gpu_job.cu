// gpu_job: NCCL collectives and a compute kernel on a real GPU, for the check of GPU activity
// (run_gpu_check.sh).  One process; by default one GPU (one rank), or --ngpus N devices of one
// communicator set made with ncclCommInitAll.  Or one rank of a job of several processes
// (--rank R --nranks N --id-file F): rank 0 writes NCCL's unique id to F, the others read it.
// device_check.sh runs two such processes on one GPU, each with its own NCCL_HOSTID, so that NCCL
// takes them for two hosts (NCCL 2.28 src/misc/utils.cc getHostHashOnce: NCCL_HOSTID replaces the
// host name; src/init.cc refuses two ranks of one host on one GPU, "Duplicate GPU detected") and
// connects them through its socket transport: real NCCL kernels, tasks, proxy operations and
// network steps, the events of NCCL's profiler plugin, on a machine with one GPU.
//
// Per iteration and message size (1 MB to 128 MB, powers of two): a compute kernel ("spin",
// --spin-us long) on its own stream, then on the NCCL stream AllReduce (sum), AllGather,
// ReduceScatter (sum) and AllReduce (avg), so that communication and computation overlap.  With
// one rank NCCL runs the sums and gathers as device-to-device copies and the average as its
// one-rank reduction kernel; with several, as NCCL kernels.
//
// Prints nothing on stdout; one summary line on stderr.  Exit status: 0, 1 on any CUDA or NCCL
// error, 2 on a usage error.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <time.h>
#include <unistd.h>

#define CUDA_CHECK(call)                                                                   \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "gpu_job: %s failed: %s\n", #call, cudaGetErrorString(e_));         \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

#define NCCL_CHECK(call)                                                                   \
  do {                                                                                     \
    ncclResult_t r_ = (call);                                                              \
    if (r_ != ncclSuccess) {                                                               \
      fprintf(stderr, "gpu_job: %s failed: %s\n", #call, ncclGetErrorString(r_));         \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

#define MAX_GPUS 8
#define MIN_BYTES (1ull << 20)

// Busy for `cycles` clock cycles of the SM it runs on.
__global__ void spin(float *out, long long cycles) {
  long long start = clock64();
  float acc = 0.0f;
  while (clock64() - start < cycles) acc += 1.0f;
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = acc;
}

struct gpu {
  ncclComm_t comm;
  cudaStream_t nccl, compute;
  float *send, *recv, *scratch;
  long long spin_cycles;
};

static void usage() {
  fprintf(stderr,
          "usage: gpu_job [--ngpus N | --rank R --nranks N --id-file F] [--iters N] [--spin-us U]\n"
          "               [--max-mb M] [--graph-replays K]\n"
          "  --ngpus N    GPUs of the communicator (default 1; at most the visible ones, 8)\n"
          "  --rank R --nranks N --id-file F\n"
          "               one rank of N processes, all on GPU 0; rank 0 writes NCCL's unique id to F\n"
          "  --iters N    iterations over the message sizes (default 2)\n"
          "  --spin-us U  length of each compute kernel in microseconds (default 2000)\n"
          "  --max-mb M   largest message in MB, a power of two (default 128)\n"
          "  --graph-replays K\n"
          "               then capture one 1 MB AllReduce (sum) in a CUDA graph and replay it K times\n"
          "  --stall-at K this process stops before its collective number K (from 0) and sleeps until\n"
          "               it is killed: its peers wait in that collective, a hang as a job sees it\n");
}

// Rank 0 publishes the id with a rename, so that a reader sees all of it or nothing.
static int share_id(ncclUniqueId *id, int rank, const char *path) {
  if (rank == 0) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
      fprintf(stderr, "gpu_job: cannot write the unique id to %s\n", path);
      return -1;
    }
    return 0;
  }
  for (int tries = 0; tries < 6000; tries++) {  // 60 s
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return 0;
    }
    usleep(10000);
  }
  fprintf(stderr, "gpu_job: no unique id in %s after 60 s\n", path);
  return -1;
}

static int parse(const char *s, long lo, long hi, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  long ngpus = 1, iters = 2, spin_us = 2000, rank = -1, nranks = 0, max_mb = 128, replays = 0, stall_at = -1;
  const char *id_file = NULL;
  for (int i = 1; i < argc; i += 2) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    int bad;
    if (!strcmp(argv[i], "--ngpus")) bad = parse(v, 1, MAX_GPUS, &ngpus);
    else if (!strcmp(argv[i], "--iters")) bad = parse(v, 1, 1000, &iters);
    else if (!strcmp(argv[i], "--spin-us")) bad = parse(v, 1, 10000000, &spin_us);
    else if (!strcmp(argv[i], "--rank")) bad = parse(v, 0, 1023, &rank);
    else if (!strcmp(argv[i], "--nranks")) bad = parse(v, 2, 1024, &nranks);
    else if (!strcmp(argv[i], "--max-mb")) bad = parse(v, 1, 128, &max_mb) || (max_mb & (max_mb - 1));
    else if (!strcmp(argv[i], "--graph-replays")) bad = parse(v, 0, 1000, &replays);
    else if (!strcmp(argv[i], "--stall-at")) bad = parse(v, 0, 1000000, &stall_at);
    else if (!strcmp(argv[i], "--id-file")) bad = (id_file = v)[0] == '\0';
    else bad = -1;
    if (bad) {
      usage();
      return 2;
    }
  }
  if ((rank >= 0) != (nranks > 0) || (rank >= 0) != (id_file != NULL) || (nranks && rank >= nranks) ||
      (nranks && ngpus != 1)) {
    usage();
    return 2;
  }
  const size_t max_bytes = (size_t)max_mb << 20;
  int visible = 0;
  CUDA_CHECK(cudaGetDeviceCount(&visible));
  if (visible < ngpus) {
    fprintf(stderr, "gpu_job: %ld GPUs asked for, %d visible\n", ngpus, visible);
    return 1;
  }
  // n: the GPUs this process drives (one per rank of its own); size: ranks of the communicator
  int n = (int)ngpus, size = nranks ? (int)nranks : n, devs[MAX_GPUS];
  gpu g[MAX_GPUS];
  for (int d = 0; d < n; d++) devs[d] = d;
  ncclComm_t comms[MAX_GPUS];
  if (nranks) {
    ncclUniqueId id;
    if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    if (share_id(&id, (int)rank, id_file) != 0) return 1;
    CUDA_CHECK(cudaSetDevice(0));
    NCCL_CHECK(ncclCommInitRank(&comms[0], (int)nranks, id, (int)rank));
  } else {
    NCCL_CHECK(ncclCommInitAll(comms, n, devs));
  }

  for (int d = 0; d < n; d++) {
    CUDA_CHECK(cudaSetDevice(d));
    g[d].comm = comms[d];
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[d].nccl, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[d].compute, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&g[d].send, max_bytes));
    CUDA_CHECK(cudaMalloc(&g[d].recv, max_bytes * (size_t)size));
    CUDA_CHECK(cudaMalloc(&g[d].scratch, 64));
    CUDA_CHECK(cudaMemset(g[d].send, 0, max_bytes));
    CUDA_CHECK(cudaMemset(g[d].recv, 0, max_bytes * (size_t)size));
    int khz = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d));
    g[d].spin_cycles = (long long)spin_us * khz / 1000;
  }

  long collectives = 0;
  for (long it = 0; it < iters; it++) {
    for (size_t bytes = MIN_BYTES; bytes <= max_bytes; bytes *= 2) {
      size_t count = bytes / sizeof(float);
      for (int d = 0; d < n; d++) {
        CUDA_CHECK(cudaSetDevice(d));
        spin<<<1, 32, 0, g[d].compute>>>(g[d].scratch, g[d].spin_cycles);
        CUDA_CHECK(cudaGetLastError());
      }
      // One communicator per GPU in one thread: the calls of all GPUs go in one group.
      for (int op = 0; op < 4; op++) {
        if (collectives == stall_at) {
          fprintf(stderr, "gpu_job: stalling before collective %ld\n", stall_at);
          for (;;) pause();
        }
        if (n > 1) NCCL_CHECK(ncclGroupStart());
        for (int d = 0; d < n; d++) {
          if (op == 0)
            NCCL_CHECK(ncclAllReduce(g[d].send, g[d].recv, count, ncclFloat32, ncclSum, g[d].comm, g[d].nccl));
          else if (op == 1)
            NCCL_CHECK(ncclAllGather(g[d].send, g[d].recv, count / size, ncclFloat32, g[d].comm, g[d].nccl));
          else if (op == 2)
            NCCL_CHECK(ncclReduceScatter(g[d].send, g[d].recv, count / size, ncclFloat32, ncclSum, g[d].comm,
                                         g[d].nccl));
          else
            NCCL_CHECK(ncclAllReduce(g[d].send, g[d].recv, count, ncclFloat32, ncclAvg, g[d].comm, g[d].nccl));
        }
        if (n > 1) NCCL_CHECK(ncclGroupEnd());
        collectives++;
      }
    }
  }
  // A CUDA graph that captured one AllReduce, replayed: NCCL runs the captured work at each replay
  // without a call (the library ties the replays to the captured call through NCCL's events).
  if (replays > 0) {
    for (int d = 0; d < n; d++) {
      CUDA_CHECK(cudaSetDevice(d));
      CUDA_CHECK(cudaStreamSynchronize(g[d].nccl));
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CUDA_CHECK(cudaStreamBeginCapture(g[d].nccl, cudaStreamCaptureModeThreadLocal));
      NCCL_CHECK(ncclAllReduce(g[d].send, g[d].recv, MIN_BYTES / sizeof(float), ncclFloat32, ncclSum, g[d].comm,
                               g[d].nccl));
      CUDA_CHECK(cudaStreamEndCapture(g[d].nccl, &graph));
      CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      for (long r = 0; r < replays; r++) CUDA_CHECK(cudaGraphLaunch(exec, g[d].nccl));
      CUDA_CHECK(cudaStreamSynchronize(g[d].nccl));
      CUDA_CHECK(cudaGraphExecDestroy(exec));
      CUDA_CHECK(cudaGraphDestroy(graph));
    }
  }
  float check = -1.0f;
  for (int d = 0; d < n; d++) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaStreamSynchronize(g[d].nccl));
    CUDA_CHECK(cudaStreamSynchronize(g[d].compute));
    CUDA_CHECK(cudaMemcpy(&check, g[d].recv, sizeof check, cudaMemcpyDeviceToHost));
  }
  for (int d = 0; d < n; d++) {
    CUDA_CHECK(cudaSetDevice(d));
    NCCL_CHECK(ncclCommDestroy(g[d].comm));
    CUDA_CHECK(cudaFree(g[d].send));
    CUDA_CHECK(cudaFree(g[d].recv));
    CUDA_CHECK(cudaFree(g[d].scratch));
    CUDA_CHECK(cudaStreamDestroy(g[d].nccl));
    CUDA_CHECK(cudaStreamDestroy(g[d].compute));
  }
  if (check != 0.0f) {
    fprintf(stderr, "gpu_job: the received data is %g, want 0\n", check);
    return 1;
  }
  fprintf(stderr, "gpu_job: ok: %ld collective steps on %d GPU(s) of %d rank(s), %ld iterations, %ld graph replays\n",
          collectives, n, size, iters, replays);
  return 0;
}
