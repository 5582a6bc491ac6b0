/* Which CUDA API calls CUPTI writes activity records for, so that external correlation works.
 *
 * CUPTI writes an external-correlation record only in front of an API activity record (a driver
 * or runtime call it traces) made while an id is pushed (cupti_activity.h of CUDA 13,
 * cuptiActivityPushExternalCorrelationId): without API records no kernel is tied to the NCCL call
 * that launched it.  Tracing every driver and runtime call would cost a record per call of the
 * application (PyTorch launches tens of thousands of kernels a second), so only the entry points
 * NCCL launches GPU work with are traced (NVIDIA/nccl v2.28.9-1):
 *  - cuLaunchKernelEx (src/enqueue.cc ncclLaunchKernel, driver, legacy stream; _ptsz for builds
 *    with per-thread default streams), cuLaunchKernel (its fallback for drivers before 11.8);
 *  - cuStreamBatchMemOp (copy-engine collectives, src/ce_coll.cc);
 *  - cudaMemcpyAsync (one-rank collectives, src/device/onerank.cu ncclLaunchOneRank; copy-engine
 *    collectives), cudaMemcpyBatchAsync (copy engine).
 * Not cudaLaunchKernel: NCCL uses it only for a one-rank PreMulSum (onerank.cu), and tracing it
 * would cost a record for every kernel the application launches through the runtime.
 * With a CUPTI that cannot enable single callback ids (cuptiActivityEnableDriverApi and
 * cuptiActivityEnableRuntimeApi came with CUDA 12.5, CUPTI API 23), the whole DRIVER and RUNTIME kinds are
 * enabled instead. */
#ifndef NPKIT_CUPTI_LAUNCH_API_H
#define NPKIT_CUPTI_LAUNCH_API_H

#include <stddef.h>

typedef enum npkit_launch_api_mode {
  NPKIT_LAUNCH_API_NONE = 0,    /* nothing could be enabled: no correlation */
  NPKIT_LAUNCH_API_SELECTED,    /* only NCCL's launch entry points */
  NPKIT_LAUNCH_API_ALL,         /* every driver and runtime call (older CUPTI) */
} npkit_launch_api_mode;

/* Enables the API records (npkit_cupti must be loaded); `why` says what failed for NONE. */
npkit_launch_api_mode npkit_cupti_trace_launch_api(char *why, size_t whylen);
const char *npkit_launch_api_mode_name(npkit_launch_api_mode mode);

#endif
