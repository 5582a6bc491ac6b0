/* The GPU side of the fake: the kernels NCCL would have launched.
 *
 * When a run of operations has finished (one call, or a whole group at ncclGroupEnd), each
 * communicator and stream of the run gets one kernel, named as NCCL 2.28 names them
 * (ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclDevKernel_SendRecv, ncclDevKernel_Generic when a
 * group mixes kinds), mangled as the CUDA compiler emits them.  It is reported to the fake
 * libcupti (tests/fakes_cupti) if the process has loaded it, on the calling thread, so that CUPTI
 * ties it to whatever external correlation id the caller pushed around the call.  Without the fake
 * CUPTI nothing happens. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cupti_driver_cbid.h>

#include "../fakes_cupti/fake_cupti_hooks.h"
#include "fake_internal.h"

uint64_t npkit_fake_gpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static npkit_fake_kernel_fn launcher(void) {
  static _Atomic(npkit_fake_kernel_fn) found;
  npkit_fake_kernel_fn f = atomic_load_explicit(&found, memory_order_acquire);
  if (f != NULL) return f;
  void *h = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL) return NULL;
  *(void **)(&f) = dlsym(h, NPKIT_FAKE_CUPTI_KERNEL);
  dlclose(h); /* drops only the reference RTLD_NOLOAD took */
  if (f != NULL) atomic_store_explicit(&found, f, memory_order_release);
  return f;
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

/* "AllReduce_Sum_f32_RING_LL" (the part after ncclDevKernel_), or "" for operations that launch
 * no kernel. */
static void kernel_base(const npkit_fake_op *op, char *buf, size_t len) {
  const char *coll = NULL;
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
  default: buf[0] = '\0'; return;
  }
  snprintf(buf, len, "%s_%s_%s_RING_LL", coll, op_name(&op->red), type_name(op->dt));
}

void npkit_fake_gpu_launch(const npkit_fake_op *list, uint64_t t0_ns) {
  npkit_fake_kernel_fn launch = launcher();
  if (launch == NULL) return;
  uint64_t now = npkit_fake_gpu_now();
  /* Kernels on one stream run one after the other. */
  enum { MAX_STREAMS = 16 };
  const void *streams[MAX_STREAMS];
  uint64_t free_at[MAX_STREAMS];
  int nstreams = 0;
  /* One kernel per (communicator, stream), in the order their first operation was issued. */
  for (const npkit_fake_op *op = list; op != NULL; op = op->next) {
    char base[64], other[64];
    kernel_base(op, base, sizeof base);
    if (base[0] == '\0' || op->comm == NULL) continue;
    int first = 1;
    for (const npkit_fake_op *o = list; o != op; o = o->next) {
      kernel_base(o, other, sizeof other);
      if (other[0] != '\0' && o->comm == op->comm && o->stream == op->stream) first = 0;
    }
    if (!first) continue;
    double sim = 0;
    for (const npkit_fake_op *o = op; o != NULL; o = o->next) {
      kernel_base(o, other, sizeof other);
      if (other[0] == '\0' || o->comm != op->comm || o->stream != op->stream) continue;
      if (strcmp(other, base) != 0) snprintf(base, sizeof base, "Generic");
      sim += o->sim_s;
    }
    char name[160];
    char full[96];
    snprintf(full, sizeof full, "ncclDevKernel_%s", base);
    snprintf(name, sizeof name, "_Z%zu%s24ncclDevKernelArgsStorageILm4096EE", strlen(full), full);
    int si = 0;
    while (si < nstreams && streams[si] != op->stream) si++;
    if (si == nstreams && nstreams < MAX_STREAMS) {
      streams[nstreams] = op->stream;
      free_at[nstreams++] = t0_ns;
    }
    uint64_t start = si < nstreams ? free_at[si] : t0_ns;
    uint64_t end = start + (uint64_t)(sim * 1e9); /* the transfers; the latency is the host's */
    if (end <= now && si < nstreams) end = now; /* the work took at least until now */
    if (si < nstreams) free_at[si] = end;
    /* NCCL 2.28 launches its kernels with the driver's cuLaunchKernelEx, through a pointer from
     * cudaGetDriverEntryPointByVersion (v2.28.9-1 src/enqueue.cc ncclLaunchKernel, cudawrap.cc),
     * the legacy-stream variant since NCCL is not built for per-thread default streams. */
    npkit_fake_kernel k = {
        .name = name,
        .api = {NPKIT_FAKE_API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
        .device = op->comm->device >= 0 ? (uint32_t)op->comm->device : 0,
        .stream = (uint64_t)(uintptr_t)op->stream,
        .start_ns = start,
        .end_ns = end,
        .grid = {2, 1, 1},
        .block = {640, 1, 1},
        .registers = 96,
        .static_shared = 0,
        .dynamic_shared = 8192,
    };
    launch(&k);
  }
}
