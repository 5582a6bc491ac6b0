/* The types of NCCL functions newer than the nccl.h the library is built with (the toolkit's may
 * be 2.28), declared from the facts of NCCL's public headers, so that nccl_api.def can list every
 * function of the newest NCCL.  Pointers only cross the wrappers (they are passed on untouched),
 * except the few fields read to describe a call (the user tag of ncclCollConfig_t).
 *
 * Sources (NVIDIA/nccl): src/nccl.h.in at v2.29.2-1 (ncclWaitSignalDesc_t), v2.29.7-1
 * (ncclCommMemStat_t), v2.30.7-1 (ncclParamHandle_t, the pointer form that 2.30.4's struct form
 * has the ABI of), 2.31.2 (commit 8898068, ncclCollConfig_v23100); src/include/nccl_device/core.h
 * at v2.28.9-1 and 2.31.2 (the device API's host functions: ncclTeam_t by value, 12 bytes, and
 * opaque requirement and handle structs by pointer; ncclMultimemHandle_t by value, one pointer). */
#ifndef NPKIT_NCCL_COMPAT_H
#define NPKIT_NCCL_COMPAT_H

#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

#if NCCL_VERSION_CODE < 22902
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;
#endif

#if NCCL_VERSION_CODE < 22907
typedef enum {
  ncclStatGpuMemSuspend = 0,
  ncclStatGpuMemSuspended = 1,
  ncclStatGpuMemPersist = 2,
  ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;
#endif

#if NCCL_VERSION_CODE < 23004
typedef struct ncclParamHandle *ncclParamHandle_t;
#endif

#if NCCL_VERSION_CODE < 23102
typedef struct ncclCollConfig_v23100 ncclCollConfig_t; /* never dereferenced as NCCL's */
#endif

/* What npkit reads of an ncclCollConfig_t (2.31.2 layout, LP64): its size, magic and tag. */
typedef struct npkit_nccl_coll_config {
  size_t size;
  unsigned magic;            /* NCCL_API_MAGIC 0xcafebeef once NCCL_COLLCONFIG_INITIALIZER'd */
  unsigned version;
  void *ext;
  int min_ctas, max_ctas, nvls_ctas, cga_cluster_size;
  const char *alg_selection;
  int force_alg_selection, cta_policy;
  uint64_t user_profiler_tag; /* 0: untagged */
} npkit_nccl_coll_config;
_Static_assert(offsetof(npkit_nccl_coll_config, user_profiler_tag) == 56, "ncclCollConfig_t layout");

/* The device API's host side (nccl_device/core.h); never in nccl.h, so npkit's own names. */
typedef struct npkit_nccl_team {
  int nRanks, rank, stride;
} npkit_nccl_team;
typedef struct npkit_nccl_multimem_handle {
  void *mcBasePtr;
} npkit_nccl_multimem_handle;
_Static_assert(sizeof(npkit_nccl_team) == 12, "ncclTeam_t is passed by value: 3 ints");

#endif
