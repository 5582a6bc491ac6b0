/* The GPU side of the fake: the kernels NCCL would have launched, and the GPU's own clock.
 *
 * A run of operations (one call, or a whole group at ncclGroupEnd) launches one kernel per
 * communicator and stream, named as NCCL 2.28 names them (ncclDevKernel_AllReduce_Sum_f32_RING_LL,
 * ncclDevKernel_SendRecv, ncclDevKernel_Generic when a group mixes kinds), mangled as the CUDA
 * compiler emits them.  As on a GPU a kernel has two moments for CUPTI: its launch, a traced
 * cuLaunchKernelEx on the launching thread (NVIDIA/nccl v2.28.9-1 src/enqueue.cc
 * ncclLaunchKernel: the driver API through a cudaGetDriverEntryPointByVersion pointer), which is
 * where CUPTI correlates it with the external ids the thread pushed; and its activity record once
 * it has run.  The kernel starts FAKE_NCCL_LAUNCH_US after its launch and ends when the run's data
 * has moved; kernels of one stream run one after the other.  One-rank collectives copy with
 * cudaMemcpyAsync instead (src/device/onerank.cu).  Without the fake CUPTI loaded, nothing is
 * reported.
 *
 * The GPU clock (%globaltimer, read by NCCL's kernels for the kernel-channel events,
 * src/device/common.h) is CLOCK_REALTIME + FAKE_NCCL_GPU_OFFSET_US, drifting by
 * FAKE_NCCL_GPU_DRIFT_PPM from the first reading on: the GPU's own oscillator. */
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../fakes_cupti/fake_cupti_hooks.h"
#include "fake_internal.h"

uint64_t npkit_fake_gpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static _Atomic uint64_t timer_ref;

uint64_t npkit_fake_gpu_timer(uint64_t host_ns) {
  uint64_t ref = atomic_load_explicit(&timer_ref, memory_order_relaxed);
  if (ref == 0) {
    uint64_t want = 0;
    atomic_compare_exchange_strong(&timer_ref, &want, host_ns);
    ref = atomic_load(&timer_ref);
  }
  const npkit_fake_settings *s = npkit_fake_cfg();
  double since = (double)(int64_t)(host_ns - ref);
  return host_ns + (uint64_t)(int64_t)(s->gpu_offset_ns + since * s->gpu_drift);
}

typedef struct hooks {
  npkit_fake_launch_fn launch;
  npkit_fake_kernel_done_fn done;
  npkit_fake_copy_fn memcpy;
  npkit_fake_capture_fn capture_begin, capture_end;
  npkit_fake_instantiate_fn instantiate;
  npkit_fake_graph_launch_fn graph_launch;
} hooks;

static const hooks *cupti(void) {
  static hooks h;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  static _Atomic int found;
  if (atomic_load_explicit(&found, memory_order_acquire)) return &h;
  /* Looked up until the process has the fake CUPTI (the library loads it at its start). */
  void *lib = npkit_fake_cupti_open();
  if (lib == NULL) return NULL;
  (void)once;
  hooks t;
  *(void **)(&t.launch) = dlsym(lib, NPKIT_FAKE_CUPTI_LAUNCH);
  *(void **)(&t.done) = dlsym(lib, NPKIT_FAKE_CUPTI_KERNEL_DONE);
  *(void **)(&t.memcpy) = dlsym(lib, NPKIT_FAKE_CUPTI_MEMCPY);
  *(void **)(&t.capture_begin) = dlsym(lib, NPKIT_FAKE_CUPTI_CAPTURE_BEGIN);
  *(void **)(&t.capture_end) = dlsym(lib, NPKIT_FAKE_CUPTI_CAPTURE_END);
  *(void **)(&t.instantiate) = dlsym(lib, NPKIT_FAKE_CUPTI_INSTANTIATE);
  *(void **)(&t.graph_launch) = dlsym(lib, NPKIT_FAKE_CUPTI_GRAPH_LAUNCH);
  dlclose(lib); /* drops only the reference RTLD_NOLOAD took */
  if (t.launch == NULL || t.done == NULL || t.memcpy == NULL || t.capture_begin == NULL ||
      t.capture_end == NULL || t.instantiate == NULL || t.graph_launch == NULL)
    return NULL;
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  if (!atomic_load_explicit(&found, memory_order_relaxed)) {
    h = t;
    atomic_store_explicit(&found, 1, memory_order_release);
  }
  pthread_mutex_unlock(&lock);
  return &h;
}

static const char *type_name(ncclDataType_t dt) {
  static const char *const names[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16",
                                      "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};
  return (unsigned)dt < sizeof names / sizeof names[0] ? names[dt] : "u8";
}

static const char *op_name(const npkit_fake_red *red) {
  if (red->premul) return "PreMulSum";
  if (red->divide_by) return "SumPostDiv";
  switch (red->op) {
  case NPKIT_FAKE_PROD: return "Prod";
  case NPKIT_FAKE_MAX:
  case NPKIT_FAKE_MIN: return "MinMax";
  default: return "Sum";
  }
}

static bool one_rank_coll(const npkit_fake_op *op) {
  return op->comm != NULL && op->comm->nranks == 1 && op->kind != NPKIT_FAKE_K_SEND &&
         op->kind != NPKIT_FAKE_K_RECV;
}

/* "AllReduce_Sum_f32_RING_LL" (the part after ncclDevKernel_), or "" for operations that launch
 * no kernel. */
static void kernel_base(const npkit_fake_op *op, char *buf, size_t len) {
  const char *coll = NULL;
  buf[0] = '\0';
  if (op->comm == NULL || one_rank_coll(op)) return;
  switch (op->kind) {
  case NPKIT_FAKE_K_ALLREDUCE: coll = "AllReduce"; break;
  case NPKIT_FAKE_K_REDUCE: coll = "Reduce"; break;
  case NPKIT_FAKE_K_REDUCESCATTER: coll = "ReduceScatter"; break;
  case NPKIT_FAKE_K_ALLGATHER: snprintf(buf, len, "AllGather_RING_LL"); return;
  case NPKIT_FAKE_K_BROADCAST: snprintf(buf, len, "Broadcast_RING_LL"); return;
  case NPKIT_FAKE_K_ALLTOALL:
  case NPKIT_FAKE_K_GATHER:
  case NPKIT_FAKE_K_SCATTER:
  case NPKIT_FAKE_K_SEND:
  case NPKIT_FAKE_K_RECV: snprintf(buf, len, "SendRecv"); return;
  default: return;
  }
  snprintf(buf, len, "%s_%s_%s_RING_LL", coll, op_name(&op->red), type_name(op->dt));
}

typedef struct kernel {
  ncclComm_t comm;
  cudaStream_t stream;
  char base[64];       /* "AllReduce_Sum_f32_RING_LL" */
  char name[160];      /* as CUPTI reports it: mangled */
  double sim;          /* bandwidth part of its operations' simulated time */
  uint32_t corr;       /* from its launch, 0 if not launched or not traced */
  uint64_t launch_ns;  /* host time of the launch, 0 if not launched */
} kernel;

struct npkit_fake_kernels {
  kernel *k;
  int n;
};

npkit_fake_kernels *npkit_fake_gpu_plan(const npkit_fake_op *list) {
  npkit_fake_kernels *ks = calloc(1, sizeof *ks);
  if (ks == NULL) return NULL;
  int cap = 0;
  for (const npkit_fake_op *op = list; op != NULL; op = op->next) {
    char base[64];
    kernel_base(op, base, sizeof base);
    if (base[0] == '\0') continue;
    int i = 0;
    while (i < ks->n && !(ks->k[i].comm == op->comm && ks->k[i].stream == op->stream)) i++;
    if (i == ks->n) {
      if (ks->n == cap) {
        cap = cap ? 2 * cap : 4;
        kernel *nk = realloc(ks->k, (size_t)cap * sizeof *nk);
        if (nk == NULL) break;
        ks->k = nk;
      }
      memset(&ks->k[i], 0, sizeof ks->k[i]);
      ks->k[i].comm = op->comm;
      ks->k[i].stream = op->stream;
      snprintf(ks->k[i].base, sizeof ks->k[i].base, "%s", base);
      ks->n++;
    } else if (strcmp(ks->k[i].base, base) != 0) {
      snprintf(ks->k[i].base, sizeof ks->k[i].base, "Generic");
    }
    ks->k[i].sim += op->sim_s;
  }
  for (int i = 0; i < ks->n; i++) {
    char full[96];
    snprintf(full, sizeof full, "ncclDevKernel_%s", ks->k[i].base);
    snprintf(ks->k[i].name, sizeof ks->k[i].name, "_Z%zu%s24ncclDevKernelArgsStorageILm4096EE",
             strlen(full), full);
  }
  return ks;
}

void npkit_fake_gpu_launch_comm(npkit_fake_kernels *ks, ncclComm_t comm, uint64_t *t_ns) {
  *t_ns = npkit_fake_gpu_now();
  if (ks == NULL) return;
  const hooks *h = cupti();
  /* NCCL is not built for per-thread default streams: the legacy cuLaunchKernelEx. */
  npkit_fake_api api = {NPKIT_FAKE_API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx};
  for (int i = 0; i < ks->n; i++) {
    if ((comm != NULL && ks->k[i].comm != comm) || ks->k[i].launch_ns != 0) continue;
    ks->k[i].launch_ns = *t_ns;
    if (h != NULL) ks->k[i].corr = h->launch(&api);
  }
}

uint64_t npkit_fake_gpu_start_of(const npkit_fake_kernels *ks, ncclComm_t comm) {
  uint64_t launch = 0;
  for (int i = 0; ks != NULL && i < ks->n; i++)
    if (ks->k[i].comm == comm && ks->k[i].launch_ns != 0) launch = ks->k[i].launch_ns;
  if (launch == 0) launch = npkit_fake_gpu_now();
  return launch + (uint64_t)((npkit_fake_cfg()->launch_s + npkit_fake_cfg()->queue_s) * 1e9);
}

/* The fake CUPTI learns that the kernel ran from start to end (host clock). */
static void kernel_done(const hooks *h, const kernel *k, uint64_t start, uint64_t end) {
    npkit_fake_kernel r = {
        .name = k->name,
        .api = {NPKIT_FAKE_API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
        .device = k->comm->device >= 0 ? (uint32_t)k->comm->device : 0,
        .stream = (uint64_t)(uintptr_t)k->stream,
        .start_ns = start,
        .end_ns = end,
        .grid = {2, 1, 1},
        .block = {640, 1, 1},
        .registers = 96,
        .static_shared = 0,
        .dynamic_shared = 8192,
    };
  h->done(k->corr, &r);
}

static void kernels_free(npkit_fake_kernels *ks) {
  free(ks->k);
  free(ks);
}

void npkit_fake_gpu_capture(npkit_fake_kernels *ks) {
  if (ks == NULL) return;
  const hooks *h = cupti();
  uint64_t launch_ns = (uint64_t)(npkit_fake_cfg()->launch_s * 1e9);
  for (int i = 0; h != NULL && i < ks->n; i++) {
    kernel *k = &ks->k[i];
    if (k->corr == 0) continue;
    uint64_t start = k->launch_ns + launch_ns, end = start + 1000 + (uint64_t)(k->sim * 1e9);
    kernel_done(h, k, start, end); /* the stream captures: a graph node, not a run */
  }
  kernels_free(ks);
}

uint32_t npkit_fake_gpu_capture_begin(cudaStream_t stream) {
  const hooks *h = cupti();
  return h != NULL ? h->capture_begin((uint64_t)(uintptr_t)stream) : 0;
}

uint32_t npkit_fake_gpu_capture_end(cudaStream_t stream) {
  const hooks *h = cupti();
  if (h == NULL) return 0;
  uint32_t g = h->capture_end((uint64_t)(uintptr_t)stream);
  return g != 0 ? h->instantiate(g) : 0;
}

void npkit_fake_gpu_streams_destroyed(void) {
  void *lib = npkit_fake_cupti_open();
  if (lib == NULL) return;
  npkit_fake_streams_destroyed_fn fn;
  *(void **)(&fn) = dlsym(lib, NPKIT_FAKE_CUPTI_STREAMS_DESTROYED);
  if (fn != NULL) fn();
  dlclose(lib);
}

void npkit_fake_gpu_graph_launch(uint32_t exec, cudaStream_t stream) {
  const hooks *h = cupti();
  if (h != NULL && exec != 0) h->graph_launch(exec, (uint64_t)(uintptr_t)stream);
}

void npkit_fake_gpu_complete(npkit_fake_kernels *ks, ncclResult_t res) {
  if (ks == NULL) return;
  const hooks *h = cupti();
  const npkit_fake_settings *cfg = npkit_fake_cfg();
  uint64_t now = npkit_fake_gpu_now(), launch_ns = (uint64_t)((cfg->launch_s + cfg->queue_s) * 1e9);
  /* Kernels on one stream run one after the other. */
  enum { MAX_STREAMS = 16 };
  cudaStream_t streams[MAX_STREAMS];
  uint64_t free_at[MAX_STREAMS];
  int nstreams = 0;
  for (int i = 0; res == ncclSuccess && h != NULL && i < ks->n; i++) {
    kernel *k = &ks->k[i];
    if (k->corr == 0) continue;
    int si = 0;
    while (si < nstreams && streams[si] != k->stream) si++;
    uint64_t start = k->launch_ns + launch_ns;
    if (si < nstreams && free_at[si] > start) start = free_at[si];
    uint64_t end = start + (uint64_t)(k->sim * 1e9); /* the transfers; the latency is the host's */
    if (end < now) end = now; /* the work took at least until now */
    if (si == nstreams && nstreams < MAX_STREAMS) streams[nstreams++] = k->stream;
    if (si < nstreams) free_at[si] = end;
    kernel_done(h, k, start, end);
  }
  kernels_free(ks);
}

void npkit_fake_gpu_one_rank_copy(const npkit_fake_op *op, uint64_t t0_ns) {
  const hooks *h = cupti();
  if (h == NULL || op->sendbuff == op->recvbuff || op->comm == NULL) return;
  size_t bytes = op->count * op->esize;
  npkit_fake_copy c = {
      .api = {NPKIT_FAKE_API_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020},
      .bytes = bytes,
      .copy_kind = 8 /* CUPTI_ACTIVITY_MEMCPY_KIND_DTOD */,
      .src_kind = 3 /* device */,
      .dst_kind = 3,
      .device = op->comm->device >= 0 ? (uint32_t)op->comm->device : 0,
      .stream = (uint64_t)(uintptr_t)op->stream,
      .start_ns = t0_ns,
      .end_ns = t0_ns + 1000 + (uint64_t)((double)bytes / npkit_fake_cfg()->bw_bytes_s * 1e9),
  };
  h->memcpy(&c);
}
