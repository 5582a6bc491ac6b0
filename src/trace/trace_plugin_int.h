/*
 * Inside the plugin renderer (trace_plugin.h): the state shared by its two halves.
 *  - trace_plugin.c       contexts, tracks and the slices of NCCL's own events, the records that
 *                         came before their task, the public entry points;
 *  - trace_plugin_join.c  NCCL's tasks and the API calls held until their task has been read:
 *                         numbering, matching, and writing the calls with NCCL's data.
 */
#ifndef NPKIT_TRACE_PLUGIN_INT_H
#define NPKIT_TRACE_PLUGIN_INT_H

#include "trace_plugin.h"
#include "trace_plugin_api.h"

#define NPKIT_PL_MAX_CTX 65536u
#define NPKIT_PL_MAX_OPEN_GROUPS 4096u
#define NPKIT_PL_CHANNEL_TRACKS 199u /* band 700..898, 899 shared by the rest */
#define NPKIT_PL_PROXY_LANES 49u     /* band 900..948, 949 shared by the rest; 950.. is NPKit dumps */
/* NCCL's per-function counters: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce */
#define NPKIT_PL_COLL_FUNCS 5
#define NPKIT_PL_BUCKETS (2u * NPKIT_PLUGIN_TASKS)
#define NPKIT_PL_HBUCKETS (NPKIT_PLUGIN_HELD / 2u)

typedef struct npkit_pl_ctx {
  uint32_t comm1;         /* reader comm index + 1, 0 if not bound */
  int32_t rank, nranks;
  uint64_t nccl_id;
  char label[96];         /* "" until first needed */
  npkit_ev_plugin_clock clock; /* the latest GPU clock map record (samples 0: none) */
  uint32_t abi, mask;     /* the profiler ABI NCCL loaded and the events asked for; abi 0: no INIT */
} npkit_pl_ctx;

typedef struct npkit_pl_comm {
  uint32_t ctx;           /* bound plugin context, 0 if none */
  uint64_t next[NPKIT_PL_COLL_FUNCS];
  uint32_t *open[NPKIT_PL_COLL_FUNCS]; /* batches with calls still unmatched */
  uint32_t nopen[NPKIT_PL_COLL_FUNCS], capopen[NPKIT_PL_COLL_FUNCS];
} npkit_pl_comm;

typedef struct npkit_pl_call {
  npkit_event ev;
  uint64_t pos;           /* its position in the ring, to tell a reused slot */
  uint64_t task;          /* the task it was matched to, 0 if none */
  uint32_t batch1;        /* its batch + 1 while it is unmatched in one */
  uint32_t comm1;
  uint8_t used;
  int8_t f;               /* NCCL function index, -1 if it takes no part */
} npkit_pl_call;

typedef struct npkit_pl_batch {
  uint64_t lo;            /* NCCL seqNumbers lo .. lo + k - 1 */
  uint64_t *pos;          /* ring positions of its calls */
  uint32_t k, npos, open; /* open: calls still unmatched and held */
  uint32_t comm1;
  int8_t f;
  uint8_t used;
} npkit_pl_batch;

typedef struct npkit_pl_task {
  uint64_t id;            /* 0: empty slot */
  uint64_t nccl_seq, count;
  uint64_t gpu_start, gpu_stop; /* span of its GPU-timed channels (kch_gpu of them) */
  uint64_t cpu_start, cpu_stop; /* span of the channels timed by the host only */
  uint64_t raw_start, raw_stop; /* the GPU-timed span on the GPU's own clock (mapped channels) */
  uint64_t api;           /* its CollApi/P2pApi (NCCL 2.28+), 0 */
  uint64_t captured_seq;  /* a graph replay: the seq of the call that was captured, or NO_SEQ */
  uint32_t kch_gpu, kch_cpu;
  uint64_t call_pos;      /* the matched call while it is held, NPKIT_PL_NO_POS otherwise */
  uint64_t api_seq;       /* the matched call's seq, NPKIT_NO_SEQ if none */
  uint64_t user_tag;      /* its CollApi/P2pApi's user tag (NCCL 2.31+), 0 */
  uint32_t ctx, comm1, kch_seen;
  int32_t root, datatype, hnext;
  uint16_t fn;
  int8_t f;
  uint8_t nch, nwarps, p2p, expect_kch, claimed, indexed, gpu_written, replay, symmetric;
  char algo[16], proto[8];
} npkit_pl_task;

typedef struct npkit_pl_member {
  uint64_t pos, seq;
  uint32_t comm1;
  int8_t f;
} npkit_pl_member;

typedef struct npkit_pl_group {
  uint64_t id;
  npkit_pl_member *m;
  uint32_t n, cap;
} npkit_pl_group;

typedef struct npkit_pl_held {
  npkit_event ev;         /* a kernel channel or proxy record that came before its task */
  uint64_t pos;
  int32_t hnext;
  uint8_t used;
} npkit_pl_held;

typedef struct npkit_pl_track {
  uint32_t ctx;
  int32_t channel, peer;
  int32_t dir;            /* lanes: 1 send, 0 recv */
} npkit_pl_track;

struct npkit_plugin_render {
  const npkit_log_reader *r;
  npkit_api_fmt *fmt;
  npkit_pl_ctx *ctx;
  uint32_t nctx;
  npkit_pl_comm *comms;       /* per reader comm */
  npkit_pl_call *calls;       /* ring of NPKIT_PLUGIN_PENDING held calls */
  uint64_t head, tail;
  npkit_pl_task *tasks;       /* NPKIT_PLUGIN_TASKS, slot = id mod the size */
  int32_t *buckets;           /* (comm, function, seqNumber) -> unmatched task slot */
  npkit_pl_batch *batches;
  uint32_t nbatches, capbatches;
  uint32_t *free_batches;     /* indices of unused batches */
  uint32_t nfree;
  npkit_pl_group groups[NPKIT_PL_MAX_OPEN_GROUPS];
  uint32_t ngroups;
  npkit_pl_track chan[NPKIT_PL_CHANNEL_TRACKS], lane[NPKIT_PL_PROXY_LANES];
  uint32_t nchan, nlane;
  int chan_shared_used, lane_shared_used;
  npkit_ev_plugin_stats stats;
  int has_stats;
  uint64_t last_ns;           /* latest time of a plugin event, for the counters at the end */
  npkit_pl_held *held;        /* ring of NPKIT_PLUGIN_HELD records */
  uint64_t hhead, htail;
  int32_t *hbuckets;          /* task id -> held records */
  npkit_pl_api_table *apis;   /* NCCL's API-level events (2.28+) */
};

/* trace_plugin.c */
/* The reader comm index + 1 a context is bound to, 0 if none. */
uint32_t npkit_plugin_ctx_comm(npkit_plugin_render *p, uint32_t ctx);
/* The task's slice on its communicator's "collectives (GPU)" track (once, if a channel ran). */
void npkit_plugin_gpu_slice(npkit_plugin_render *p, npkit_json *w, npkit_pl_task *t);
/* The span of its channels: the GPU-timed ones if any (never mixed with host-timed ones).
 * Returns 1 when GPU-timed, 0 when host-timed, -1 when no channel was seen. */
int npkit_plugin_task_span(const npkit_pl_task *t, uint64_t *start, uint64_t *stop);

/* trace_plugin_join.c */
npkit_pl_task *npkit_plugin_task_find(npkit_plugin_render *p, uint64_t id);
/* A TASK record: takes the slot of the task it replaces (writing what waited for that one) and
 * is matched with a held call if one was numbered for it. */
void npkit_plugin_add_task(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev);
/* A channel of task t stopped (t's GPU span is updated): writes its call once all have. */
void npkit_plugin_channel_done(npkit_plugin_render *p, npkit_json *w, npkit_pl_task *t);
/* An API-level record: joins what waited for it. */
void npkit_plugin_add_api(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev);
/* Writes every call still held, oldest first. */
void npkit_plugin_flush_calls(npkit_plugin_render *p, npkit_json *w);
void npkit_plugin_join_free(npkit_plugin_render *p);

#endif /* NPKIT_TRACE_PLUGIN_INT_H */
