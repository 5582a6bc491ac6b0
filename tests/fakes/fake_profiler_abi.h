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

/* 2.28 (v5): 64-bit type, API-level events, parentGroup in tasks */
typedef struct {
  uint64_t type;
  void *parent_obj;
  int rank;
  union {
    struct { bool graph_captured; int group_depth; } group_api;
    struct { const char *func; size_t count; const char *datatype; int root; void *stream;
             bool graph_captured; } coll_api;
    struct { const char *func; size_t count; const char *datatype; void *stream;
             bool graph_captured; } p2p_api;
    struct { void *stream; } kernel_launch;
    struct { uint64_t seq_number; const char *func; const void *send_buff; void *recv_buff;
             size_t count; int root; const char *datatype; uint8_t n_channels, n_warps;
             const char *algo, *proto; void *parent_group; } coll;
    struct { const char *func; void *buff; const char *datatype; size_t count; int peer;
             uint8_t n_channels; void *parent_group; } p2p;
    proxy_op_d proxy_op;
    struct { int step; } proxy_step;
    struct { uint8_t channel_id; uint64_t p_timer; } kernel_ch;
  };
} descr_v5;

/* 2.31.2 (v7, src/include/plugin/profiler/profiler_v7.h at commit 889806836097): v6's union
 * (v5's, and the copy-engine members this fake never emits) with userTag appended to the API and
 * task members, kernelVariant and isSymColl to Coll, and the KernelPhase member.  Every v5 field
 * keeps its offset, so the fake describes every event in this layout and hands the v5/v6 tables
 * an exact-size copy of its v5 prefix (a plugin reading past its version's end reads outside it). */
typedef struct {
  uint64_t type;
  void *parent_obj;
  int rank;
  union {
    struct { bool graph_captured; int group_depth; } group_api;
    struct { const char *func; size_t count; const char *datatype; int root; void *stream;
             bool graph_captured; uint64_t user_tag; } coll_api;
    struct { const char *func; size_t count; const char *datatype; void *stream;
             bool graph_captured; uint64_t user_tag; } p2p_api;
    struct { void *stream; } kernel_launch;
    struct { uint64_t seq_number; const char *func; const void *send_buff; void *recv_buff;
             size_t count; int root; const char *datatype; uint8_t n_channels, n_warps;
             const char *algo, *proto; void *parent_group; const char *kernel_variant;
             bool is_sym_coll; uint64_t user_tag; } coll;
    struct { const char *func; void *buff; const char *datatype; size_t count; int peer;
             uint8_t n_channels; void *parent_group; uint64_t user_tag; } p2p;
    proxy_op_d proxy_op;
    struct { int step; } proxy_step;
    struct { uint8_t channel_id; uint64_t p_timer; } kernel_ch;
    struct { uint8_t channel_id, phase_id; const char *phase_name; uint64_t p_timer; } kernel_phase;
  };
} descr_v7;

/* 2.27 (v4): 8-bit type, no API-level events, no parentGroup */
typedef struct {
  uint8_t type;
  void *parent_obj;
  int rank;
  union {
    struct { uint64_t seq_number; const char *func; const void *send_buff; void *recv_buff;
             size_t count; int root; const char *datatype; uint8_t n_channels, n_warps;
             const char *algo, *proto; } coll;
    struct { const char *func; void *buff; const char *datatype; size_t count; int peer;
             uint8_t n_channels; } p2p;
    proxy_op_d proxy_op;
    struct { int step; } proxy_step;
    struct { uint8_t channel_id; uint64_t p_timer; } kernel_ch;
  };
} descr_v4;

/* 2.26 (v3): tasks carry the communicator's name and hash; no GPU timer */
typedef struct {
  uint8_t type;
  void *parent_obj;
  int rank;
  union {
    struct { const char *name; uint64_t comm_hash, seq_number; const char *func;
             const void *send_buff; void *recv_buff; size_t count; int root;
             const char *datatype; uint8_t n_max_channels, n_warps; const char *algo,
             *proto; } coll;
    struct { const char *name; uint64_t comm_hash; const char *func; void *buff;
             const char *datatype; size_t count; int peer; } p2p;
    proxy_op_d proxy_op;
    struct { int step; } proxy_step;
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
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t comm_id, int *mask, const char *comm_name,
                       int n_nodes, int n_ranks, int rank, logger_fn log);
  ncclResult_t (*start_event)(void *ctx, void **handle, descr_v5 *d);
  ncclResult_t (*stop_event)(void *handle);
  ncclResult_t (*record_event_state)(void *handle, int state, args_v4 *a);
  ncclResult_t (*finalize)(void *ctx);
} table_v5; /* v6's has the same signatures */
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t comm_id, int *mask, const char *comm_name,
                       int n_nodes, int n_ranks, int rank, logger_fn log);
  ncclResult_t (*start_event)(void *ctx, void **handle, descr_v7 *d);
  ncclResult_t (*stop_event)(void *handle);
  ncclResult_t (*record_event_state)(void *handle, int state, args_v4 *a);
  ncclResult_t (*finalize)(void *ctx);
} table_v7;
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, int *mask, const char *comm_name, uint64_t comm_hash,
                       int n_nodes, int n_ranks, int rank, logger_fn log);
  ncclResult_t (*start_event)(void *ctx, void **handle, descr_v4 *d);
  ncclResult_t (*stop_event)(void *handle);
  ncclResult_t (*record_event_state)(void *handle, int state, args_v4 *a);
  ncclResult_t (*finalize)(void *ctx);
} table_v4;
typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, int *mask);
  ncclResult_t (*start_event)(void *ctx, void **handle, descr_v3 *d);
  ncclResult_t (*stop_event)(void *handle);
  ncclResult_t (*record_event_state)(void *handle, int state, args_v3 *a);
  ncclResult_t (*finalize)(void *ctx);
} table_v3;

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
