/* libcupti, found at run time and never linked: the function table of the CUPTI calls the GPU source
 * uses, typed from the real headers (CUDA 13).  The calls used exist with the same signatures in
 * CUPTI 11, 12 and 13, so a copy of any of them that the process already holds is used as is. */
#ifndef NPKIT_CUPTI_LOADER_H
#define NPKIT_CUPTI_LOADER_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

typedef struct npkit_cupti_api {
  void *handle;
  char path[1024];  /* what was loaded, for messages: a SONAME or a path */
  int preloaded;    /* the process held this copy before npkit looked for one */
  uint32_t version; /* cuptiGetVersion: 18..28 for CUDA 11.8..12.9, xxyyzz from CUDA 13 */
  __typeof__(cuptiGetVersion) *GetVersion;
  __typeof__(cuptiGetResultString) *GetResultString;
  __typeof__(cuptiSubscribe) *Subscribe;
  __typeof__(cuptiUnsubscribe) *Unsubscribe;
  __typeof__(cuptiEnableCallback) *EnableCallback;
  __typeof__(cuptiActivityRegisterCallbacks) *ActivityRegisterCallbacks;
  __typeof__(cuptiActivityEnable) *ActivityEnable;
  __typeof__(cuptiActivityDisable) *ActivityDisable;
  __typeof__(cuptiActivityGetNextRecord) *ActivityGetNextRecord;
  __typeof__(cuptiActivityGetNumDroppedRecords) *ActivityGetNumDroppedRecords;
  __typeof__(cuptiActivityFlushAll) *ActivityFlushAll;
  __typeof__(cuptiActivityPushExternalCorrelationId) *ActivityPushExternalCorrelationId;
  __typeof__(cuptiActivityPopExternalCorrelationId) *ActivityPopExternalCorrelationId;
  __typeof__(cuptiGetGraphNodeId) *GetGraphNodeId; /* optional: graph attribution only */
  /* optional (CUDA 12.x on): API records of single callback ids (cupti_launch_api.h) */
  __typeof__(cuptiActivityEnableDriverApi) *ActivityEnableDriverApi;
  __typeof__(cuptiActivityEnableRuntimeApi) *ActivityEnableRuntimeApi;
} npkit_cupti_api;

/* Filled by npkit_cupti_load; read-only afterwards. */
extern npkit_cupti_api npkit_cupti;

/* Finds libcupti: a copy the process already has (SONAMEs of CUDA 13, 12, 11), then `path`
 * (NPKIT_CUPTI_LIBRARY, may be NULL or ""), then the toolkit's usual names — the last only when the
 * process has a CUDA driver loaded, since CUPTI cannot work without one.  Returns 0, or -1 with
 * the reason in `why` (a phrase for the user). */
int npkit_cupti_load(const char *path, char *why, size_t whylen);

/* "CUPTI_ERROR_UNKNOWN"; "CUPTI error <n>" when the library has no name for it. */
const char *npkit_cupti_result(CUptiResult r, char *buf, size_t len);

/* 1 when libcuda.so.1 is loaded in the process. */
int npkit_cuda_driver_loaded(void);

#endif
