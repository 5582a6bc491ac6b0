/*
 * Inside the plugin renderer (trace_plugin.h): the state shared by its three parts, each using
 * only the ones below it:
 *  - trace_plugin.c         the entry points and NCCL's own events as they come, the records
 *                           that came before their task;
 *  - trace_plugin_join.c    NCCL's tasks and the API calls held until their task has been read:
 *                           numbering, matching, and writing the calls with NCCL's data;
 *  - trace_plugin_tracks.c  contexts and their communicators, the tracks, and the JSON of
 *                           slices and tasks.
 */
#ifndef NPKIT_TRACE_PLUGIN_INT_H
#define NPKIT_TRACE_PLUGIN_INT_H

#include "log_reader.h"
#include "trace_api.h"
#include "trace_plugin_api.h"
#include "trace_sink.h"
#include "trace_tracks.h"

/* The bounds on what is held back (trace_plugin.h): calls waiting for their task, and NCCL's
 * records that came before theirs. */
#define NPKIT_PLUGIN_PENDING 16384u
#define NPKIT_PLUGIN_HELD 32768u

typedef struct npkit_plugin_render npkit_plugin_render;

#define NPKIT_PLUGIN_MAX_CTX 65536u
#define NPKIT_PLUGIN_MAX_OPEN_GROUPS 4096u
#define TRACK_GPU (-1)   /* channel value of a communicator's "collectives (GPU)" track */
#define TRACK_PHASES 256 /* + channel: the track of a channel's phases (NCCL 2.31+) */
#define TRACK_CTRL (-2)  /* channel value of a communicator's proxy-thread lane */
/* NCCL's per-function counters: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce */
#define NPKIT_PLUGIN_COLL_FUNCS 5
#define NPKIT_PLUGIN_BUCKETS (2u * NPKIT_PLUGIN_TASKS)
#define NPKIT_PLUGIN_HBUCKETS (NPKIT_PLUGIN_HELD / 2u)

typedef struct npkit_plugin_ctx {
  uint32_t comm1;         /* reader comm index + 1, 0 if not bound */
  int32_t rank, nranks;
  uint64_t nccl_id;
  char label[96];         /* "" until first needed */
  npkit_ev_plugin_clock clock; /* the latest GPU clock map record (samples 0: none) */
  uint32_t abi, mask;     /* the profiler ABI NCCL loaded and the events asked for; abi 0: no INIT */
} npkit_plugin_ctx;

typedef struct npkit_plugin_comm {
  uint32_t ctx;           /* bound plugin context, 0 if none */
  uint64_t next[NPKIT_PLUGIN_COLL_FUNCS];
  uint32_t *open[NPKIT_PLUGIN_COLL_FUNCS]; /* batches with calls still unmatched */
  uint32_t nopen[NPKIT_PLUGIN_COLL_FUNCS];
  size_t capopen[NPKIT_PLUGIN_COLL_FUNCS];
} npkit_plugin_comm;

typedef struct npkit_plugin_call {
  npkit_event ev;
  uint64_t pos;           /* its position in the ring, to tell a reused slot */
  uint64_t task;          /* the task it was matched to, 0 if none */
  uint32_t batch1;        /* its batch + 1 while it is unmatched in one */
  uint32_t comm1;
  uint8_t used;
  int8_t f;               /* NCCL function index, -1 if it takes no part */
} npkit_plugin_call;

typedef struct npkit_plugin_batch {
  uint64_t lo;            /* NCCL seqNumbers lo .. lo + k - 1 */
  uint64_t *pos;          /* ring positions of its calls */
  uint32_t k, npos, open; /* open: calls still unmatched and held */
  uint32_t comm1;
  int8_t f;
  uint8_t used;
} npkit_plugin_batch;

typedef struct npkit_plugin_task {
  uint64_t id;            /* 0: empty slot */
  uint64_t nccl_seq, count;
  uint64_t gpu_start, gpu_stop; /* span of its GPU-timed channels (kch_gpu of them) */
  uint64_t cpu_start, cpu_stop; /* span of the channels timed by the host only */
  uint64_t raw_start, raw_stop; /* the GPU-timed span on the GPU's own clock (mapped channels) */
  uint64_t api;           /* its CollApi/P2pApi (NCCL 2.28+), 0 */
  uint64_t captured_seq;  /* a graph replay: the seq of the call that was captured, or NO_SEQ */
  uint32_t kch_gpu, kch_cpu;
  uint64_t call_pos;      /* the matched call while it is held, NPKIT_PLUGIN_NO_POS otherwise */
  uint64_t api_seq;       /* the matched call's seq, NPKIT_NO_SEQ if none */
  uint64_t user_tag;      /* its CollApi/P2pApi's user tag (NCCL 2.31+), 0 */
  uint32_t ctx, comm1, kch_seen;
  int32_t root, datatype, hnext;
  uint16_t fn;
  int8_t f;
  uint8_t nch, nwarps, p2p, expect_kch, claimed, indexed, gpu_written, replay, symmetric;
  char algo[16], proto[8];
} npkit_plugin_task;

typedef struct npkit_plugin_member {
  uint64_t pos, seq;
  uint32_t comm1;
  int8_t f;
} npkit_plugin_member;

typedef struct npkit_plugin_group {
  uint64_t id;
  npkit_plugin_member *m;
  uint32_t n;
  size_t cap;
} npkit_plugin_group;

typedef struct npkit_plugin_held {
  npkit_event ev;         /* a kernel channel or proxy record that came before its task */
  uint64_t pos;
  int32_t hnext;
  uint8_t used;
} npkit_plugin_held;

typedef struct npkit_plugin_track {
  uint32_t ctx;
  int32_t channel, peer;
  int32_t dir;            /* lanes: 1 send, 0 recv */
} npkit_plugin_track;

/* The keys a call gets from NCCL's events, interned once (npkit_plugin_render.key). */
enum { PK_ALGORITHM, PK_PROTOCOL, PK_CHANNELS, PK_WARPS, PK_NCCL_SEQ, PK_GPU_TIME_US, PK_GRAPH_CAPTURED, PK_COUNT };

struct npkit_plugin_render {
  const npkit_log_reader *r;
  npkit_api_fmt *fmt;
  npkit_sink_str key[PK_COUNT];
  npkit_plugin_ctx *ctx;
  uint32_t nctx;
  npkit_plugin_comm *comms;       /* per reader comm */
  npkit_plugin_call *calls;       /* ring of NPKIT_PLUGIN_PENDING held calls */
  uint64_t head, tail;
  npkit_plugin_task *tasks;       /* NPKIT_PLUGIN_TASKS, slot = id mod the size */
  int32_t *buckets;           /* (comm, function, seqNumber) -> unmatched task slot */
  npkit_plugin_batch *batches;
  uint32_t nbatches;
  size_t capbatches;
  uint32_t *free_batches;     /* indices of unused batches, room for every batch */
  size_t capfree;
  uint32_t nfree;
  npkit_plugin_group groups[NPKIT_PLUGIN_MAX_OPEN_GROUPS];
  uint32_t ngroups;
  npkit_plugin_track chan[NPKIT_TRACE_CHANNEL_TRACKS], lane[NPKIT_TRACE_PROXY_TRACKS];
  uint32_t nchan, nlane;
  int chan_shared_used, lane_shared_used;
  npkit_ev_plugin_stats stats;
  int has_stats;
  uint64_t last_ns;           /* latest time of a plugin event, for the counters at the end */
  npkit_plugin_held *held;        /* ring of NPKIT_PLUGIN_HELD records */
  uint64_t hhead, htail;
  int32_t *hbuckets;          /* task id -> held records */
  npkit_plugin_api_table *apis;   /* NCCL's API-level events (2.28+) */
};

/* trace_plugin_tracks.c */
/* A context (ids 1..NPKIT_PLUGIN_MAX_CTX-1), grown on first use; NULL for 0, too large, or memory. */
npkit_plugin_ctx *npkit_plugin_ctx_get(npkit_plugin_render *p, uint32_t id);
/* The reader comm index + 1 a context is bound to, 0 if none. */
uint32_t npkit_plugin_ctx_comm(npkit_plugin_render *p, uint32_t ctx);
/* "comm 1f2e3d4c (rank 3/4)", or NCCL's id when unbound; only for names written at the end. */
const char *npkit_plugin_ctx_label(npkit_plugin_render *p, uint32_t id);
/* Track of (ctx, channel) in the channel band (channel TRACK_GPU: the collectives track, TRACK_PHASES
 * + channel: its phases), and of a proxy lane; named at the end by npkit_plugin_name_tracks. */
int64_t npkit_plugin_channel_tid(npkit_plugin_render *p, uint32_t ctx, int channel);
int64_t npkit_plugin_lane_tid(npkit_plugin_render *p, uint32_t ctx, int channel, int peer, int dir);
void npkit_plugin_name_tracks(npkit_plugin_render *p, npkit_sink *w);
/* Which profiler ABI each communicator got, and how its GPU clock was mapped (metadata). */
void npkit_plugin_write_clocks(npkit_plugin_render *p, npkit_sink *w);
/* A slice with its args open; close with npkit_sink_end. */
void npkit_plugin_slice_begin(npkit_plugin_render *p, npkit_sink *w, const char *name, const char *cat,
                              int64_t tid, uint64_t start_ns, uint64_t end_ns);
void npkit_plugin_arg_str(npkit_sink *w, const char *key, const char *v, size_t n);
void npkit_plugin_arg_int(npkit_sink *w, const char *key, int64_t v);
/* key: the span from..to in microseconds */
void npkit_plugin_arg_us(npkit_sink *w, const char *key, uint64_t from, uint64_t to);
/* "AllReduce RING/SIMPLE", with " (graph replay)"; returns as snprintf. */
int npkit_plugin_task_name(const npkit_plugin_task *t, char *buf, size_t len);
/* The args every slice of a task carries: function, algorithm, protocol, seqs, tag, replay. */
void npkit_plugin_task_args(npkit_sink *w, const npkit_plugin_task *t);
/* The task's slice on its communicator's "collectives (GPU)" track (once, if a channel ran). */
void npkit_plugin_gpu_slice(npkit_plugin_render *p, npkit_sink *w, npkit_plugin_task *t);
/* The span of its channels: the GPU-timed ones if any (never mixed with host-timed ones).
 * Returns 1 when GPU-timed, 0 when host-timed, -1 when no channel was seen. */
int npkit_plugin_task_span(const npkit_plugin_task *t, uint64_t *start, uint64_t *stop);

/* trace_plugin_join.c */
npkit_plugin_task *npkit_plugin_task_find(npkit_plugin_render *p, uint64_t id);
/* A TASK record: takes the slot of the task it replaces (writing what waited for that one) and
 * is matched with a held call if one was numbered for it. */
void npkit_plugin_add_task(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev);
/* A channel of task t stopped (t's GPU span is updated): writes its call once all have. */
void npkit_plugin_channel_done(npkit_plugin_render *p, npkit_sink *w, npkit_plugin_task *t);
/* An API-level record: joins what waited for it. */
void npkit_plugin_add_api(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev);
/* Writes every call still held, oldest first. */
void npkit_plugin_flush_calls(npkit_plugin_render *p, npkit_sink *w);
void npkit_plugin_join_free(npkit_plugin_render *p);

#endif /* NPKIT_TRACE_PLUGIN_INT_H */
