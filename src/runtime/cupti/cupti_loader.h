/* libcupti, found at run time and never linked: the function table of the CUPTI calls the GPU source
 * uses, typed from the real headers (CUDA 13).  The calls used exist with the same signatures in
 * CUPTI 11, 12 and 13, so a copy of any of them that the process already holds is used as is.
 *
 * A machine may hold several copies (the toolkit's CUPTI 13, a CUDA 12 one of a Python wheel), and
 * one may fail to start where another works: a CUPTI needs a driver of its own CUDA generation or
 * later, and answers cuptiSubscribe with CUPTI_ERROR_NOT_INITIALIZED otherwise (cupti_result.h of
 * CUDA 13, lines 145-149).  So the copies are a list the GPU source walks (npkit_cupti_search)
 * until one starts. */
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
  /* optional (CUDA 12.5 on): API records of single callback ids (cupti_launch_api.h) */
  __typeof__(cuptiActivityEnableDriverApi) *ActivityEnableDriverApi;
  __typeof__(cuptiActivityEnableRuntimeApi) *ActivityEnableRuntimeApi;
  __typeof__(cuptiGetTimestamp) *GetTimestamp; /* optional: the records' clock (cupti_clock.h) */
} npkit_cupti_api;

/* Filled by npkit_cupti_load_next; read-only once the GPU source runs. */
extern npkit_cupti_api npkit_cupti;

#define NPKIT_CUPTI_MAX_TRIED 16

/* Where a walk over the copies of libcupti stands. */
typedef struct npkit_cupti_search {
  const char *list;  /* NPKIT_CUPTI_LIBRARY: paths separated by ':' (may be NULL or "") */
  unsigned stage;    /* loaded copies, the list, the usual names, CUDA_HOME, the usual folders */
  unsigned index;    /* within the stage */
  size_t list_pos;
  void *tried[NPKIT_CUPTI_MAX_TRIED]; /* handles handed out already: each copy is tried once */
  unsigned ntried;
  char list_err[256]; /* why the first entry of the list that could not be loaded was not */
} npkit_cupti_search;

/* The order: copies the process already has (SONAMEs of CUDA 13, 12, 11: the application's, such
 * as PyTorch's, come first), then each path of `list` (NPKIT_CUPTI_LIBRARY), then the toolkit's
 * usual names — the last only when the process has a CUDA driver loaded, since CUPTI cannot work
 * without one. */
void npkit_cupti_search_init(npkit_cupti_search *s, const char *list);

/* Loads the next copy into npkit_cupti.  Returns 0, or -1 when no copy is left, with the reason
 * in `why` (a phrase for the user, about the search as a whole: meaningful when nothing was found
 * at all). */
int npkit_cupti_load_next(npkit_cupti_search *s, char *why, size_t whylen);

/* The copy in npkit_cupti could not start and is given up.  One that CUPTI calls were made into
 * stays loaded: its first calls may have started threads, registered exit handlers or hooked
 * into the driver, and unloading such a library is not safe; the caller has unsubscribed it.  The
 * table is cleared. */
void npkit_cupti_drop(void);

/* The first copy only (npkit_cupti_search_init + npkit_cupti_load_next): for programs that do not
 * fall back, such as the benchmark.  `path`: NPKIT_CUPTI_LIBRARY. */
int npkit_cupti_load(const char *path, char *why, size_t whylen);

/* "CUPTI_ERROR_UNKNOWN"; "CUPTI error <n>" when the library has no name for it. */
const char *npkit_cupti_result(CUptiResult r, char *buf, size_t len);

/* 1 when libcuda.so.1 is loaded in the process. */
int npkit_cuda_driver_loaded(void);

/* The CUDA version the loaded driver supports (cuDriverGetVersion: 12090 for 12.9); 0 when no
 * driver is loaded or it does not say. */
int npkit_cuda_driver_version(void);

#endif
