/* The types of the functions NCCL added after 2.28, for the fake built as 2.31.2 (FAKE_NCCL_NEW)
 * against the toolkit's nccl.h 2.28.  Written from NVIDIA/nccl's headers on their own (not shared
 * with the library's src/format/nccl_compat.h): a layout the library got wrong must not be
 * confirmed by a fake that read it from the library.
 *   src/nccl.h.in v2.29.2-1: ncclWaitSignalDesc_t {int opCnt, peer, sigIdx, ctx}
 *   src/nccl.h.in v2.29.7-1: ncclCommMemStat_t (4 values)
 *   src/nccl.h.in v2.30.7-1: typedef struct ncclParamHandle* ncclParamHandle_t
 *   src/nccl.h.in 2.31.2 (commit 8898068): ncclCollConfig_v23100 {size_t size; unsigned magic,
 *     version; ncclConfigExt_t* ext; int minCTAs, maxCTAs, nvlsCTAs, cgaClusterSize;
 *     const char* algSelection; int forceAlgSelection, CTAPolicy; uint64_t userProfilerTag}
 *   src/include/nccl_device/core.h v2.28.9-1: struct ncclTeam {int nRanks, rank, stride} */
#ifndef NPKIT_FAKE_NEWER_H
#define NPKIT_FAKE_NEWER_H

#include <nccl.h>
#include <stdint.h>

#if NCCL_VERSION_CODE < 22902
typedef struct {
  int opCnt, peer, sigIdx, ctx;
} ncclWaitSignalDesc_t;
#endif
#if NCCL_VERSION_CODE < 22907
typedef enum { ncclStatGpuMemSuspend, ncclStatGpuMemSuspended, ncclStatGpuMemPersist, ncclStatGpuMemTotal } ncclCommMemStat_t;
#endif
#if NCCL_VERSION_CODE < 23004
typedef struct ncclParamHandle *ncclParamHandle_t;
#endif
#if NCCL_VERSION_CODE < 23102
typedef struct ncclCollConfig_v23100 ncclCollConfig_t;
#endif

typedef struct npkit_fake_coll_config {
  size_t size;
  unsigned magic, version;
  void *ext;
  int min_ctas, max_ctas, nvls_ctas, cga_cluster_size;
  const char *alg_selection;
  int force_alg_selection, cta_policy;
  uint64_t user_profiler_tag;
} npkit_fake_coll_config;

typedef struct npkit_fake_team {
  int nRanks, rank, stride;
} npkit_fake_team;

#endif
