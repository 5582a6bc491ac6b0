/* NCCL's profiler events as the plugin's core sees them, whatever the ABI version: what each
 * version's adapter (plugin_adapters.c) makes of NCCL's descriptors and state arguments
 * (plugin_abi.h) before calling the core (plugin_core.h). */
#ifndef NPKIT_PLUGIN_DESCR_H
#define NPKIT_PLUGIN_DESCR_H

#include <stdint.h>

#include "npkit/event_log.h" /* NPKIT_PAPI_* */
#include "zero.h"

/* Event types as the core sees them. */
typedef enum npkit_plugin_type {
  NPKIT_PLUGIN_IGNORED = 0, /* types we do not record (network plugin, copy engine, unknown) */
  NPKIT_PLUGIN_GROUP,       /* a launch (parent of Coll/P2p in v1-v4) */
  NPKIT_PLUGIN_API,         /* v5+ GroupApi, CollApi, P2pApi, KernelLaunch (plugin_api.c) */
  NPKIT_PLUGIN_COLL,
  NPKIT_PLUGIN_P2P,
  NPKIT_PLUGIN_PROXY_OP,
  NPKIT_PLUGIN_PROXY_STEP,
  NPKIT_PLUGIN_PROXY_CTRL,
  NPKIT_PLUGIN_KERNEL_CH,
  NPKIT_PLUGIN_KERNEL_PHASE, /* v7+: a phase of a kernel channel */
} npkit_plugin_type;

typedef struct npkit_plugin_task {
  uint64_t seq;          /* Coll: NCCL's seqNumber */
  uint64_t count;
  uint64_t comm_hash;    /* v1-v3, else 0 */
  const char *func;      /* NCCL's names, NULL if unknown; copied, not kept */
  const char *algo;
  const char *proto;
  int datatype;          /* ncclDataType_t, -1 if unknown */
  int root;              /* Coll: root; P2p: peer */
  uint8_t nchannels;
  uint8_t nwarps;
  uint8_t symmetric;     /* v7+: isSymColl (a symmetric-memory kernel; algo is its variant's tail) */
} npkit_plugin_task;

typedef struct npkit_plugin_descr {
  npkit_plugin_type type;
  void *parent;
  int rank;
  union {
    npkit_plugin_task task;
    struct {
      int pid;
      int channel;
      int peer;
      int nsteps;
      int chunk_size;
      int is_send;
    } proxy_op;
    struct {
      int step;
    } proxy_step;
    struct {
      int channel;
      int has_ptimer;    /* v4+: ptimer is the GPU start stamp */
      uint64_t ptimer;
    } kernel_ch;
    struct {
      int channel;
      int phase;         /* 0 initial_sync, 1 compute, 2 final_sync */
      const char *name;  /* NCCL's name of the phase; copied, not kept */
      uint64_t ptimer;   /* GPU start stamp */
    } kernel_phase;
    struct {
      int kind;          /* NPKIT_PAPI_* */
      const char *func;  /* CollApi/P2pApi; copied, not kept */
      uint64_t count;
      const char *datatype;
      int root;          /* CollApi, else -1 */
      void *stream;
      int graph_captured;
      int group_depth;   /* GroupApi */
      uint64_t user_tag; /* v7 */
    } api;
  } u;
} npkit_plugin_descr;

/* A zeroed descriptor: NCCL starts an event for every proxy step (zero.h: no `rep stos`). */
static inline void npkit_plugin_descr_zero(npkit_plugin_descr *e) {
  _Static_assert(sizeof(npkit_plugin_descr) % 8 == 0, "a whole number of 8-byte stores");
  npkit_zero_small(e, sizeof *e);
}

/* What a recordEventState call carries, once the version's union is decoded. */
typedef struct npkit_plugin_state {
  int has_trans_size;    /* step states of v4+ (trans_size: this step's bytes); proxy op states of
                            v1-v3 (trans_size: the op's cumulative bytes) */
  uint64_t trans_size;
  int has_ptimer;        /* ncclProfilerKernelChStop of v4+, ncclProfilerKernelPhaseStop of v7+ */
  uint64_t ptimer;
  int has_appended;      /* proxy control states */
  int appended;
} npkit_plugin_state;

typedef struct npkit_plugin_comm {
  unsigned abi;          /* 1..7 */
  uint64_t nccl_comm_id; /* 0 if not given */
  const char *name;      /* may be NULL */
  int nnodes, nranks, rank; /* -1 if not given */
} npkit_plugin_comm;

#endif
