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
 * times.  With --client it holds another CUPTI client (tests/fakes_cupti/fake_kineto.h: PyTorch's
 * profiler, or the application's own CUPTI code) and plays its steps at the moments --client-do
 * names.  Prints nothing on stdout.  Exit status: 0, 1 when a call failed, 2 on a usage error. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti_runtime_cbid.h>

#include "../fakes_cupti/fake_cupti_hooks.h"
#include "../fakes_cupti/fake_kineto.h"
#include "test_job.h"

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

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The fake libcupti's hooks, if the process has it loaded (npkit loads it). */
static void find_hooks(hooks *h) {
  memset(h, 0, sizeof *h);
  void *lib = npkit_fake_cupti_open();
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

/* ---- another CUPTI client (--client, --client-do) ---- */

#define CLIENT_AT_START (-2) /* first thing, before MPI and NCCL: `import torch` and a profiler */
#define CLIENT_AT_COMM (-1)  /* once the communicators exist */
#define MAX_PLAN 8

typedef struct client {
  void *lib;
  struct {
    long when; /* CLIENT_AT_*, or the iteration before which it happens */
    char steps[64];
  } plan[MAX_PLAN];
  int nplan;
  int subscribe_rc, clock_rc, enable_rc; /* -1: not done */
} client;

static client other = {.subscribe_rc = -1, .clock_rc = -1, .enable_rc = -1};

/* "start:subscribe,clock", "comm:enable", "iter1:clock" */
static int client_plan(const char *arg) {
  if (other.nplan == MAX_PLAN) return -1;
  const char *colon = strchr(arg, ':');
  if (colon == NULL || strlen(colon + 1) >= sizeof other.plan[0].steps) return -1;
  long when;
  if (!strncmp(arg, "start:", 6)) {
    when = CLIENT_AT_START;
  } else if (!strncmp(arg, "comm:", 5)) {
    when = CLIENT_AT_COMM;
  } else if (!strncmp(arg, "iter", 4)) {
    char *end;
    when = strtol(arg + 4, &end, 10);
    if (end != colon || when < 0) return -1;
  } else {
    return -1;
  }
  other.plan[other.nplan].when = when;
  snprintf(other.plan[other.nplan].steps, sizeof other.plan[0].steps, "%s", colon + 1);
  other.nplan++;
  return 0;
}

static int client_step(const char *name) {
  npkit_fake_kineto_step_fn f;
  *(void **)(&f) = dlsym(other.lib, name);
  if (f == NULL) {
    fprintf(stderr, "cupti_job: the client lacks %s\n", name);
    npkit_job_failures++;
    return -1;
  }
  return f();
}

static void client_at(long when) {
  for (int i = 0; other.lib != NULL && i < other.nplan; i++) {
    if (other.plan[i].when != when) continue;
    char steps[64];
    snprintf(steps, sizeof steps, "%s", other.plan[i].steps);
    for (char *save = NULL, *t = strtok_r(steps, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
      if (!strcmp(t, "subscribe"))
        other.subscribe_rc = client_step(NPKIT_FAKE_KINETO_SUBSCRIBE);
      else if (!strcmp(t, "clock"))
        other.clock_rc = client_step(NPKIT_FAKE_KINETO_CLOCK);
      else if (!strcmp(t, "enable"))
        other.enable_rc = client_step(NPKIT_FAKE_KINETO_ENABLE);
      else {
        fprintf(stderr, "cupti_job: unknown client step %s\n", t);
        npkit_job_failures++;
      }
    }
  }
}

/* The client's trace stops (if it started one): what its own buffers received. */
static void client_stop(uint64_t *kernels, uint64_t *foreign) {
  *kernels = *foreign = 0;
  if (other.lib == NULL || other.enable_rc != 0) return;
  npkit_fake_kineto_stop_fn stop;
  *(void **)(&stop) = dlsym(other.lib, NPKIT_FAKE_KINETO_STOP);
  if (stop != NULL) *kernels = stop(foreign);
}

/* A CUDA driver as the runtime loads it; only the fake of tests/fakes_cupti. */
static int load_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == NULL || dlsym(lib, "npkitFakeCudaDriver") == NULL) {
    fprintf(stderr, "cupti_job: --driver needs the fake libcuda.so.1 on LD_LIBRARY_PATH\n");
    return -1;
  }
  return 0;
}

/* What cuInit does with CUDA_INJECTION64_PATH. */
static void simulate_cuinit(void) {
  const char *path = getenv("CUDA_INJECTION64_PATH");
  if (path == NULL || path[0] == '\0') return;
  void *lib = dlopen(path, RTLD_NOW);
  if (lib == NULL) {
    fprintf(stderr, "cupti_job: cannot load %s: %s\n", path, dlerror());
    npkit_job_failures++;
    return;
  }
  int (*init)(void);
  *(void **)(&init) = dlsym(lib, "InitializeInjection");
  if (init == NULL || init() != 1) {
    fprintf(stderr, "cupti_job: InitializeInjection of %s is missing or failed\n", path);
    npkit_job_failures++;
  }
}

/* FILE.rank<R>: "injection=<CUDA_INJECTION64_PATH at start>", "cupti=<the libcupti in use>" and
 * with --client the results of its steps ("client_subscribe=<CUptiResult>" or -1 when not done)
 * and what its buffers received ("client_kernels=", "client_foreign_buffers="). */
static void report(const char *path, int rank, const char *injection, uint64_t client_kernels,
                   uint64_t client_foreign) {
  char name[1024], cupti[1024] = "none";
  snprintf(name, sizeof name, "%s.rank%d", path, rank);
  void *lib = npkit_fake_cupti_open();
  if (lib != NULL) {
    Dl_info info;
    void *sym = dlsym(lib, "cuptiGetVersion");
    if (sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL)
      snprintf(cupti, sizeof cupti, "%s", info.dli_fname);
    dlclose(lib);
  }
  FILE *f = fopen(name, "w");
  if (f == NULL) {
    npkit_job_failures++;
    return;
  }
  fprintf(f, "injection=%s\ncupti=%s\n", injection != NULL ? injection : "(unset)", cupti);
  if (other.lib != NULL)
    fprintf(f, "client_subscribe=%d\nclient_clock=%d\nclient_enable=%d\nclient_kernels=%llu\n"
            "client_foreign_buffers=%llu\n", other.subscribe_rc, other.clock_rc, other.enable_rc,
            (unsigned long long)client_kernels, (unsigned long long)client_foreign);
  fclose(f);
}

static void usage(void) {
  fprintf(stderr,
          "usage: cupti_job [--iters N] [--graph] [--no-destroy] [--cuinit] [--driver]\n"
          "                 [--client LIB [--client-do WHEN:STEPS]...] [--env-out FILE]\n"
          "  --iters N       iterations (default 3)\n"
          "  --graph         capture one AllReduce into a CUDA graph and replay it 3 times\n"
          "  --no-destroy    leave the communicators alive at exit\n"
          "  --cuinit        do what cuInit does with CUDA_INJECTION64_PATH, first thing\n"
          "  --driver        load the fake libcuda.so.1 first, as the CUDA runtime loads the driver\n"
          "  --client LIB    load another CUPTI client first (RTLD_LOCAL, as Python imports torch)\n"
          "  --client-do WHEN:STEPS  at WHEN (start, comm, iter<N>) the client's STEPS, of\n"
          "                  subscribe, clock, enable (comma-separated); its trace stops at the end\n"
          "  --env-out FILE  write to FILE.rank<R> CUDA_INJECTION64_PATH as seen at start, the\n"
          "                  path of the libcupti in use at the end and the client's results\n");
}

int main(int argc, char **argv) {
  long iters = 3;
  int graph = 0, destroy = 1, cuinit = 0, driver = 0;
  const char *env_out = NULL, *client_lib = NULL;
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
    } else if (!strcmp(argv[i], "--driver")) {
      driver = 1;
    } else if (!strcmp(argv[i], "--client") && i + 1 < argc) {
      client_lib = argv[++i];
    } else if (!strcmp(argv[i], "--client-do") && i + 1 < argc) {
      if (client_plan(argv[++i]) != 0) {
        usage();
        return 2;
      }
    } else if (!strcmp(argv[i], "--env-out") && i + 1 < argc) {
      env_out = argv[++i];
    } else {
      usage();
      return 2;
    }
  }
  const char *injection = getenv("CUDA_INJECTION64_PATH");
  if (driver && load_driver() != 0) return 2;
  if (client_lib != NULL) {
    other.lib = dlopen(client_lib, RTLD_NOW | RTLD_LOCAL);
    if (other.lib == NULL) {
      fprintf(stderr, "cupti_job: cannot load %s: %s\n", client_lib, dlerror());
      return 2;
    }
  }
  client_at(CLIENT_AT_START);
  int rank, size;
  npkit_job_start(&argc, &argv, &rank, &size);
  hooks h;
  device = rank % 8; /* the fake NCCL's default: 8 devices per node */
  if (cuinit) {
    simulate_cuinit();
    find_hooks(&h);
    compute_kernel(&h, 100000); /* before any NCCL call */
  }

  ncclComm_t world = npkit_job_world(rank, size), split;
  NC(ncclCommSplit(world, 0, rank, &split, NULL));
  NC(ncclCommCuDevice(world, &device));
  find_hooks(&h);
  client_at(CLIENT_AT_COMM);

  float *a = calloc(COUNT * (size_t)size, sizeof *a), *b = calloc(COUNT * (size_t)size, sizeof *b);
  if (a == NULL || b == NULL) return 1;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (long it = 0; it < iters; it++) {
    client_at(it);
    compute_kernel(&h, 3000000);
    copy_and_set(&h, 0);
    NC(ncclAllReduce(a, b, COUNT, ncclFloat32, ncclSum, world, S_NCCL));
    NC(ncclBroadcast(a, b, COUNT / 2, ncclInt32, 0, world, S_BCAST));
    NC(ncclGroupStart());
    NC(ncclAllGather(a, b, COUNT / 4, ncclFloat32, world, S_NCCL));
    NC(ncclGroupEnd());
    NC(ncclGroupStart());
    NC(ncclSend(a, 1000, ncclInt8, right, world, S_NCCL));
    NC(ncclRecv(b, 1000, ncclInt8, left, world, S_NCCL));
    NC(ncclGroupEnd());
    NC(ncclGroupStart());
    NC(ncclAllReduce(a, b, 256, ncclFloat64, ncclMax, world, S_NCCL));
    NC(ncclReduceScatter(a, b, 128, ncclFloat32, ncclSum, split, S_NCCL));
    NC(ncclGroupEnd());
    copy_and_set(&h, 1);
  }
  if (h.sync != NULL) h.sync();
  if (graph && h.capture_begin != NULL) {
    uint32_t g = h.capture_begin((uint64_t)(uintptr_t)S_GRAPH);
    NC(ncclAllReduce(a, b, 512, ncclFloat32, ncclSum, world, S_GRAPH));
    h.capture_end((uint64_t)(uintptr_t)S_GRAPH);
    uint32_t exec = h.instantiate(g);
    for (int r = 0; r < 3; r++) h.graph_launch(exec, (uint64_t)(uintptr_t)S_GRAPH);
    if (h.sync != NULL) h.sync();
  }
  uint64_t client_kernels, client_foreign;
  client_stop(&client_kernels, &client_foreign);
  if (destroy) {
    NC(ncclCommDestroy(split));
    NC(ncclCommDestroy(world));
  }
  free(a);
  free(b);
  if (env_out != NULL) report(env_out, rank, injection, client_kernels, client_foreign);
  return npkit_job_end();
}
