/* NCCL functions newer than the nccl.h the test programs are built with (2.29 to 2.31), and the
 * device API's host functions (declared in the C++/CUDA headers of nccl_device/, which a C program
 * cannot include), declared here from NCCL's public headers so that a program can call them.
 * They are looked up at run time (dlsym), so the same binary runs against any NCCL: a function no
 * library of the process has is not called at all.
 *
 * The declarations are the test programs' own, written independently of the library's
 * (src/format/nccl_compat.h), from NVIDIA/nccl: src/nccl.h.in at v2.29.2-1 (ncclCommGetUniqueId,
 * ncclCommGrow, ncclWinGetUserPtr, ncclPutSignal, ncclSignal, ncclWaitSignal and
 * ncclWaitSignalDesc_t), v2.29.7-1 (ncclCommSuspend/Resume/MemStats), v2.30.7-1 (ncclParam*),
 * 2.31.2 (commit 889806836097: ncclCollConfig_t and the nccl*Config collectives); and
 * src/include/nccl_device/core.h, ll_a2a.h, lsa_barrier.h, gin_barrier.h, cft_barrier.h at the
 * same tags (ncclTeam_t by value: {int nRanks, rank, stride}). */
#ifndef NPKIT_TEST_NEWER_API_H
#define NPKIT_TEST_NEWER_API_H

#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

/* ncclCollConfig_t of 2.31.2 (NCCL_COLLCONFIG_INITIALIZER sets size, NCCL_API_MAGIC, the version,
 * forceAlgSelection = 1 and the rest undefined) */
typedef struct npkit_test_coll_cfg {
  size_t size;
  unsigned int magic;
  unsigned int version;
  void *ext;
  int minCTAs, maxCTAs, nvlsCTAs, cgaClusterSize;
  const char *algSelection;
  int forceAlgSelection;
  int CTAPolicy;
  uint64_t userProfilerTag;
} npkit_test_coll_cfg;

/* An initialised config carrying `tag`. */
npkit_test_coll_cfg npkit_test_coll_cfg_make(uint64_t tag);

typedef struct npkit_test_team {
  int nRanks, rank, stride;
} npkit_test_team;

typedef struct npkit_test_wait_signal_desc {
  int opCnt, peer, sigIdx, ctx;
} npkit_test_wait_signal_desc;

/* The address of `name` in the process (the preloaded wrapper when there is one), NULL if none. */
void *npkit_test_sym(const char *name);

#endif
