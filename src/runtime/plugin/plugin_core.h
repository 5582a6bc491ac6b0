/* NCCL's own events through its profiler plugin interface (NCCL 2.23+).
 *
 * The library exports the tables ncclProfiler_v1 ... ncclProfiler_v7 (profiler_plugin_abi.c):
 * each version's adapter turns NCCL's descriptor into the version-independent npkit_pp_descr
 * below and calls this core, which turns events into records (event kinds NPKIT_EV_PLUGIN_* of
 * include/npkit/event_log.h) through the recorder.  A constructor (profiler_plugin_env.c) points
 * NCCL_PROFILER_PLUGIN at the library when the user has not set it, so LD_PRELOAD alone enables
 * it; naming the library in NCCL_PROFILER_PLUGIN without preloading it works too.
 *
 * Handles given to NCCL are never pointers: an event's handle encodes a tag, and either a task id
 * (Coll/P2p, whose children refer to it after it stopped) or the index and generation of a slot
 * holding the state of an event that is still running (profiler_plugin_slots.h).  A handle that
 * is stale (a state after stop, a second stop) or garbage is detected and ignored, never
 * dereferenced.  Every entry point returns success.
 *
 * Threads: init, Coll/P2p and the API-level events come from the thread that creates the
 * communicator or launches work; proxy ops, steps, kernel channels and proxy control from NCCL's
 * proxy thread.  Recording is lock-free (npkit_thread_self + npkit_record). */
#ifndef NPKIT_PROFILER_PLUGIN_H
#define NPKIT_PROFILER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h" /* NPKIT_PAPI_* */
#include "source.h"

/* Event types as the core sees them. */
typedef enum npkit_pp_type {
  NPKIT_PP_IGNORED = 0, /* types we do not record (network plugin, copy engine, unknown) */
  NPKIT_PP_GROUP,       /* a launch (parent of Coll/P2p in v1-v4) */
  NPKIT_PP_API,         /* v5+ GroupApi, CollApi, P2pApi, KernelLaunch (profiler_plugin_api.c) */
  NPKIT_PP_COLL,
  NPKIT_PP_P2P,
  NPKIT_PP_PROXY_OP,
  NPKIT_PP_PROXY_STEP,
  NPKIT_PP_PROXY_CTRL,
  NPKIT_PP_KERNEL_CH,
  NPKIT_PP_KERNEL_PHASE, /* v7+: a phase of a kernel channel */
} npkit_pp_type;

typedef struct npkit_pp_task {
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
} npkit_pp_task;

typedef struct npkit_pp_descr {
  npkit_pp_type type;
  void *parent;
  int rank;
  union {
    npkit_pp_task task;
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
} npkit_pp_descr;

/* What a recordEventState call carries, once the version's union is decoded. */
typedef struct npkit_pp_state {
  int has_trans_size;    /* step states of v4+ (trans_size: this step's bytes); proxy op states of
                            v1-v3 (trans_size: the op's cumulative bytes) */
  uint64_t trans_size;
  int has_ptimer;        /* ncclProfilerKernelChStop of v4+, ncclProfilerKernelPhaseStop of v7+ */
  uint64_t ptimer;
  int has_appended;      /* proxy control states */
  int appended;
} npkit_pp_state;

typedef struct npkit_pp_comm {
  unsigned abi;          /* 1..7 */
  uint64_t nccl_comm_id; /* 0 if not given */
  const char *name;      /* may be NULL */
  int nnodes, nranks, rank; /* -1 if not given */
} npkit_pp_comm;

/* The plugin's entry in the life cycle's table: its finish writes the clock maps' last state,
 * the plugin's counters (NPKIT_EV_PLUGIN_STATS) and what it could not record. */
extern const npkit_source_ops npkit_source_plugin;

/* The core.  All return 0 (ncclSuccess). */
int npkit_pp_init(void **ctx, int *mask, const npkit_pp_comm *comm);
int npkit_pp_start(void *ctx, void **handle, const npkit_pp_descr *d);
int npkit_pp_stop(void *handle);
int npkit_pp_record_state(void *handle, int state, const npkit_pp_state *s);
int npkit_pp_finalize(void *ctx);

/* ncclProfile* mask for the events selected by NPKIT_PLUGIN_EVENTS (npkit_cfg.plugin_events)
 * that ABI version abi knows. */
int npkit_pp_nccl_mask(uint32_t plugin_events, unsigned abi);

/* Names of NCCL's enums and strings (profiler_plugin_names.c). */
/* v1 passes numbers: ncclFunc_t, NCCL_ALGO_*, NCCL_PROTO_* of 2.23.  NULL if out of range. */
const char *npkit_pp_v1_func_name(unsigned func);
const char *npkit_pp_v1_algo_name(unsigned algo);
const char *npkit_pp_v1_proto_name(unsigned proto);
/* "ncclFloat32" -> ncclFloat32; -1 for NULL or an unknown name. */
int npkit_pp_datatype_from_name(const char *name);
/* "AllReduce" -> NPKIT_FN_AllReduce; NPKIT_FN_NONE for NULL or a name without an API function. */
int npkit_pp_fn_from_name(const char *name);

#endif
