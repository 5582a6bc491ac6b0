/* A fake of PyTorch's profiler as a CUPTI client (fake_kineto.h), each step citing what Kineto
 * does (pytorch/kineto, libkineto/src, at commit 114171df unless said otherwise):
 *  - subscribe: CuptiCallbackApi.cpp initCallbackApi calls cuptiSubscribe(callback_switchboard),
 *    and enables CUPTI_CBID_RESOURCE_CONTEXT_CREATED; init.cpp libkineto_init did so whenever
 *    PyTorch first used the profiler until commit 7a3ba363 (2026-08-13) removed it, and falls back
 *    to CPU-only tracing when it fails ("CUPTI initialization failed - CUDA profiler activities
 *    will be missing"): the later steps then do nothing and return that error;
 *  - clock: CuptiTimestamp.cpp configureCuptiTimestampSource registers a callback returning
 *    getApproximateTime() (ApproximateClock.h: __rdtsc() on x86-64), ticks rather than ns,
 *    before every trace;
 *  - enable: CuptiActivityApi.cpp enableCuptiActivities registers its own buffer callbacks
 *    (process-wide, replacing anyone's) and enables MEMCPY, MEMSET, CONCURRENT_KERNEL,
 *    EXTERNAL_CORRELATION, RUNTIME and DRIVER (PyTorch's default CUDA activities);
 *  - stop: disableCuptiActivities disables those kinds (for everyone: the kinds are not per
 *    client), activityBuffers flushes with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED; bufferCompleted
 *    drops a buffer it did not hand out ("bufferCompleted called with unknown buffer").
 * Buffers are 256 KB here (Kineto: 4 MB, kBufSize). */
#include <cupti.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "fake_kineto.h"

#define FK_EXPORT __attribute__((visibility("default")))
#define BUF_SIZE (256u << 10)
#define MAX_BUFS 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_SubscriberHandle subscriber;
static uint8_t *mine[MAX_BUFS];
static size_t nmine;
static uint64_t kernels, foreign;

static const CUpti_ActivityKind trace_kinds[] = {
    CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER};

static void CUPTIAPI switchboard(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
  (void)userdata, (void)domain, (void)cbid, (void)data;
}

/* The failed subscription, after which Kineto traces the CPU only (libkineto_init: cpuOnly). */
static CUptiResult cpu_only;

FK_EXPORT int npkitFakeKinetoSubscribe(void) {
  CUptiResult r = cuptiSubscribe(&subscriber, switchboard, NULL);
  if (r != CUPTI_SUCCESS) {
    cpu_only = r;
    return (int)r;
  }
  return (int)cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
}

/* Kineto's getApproximateTime: the raw counter on x86-64; elsewhere another clock than
 * CLOCK_REALTIME too (Kineto reads the ARM counter there). */
static uint64_t CUPTIAPI approximate_time(void) {
#if defined(__x86_64__)
  return __rdtsc();
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

FK_EXPORT int npkitFakeKinetoTimestampSource(void) {
  if (cpu_only != CUPTI_SUCCESS) return (int)cpu_only;
  return (int)cuptiActivityRegisterTimestampCallback(approximate_time);
}

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = NULL;
  *size = 0;
  *max_records = 0;
  pthread_mutex_lock(&lock);
  uint8_t *b = nmine < MAX_BUFS ? aligned_alloc(8, BUF_SIZE) : NULL;
  if (b != NULL) {
    mine[nmine++] = b;
    *buffer = b;
    *size = BUF_SIZE;
  }
  pthread_mutex_unlock(&lock);
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                              size_t valid) {
  (void)ctx, (void)stream, (void)size;
  pthread_mutex_lock(&lock);
  int known = 0;
  for (size_t i = 0; i < nmine && !known; i++) known = mine[i] == buffer;
  if (!known) {
    foreign++;
    pthread_mutex_unlock(&lock);
    return;
  }
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
    kernels += rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  pthread_mutex_unlock(&lock);
}

FK_EXPORT int npkitFakeKinetoEnableActivities(void) {
  if (cpu_only != CUPTI_SUCCESS) return (int)cpu_only;
  CUptiResult r = cuptiActivityRegisterCallbacks(requested, completed);
  for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof trace_kinds / sizeof trace_kinds[0]; i++)
    r = cuptiActivityEnable(trace_kinds[i]);
  return (int)r;
}

FK_EXPORT uint64_t npkitFakeKinetoStop(uint64_t *foreign_out) {
  for (size_t i = 0; i < sizeof trace_kinds / sizeof trace_kinds[0]; i++)
    cuptiActivityDisable(trace_kinds[i]);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&lock);
  uint64_t k = kernels;
  if (foreign_out != NULL) *foreign_out = foreign;
  pthread_mutex_unlock(&lock);
  return k;
}
