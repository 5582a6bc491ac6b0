/* The tables NCCL looks up (ncclProfiler_v1 ... ncclProfiler_v7) and the adapters that turn each
 * version's descriptors and state arguments (plugin_abi.h) into the core's
 * (plugin_core.h).  Only layout knowledge lives here; what to record is the core's business. */
#include <string.h>

#include "plugin_abi.h"
#include "plugin_core.h"
#include "plugin_names.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- init: v1-v3 say nothing about the communicator, v4+ do ---- */

static int init_comm(void **ctx, int *mask, unsigned abi, uint64_t comm_id, const char *name,
                     int nnodes, int nranks, int rank) {
  npkit_plugin_comm c = {abi, comm_id, name, nnodes, nranks, rank};
  return npkit_plugin_init(ctx, mask, &c);
}

static int init_v1(void **ctx, int *mask) { return init_comm(ctx, mask, 1, 0, NULL, -1, -1, -1); }
static int init_v2(void **ctx, int *mask) { return init_comm(ctx, mask, 2, 0, NULL, -1, -1, -1); }
static int init_v3(void **ctx, int *mask) { return init_comm(ctx, mask, 3, 0, NULL, -1, -1, -1); }

static int init_v4(void **ctx, int *mask, const char *name, uint64_t comm_hash, int nnodes,
                   int nranks, int rank, npkit_nccl_logger log) {
  (void)log;
  return init_comm(ctx, mask, 4, comm_hash, name, nnodes, nranks, rank);
}

/* v5 moved the communicator id before the mask; v6 and v7 kept v5's signature, each with its own
 * number, which the core keeps (npkit_plugin_comm.abi).  NCCL calls each through its own table's
 * pointer type, hence one function per version, all made from this one body. */
#define INIT_LIKE_V5(ver, abi)                                                                    \
  static int init_##ver(void **ctx, uint64_t comm_id, int *mask, const char *name, int nnodes,   \
                        int nranks, int rank, npkit_nccl_logger log) {                            \
    (void)log;                                                                                    \
    return init_comm(ctx, mask, abi, comm_id, name, nnodes, nranks, rank);                        \
  }
INIT_LIKE_V5(v5, 5)
INIT_LIKE_V5(v6, 6)
INIT_LIKE_V5(v7, 7)
#undef INIT_LIKE_V5

/* ---- the union members whose layout changes between versions ----
 * Each gets a pointer to the descriptor's union (which points to every member of it). */

static void coll_v1(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_v1_coll *c = u;
  e->u.task = (npkit_plugin_task){c->seq, c->count, c->comm_hash, npkit_plugin_v1_func_name(c->func),
                              npkit_plugin_v1_algo_name(c->algo), npkit_plugin_v1_proto_name(c->proto),
                              c->datatype, c->root, c->max_channels, c->nwarps, 0};
}

static void p2p_v1(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_v1_p2p *p = u;
  e->u.task = (npkit_plugin_task){0, p->count, p->comm_hash, npkit_plugin_v1_func_name(p->func), NULL,
                              NULL, p->datatype, p->peer, 0, 0, 0};
}

/* v2's Coll has trafficBytes between datatype and nMaxChannels, so it cannot share v3's layout. */
static void coll_v2(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_v2_coll *c = u;
  e->u.task = (npkit_plugin_task){c->seq, c->count, c->comm_hash, c->func, c->algo, c->proto,
                              npkit_plugin_datatype_from_name(c->datatype), c->root, c->max_channels,
                              c->nwarps, 0};
}

static void p2p_v2(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_v2_p2p *p = u;
  e->u.task = (npkit_plugin_task){0, p->count, p->comm_hash, p->func, NULL, NULL,
                              npkit_plugin_datatype_from_name(p->datatype), p->peer, 0, 0, 0};
}

/* Also v5's and v6's: their Coll and P2p begin with v4's (npkit_abi_v5_coll.v4), and the
 * parentGroup they add is not read. */
static void coll_v4(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_v4_coll *c = u;
  e->u.task = (npkit_plugin_task){c->seq, c->count, 0, c->func, c->algo, c->proto,
                              npkit_plugin_datatype_from_name(c->datatype), c->root, c->nchannels,
                              c->nwarps, 0};
}

static void p2p_v4(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_v4_p2p *p = u;
  e->u.task = (npkit_plugin_task){0, p->count, 0, p->func, NULL, NULL,
                              npkit_plugin_datatype_from_name(p->datatype), p->peer, p->nchannels, 0, 0};
}

static void kernel_ch_v4(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_kernel_ch *k = u;
  e->u.kernel_ch.channel = k->channel;
  e->u.kernel_ch.has_ptimer = 1;
  e->u.kernel_ch.ptimer = k->ptimer;
}

/* v3: P2p is v2's, Coll is v4's behind name and commHash. */
static void coll_v3(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_v3_coll *c = u;
  coll_v4(e, &c->v4);
  e->u.task.comm_hash = c->comm_hash;
}

static void kernel_ch_v3(npkit_plugin_descr *e, const void *u) {
  e->u.kernel_ch.channel = ((const npkit_abi_v3_kernel_ch *)u)->channel; /* no GPU stamps yet */
}

/* The API-level events of v5 and v6. */
static void api_v5(npkit_plugin_descr *e, uint64_t type, const void *u) {
  e->u.api.root = -1;
  switch (type) {
  case NPKIT_NCCL_EV_GROUP_API: {
    const npkit_abi_v5_group_api *g = u;
    e->u.api.kind = NPKIT_PAPI_GROUP;
    e->u.api.graph_captured = g->graph_captured != 0;
    e->u.api.group_depth = g->group_depth;
    break;
  }
  case NPKIT_NCCL_EV_COLL_API: {
    const npkit_abi_v5_coll_api *c = u;
    e->u.api.kind = NPKIT_PAPI_COLL;
    e->u.api.func = c->func;
    e->u.api.count = c->count;
    e->u.api.datatype = c->datatype;
    e->u.api.root = c->root;
    e->u.api.stream = c->stream;
    e->u.api.graph_captured = c->graph_captured != 0;
    break;
  }
  case NPKIT_NCCL_EV_P2P_API: {
    const npkit_abi_v5_p2p_api *p = u;
    e->u.api.kind = NPKIT_PAPI_P2P;
    e->u.api.func = p->func;
    e->u.api.count = p->count;
    e->u.api.datatype = p->datatype;
    e->u.api.stream = p->stream;
    e->u.api.graph_captured = p->graph_captured != 0;
    break;
  }
  default: /* NPKIT_NCCL_EV_KERNEL_LAUNCH */
    e->u.api.kind = NPKIT_PAPI_LAUNCH;
    e->u.api.stream = ((const npkit_abi_v5_kernel_launch *)u)->stream;
    break;
  }
}

/* v7: v5's members (which begin v7's) and what v7 appended to them. */
static void coll_v7(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_v7_coll *c = u;
  coll_v4(e, &c->v5.v4);
  e->u.task.symmetric = c->is_sym_coll != 0;
}

static void api_v7(npkit_plugin_descr *e, uint64_t type, const void *u) {
  api_v5(e, type, u);
  if (type == NPKIT_NCCL_EV_COLL_API) e->u.api.user_tag = ((const npkit_abi_v7_coll_api *)u)->user_tag;
  if (type == NPKIT_NCCL_EV_P2P_API) e->u.api.user_tag = ((const npkit_abi_v7_p2p_api *)u)->user_tag;
}

static void kernel_phase_v7(npkit_plugin_descr *e, const void *u) {
  const npkit_abi_v7_kernel_phase *k = u;
  e->u.kernel_phase.channel = k->channel;
  e->u.kernel_phase.phase = k->phase;
  e->u.kernel_phase.name = k->name;
  e->u.kernel_phase.ptimer = k->ptimer;
}

/* A version's readers of those members; v5 and v6 use v4's. */
typedef struct members {
  void (*coll)(npkit_plugin_descr *e, const void *u);
  void (*p2p)(npkit_plugin_descr *e, const void *u);
  void (*kernel_ch)(npkit_plugin_descr *e, const void *u); /* NULL before v3: no such event */
  void (*api)(npkit_plugin_descr *e, uint64_t type, const void *u); /* NULL before v5 */
  void (*kernel_phase)(npkit_plugin_descr *e, const void *u);       /* NULL before v7 */
} members;

static const members members_v1 = {coll_v1, p2p_v1, NULL, NULL, NULL};
static const members members_v2 = {coll_v2, p2p_v2, NULL, NULL, NULL};
static const members members_v3 = {coll_v3, p2p_v2, kernel_ch_v3, NULL, NULL};
static const members members_v4 = {coll_v4, p2p_v4, kernel_ch_v4, NULL, NULL};
static const members members_v5 = {coll_v4, p2p_v4, kernel_ch_v4, api_v5, NULL};
/* a P2p task's v7 tag is not read: NCCL leaves it 0 for Send/Recv, the API event has the call's */
static const members members_v7 = {coll_v7, p2p_v4, kernel_ch_v4, api_v7, kernel_phase_v7};

/* ---- starting an event ---- */

/* The event types that carry nothing we read. */
static npkit_plugin_type other_type(uint64_t type) {
  switch (type) {
  case NPKIT_NCCL_EV_GROUP: return NPKIT_PLUGIN_GROUP;
  case NPKIT_NCCL_EV_PROXY_CTRL: return NPKIT_PLUGIN_PROXY_CTRL;
  default: return NPKIT_PLUGIN_IGNORED;
  }
}

/* Every version's descriptor is {type, parent, rank, union}; only the type's width (8 bits until
 * v4, 64 from v5) and the members in m differ.  The proxy op and step members have kept one
 * layout since v1. */
static int start_descr(void *ctx, void **handle, const members *m, uint64_t type, void *parent,
                       int rank, const void *u) {
  npkit_plugin_descr e;
  npkit_plugin_descr_zero(&e);
  e.parent = parent;
  e.rank = rank;
  if (type == NPKIT_NCCL_EV_COLL) {
    e.type = NPKIT_PLUGIN_COLL;
    m->coll(&e, u);
  } else if (type == NPKIT_NCCL_EV_P2P) {
    e.type = NPKIT_PLUGIN_P2P;
    m->p2p(&e, u);
  } else if (type == NPKIT_NCCL_EV_PROXY_OP) {
    const npkit_abi_proxy_op *op = u;
    e.type = NPKIT_PLUGIN_PROXY_OP;
    e.u.proxy_op.pid = op->pid;
    e.u.proxy_op.channel = op->channel;
    e.u.proxy_op.peer = op->peer;
    e.u.proxy_op.nsteps = op->nsteps;
    e.u.proxy_op.chunk_size = op->chunk_size;
    e.u.proxy_op.is_send = op->is_send;
  } else if (type == NPKIT_NCCL_EV_PROXY_STEP) {
    e.type = NPKIT_PLUGIN_PROXY_STEP;
    e.u.proxy_step.step = ((const npkit_abi_proxy_step *)u)->step;
  } else if (type == NPKIT_NCCL_EV_KERNEL_CH && m->kernel_ch != NULL) {
    e.type = NPKIT_PLUGIN_KERNEL_CH;
    m->kernel_ch(&e, u);
  } else if (type == NPKIT_NCCL_EV_KERNEL_PHASE && m->kernel_phase != NULL) {
    e.type = NPKIT_PLUGIN_KERNEL_PHASE;
    m->kernel_phase(&e, u);
  } else if ((type == NPKIT_NCCL_EV_GROUP_API || type == NPKIT_NCCL_EV_COLL_API ||
              type == NPKIT_NCCL_EV_P2P_API || type == NPKIT_NCCL_EV_KERNEL_LAUNCH) && m->api != NULL) {
    e.type = NPKIT_PLUGIN_API;
    m->api(&e, type, u);
  } else {
    e.type = other_type(type);
  }
  return npkit_plugin_start(ctx, handle, &e);
}

/* Each version's start_event, called by NCCL through its own table's pointer type (so one
 * function per version), all made from this one body: the version's descriptor type and its
 * readers of the members (members_<ver>) are all that differ. */
#define START_EVENT(ver)                                                                      \
  static int start_##ver(void *ctx, void **handle, npkit_abi_##ver##_descr *d) {             \
    if (d == NULL) return npkit_plugin_start(ctx, handle, NULL);                             \
    return start_descr(ctx, handle, &members_##ver, d->type, d->parent, d->rank, &d->u);     \
  }
START_EVENT(v1)
START_EVENT(v2)
START_EVENT(v3)
START_EVENT(v4)
START_EVENT(v5) /* also v6's: its descriptors are v5's for every member read here (its
                   copy-engine members come after) */
START_EVENT(v7)
#undef START_EVENT

/* ---- state arguments ---- */

static int is_ctrl_state(int state) {
  return state >= NPKIT_NCCL_ST_CTRL_IDLE && state <= NPKIT_NCCL_ST_CTRL_APPEND_END;
}

static int state_v1(void *handle, int state, npkit_abi_v1_state_args *a) {
  npkit_plugin_state s;
  memset(&s, 0, sizeof s);
  /* Steps get NULL arguments in v1-v3; proxy ops carry their cumulative size. */
  if (a != NULL && state >= NPKIT_NCCL_ST_OP_SEND_POSTED && state <= NPKIT_NCCL_ST_OP_RECV_DONE) {
    s.has_trans_size = 1;
    s.trans_size = a->proxy_op.trans_size;
  } else if (a != NULL && is_ctrl_state(state)) {
    s.has_appended = 1;
    s.appended = a->proxy_ctrl.appended;
  }
  return npkit_plugin_record_state(handle, state, &s);
}

static int state_v4(void *handle, int state, npkit_abi_v4_state_args *a) {
  npkit_plugin_state s;
  memset(&s, 0, sizeof s);
  if (a != NULL) {
    switch (state) {
    case NPKIT_NCCL_ST_STEP_SEND_GPU_WAIT:
    case NPKIT_NCCL_ST_STEP_SEND_PEER_WAIT:
    case NPKIT_NCCL_ST_STEP_SEND_WAIT:
    case NPKIT_NCCL_ST_STEP_RECV_WAIT:
    case NPKIT_NCCL_ST_STEP_RECV_FLUSH_WAIT:
    case NPKIT_NCCL_ST_STEP_RECV_GPU_WAIT:
      s.has_trans_size = 1;
      s.trans_size = a->proxy_step.trans_size;
      break;
    case NPKIT_NCCL_ST_KERNEL_CH_STOP:
    case NPKIT_NCCL_ST_KERNEL_PHASE_STOP: /* v7: the same member (profiler_v7.h) */
      s.has_ptimer = 1;
      s.ptimer = a->kernel_ch.ptimer;
      break;
    default:
      if (is_ctrl_state(state)) {
        s.has_appended = 1;
        s.appended = a->proxy_ctrl.appended;
      }
      break;
    }
  }
  return npkit_plugin_record_state(handle, state, &s);
}

/* ---- the exported tables: NCCL takes the newest it knows ---- */

EXPORT npkit_abi_table_v1 ncclProfiler_v1 = {"npkit", init_v1, start_v1, npkit_plugin_stop, state_v1,
                                             npkit_plugin_finalize};
EXPORT npkit_abi_table_v2 ncclProfiler_v2 = {"npkit", init_v2, start_v2, npkit_plugin_stop, state_v1,
                                             npkit_plugin_finalize};
EXPORT npkit_abi_table_v3 ncclProfiler_v3 = {"npkit", init_v3, start_v3, npkit_plugin_stop, state_v1,
                                             npkit_plugin_finalize};
EXPORT npkit_abi_table_v4 ncclProfiler_v4 = {"npkit", init_v4, start_v4, npkit_plugin_stop, state_v4,
                                             npkit_plugin_finalize};
EXPORT npkit_abi_table_v5 ncclProfiler_v5 = {"npkit", init_v5, start_v5, npkit_plugin_stop, state_v4,
                                             npkit_plugin_finalize};
EXPORT npkit_abi_table_v6 ncclProfiler_v6 = {"npkit", init_v6, start_v5, npkit_plugin_stop, state_v4,
                                             npkit_plugin_finalize};
EXPORT npkit_abi_table_v7 ncclProfiler_v7 = {"npkit", init_v7, start_v7, npkit_plugin_stop, state_v4,
                                             npkit_plugin_finalize};
