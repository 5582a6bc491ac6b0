/* The tables NCCL looks up (ncclProfiler_v1 ... ncclProfiler_v6) and the adapters that turn each
 * version's descriptors and state arguments (profiler_abi.h) into the core's
 * (profiler_plugin.h).  Only layout knowledge lives here; what to record is the core's business. */
#include <string.h>

#include "profiler_abi.h"
#include "profiler_plugin.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- pieces shared by versions ---- */

static void from_proxy_op(npkit_pp_descr *e, const npkit_abi_proxy_op *op) {
  e->type = NPKIT_PP_PROXY_OP;
  e->u.proxy_op.pid = op->pid;
  e->u.proxy_op.channel = op->channel;
  e->u.proxy_op.peer = op->peer;
  e->u.proxy_op.nsteps = op->nsteps;
  e->u.proxy_op.chunk_size = op->chunk_size;
  e->u.proxy_op.is_send = op->is_send;
}

static void from_proxy_step(npkit_pp_descr *e, const npkit_abi_proxy_step *step) {
  e->type = NPKIT_PP_PROXY_STEP;
  e->u.proxy_step.step = step->step;
}

/* The event types of v1-v4 (an 8-bit field) that are neither tasks nor proxy events. */
static npkit_pp_type other_type(uint64_t type) {
  switch (type) {
  case NPKIT_NCCL_EV_GROUP: return NPKIT_PP_GROUP;
  case NPKIT_NCCL_EV_PROXY_CTRL: return NPKIT_PP_PROXY_CTRL;
  case NPKIT_NCCL_EV_GROUP_API:
  case NPKIT_NCCL_EV_COLL_API:
  case NPKIT_NCCL_EV_P2P_API:
  case NPKIT_NCCL_EV_KERNEL_LAUNCH: return NPKIT_PP_API;
  default: return NPKIT_PP_IGNORED;
  }
}

static int state_v1(void *handle, int state, npkit_abi_v1_state_args *a) {
  npkit_pp_state s;
  memset(&s, 0, sizeof s);
  /* Steps get NULL arguments in v1-v3; proxy ops carry their cumulative size. */
  if (a != NULL && state >= NPKIT_NCCL_ST_OP_SEND_POSTED && state <= NPKIT_NCCL_ST_OP_RECV_DONE) {
    s.has_trans_size = 1;
    s.trans_size = a->proxy_op.trans_size;
  } else if (a != NULL && state >= NPKIT_NCCL_ST_CTRL_IDLE &&
             state <= NPKIT_NCCL_ST_CTRL_APPEND_END) {
    s.has_appended = 1;
    s.appended = a->proxy_ctrl.appended;
  }
  return npkit_pp_record_state(handle, state, &s);
}

static int state_v4(void *handle, int state, npkit_abi_v4_state_args *a) {
  npkit_pp_state s;
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
      s.has_ptimer = 1;
      s.ptimer = a->kernel_ch.ptimer;
      break;
    default:
      if (state >= NPKIT_NCCL_ST_CTRL_IDLE && state <= NPKIT_NCCL_ST_CTRL_APPEND_END) {
        s.has_appended = 1;
        s.appended = a->proxy_ctrl.appended;
      }
      break;
    }
  }
  return npkit_pp_record_state(handle, state, &s);
}

/* ---- v1 ---- */

static int init_v1(void **ctx, int *mask) {
  npkit_pp_comm c = {1, 0, NULL, -1, -1, -1};
  return npkit_pp_init(ctx, mask, &c);
}

static int start_v1(void *ctx, void **handle, npkit_abi_v1_descr *d) {
  npkit_pp_descr e;
  memset(&e, 0, sizeof e);
  if (d == NULL) return npkit_pp_start(ctx, handle, NULL);
  e.parent = d->parent;
  e.rank = d->rank;
  if (d->type == NPKIT_NCCL_EV_COLL) {
    const npkit_abi_v1_coll *c = &d->u.coll;
    e.type = NPKIT_PP_COLL;
    e.u.task = (npkit_pp_task){c->seq, c->count, c->comm_hash, npkit_pp_v1_func_name(c->func),
                               npkit_pp_v1_algo_name(c->algo), npkit_pp_v1_proto_name(c->proto),
                               c->datatype, c->root, c->max_channels, c->nwarps};
  } else if (d->type == NPKIT_NCCL_EV_P2P) {
    const npkit_abi_v1_p2p *p = &d->u.p2p;
    e.type = NPKIT_PP_P2P;
    e.u.task = (npkit_pp_task){0, p->count, p->comm_hash, npkit_pp_v1_func_name(p->func), NULL,
                               NULL, p->datatype, p->peer, 0, 0};
  } else if (d->type == NPKIT_NCCL_EV_PROXY_OP) {
    from_proxy_op(&e, &d->u.proxy_op);
  } else if (d->type == NPKIT_NCCL_EV_PROXY_STEP) {
    from_proxy_step(&e, &d->u.proxy_step);
  } else {
    e.type = other_type(d->type);
  }
  return npkit_pp_start(ctx, handle, &e);
}

/* ---- v2 and v3: strings; v3 adds kernel channels ---- */

static int init_v2(void **ctx, int *mask) {
  npkit_pp_comm c = {2, 0, NULL, -1, -1, -1};
  return npkit_pp_init(ctx, mask, &c);
}

static int init_v3(void **ctx, int *mask) {
  npkit_pp_comm c = {3, 0, NULL, -1, -1, -1};
  return npkit_pp_init(ctx, mask, &c);
}

static void from_p2p_v2(npkit_pp_descr *e, const npkit_abi_v2_p2p *p) {
  e->type = NPKIT_PP_P2P;
  e->u.task = (npkit_pp_task){0, p->count, p->comm_hash, p->func, NULL, NULL,
                              npkit_pp_datatype_from_name(p->datatype), p->peer, 0, 0};
}

static int start_v2(void *ctx, void **handle, npkit_abi_v2_descr *d) {
  npkit_pp_descr e;
  memset(&e, 0, sizeof e);
  if (d == NULL) return npkit_pp_start(ctx, handle, NULL);
  e.parent = d->parent;
  e.rank = d->rank;
  if (d->type == NPKIT_NCCL_EV_COLL) {
    const npkit_abi_v2_coll *c = &d->u.coll;
    e.type = NPKIT_PP_COLL;
    e.u.task = (npkit_pp_task){c->seq, c->count, c->comm_hash, c->func, c->algo, c->proto,
                               npkit_pp_datatype_from_name(c->datatype), c->root, c->max_channels,
                               c->nwarps};
  } else if (d->type == NPKIT_NCCL_EV_P2P) {
    from_p2p_v2(&e, &d->u.p2p);
  } else if (d->type == NPKIT_NCCL_EV_PROXY_OP) {
    from_proxy_op(&e, &d->u.proxy_op);
  } else if (d->type == NPKIT_NCCL_EV_PROXY_STEP) {
    from_proxy_step(&e, &d->u.proxy_step);
  } else {
    e.type = other_type(d->type);
  }
  return npkit_pp_start(ctx, handle, &e);
}

static int start_v3(void *ctx, void **handle, npkit_abi_v3_descr *d) {
  npkit_pp_descr e;
  memset(&e, 0, sizeof e);
  if (d == NULL) return npkit_pp_start(ctx, handle, NULL);
  e.parent = d->parent;
  e.rank = d->rank;
  if (d->type == NPKIT_NCCL_EV_COLL) {
    const npkit_abi_v3_coll *c = &d->u.coll;
    e.type = NPKIT_PP_COLL;
    e.u.task = (npkit_pp_task){c->seq, c->count, c->comm_hash, c->func, c->algo, c->proto,
                               npkit_pp_datatype_from_name(c->datatype), c->root, c->max_channels,
                               c->nwarps};
  } else if (d->type == NPKIT_NCCL_EV_P2P) {
    from_p2p_v2(&e, &d->u.p2p);
  } else if (d->type == NPKIT_NCCL_EV_PROXY_OP) {
    from_proxy_op(&e, &d->u.proxy_op);
  } else if (d->type == NPKIT_NCCL_EV_PROXY_STEP) {
    from_proxy_step(&e, &d->u.proxy_step);
  } else if (d->type == NPKIT_NCCL_EV_KERNEL_CH) {
    e.type = NPKIT_PP_KERNEL_CH;
    e.u.kernel_ch.channel = d->u.kernel_ch.channel; /* no GPU stamps before v4 */
  } else {
    e.type = other_type(d->type);
  }
  return npkit_pp_start(ctx, handle, &e);
}

/* ---- v4, v5, v6 ---- */

static int init_v4(void **ctx, int *mask, const char *name, uint64_t comm_hash, int nnodes,
                   int nranks, int rank, npkit_nccl_logger log) {
  npkit_pp_comm c = {4, comm_hash, name, nnodes, nranks, rank};
  (void)log;
  return npkit_pp_init(ctx, mask, &c);
}

static int init_v5(void **ctx, uint64_t comm_id, int *mask, const char *name, int nnodes,
                   int nranks, int rank, npkit_nccl_logger log) {
  npkit_pp_comm c = {5, comm_id, name, nnodes, nranks, rank};
  (void)log;
  return npkit_pp_init(ctx, mask, &c);
}

static int init_v6(void **ctx, uint64_t comm_id, int *mask, const char *name, int nnodes,
                   int nranks, int rank, npkit_nccl_logger log) {
  npkit_pp_comm c = {6, comm_id, name, nnodes, nranks, rank};
  (void)log;
  return npkit_pp_init(ctx, mask, &c);
}

/* The members of v4's union that v5/v6 kept at the same place, after a type of either width. */
static void from_v4_members(npkit_pp_descr *e, uint64_t type, const npkit_abi_v4_coll *c,
                            const npkit_abi_v4_p2p *p, const npkit_abi_proxy_op *op,
                            const npkit_abi_proxy_step *step, const npkit_abi_kernel_ch *kch) {
  switch (type) {
  case NPKIT_NCCL_EV_COLL:
    e->type = NPKIT_PP_COLL;
    e->u.task = (npkit_pp_task){c->seq, c->count, 0, c->func, c->algo, c->proto,
                                npkit_pp_datatype_from_name(c->datatype), c->root, c->nchannels,
                                c->nwarps};
    break;
  case NPKIT_NCCL_EV_P2P:
    e->type = NPKIT_PP_P2P;
    e->u.task = (npkit_pp_task){0, p->count, 0, p->func, NULL, NULL,
                                npkit_pp_datatype_from_name(p->datatype), p->peer, p->nchannels, 0};
    break;
  case NPKIT_NCCL_EV_PROXY_OP: from_proxy_op(e, op); break;
  case NPKIT_NCCL_EV_PROXY_STEP: from_proxy_step(e, step); break;
  case NPKIT_NCCL_EV_KERNEL_CH:
    e->type = NPKIT_PP_KERNEL_CH;
    e->u.kernel_ch.channel = kch->channel;
    e->u.kernel_ch.has_ptimer = 1;
    e->u.kernel_ch.ptimer = kch->ptimer;
    break;
  default: e->type = other_type(type); break;
  }
}

static int start_v4(void *ctx, void **handle, npkit_abi_v4_descr *d) {
  npkit_pp_descr e;
  memset(&e, 0, sizeof e);
  if (d == NULL) return npkit_pp_start(ctx, handle, NULL);
  e.parent = d->parent;
  e.rank = d->rank;
  from_v4_members(&e, d->type, &d->u.coll, &d->u.p2p, &d->u.proxy_op, &d->u.proxy_step,
                  &d->u.kernel_ch);
  return npkit_pp_start(ctx, handle, &e);
}

/* v6 descriptors are v5's for every member read here (its copy-engine members come after). */
static int start_v5(void *ctx, void **handle, npkit_abi_v5_descr *d) {
  npkit_pp_descr e;
  memset(&e, 0, sizeof e);
  if (d == NULL) return npkit_pp_start(ctx, handle, NULL);
  e.parent = d->parent;
  e.rank = d->rank;
  from_v4_members(&e, d->type, &d->u.coll.v4, &d->u.p2p.v4, &d->u.proxy_op, &d->u.proxy_step,
                  &d->u.kernel_ch);
  return npkit_pp_start(ctx, handle, &e);
}

/* ---- the exported tables: NCCL takes the newest it knows ---- */

EXPORT npkit_abi_table_v1 ncclProfiler_v1 = {"npkit", init_v1, start_v1, npkit_pp_stop, state_v1,
                                             npkit_pp_finalize};
EXPORT npkit_abi_table_v2 ncclProfiler_v2 = {"npkit", init_v2, start_v2, npkit_pp_stop, state_v1,
                                             npkit_pp_finalize};
EXPORT npkit_abi_table_v3 ncclProfiler_v3 = {"npkit", init_v3, start_v3, npkit_pp_stop, state_v1,
                                             npkit_pp_finalize};
EXPORT npkit_abi_table_v4 ncclProfiler_v4 = {"npkit", init_v4, start_v4, npkit_pp_stop, state_v4,
                                             npkit_pp_finalize};
EXPORT npkit_abi_table_v5 ncclProfiler_v5 = {"npkit", init_v5, start_v5, npkit_pp_stop, state_v4,
                                             npkit_pp_finalize};
EXPORT npkit_abi_table_v6 ncclProfiler_v6 = {"npkit", init_v6, start_v5, npkit_pp_stop, state_v4,
                                             npkit_pp_finalize};
