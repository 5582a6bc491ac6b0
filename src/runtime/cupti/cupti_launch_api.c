#include "cupti_launch_api.h"

#include <stdio.h>

#include "cupti_loader.h"

static const CUpti_CallbackId driver_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp,     CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2,  CUPTI_DRIVER_TRACE_CBID_cuStreamBatchMemOp_v2_ptsz,
};

static const CUpti_CallbackId runtime_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v12080,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v12080,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Callback ids an older CUPTI does not know are refused one by one: only the first of each list
 * (cuLaunchKernelEx, cudaMemcpyAsync) must be taken. */
static int select_cbids(uint8_t on) {
  int ok = 1;
  for (size_t i = 0; i < COUNT(driver_cbids); i++)
    if (npkit_cupti.ActivityEnableDriverApi(driver_cbids[i], on) != CUPTI_SUCCESS && i == 0) ok = 0;
  for (size_t i = 0; i < COUNT(runtime_cbids); i++)
    if (npkit_cupti.ActivityEnableRuntimeApi(runtime_cbids[i], on) != CUPTI_SUCCESS && i == 0) ok = 0;
  return ok;
}

npkit_launch_api_mode npkit_cupti_trace_launch_api(char *why, size_t whylen) {
  if (npkit_cupti.ActivityEnableDriverApi != NULL && npkit_cupti.ActivityEnableRuntimeApi != NULL) {
    if (select_cbids(1)) return NPKIT_LAUNCH_API_SELECTED;
    select_cbids(0);
  }
  char res[96];
  CUptiResult r = npkit_cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
  if (r == CUPTI_SUCCESS) r = npkit_cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  if (r == CUPTI_SUCCESS) return NPKIT_LAUNCH_API_ALL;
  npkit_cupti.ActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  snprintf(why, whylen, "CUPTI traces no CUDA API calls (%s)", npkit_cupti_result(r, res, sizeof res));
  return NPKIT_LAUNCH_API_NONE;
}

const char *npkit_launch_api_mode_name(npkit_launch_api_mode mode) {
  switch (mode) {
  case NPKIT_LAUNCH_API_SELECTED: return "NCCL's launch calls";
  case NPKIT_LAUNCH_API_ALL: return "every driver and runtime call";
  default: return "none";
  }
}
