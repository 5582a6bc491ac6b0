/* How test code "runs work on a GPU" under the fake libcupti (libcupti.so.13 and libcupti.so.12
 * of this folder).
 *
 * The fake exports these functions next to the CUPTI API.  Callers find them with
 * dlsym(npkit_fake_cupti_open(), ...) so that nothing happens when no CUPTI, or the real one, is
 * loaded.  Each call is what a CUDA launch would be: the work gets a CUPTI correlation
 * id, the calling thread's pushed external correlation ids are attached to it (an
 * EXTERNAL_CORRELATION record per pushed kind), and its activity record is written into the
 * client's buffers once it has completed (end_ns has passed), in completion order. */
#ifndef NPKIT_FAKE_CUPTI_HOOKS_H
#define NPKIT_FAKE_CUPTI_HOOKS_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

/* 1 while a client has subscribed to this copy (cuptiSubscribe). */
typedef int (*npkit_fake_in_use_fn)(void);
#define NPKIT_FAKE_CUPTI_IN_USE "npkitFakeCuptiInUse"

/* The copy of the fake libcupti the work goes to: of the copies the process has loaded, the one a
 * client has subscribed to, else the first of libcupti.so.13, libcupti.so.12 (a process may hold
 * both: npkit-preload keeps a copy that could not start loaded when it falls back to the next).
 * A reference taken with RTLD_NOLOAD, to dlclose once the hooks are looked up; NULL when none is
 * loaded. */
static inline void *npkit_fake_cupti_open(void) {
  static const char *const sonames[] = {"libcupti.so.13", "libcupti.so.12"};
  void *first = NULL;
  for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
    void *h = dlopen(sonames[i], RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL) continue;
    npkit_fake_in_use_fn in_use;
    *(void **)(&in_use) = dlsym(h, NPKIT_FAKE_CUPTI_IN_USE);
    if (in_use != NULL && in_use()) {
      if (first != NULL) dlclose(first);
      return h;
    }
    if (first == NULL)
      first = h;
    else
      dlclose(h);
  }
  return first;
}

/* The CUDA API call that launched the work (npkit_fake_kernel.api, npkit_fake_copy.api).  CUPTI
 * writes an API activity record for it only when the client enabled its kind or its callback id
 * (cuptiActivityEnable(DRIVER/RUNTIME), cuptiActivityEnableDriverApi/RuntimeApi), and external
 * correlation records only in front of such a record: work launched by a call CUPTI does not trace
 * cannot be correlated (cupti_activity.h of CUDA 13, cuptiActivityPushExternalCorrelationId). */
typedef struct npkit_fake_api {
  uint8_t domain;       /* NPKIT_FAKE_API_DRIVER / _RUNTIME; 0: no API call (nothing correlates) */
  uint16_t cbid;        /* CUPTI_DRIVER_TRACE_CBID_* / CUPTI_RUNTIME_TRACE_CBID_* */
} npkit_fake_api;
#define NPKIT_FAKE_API_DRIVER 1
#define NPKIT_FAKE_API_RUNTIME 2

typedef struct npkit_fake_kernel {
  const char *name;     /* as CUPTI reports it: mangled for C++ kernels */
  npkit_fake_api api;   /* cuLaunchKernelEx for NCCL's kernels, cudaLaunchKernel for the rest */
  uint32_t device;
  uint64_t stream;      /* cudaStream_t value; the fake maps it to a CUPTI stream id */
  uint64_t start_ns, end_ns; /* CLOCK_REALTIME */
  int32_t grid[3], block[3];
  uint16_t registers;
  int32_t static_shared, dynamic_shared;
} npkit_fake_kernel;

typedef struct npkit_fake_copy {
  npkit_fake_api api;   /* cudaMemcpyAsync / cudaMemsetAsync, typically */
  uint64_t bytes;
  uint8_t copy_kind;    /* CUpti_ActivityMemcpyKind; CUPTI_ACTIVITY_MEMCPY_KIND_PTOP makes a
                           MEMCPY2 (peer) record */
  uint8_t src_kind, dst_kind; /* CUpti_ActivityMemoryKind (memset: dst_kind) */
  uint32_t value;       /* memset */
  uint32_t device, src_device, dst_device;
  uint64_t stream;
  uint64_t start_ns, end_ns;
} npkit_fake_copy;

/* Return the CUPTI correlation id given to the launch, 0 when the activity kind is not enabled
 * (nothing is recorded then).  The launch's API record (when traced) is written at once, preceded
 * by the correlation records of the ids the calling thread has pushed; the activity record when
 * the work has completed. */
typedef uint32_t (*npkit_fake_kernel_fn)(const npkit_fake_kernel *k);
typedef uint32_t (*npkit_fake_copy_fn)(const npkit_fake_copy *c);
#define NPKIT_FAKE_CUPTI_KERNEL "npkitFakeCuptiKernel"
#define NPKIT_FAKE_CUPTI_MEMCPY "npkitFakeCuptiMemcpy"
#define NPKIT_FAKE_CUPTI_MEMSET "npkitFakeCuptiMemset"

/* A kernel launch in two steps, as on a GPU: the launch call (its API record and the correlation
 * records in front of it, on the calling thread, now) and, once the kernel has run, its activity
 * record with the correlation id the launch returned (from any thread).  A kernel whose launch
 * was not traced still gets its record. */
typedef uint32_t (*npkit_fake_launch_fn)(const npkit_fake_api *api);
typedef void (*npkit_fake_kernel_done_fn)(uint32_t correlation, const npkit_fake_kernel *k);
#define NPKIT_FAKE_CUPTI_LAUNCH "npkitFakeCuptiLaunch"
#define NPKIT_FAKE_CUPTI_KERNEL_DONE "npkitFakeCuptiKernelDone"

/* Waits until every launched activity has completed (cudaDeviceSynchronize). */
typedef void (*npkit_fake_sync_fn)(void);
#define NPKIT_FAKE_CUPTI_SYNC "npkitFakeCuptiSynchronize"

/* CUDA graphs.  While a stream captures, kernels launched on it become graph nodes (CUPTI's
 * resource callback GRAPHNODE_CREATED is raised on the launching thread) instead of running.
 * Instantiation clones the nodes (GRAPHNODE_CLONED); each launch of the instance runs them as
 * kernels with the graph and node ids and the correlation id of the launch. */
typedef uint32_t (*npkit_fake_capture_fn)(uint64_t stream);   /* begin / end: the graph id */
typedef uint32_t (*npkit_fake_instantiate_fn)(uint32_t graph); /* the instance id, 0 on error */
/* The launch of an instance is a cudaGraphLaunch (runtime API): its API record and correlation
 * records come as for any launch; the kernels carry its correlation id. */
typedef uint32_t (*npkit_fake_graph_launch_fn)(uint32_t exec, uint64_t stream); /* correlation */
#define NPKIT_FAKE_CUPTI_CAPTURE_BEGIN "npkitFakeCuptiCaptureBegin"
#define NPKIT_FAKE_CUPTI_CAPTURE_END "npkitFakeCuptiCaptureEnd"
#define NPKIT_FAKE_CUPTI_INSTANTIATE "npkitFakeCuptiGraphInstantiate"
#define NPKIT_FAKE_CUPTI_GRAPH_LAUNCH "npkitFakeCuptiGraphLaunch"

/* The application destroyed streams (ncclCommDestroy frees a communicator's: NCCL v2.28.9-1
 * src/init.cc commFree, ncclStrongStreamDestruct): from then on the fake crashes where the real
 * CUPTI 13.0 crashed (fake_cupti_api.c, cuptiActivityDisable). */
typedef void (*npkit_fake_streams_destroyed_fn)(void);
#define NPKIT_FAKE_CUPTI_STREAMS_DESTROYED "npkitFakeCuptiStreamsDestroyed"

/* The CUPTI stream id the fake gives a cudaStream_t value (the same for the whole process). */
typedef uint32_t (*npkit_fake_stream_id_fn)(uint64_t stream);
#define NPKIT_FAKE_CUPTI_STREAM_ID "npkitFakeCuptiStreamId"

/* Benchmarks: writes n completed kernel records straight into the client's buffers (as fast as
 * the fake can), all alike but for their correlation ids and times.  When k->api names a traced
 * API, each kernel is preceded by its API record, and with first_ext_id > 0 by an
 * EXTERNAL_CORRELATION record (kind CUSTOM2) before that, tying it to external id
 * first_ext_id + i, as if its launch had happened inside a call that pushed that id.  Returns the
 * kernel records written. */
typedef uint64_t (*npkit_fake_burst_fn)(uint64_t n, const npkit_fake_kernel *k, uint64_t first_ext_id);
#define NPKIT_FAKE_CUPTI_BURST "npkitFakeCuptiBurst"

#endif
