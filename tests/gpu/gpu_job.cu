// gpu_job: NCCL collectives and a compute kernel on a real GPU, for the check of GPU activity
// (run_gpu_check.sh).  One process; by default one GPU (one rank), or --ngpus N devices of one
// communicator set made with ncclCommInitAll.
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
#define MAX_BYTES (128ull << 20)

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
          "usage: gpu_job [--ngpus N] [--iters N] [--spin-us U]\n"
          "  --ngpus N    GPUs of the communicator (default 1; at most the visible ones, 8)\n"
          "  --iters N    iterations over the message sizes (default 2)\n"
          "  --spin-us U  length of each compute kernel in microseconds (default 2000)\n");
}

static int parse(const char *s, long lo, long hi, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  long ngpus = 1, iters = 2, spin_us = 2000;
  for (int i = 1; i < argc; i += 2) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    int bad;
    if (!strcmp(argv[i], "--ngpus")) bad = parse(v, 1, MAX_GPUS, &ngpus);
    else if (!strcmp(argv[i], "--iters")) bad = parse(v, 1, 1000, &iters);
    else if (!strcmp(argv[i], "--spin-us")) bad = parse(v, 1, 10000000, &spin_us);
    else bad = -1;
    if (bad) {
      usage();
      return 2;
    }
  }
  int visible = 0;
  CUDA_CHECK(cudaGetDeviceCount(&visible));
  if (visible < ngpus) {
    fprintf(stderr, "gpu_job: %ld GPUs asked for, %d visible\n", ngpus, visible);
    return 1;
  }
  int n = (int)ngpus, devs[MAX_GPUS];
  gpu g[MAX_GPUS];
  for (int d = 0; d < n; d++) devs[d] = d;
  ncclComm_t comms[MAX_GPUS];
  NCCL_CHECK(ncclCommInitAll(comms, n, devs));

  for (int d = 0; d < n; d++) {
    CUDA_CHECK(cudaSetDevice(d));
    g[d].comm = comms[d];
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[d].nccl, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[d].compute, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&g[d].send, MAX_BYTES));
    CUDA_CHECK(cudaMalloc(&g[d].recv, MAX_BYTES * (size_t)n));
    CUDA_CHECK(cudaMalloc(&g[d].scratch, 64));
    CUDA_CHECK(cudaMemset(g[d].send, 0, MAX_BYTES));
    CUDA_CHECK(cudaMemset(g[d].recv, 0, MAX_BYTES * (size_t)n));
    int khz = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d));
    g[d].spin_cycles = (long long)spin_us * khz / 1000;
  }

  long collectives = 0;
  for (long it = 0; it < iters; it++) {
    for (size_t bytes = MIN_BYTES; bytes <= MAX_BYTES; bytes *= 2) {
      size_t count = bytes / sizeof(float);
      for (int d = 0; d < n; d++) {
        CUDA_CHECK(cudaSetDevice(d));
        spin<<<1, 32, 0, g[d].compute>>>(g[d].scratch, g[d].spin_cycles);
        CUDA_CHECK(cudaGetLastError());
      }
      // One communicator per GPU in one thread: the calls of all GPUs go in one group.
      for (int op = 0; op < 4; op++) {
        if (n > 1) NCCL_CHECK(ncclGroupStart());
        for (int d = 0; d < n; d++) {
          if (op == 0)
            NCCL_CHECK(ncclAllReduce(g[d].send, g[d].recv, count, ncclFloat32, ncclSum, g[d].comm, g[d].nccl));
          else if (op == 1)
            NCCL_CHECK(ncclAllGather(g[d].send, g[d].recv, count / n, ncclFloat32, g[d].comm, g[d].nccl));
          else if (op == 2)
            NCCL_CHECK(ncclReduceScatter(g[d].send, g[d].recv, count / n, ncclFloat32, ncclSum, g[d].comm,
                                         g[d].nccl));
          else
            NCCL_CHECK(ncclAllReduce(g[d].send, g[d].recv, count, ncclFloat32, ncclAvg, g[d].comm, g[d].nccl));
        }
        if (n > 1) NCCL_CHECK(ncclGroupEnd());
        collectives++;
      }
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
  fprintf(stderr, "gpu_job: ok: %ld collective steps on %d GPU(s), %ld iterations\n", collectives, n, iters);
  return 0;
}
