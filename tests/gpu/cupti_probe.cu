// CUPTI behaviours the fake CUPTI (tests/fakes_cupti) models, probed on a real GPU.  Each mode runs in
// its own process: CUPTI state is global.  Run by tests/gpu/device_check.sh.
//   nvcc -O1 -o cupti_probe cupti_probe.cu -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti -lcuda
// Per iteration: 1 cuLaunchKernel, 1 runtime <<<>>>, 1 cuLaunchKernelEx via cuGetProcAddress (as NCCL).
//   for m in ext_only ext_drvapi drv_then_disable replace_cb ts_cb subscribe_twice; do ./cupti_probe $m; done
// Prints one "RESULT <mode> key=value ..." line per mode.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__global__ void k_busy(int *p) { if (p) atomicAdd(p, 1); }

static int n_kind[64];
static int n_ext_custom2, n_api_driver_launch, n_api_driver_other, n_api_runtime;
static size_t kernel_stride;          // bytes between a kernel record and the next record
static uint64_t first_kernel_start;   // to see which clock the kernel timestamps are on
static int completed_by[2];           // buffers delivered to completer A / B
static const uint8_t *tag_a[64];
static int ntag_a;

static void walk(uint8_t *buf, size_t valid) {
  CUpti_Activity *r = NULL, *prev = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    if (prev && prev->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && !kernel_stride)
      kernel_stride = (size_t)((uint8_t *)r - (uint8_t *)prev);
    if ((unsigned)r->kind < 64) n_kind[r->kind]++;
    if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION &&
        ((CUpti_ActivityExternalCorrelation *)r)->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2)
      n_ext_custom2++;
    if (r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
      uint32_t cb = ((CUpti_ActivityAPI *)r)->cbid;
      if (cb == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cb == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx)
        n_api_driver_launch++;
      else
        n_api_driver_other++;
    }
    if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) n_api_runtime++;
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && !first_kernel_start)
      first_kernel_start = ((CUpti_ActivityKernel10 *)r)->start;
    prev = r;
  }
}

static void CUPTIAPI req_a(uint8_t **b, size_t *s, size_t *m) {
  *s = 1 << 20; *b = (uint8_t *)aligned_alloc(8, *s); *m = 0;
  if (ntag_a < 64) tag_a[ntag_a++] = *b;
}
static void CUPTIAPI req_b(uint8_t **b, size_t *s, size_t *m) { *s = 1 << 20; *b = (uint8_t *)aligned_alloc(8, *s); *m = 0; }
static void CUPTIAPI done_a(CUcontext, uint32_t, uint8_t *b, size_t, size_t v) { completed_by[0]++; walk(b, v); }
static void CUPTIAPI done_b(CUcontext, uint32_t, uint8_t *b, size_t, size_t v) {
  int foreign = 0;
  for (int i = 0; i < ntag_a; i++) foreign |= tag_a[i] == b;
  completed_by[1]++;
  if (foreign) printf("NOTE buffer requested by A completed through B\n");
  walk(b, v);
}

static uint64_t ts_calls;
static uint64_t CUPTIAPI my_ts(void) { ts_calls++; return 42000000000ull + ts_calls; }

static void launch_some(int n) {
  CUfunction f;
  cudaGetFuncBySymbol((cudaFunction_t *)&f, (const void *)k_busy);
  int *p = NULL;
  void *args[] = {&p};
  for (int i = 0; i < n; i++) {
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 1000 + i);
    cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, args, NULL);  // driver API launch
    k_busy<<<1, 32>>>(p);                                      // runtime API launch
    // as NCCL does: cuLaunchKernelEx through a pointer from cuGetProcAddress
    static CUresult (*pfn_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    if (!pfn_ex) {
      CUdriverProcAddressQueryResult q;
      cuGetProcAddress("cuLaunchKernelEx", (void **)&pfn_ex, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q);
    }
    if (pfn_ex) {
      CUlaunchConfig c;
      memset(&c, 0, sizeof c);
      c.gridDimX = c.gridDimY = c.gridDimZ = 1;
      c.blockDimX = 32; c.blockDimY = c.blockDimZ = 1;
      pfn_ex(&c, f, args, NULL);
    }
    uint64_t last;
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &last);
  }
  cudaDeviceSynchronize();
}

static void report(const char *mode, CUptiResult extra_rc) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t cupti_now = 0;
  cuptiGetTimestamp(&cupti_now);
  printf("RESULT %s kernels=%d ext_custom2=%d driver_launch_api=%d driver_other_api=%d runtime_api=%d "
         "kernel_stride=%zu kernel_start=%llu realtime_now=%llu cupti_now=%llu ts_calls=%llu "
         "completed_by_A=%d completed_by_B=%d extra_rc=%d\n",
         mode, n_kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL], n_ext_custom2, n_api_driver_launch,
         n_api_driver_other, n_api_runtime, kernel_stride, (unsigned long long)first_kernel_start,
         (unsigned long long)(ts.tv_sec * 1000000000ull + ts.tv_nsec), (unsigned long long)cupti_now,
         (unsigned long long)ts_calls, completed_by[0], completed_by[1], (int)extra_rc);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ext_only";
  uint32_t v = 0;
  cuptiGetVersion(&v);
  printf("CUPTI API version %u\n", v);
  CUptiResult extra = CUPTI_SUCCESS;
  if (!strcmp(mode, "ts_cb")) extra = cuptiActivityRegisterTimestampCallback(my_ts);  // before enabling kinds
  cuptiActivityRegisterCallbacks(req_a, done_a);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  if (!strcmp(mode, "ext_drvapi")) {
    extra = cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
    cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 1);
    printf("RESULT unknown_cbid rc=%d\n", (int)cuptiActivityEnableDriverApi(100000, 1));
  }
  if (!strcmp(mode, "drv_then_disable")) {  // does disabling the kind wipe per-cbid enables?
    cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
    extra = cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  }
  cudaFree(0);
  if (!strcmp(mode, "subscribe_twice")) {
    CUpti_SubscriberHandle s1, s2;
    CUptiResult r1 = cuptiSubscribe(&s1, (CUpti_CallbackFunc)NULL, NULL);
    CUptiResult r2 = cuptiSubscribe(&s2, (CUpti_CallbackFunc)NULL, NULL);
    char old[64] = "";
    CUpti_SubscriberParams p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    p.subscriberName = "probe2";
    p.oldSubscriberName = old;
    p.oldSubscriberSize = sizeof old;
    CUptiResult r3 = cuptiSubscribe_v2(&s2, (CUpti_CallbackFunc)NULL, NULL, &p);
    printf("RESULT subscribe_twice first=%d second=%d v2=%d old_name='%s'\n", (int)r1, (int)r2, (int)r3, old);
    return 0;
  }
  launch_some(4);
  if (!strcmp(mode, "replace_cb")) {  // a second client (e.g. Kineto) registers its callbacks mid-run
    launch_some(4);
    cuptiActivityRegisterCallbacks(req_b, done_b);
    launch_some(4);
  }
  report(mode, extra);
  return 0;
}
