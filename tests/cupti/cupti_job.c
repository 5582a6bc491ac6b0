/* cupti_job: an MPI job whose NCCL calls and "GPU work" are known exactly, for the tests of the GPU
 * source (test_cupti_*.py).  It runs under the fake NCCL, which reports the kernels of its calls
 * to the fake libcupti; compute kernels, copies and memsets are launched through the fake's hooks.
 *
 * Streams (cudaStream_t values; the fake CUPTI gives them stream ids):
 *   0x1000  NCCL calls            0x2000  compute kernels and copies
 *   0x3000  the Broadcast          0x4000  the collective captured into a CUDA graph
 *
 * Every iteration: a compute kernel (long: it completes after the NCCL kernels launched after it),
 * a host-to-device copy, AllReduce, Broadcast, a group with one AllGather, a group with a
 * Send/Recv pair, a group with AllReduce on the world and ReduceScatter on a split communicator,
 * a memset.  With --graph the job then captures one AllReduce into a graph and replays it three
 * times.  Prints nothing on stdout.  Exit status: 0, 1 when a call failed, 2 on a usage error. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti_runtime_cbid.h>

#include "../fakes_cupti/fake_cupti_hooks.h"

#define S_NCCL ((cudaStream_t)(uintptr_t)0x1000)
#define S_COMPUTE ((cudaStream_t)(uintptr_t)0x2000)
#define S_BCAST ((cudaStream_t)(uintptr_t)0x3000)
#define S_GRAPH ((cudaStream_t)(uintptr_t)0x4000)
#define COUNT 4096

typedef struct hooks {
  npkit_fake_kernel_fn kernel;
  npkit_fake_copy_fn memcpy, memset;
  npkit_fake_sync_fn sync;
  npkit_fake_capture_fn capture_begin, capture_end;
  npkit_fake_instantiate_fn instantiate;
  npkit_fake_graph_launch_fn graph_launch;
} hooks;

static int failures;

#define CHECK(call)                                                                 \
  do {                                                                              \
    ncclResult_t r_ = (call);                                                       \
    if (r_ != ncclSuccess) {                                                        \
      fprintf(stderr, "cupti_job: %s failed: %s\n", #call, ncclGetErrorString(r_)); \
      failures++;                                                                   \
    }                                                                               \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The fake libcupti's hooks, if the process has it loaded (npkit loads it). */
static void find_hooks(hooks *h) {
  memset(h, 0, sizeof *h);
  void *lib = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == NULL) return;
  *(void **)(&h->kernel) = dlsym(lib, NPKIT_FAKE_CUPTI_KERNEL);
  *(void **)(&h->memcpy) = dlsym(lib, NPKIT_FAKE_CUPTI_MEMCPY);
  *(void **)(&h->memset) = dlsym(lib, NPKIT_FAKE_CUPTI_MEMSET);
  *(void **)(&h->sync) = dlsym(lib, NPKIT_FAKE_CUPTI_SYNC);
  *(void **)(&h->capture_begin) = dlsym(lib, NPKIT_FAKE_CUPTI_CAPTURE_BEGIN);
  *(void **)(&h->capture_end) = dlsym(lib, NPKIT_FAKE_CUPTI_CAPTURE_END);
  *(void **)(&h->instantiate) = dlsym(lib, NPKIT_FAKE_CUPTI_INSTANTIATE);
  *(void **)(&h->graph_launch) = dlsym(lib, NPKIT_FAKE_CUPTI_GRAPH_LAUNCH);
  dlclose(lib);
}

static int device; /* the communicator's, like a job that calls cudaSetDevice(local rank) */

static void compute_kernel(const hooks *h, uint64_t dur_ns) {
  if (h->kernel == NULL) return;
  uint64_t t = now_ns();
  /* an application's kernel: cudaLaunchKernel (runtime API) */
  npkit_fake_kernel k = {.name = "_Z13computeKernelPfi",
                         .api = {NPKIT_FAKE_API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
                         .device = (uint32_t)device,
                         .stream = (uint64_t)(uintptr_t)S_COMPUTE, .start_ns = t,
                         .end_ns = t + dur_ns, .grid = {256, 1, 1}, .block = {128, 1, 1},
                         .registers = 32, .static_shared = 1024, .dynamic_shared = 0};
  h->kernel(&k);
}

static void copy_and_set(const hooks *h, int memset_op) {
  npkit_fake_copy_fn f = memset_op ? h->memset : h->memcpy;
  if (f == NULL) return;
  uint64_t t = now_ns();
  npkit_fake_api api = {NPKIT_FAKE_API_RUNTIME, memset_op ? CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020
                                                         : CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020};
  npkit_fake_copy c = {.api = api, .bytes = memset_op ? 65536 : 1048576, .copy_kind = 1 /* HtoD */,
                       .src_kind = 2 /* pinned */, .dst_kind = 3 /* device */, .value = 0,
                       .device = (uint32_t)device,
                       .stream = (uint64_t)(uintptr_t)(memset_op ? S_NCCL : S_COMPUTE),
                       .start_ns = t, .end_ns = t + 50000};
  f(&c);
}

/* What cuInit does with CUDA_INJECTION64_PATH. */
static void simulate_cuinit(void) {
  const char *path = getenv("CUDA_INJECTION64_PATH");
  if (path == NULL || path[0] == '\0') return;
  void *lib = dlopen(path, RTLD_NOW);
  if (lib == NULL) {
    fprintf(stderr, "cupti_job: cannot load %s: %s\n", path, dlerror());
    failures++;
    return;
  }
  int (*init)(void);
  *(void **)(&init) = dlsym(lib, "InitializeInjection");
  if (init == NULL || init() != 1) {
    fprintf(stderr, "cupti_job: InitializeInjection of %s is missing or failed\n", path);
    failures++;
  }
}

/* FILE.rank<R>: "injection=<CUDA_INJECTION64_PATH at start>" and "cupti=<the libcupti loaded>". */
static void report(const char *path, int rank, const char *injection) {
  char name[1024], cupti[1024] = "none";
  snprintf(name, sizeof name, "%s.rank%d", path, rank);
  void *lib = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_NOLOAD);
  if (lib != NULL) {
    Dl_info info;
    void *sym = dlsym(lib, "cuptiGetVersion");
    if (sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL)
      snprintf(cupti, sizeof cupti, "%s", info.dli_fname);
    dlclose(lib);
  }
  FILE *f = fopen(name, "w");
  if (f == NULL) {
    failures++;
    return;
  }
  fprintf(f, "injection=%s\ncupti=%s\n", injection != NULL ? injection : "(unset)", cupti);
  fclose(f);
}

static void usage(void) {
  fprintf(stderr,
          "usage: cupti_job [--iters N] [--graph] [--no-destroy] [--cuinit] [--env-out FILE]\n"
          "  --iters N       iterations (default 3)\n"
          "  --graph         capture one AllReduce into a CUDA graph and replay it 3 times\n"
          "  --no-destroy    leave the communicators alive at exit\n"
          "  --cuinit        do what cuInit does with CUDA_INJECTION64_PATH, first thing\n"
          "  --env-out FILE  write to FILE.rank<R> CUDA_INJECTION64_PATH as seen at start and\n"
          "                  the path of the libcupti loaded at the end\n");
}

int main(int argc, char **argv) {
  long iters = 3;
  int graph = 0, destroy = 1, cuinit = 0;
  const char *env_out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
      char *end;
      iters = strtol(argv[++i], &end, 10);
      if (*end != '\0' || iters < 0 || iters > 100000) {
        usage();
        return 2;
      }
    } else if (!strcmp(argv[i], "--graph")) {
      graph = 1;
    } else if (!strcmp(argv[i], "--no-destroy")) {
      destroy = 0;
    } else if (!strcmp(argv[i], "--cuinit")) {
      cuinit = 1;
    } else if (!strcmp(argv[i], "--env-out") && i + 1 < argc) {
      env_out = argv[++i];
    } else {
      usage();
      return 2;
    }
  }
  const char *injection = getenv("CUDA_INJECTION64_PATH");
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  hooks h;
  device = rank % 8; /* the fake NCCL's default: 8 devices per node */
  if (cuinit) {
    simulate_cuinit();
    find_hooks(&h);
    compute_kernel(&h, 100000); /* before any NCCL call */
  }

  ncclUniqueId id;
  if (rank == 0) CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t world, split;
  CHECK(ncclCommInitRank(&world, size, id, rank));
  CHECK(ncclCommSplit(world, 0, rank, &split, NULL));
  CHECK(ncclCommCuDevice(world, &device));
  find_hooks(&h);

  float *a = calloc(COUNT * (size_t)size, sizeof *a), *b = calloc(COUNT * (size_t)size, sizeof *b);
  if (a == NULL || b == NULL) return 1;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (long it = 0; it < iters; it++) {
    compute_kernel(&h, 3000000);
    copy_and_set(&h, 0);
    CHECK(ncclAllReduce(a, b, COUNT, ncclFloat32, ncclSum, world, S_NCCL));
    CHECK(ncclBroadcast(a, b, COUNT / 2, ncclInt32, 0, world, S_BCAST));
    CHECK(ncclGroupStart());
    CHECK(ncclAllGather(a, b, COUNT / 4, ncclFloat32, world, S_NCCL));
    CHECK(ncclGroupEnd());
    CHECK(ncclGroupStart());
    CHECK(ncclSend(a, 1000, ncclInt8, right, world, S_NCCL));
    CHECK(ncclRecv(b, 1000, ncclInt8, left, world, S_NCCL));
    CHECK(ncclGroupEnd());
    CHECK(ncclGroupStart());
    CHECK(ncclAllReduce(a, b, 256, ncclFloat64, ncclMax, world, S_NCCL));
    CHECK(ncclReduceScatter(a, b, 128, ncclFloat32, ncclSum, split, S_NCCL));
    CHECK(ncclGroupEnd());
    copy_and_set(&h, 1);
  }
  if (h.sync != NULL) h.sync();
  if (graph && h.capture_begin != NULL) {
    uint32_t g = h.capture_begin((uint64_t)(uintptr_t)S_GRAPH);
    CHECK(ncclAllReduce(a, b, 512, ncclFloat32, ncclSum, world, S_GRAPH));
    h.capture_end((uint64_t)(uintptr_t)S_GRAPH);
    uint32_t exec = h.instantiate(g);
    for (int r = 0; r < 3; r++) h.graph_launch(exec, (uint64_t)(uintptr_t)S_GRAPH);
    if (h.sync != NULL) h.sync();
  }
  if (destroy) {
    CHECK(ncclCommDestroy(split));
    CHECK(ncclCommDestroy(world));
  }
  free(a);
  free(b);
  if (env_out != NULL) report(env_out, rank, injection);
  MPI_Finalize();
  return failures ? 1 : 0;
}
