#include "metrics_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_facts.h"
#include "grow.h"
#include "metrics_plugin_gpu.h"
#include "nccl_names.h"
#include "slots.h"

#define HAVE_CALL 0x1u
#define HAVE_GPU 0x2u
#define HAVE_TIMED 0x4u  /* the call's own time times the operation (npkit_api_timed) */
/* the GPU activity came from: CUPTI's kernels, NCCL's kernel channels (npkit_metrics_comm.gpu_*) */
#define HAVE_SRC(src) (0x8u << (src))

/* What names an operation: its kind, its communicator (local id, never reused in a process) and
 * the kind's number: a collective's seq, a send/receive's correlation id (CUPTI's kernels carry
 * it), or a serial number where the call had none (then nothing but the call times it). */
enum { KEY_COLL = 0, KEY_P2P = 1, KEY_P2P_SERIAL = 2 };
typedef struct op_key {
  uint64_t id;
  uint32_t comm;
  uint32_t kind;
} op_key;

/* An operation seen in part: its call, its GPU activity, or both. */
typedef struct pending {
  op_key key;
  uint32_t comm;  /* index in comms */
  uint16_t fn;
  uint8_t have;
  int32_t peer;
  uint64_t seq, bytes; /* bytes: S of the nccl-tests definition */
  uint64_t call_start, call_end;
  uint64_t gpu_start[NPKIT_MGPU_SOURCES], gpu_end[NPKIT_MGPU_SOURCES]; /* each source's union */
} pending;

/* A communicator as NCCL's profiler plugin described it: its node count. */
typedef struct plugin_ctx {
  uint32_t ctx;
  int32_t rank, nranks, nnodes;
  char name[72];
} plugin_ctx;

/* The algorithm and protocol of the plugin's latest task for an operation and size (the report's
 * table keys them the same way: npkit_table_note_task). */
typedef struct algo_proto {
  uint16_t fn;
  int32_t nranks;
  uint64_t bytes;
  char algo[16], proto[8];
} algo_proto;

struct npkit_metrics_ops {
  npkit_metrics_comm *comms;
  size_t n_comms, cap_comms, last_comm;
  pending *p;
  size_t n, cap;
  npkit_slots index;
  npkit_metrics_op *out;
  size_t cap_out;
  plugin_ctx *ctxs;
  size_t n_ctxs, cap_ctxs;
  algo_proto *ap;
  size_t n_ap, cap_ap;
  npkit_slots ap_index;
  npkit_mpgpu *pgpu;
  uint64_t p2p_serial; /* keys of sends/receives without a correlation id */
  int expect_gpu;      /* npkit_metrics_ops_expect_gpu */
  uint64_t min_bytes;  /* npkit_metrics_ops_min_bytes */
};

static int put_plugin_gpu(void *ctx, uint32_t comm, uint32_t kind, uint64_t id, uint64_t start_ns, uint64_t end_ns);

npkit_metrics_ops *npkit_metrics_ops_new(void) {
  npkit_metrics_ops *m = calloc(1, sizeof(npkit_metrics_ops));
  if (m != NULL) m->expect_gpu = 1;
  if (m != NULL && (m->pgpu = npkit_mpgpu_new(put_plugin_gpu, m)) == NULL) {
    free(m);
    return NULL;
  }
  return m;
}

void npkit_metrics_ops_free(npkit_metrics_ops *m) {
  if (m == NULL) return;
  free(m->comms);
  free(m->p);
  npkit_slots_free(&m->index);
  free(m->out);
  free(m->ctxs);
  free(m->ap);
  npkit_slots_free(&m->ap_index);
  npkit_mpgpu_free(m->pgpu);
  free(m);
}

const npkit_metrics_comm *npkit_metrics_ops_comms(const npkit_metrics_ops *m, size_t *n) {
  *n = m->n_comms;
  return m->comms;
}

/* The communicator's index; a call may name one whose record comes later: it is made then. */
static size_t comm_index(npkit_metrics_ops *m, uint32_t local_id) {
  if (m->last_comm < m->n_comms && m->comms[m->last_comm].local_id == local_id) return m->last_comm;
  for (size_t i = 0; i < m->n_comms; i++)
    if (m->comms[i].local_id == local_id) return m->last_comm = i;
  if (NPKIT_GROW(m->comms, m->cap_comms, m->n_comms + 1, 8) != 0) return SIZE_MAX;
  npkit_metrics_comm *c = &m->comms[m->n_comms];
  memset(c, 0, sizeof(*c));
  c->local_id = local_id;
  c->rank = -1;
  c->nranks = -1;
  c->device = -1;
  return m->last_comm = m->n_comms++;
}

int npkit_metrics_ops_comm(npkit_metrics_ops *m, const npkit_comm_rec *rec) {
  size_t i = comm_index(m, rec->local_id);
  if (i == SIZE_MAX) return -1;
  npkit_metrics_comm *c = &m->comms[i];
  c->comm_id = rec->comm_id;
  c->rank = rec->rank;
  c->nranks = rec->nranks;
  c->device = rec->device;
  memcpy(c->name, rec->name, sizeof(rec->name));
  c->name[sizeof(rec->name)] = '\0';
  return 0;
}

void npkit_metrics_ops_expect_gpu(npkit_metrics_ops *m, int expect) { m->expect_gpu = expect; }

void npkit_metrics_ops_min_bytes(npkit_metrics_ops *m, uint64_t min_bytes) { m->min_bytes = min_bytes; }

void npkit_metrics_ops_set_spread(npkit_metrics_ops *m, uint32_t local_id, double spread_ns, int32_t last_rank) {
  size_t i = comm_index(m, local_id);
  if (i == SIZE_MAX) return;
  m->comms[i].has_spread = 1;
  m->comms[i].spread_max_ns = spread_ns;
  m->comms[i].spread_last_rank = last_rank;
}

void npkit_metrics_ops_set_nnodes(npkit_metrics_ops *m, uint32_t local_id, int32_t nnodes) {
  size_t i = comm_index(m, local_id);
  if (i != SIZE_MAX) m->comms[i].nnodes = nnodes;
}

/* ---- the index of the pending operations ---- */

static uint64_t hash_of(const op_key *k) {
  return k->id ^ ((uint64_t)k->comm << 32 | k->kind) * 0xff51afd7ed558ccdull;
}
static uint64_t key_hash(const void *key) { return hash_of(key); }
static uint64_t pos_hash(const void *ctx, size_t pos) { return hash_of(&((const npkit_metrics_ops *)ctx)->p[pos].key); }
static int is_key(const void *owner, size_t pos, const void *key) {
  const op_key *a = &((const npkit_metrics_ops *)owner)->p[pos].key, *b = key;
  return a->id == b->id && a->comm == b->comm && a->kind == b->kind;
}

static pending *find_or_add(npkit_metrics_ops *m, op_key key) {
  size_t pos = npkit_slots_find(&m->index, m, &key, is_key, key_hash);
  if (pos != SIZE_MAX) return &m->p[pos];
  if (NPKIT_GROW(m->p, m->cap, m->n + 1, 256) != 0) return NULL;
  if (npkit_slots_reserve(&m->index, m->n, 512, pos_hash, m) != 0) return NULL;
  pending *e = &m->p[m->n];
  memset(e, 0, sizeof(*e));
  e->key = key;
  npkit_slots_put(&m->index, hash_of(&key), m->n++);
  return e;
}

/* ---- events ---- */

static int api_event(npkit_metrics_ops *m, const npkit_event *ev) {
  const npkit_ev_api *a = &ev->u.api;
  npkit_fn_class cls = npkit_fn_class_of(ev->func);
  if ((cls != NPKIT_CLASS_coll && cls != NPKIT_CLASS_p2p) || !npkit_fn_moves_data(ev->func) || a->comm == 0 ||
      !npkit_api_succeeded(ev) || ev->end_ns == 0)
    return 0;
  if (cls == NPKIT_CLASS_coll && a->seq == NPKIT_NO_SEQ) return 0;
  size_t c = comm_index(m, a->comm);
  if (c == SIZE_MAX) return -1;
  op_key key = {a->seq, a->comm, KEY_COLL};
  if (cls == NPKIT_CLASS_p2p)
    key = a->corr_id != 0 ? (op_key){a->corr_id, a->comm, KEY_P2P} : (op_key){++m->p2p_serial, a->comm, KEY_P2P_SERIAL};
  pending *e = find_or_add(m, key);
  if (e == NULL) return -1;
  e->comm = (uint32_t)c;
  e->fn = (uint16_t)ev->func;
  e->peer = cls == NPKIT_CLASS_p2p ? a->peer : -1;
  e->seq = a->seq;
  e->bytes = a->bytes;
  e->call_start = ev->start_ns;
  e->call_end = ev->end_ns;
  e->have |= HAVE_CALL | (npkit_api_timed(ev) ? HAVE_TIMED : 0);
  npkit_mpgpu_call(m->pgpu, ev, key.kind, key.id);
  return 0;
}

/* GPU activity of an operation from one source (NPKIT_MGPU_*): the union of that source's. */
static int put_gpu(npkit_metrics_ops *m, unsigned src, op_key key, uint64_t start_ns, uint64_t end_ns) {
  if (end_ns < start_ns) return 0;
  size_t c = comm_index(m, key.comm);
  if (c == SIZE_MAX) return -1;
  npkit_metrics_comm *mc = &m->comms[c];
  if (!(mc->gpu_seen & (1u << src)) || start_ns > mc->gpu_latest_start[src]) mc->gpu_latest_start[src] = start_ns;
  mc->gpu_seen |= 1u << src;
  pending *e = find_or_add(m, key);
  if (e == NULL) return -1;
  if (e->have & HAVE_SRC(src)) {
    if (start_ns < e->gpu_start[src]) e->gpu_start[src] = start_ns;
    if (end_ns > e->gpu_end[src]) e->gpu_end[src] = end_ns;
  } else {
    e->gpu_start[src] = start_ns;
    e->gpu_end[src] = end_ns;
  }
  e->have |= HAVE_GPU | HAVE_SRC(src);
  return 0;
}

/* A kernel attributed to one call times it on the GPU; a CUDA graph replay is not a call of its
 * own (every replay carries the seq of the call that was captured), as in the report. */
static int kernel_event(npkit_metrics_ops *m, const npkit_event *ev) {
  const npkit_ev_gpu *g = &ev->u.gpu;
  if (npkit_cupti_untimed(ev) || ev->func == NPKIT_FN_NONE || (g->flags & NPKIT_GPU_GRAPH) || g->comm == 0) return 0;
  op_key key;
  npkit_fn_class cls = npkit_fn_class_of(ev->func);
  if (cls == NPKIT_CLASS_coll && g->call_seq != NPKIT_NO_SEQ)
    key = (op_key){g->call_seq, g->comm, KEY_COLL};
  else if (cls == NPKIT_CLASS_p2p && g->ext_id != 0 && !(g->flags & NPKIT_GPU_VIA_GROUP))
    key = (op_key){g->ext_id, g->comm, KEY_P2P}; /* launched by the send/receive itself */
  else
    return 0;
  return put_gpu(m, NPKIT_MGPU_CUPTI, key, ev->start_ns, ev->end_ns);
}

static int put_plugin_gpu(void *ctx, uint32_t comm, uint32_t kind, uint64_t id, uint64_t start_ns, uint64_t end_ns) {
  return put_gpu(ctx, NPKIT_MGPU_PLUGIN, (op_key){id, comm, kind}, start_ns, end_ns);
}

static const plugin_ctx *find_ctx(const npkit_metrics_ops *m, uint32_t ctx) {
  for (size_t i = m->n_ctxs; i-- > 0;)
    if (m->ctxs[i].ctx == ctx) return &m->ctxs[i];
  return NULL;
}

static uint64_t ap_hash_of(unsigned fn, int32_t nranks, uint64_t bytes) {
  return bytes ^ ((uint64_t)fn << 32 | (uint32_t)nranks) * 0xc4ceb9fe1a85ec53ull;
}
static uint64_t ap_key_hash(const void *key) {
  const algo_proto *k = key;
  return ap_hash_of(k->fn, k->nranks, k->bytes);
}
static uint64_t ap_pos_hash(const void *ctx, size_t pos) {
  return ap_key_hash(&((const npkit_metrics_ops *)ctx)->ap[pos]);
}
static int ap_is(const void *owner, size_t pos, const void *key) {
  const algo_proto *a = &((const npkit_metrics_ops *)owner)->ap[pos], *b = key;
  return a->fn == b->fn && a->nranks == b->nranks && a->bytes == b->bytes;
}

static algo_proto *find_ap(npkit_metrics_ops *m, unsigned fn, int32_t nranks, uint64_t bytes) {
  algo_proto key = {.fn = (uint16_t)fn, .nranks = nranks, .bytes = bytes};
  size_t pos = npkit_slots_find(&m->ap_index, m, &key, ap_is, ap_key_hash);
  return pos != SIZE_MAX ? &m->ap[pos] : NULL;
}

static int plugin_event(npkit_metrics_ops *m, const npkit_event *ev) {
  if (ev->kind == NPKIT_EV_PLUGIN_INIT) {
    const npkit_ev_plugin_comm *p = &ev->u.plugin_comm;
    if (NPKIT_GROW(m->ctxs, m->cap_ctxs, m->n_ctxs + 1, 8) != 0) return -1;
    plugin_ctx *c = &m->ctxs[m->n_ctxs++];
    c->ctx = p->ctx;
    c->rank = p->rank;
    c->nranks = p->nranks;
    c->nnodes = p->nnodes;
    memcpy(c->name, p->name, sizeof(c->name));
    c->name[sizeof(c->name) - 1] = '\0';
    return 0;
  }
  const npkit_ev_plugin_task *t = &ev->u.plugin_task;
  if ((t->flags & NPKIT_PTASK_P2P) || ev->func == NPKIT_FN_NONE || t->algo[0] == '\0') return 0;
  const plugin_ctx *c = find_ctx(m, t->ctx);
  if (c == NULL || c->nranks <= 0) return 0;
  uint64_t bytes = npkit_message_bytes(ev->func, t->count, t->datatype, c->nranks);
  algo_proto *a = find_ap(m, ev->func, c->nranks, bytes);
  if (a == NULL) {
    if (NPKIT_GROW(m->ap, m->cap_ap, m->n_ap + 1, 16) != 0) return -1;
    if (npkit_slots_reserve(&m->ap_index, m->n_ap, 64, ap_pos_hash, m) != 0) return -1;
    a = &m->ap[m->n_ap];
    memset(a, 0, sizeof(*a));
    a->fn = (uint16_t)ev->func;
    a->nranks = c->nranks;
    a->bytes = bytes;
    npkit_slots_put(&m->ap_index, ap_hash_of(a->fn, a->nranks, a->bytes), m->n_ap++);
  }
  memcpy(a->algo, t->algo, sizeof(t->algo));
  a->algo[sizeof(a->algo) - 1] = '\0';
  memcpy(a->proto, t->proto, sizeof(t->proto));
  a->proto[sizeof(a->proto) - 1] = '\0';
  return 0;
}

int npkit_metrics_ops_wants(const npkit_event *ev) {
  switch (ev->kind) {
  case NPKIT_EV_API:
    return npkit_fn_class_of(ev->func) == NPKIT_CLASS_coll || npkit_fn_class_of(ev->func) == NPKIT_CLASS_p2p;
  case NPKIT_EV_CUPTI_KERNEL:
  case NPKIT_EV_PLUGIN_INIT:
  case NPKIT_EV_PLUGIN_TASK:
  case NPKIT_EV_PLUGIN_API:
  case NPKIT_EV_PLUGIN_KERNEL_CH:
    return 1;
  default:
    return 0;
  }
}

int npkit_metrics_ops_events(npkit_metrics_ops *m, const npkit_event *ev, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int rc = 0;
    if (ev[i].kind == NPKIT_EV_API) rc = api_event(m, &ev[i]);
    else if (ev[i].kind == NPKIT_EV_CUPTI_KERNEL) rc = kernel_event(m, &ev[i]);
    else if (ev[i].kind == NPKIT_EV_PLUGIN_INIT || ev[i].kind == NPKIT_EV_PLUGIN_TASK) rc = plugin_event(m, &ev[i]);
    if (rc == 0 && (ev[i].kind == NPKIT_EV_PLUGIN_API || ev[i].kind == NPKIT_EV_PLUGIN_TASK ||
                    ev[i].kind == NPKIT_EV_PLUGIN_KERNEL_CH))
      rc = npkit_mpgpu_event(m->pgpu, &ev[i]);
    if (rc != 0) return -1;
  }
  return 0;
}

/* ---- completed operations ---- */

void npkit_metrics_bandwidths(unsigned fn, int32_t nranks, uint64_t msg_bytes, uint64_t exec_us, double *algbw,
                              double *busbw) {
  int per_rank = fn == NPKIT_FN_AllGather || fn == NPKIT_FN_ReduceScatter;
  double traffic = (double)msg_bytes * (per_rank && nranks > 0 ? (double)nranks : 1.0);
  *algbw = exec_us > 0 ? traffic / 1e9 / ((double)exec_us / 1e6) : 0.0;
  *busbw = npkit_fn_class_of(fn) == NPKIT_CLASS_p2p ? *algbw : *algbw * npkit_busbw_factor(fn, nranks);
}

/* The node count of a communicator the tool did not set: the plugin's, for the same rank, size
 * and name (NCCL passes nNodes to the plugin's init from ABI v4 on; the log keeps 31 characters
 * of a name), when every such plugin communicator says the same (two unnamed communicators of
 * one size, one within a node and one across nodes, leave it unknown). */
static void fill_nnodes(npkit_metrics_ops *m, npkit_metrics_comm *c) {
  if (c->nnodes > 0) return;
  int32_t found = 0;
  for (size_t i = 0; i < m->n_ctxs; i++) {
    const plugin_ctx *p = &m->ctxs[i];
    if (p->nnodes <= 0 || p->rank != c->rank || p->nranks != c->nranks ||
        strncmp(p->name, c->name, sizeof(((npkit_comm_rec *)0)->name) - 1) != 0)
      continue;
    if (found != 0 && found != p->nnodes) return;
    found = p->nnodes;
  }
  c->nnodes = found;
}

/* The source of an operation's GPU time: NCCL's kernel channels when the plugin timed it (the
 * Inspector's own source, and prompt: they come through the writer every flush, where CUPTI keeps
 * a buffer back while any kernel runs), else CUPTI's kernels. */
static unsigned gpu_source(const pending *e) {
  return (e->have & HAVE_SRC(NPKIT_MGPU_PLUGIN)) ? NPKIT_MGPU_PLUGIN : NPKIT_MGPU_CUPTI;
}

/* The end of an operation's latest activity, of every source. */
static uint64_t last_activity(const pending *e) {
  uint64_t last = (e->have & HAVE_CALL) ? e->call_end : 0;
  for (unsigned src = 0; src < NPKIT_MGPU_SOURCES; src++)
    if ((e->have & HAVE_SRC(src)) && e->gpu_end[src] > last) last = e->gpu_end[src];
  return last;
}

/* The Inspector's message size: count x type size of the call, so per rank for AllGather and
 * ReduceScatter (our calls record the whole buffer there). */
static uint64_t msg_bytes(const npkit_metrics_comm *c, const pending *e) {
  int per_rank = e->fn == NPKIT_FN_AllGather || e->fn == NPKIT_FN_ReduceScatter;
  return per_rank && c->nranks > 0 ? e->bytes / (uint64_t)c->nranks : e->bytes;
}

static void make_op(npkit_metrics_ops *m, const pending *e, npkit_metrics_op *o) {
  const npkit_metrics_comm *c = &m->comms[e->comm];
  memset(o, 0, sizeof(*o));
  o->comm = e->comm;
  o->fn = e->fn;
  o->p2p = npkit_fn_class_of(e->fn) == NPKIT_CLASS_p2p;
  o->peer = e->peer;
  o->seq = e->seq;
  o->msg_bytes = msg_bytes(c, e);
  if (e->have & HAVE_GPU) {
    o->timing = NPKIT_MTIME_KERNEL_GPU;
    unsigned src = gpu_source(e);
    o->exec_ns = e->gpu_end[src] - e->gpu_start[src];
    o->end_ns = e->gpu_end[src];
  } else {
    o->timing = NPKIT_MTIME_COLLECTIVE_CPU;
    o->exec_ns = e->call_end - e->call_start;
    o->end_ns = e->call_end;
  }
  npkit_metrics_bandwidths(e->fn, c->nranks, o->msg_bytes, o->exec_ns / 1000, &o->algbw_gbs, &o->busbw_gbs);
  const algo_proto *a = o->p2p ? NULL : find_ap(m, e->fn, c->nranks, e->bytes);
  snprintf(o->algo, sizeof(o->algo), "%s", a != NULL && a->algo[0] ? a->algo : "unknown");
  snprintf(o->proto, sizeof(o->proto), "%s", a != NULL && a->proto[0] ? a->proto : "unknown");
}

static int op_order(const void *pa, const void *pb) {
  const npkit_metrics_op *a = pa, *b = pb;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->p2p != b->p2p) return a->p2p < b->p2p ? -1 : 1;
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  if (a->fn != b->fn) return a->fn < b->fn ? -1 : 1;
  if (a->peer != b->peer) return a->peer < b->peer ? -1 : 1;
  return a->end_ns < b->end_ns ? -1 : a->end_ns > b->end_ns;
}

/* Whether an operation whose call was read is complete.  GPU activity of it may still come (CUPTI's
 * kernels and NCCL's kernel channels are handed over on threads of their own): it waits until its
 * latest activity is hold_ns old.  Then, timed by the plugin, it is complete.  Otherwise the
 * plugin's channels may still come while the plugin's work on its communicator has not gone past
 * it (a task launched once this call had returned), and CUPTI's kernel likewise: CUPTI hands a
 * buffer back only once all its work has ended (cuptiActivityFlushAll, flag 0), so a kernel may
 * come many flushes late, but not after those of later launches on the stream.  Failing that, or
 * on a communicator without any GPU activity yet (CUPTI's first buffer may still be kept back), it
 * waits long_hold_ns, unless no GPU timing is expected at all. */
static int settled(const npkit_metrics_ops *m, const pending *e, uint64_t before, uint64_t long_before) {
  if (last_activity(e) >= before) return 0;
  if ((e->have & HAVE_SRC(NPKIT_MGPU_PLUGIN)) || e->call_end < long_before) return 1;
  const npkit_metrics_comm *c = &m->comms[e->comm];
  if (c->gpu_seen == 0) return !m->expect_gpu;
  for (unsigned src = 0; src < NPKIT_MGPU_SOURCES; src++)
    if ((c->gpu_seen & (1u << src)) && !(e->have & HAVE_SRC(src)) && c->gpu_latest_start[src] <= e->call_end) return 0;
  return 1;
}

int npkit_metrics_ops_take(npkit_metrics_ops *m, uint64_t now_ns, uint64_t hold_ns, uint64_t long_hold_ns, int final,
                           const npkit_metrics_op **ops, size_t *n) {
  *ops = NULL;
  *n = 0;
  for (size_t i = 0; i < m->n_comms; i++) {
    npkit_metrics_comm *c = &m->comms[i];
    c->coll_new = c->p2p_new = c->coll_dropped_new = c->p2p_dropped_new = c->busy_ns_new = 0;
    c->coll_small_new = c->p2p_small_new = 0;
    fill_nnodes(m, c);
  }
  uint64_t before = now_ns > hold_ns ? now_ns - hold_ns : 0;
  if (npkit_mpgpu_settle(m->pgpu, before, final) != 0) return -1;
  if (NPKIT_GROW(m->out, m->cap_out, m->n ? m->n : 1, 256) != 0) return -1;
  uint64_t long_before = now_ns > long_hold_ns ? now_ns - long_hold_ns : 0;
  size_t keep = 0, k = 0;
  for (size_t i = 0; i < m->n; i++) {
    const pending *e = &m->p[i];
    if (!(e->have & HAVE_CALL)) { /* GPU activity whose call is not (yet) seen: kept a while */
      if (!final && last_activity(e) >= before) m->p[keep++] = *e;
      continue;
    }
    if (!final && !settled(m, e, before, long_before)) {
      m->p[keep++] = *e;
      continue;
    }
    npkit_metrics_comm *c = &m->comms[e->comm];
    int p2p = npkit_fn_class_of(e->fn) == NPKIT_CLASS_p2p;
    if (msg_bytes(c, e) < m->min_bytes) { /* below the user's threshold: counted, timed or not */
      *(p2p ? &c->p2p_small_new : &c->coll_small_new) += 1;
      *(p2p ? &c->p2p_small : &c->coll_small) += 1;
      continue;
    }
    if (!(e->have & (HAVE_GPU | HAVE_TIMED))) { /* no time: counted, not written */
      *(p2p ? &c->p2p_dropped_new : &c->coll_dropped_new) += 1;
      *(p2p ? &c->p2p_dropped : &c->coll_dropped) += 1;
      continue;
    }
    make_op(m, e, &m->out[k]);
    c->busy_ns_new += m->out[k].exec_ns;
    c->busy_ns += m->out[k].exec_ns;
    *(p2p ? &c->p2p_new : &c->coll_new) += 1;
    *(p2p ? &c->p2p_records : &c->coll_records) += 1;
    k++;
  }
  if (keep != m->n) { /* the index is rebuilt over what stays */
    m->n = keep;
    npkit_slots_free(&m->index);
    memset(&m->index, 0, sizeof(m->index));
    for (size_t i = 0; i < m->n; i++) {
      if (npkit_slots_reserve(&m->index, i, 512, pos_hash, m) != 0) return -1;
      npkit_slots_put(&m->index, hash_of(&m->p[i].key), i);
    }
  }
  qsort(m->out, k, sizeof(*m->out), op_order);
  *ops = m->out;
  *n = k;
  return 0;
}
