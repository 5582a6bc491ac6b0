/* The profiler plugin ABI as NCCL passes it, v3 to v7, in the fake's own declarations (written
 * from NVIDIA/nccl src/include/plugin/profiler/profiler_v3.h ... profiler_v7.h at the tags each
 * names; the asserts pin the offsets a plugin reads).  Private to fake_profiler.c. */
#ifndef NPKIT_FAKE_PROFILER_ABI_H
#define NPKIT_FAKE_PROFILER_ABI_H

#include <nccl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


enum {
  EV_GROUP = 1 << 0, EV_COLL = 1 << 1, EV_P2P = 1 << 2, EV_PROXY_OP = 1 << 3,
  EV_PROXY_STEP = 1 << 4, EV_PROXY_CTRL = 1 << 5, EV_KERNEL_CH = 1 << 6, EV_NET_PLUGIN = 1 << 7,
  EV_GROUP_API = 1 << 8, EV_COLL_API = 1 << 9, EV_P2P_API = 1 << 10, EV_KERNEL_LAUNCH = 1 << 11,
  EV_CE_COLL = 1 << 12, EV_CE_SYNC = 1 << 13, EV_CE_BATCH = 1 << 14, /* v6, never emitted here */
  EV_KERNEL_PHASE = 1 << 15,                                            /* v7 */
};
enum {
  ST_SEND_TRANSMITTED = 2, ST_RECV_RECEIVED = 5, ST_SEND_GPU_WAIT = 8, ST_SEND_WAIT = 9,
  ST_RECV_WAIT = 10, ST_RECV_FLUSH_WAIT = 11, ST_RECV_GPU_WAIT = 12, ST_CTRL_ACTIVE = 14,
  ST_CTRL_APPEND = 17, ST_CTRL_APPEND_END = 18, ST_OP_IN_PROGRESS = 19, ST_SEND_PEER_WAIT = 20,
  ST_KERNEL_CH_STOP = 22, ST_GROUP_START_API_STOP = 23, ST_GROUP_END_API_START = 24,
  ST_KERNEL_PHASE_STOP = 31, /* v7 */
};

typedef struct {
  pid_t pid;
  uint8_t channel_id;
  int peer, n_steps, chunk_size, is_send;
} proxy_op_d;

/* The members every version from v4 on shares, each version appending its own at the end of a
 * struct, which keeps every earlier field at its offset. */
#define DESCR_HEAD(type_t) type_t type; void *parent_obj; int rank;
#define COLL_V4 uint64_t seq_number; const char *func; const void *send_buff; void *recv_buff;   \
                size_t count; int root; const char *datatype; uint8_t n_channels, n_warps;     \
                const char *algo, *proto;
#define P2P_V4 const char *func; void *buff; const char *datatype; size_t count; int peer;       \
               uint8_t n_channels;
#define PROXY_V3 proxy_op_d proxy_op; struct { int step; } proxy_step;
#define KERNEL_CH_V4 struct { uint8_t channel_id; uint64_t p_timer; } kernel_ch;
/* v5's union; v7 appends `api_tag` to the API members, `coll_more` to Coll, `task_tag` to P2p, and
 * has `more` members. */
#define UNION_V5(api_tag, coll_more, task_tag, more)                                               \
  union {                                                                                          \
    struct { bool graph_captured; int group_depth; } group_api;                                    \
    struct { const char *func; size_t count; const char *datatype; int root; void *stream;         \
             bool graph_captured; api_tag } coll_api;                                              \
    struct { const char *func; size_t count; const char *datatype; void *stream;                   \
             bool graph_captured; api_tag } p2p_api;                                               \
    struct { void *stream; } kernel_launch;                                                        \
    struct { COLL_V4 void *parent_group; coll_more } coll;                                         \
    struct { P2P_V4 void *parent_group; task_tag } p2p;                                            \
    PROXY_V3                                                                                       \
    KERNEL_CH_V4                                                                                   \
    more                                                                                           \
  };

/* 2.28 (v5): 64-bit type, API-level events, parentGroup in tasks */
typedef struct {
  DESCR_HEAD(uint64_t)
  UNION_V5(, , , )
} descr_v5;

/* 2.31.2 (v7, src/include/plugin/profiler/profiler_v7.h at commit 889806836097): v6's union
 * (v5's, and the copy-engine members this fake never emits) with userTag appended to the API and
 * task members, kernelVariant and isSymColl to Coll, and the KernelPhase member.  Every v5 field
 * keeps its offset, so the fake describes every event in this layout and hands the v5/v6 tables
 * an exact-size copy of its v5 prefix (a plugin reading past its version's end reads outside it). */
typedef struct {
  DESCR_HEAD(uint64_t)
  UNION_V5(uint64_t user_tag;,
           const char *kernel_variant; bool is_sym_coll; uint64_t user_tag;,
           uint64_t user_tag;,
           struct { uint8_t channel_id; uint8_t phase_id; const char *phase_name; uint64_t p_timer; }
               kernel_phase;)
} descr_v7;

/* 2.27 (v4): 8-bit type, no API-level events, no parentGroup */
typedef struct {
  DESCR_HEAD(uint8_t)
  union {
    struct { COLL_V4 } coll;
    struct { P2P_V4 } p2p;
    PROXY_V3
    KERNEL_CH_V4
  };
} descr_v4;

/* 2.26 (v3): tasks carry the communicator's name and hash; no GPU timer */
typedef struct {
  DESCR_HEAD(uint8_t)
  union {
    struct { const char *name; uint64_t comm_hash, seq_number; const char *func;
             const void *send_buff; void *recv_buff; size_t count; int root;
             const char *datatype; uint8_t n_max_channels, n_warps; const char *algo,
             *proto; } coll;
    struct { const char *name; uint64_t comm_hash; const char *func; void *buff;
             const char *datatype; size_t count; int peer; } p2p;
    PROXY_V3
    struct { uint8_t channel_id; } kernel_ch;
  };
} descr_v3;

typedef union {
  struct { size_t trans_size; } proxy_step;
  struct { int appended_proxy_ops; } proxy_ctrl;
  struct { uint64_t p_timer; } kernel_ch;
} args_v4; /* also v5, v6 and v7 (whose KernelPhase stop reuses kernel_ch.p_timer) */

typedef union {
  struct { size_t trans_size; int steps; } proxy_op;
  struct { int appended_proxy_ops; } proxy_ctrl;
} args_v3;

typedef void (*logger_fn)(int, unsigned long, const char *, int, const char *, ...);
/* A version's table: its init's parameters, its descriptor and its state arguments. */
#define TABLE(init_params, descr, args)                                                            \
  struct {                                                                                         \
    const char *name;                                                                              \
    ncclResult_t (*init) init_params;                                                              \
    ncclResult_t (*start_event)(void *ctx, void **handle, descr *d), (*stop_event)(void *handle);  \
    ncclResult_t (*record_event_state)(void *handle, int state, args *a), (*finalize)(void *ctx);  \
  }
#define INIT_V5 (void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int n_nodes,      \
                 int n_ranks, int rank, logger_fn log)
typedef TABLE(INIT_V5, descr_v5, args_v4) table_v5; /* v6's has the same signatures */
typedef TABLE(INIT_V5, descr_v7, args_v4) table_v7;
typedef TABLE((void **ctx, int *mask, const char *comm_name, uint64_t comm_hash, int n_nodes,
               int n_ranks, int rank, logger_fn log),
              descr_v4, args_v4) table_v4;
typedef TABLE((void **ctx, int *mask), descr_v3, args_v3) table_v3;

_Static_assert(offsetof(descr_v5, coll.parent_group) == 24 + 80, "v5 Coll layout");
_Static_assert(sizeof(descr_v5) == 112, "v5/v6 descriptor size (v6 adds ceColl, 88 bytes too)");
_Static_assert(sizeof(descr_v7) == 136, "v7 descriptor size");
_Static_assert(offsetof(descr_v7, coll.parent_group) == offsetof(descr_v5, coll.parent_group), "v7 keeps v5");
_Static_assert(offsetof(descr_v7, coll.kernel_variant) == 112, "v7 Coll layout");
_Static_assert(offsetof(descr_v7, coll.user_tag) == 128, "v7 Coll layout");
_Static_assert(offsetof(descr_v7, coll_api.user_tag) == 72, "v7 CollApi layout");
_Static_assert(offsetof(descr_v7, p2p_api.user_tag) == 64, "v7 P2pApi layout");
_Static_assert(offsetof(descr_v7, p2p.user_tag) == 72, "v7 P2p layout");
_Static_assert(offsetof(descr_v7, kernel_phase.phase_name) == 32, "v7 KernelPhase layout");
_Static_assert(offsetof(descr_v7, kernel_phase.p_timer) == 40, "v7 KernelPhase layout");
_Static_assert(offsetof(descr_v5, p2p.n_channels) == 24 + 36, "v5 P2p layout");
_Static_assert(offsetof(descr_v4, kernel_ch.p_timer) == 24 + 8, "v4 KernelCh layout");
_Static_assert(offsetof(descr_v3, coll.n_max_channels) == 24 + 72, "v3 Coll layout");

#endif
