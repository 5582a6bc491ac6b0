/* Calls and NCCL's tasks.  From NCCL 2.28 (profiler ABI v5) NCCL links them itself: a task's
 * parent is its CollApi event, which names the wrapped call it came from (trace_plugin_api.h);
 * such calls and tasks are joined by that link, and a task whose CollApi was captured into a CUDA
 * graph is a replay of it, drawn on its own.  Before 2.28, what the API call of a collective and
 * NCCL's task for it have in common is the communicator, NCCL's function and NCCL's per-function
 * sequence number (see trace_plugin.h), which is predicted by counting.  Calls are held in a ring
 * until matched and complete, tasks are remembered in a table indexed by their id, and the tasks
 * not yet matched by counting are also found by (communicator, function, seqNumber). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "nccl_names.h"
#include "trace_plugin_int.h"

static int coll_index(unsigned fn) {
  switch (fn) {
  case NPKIT_FN_Broadcast:
  case NPKIT_FN_Bcast: return 0;
  case NPKIT_FN_Reduce: return 1;
  case NPKIT_FN_AllGather: return 2;
  case NPKIT_FN_ReduceScatter: return 3;
  case NPKIT_FN_AllReduce: return 4;
  default: return -1;
  }
}

static uint32_t comm_index1(const npkit_plugin_render *p, uint32_t local_id) {
  size_t pos = npkit_reader_comm_pos(p->r, local_id, NULL);
  return pos != SIZE_MAX ? (uint32_t)pos + 1 : 0;
}

/* ---- tasks ---- */

npkit_plugin_task *npkit_plugin_task_find(npkit_plugin_render *p, uint64_t id) {
  if (id == 0) return NULL;
  npkit_plugin_task *t = &p->tasks[id % NPKIT_PLUGIN_TASKS];
  return t->id == id ? t : NULL;
}

static uint32_t bucket_of(uint32_t comm1, int f, uint64_t seq) {
  uint64_t h = ((uint64_t)comm1 * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(f + 1) << 56) ^ seq;
  h *= 0xff51afd7ed558ccdull;
  return (uint32_t)((h >> 33) % NPKIT_PLUGIN_BUCKETS);
}

static int32_t task_slot(const npkit_plugin_render *p, const npkit_plugin_task *t) {
  return (int32_t)(t - p->tasks);
}

static void index_add(npkit_plugin_render *p, npkit_plugin_task *t) {
  uint32_t b = bucket_of(t->comm1, t->f, t->nccl_seq);
  t->hnext = p->buckets[b];
  p->buckets[b] = task_slot(p, t);
  t->indexed = 1;
}

static void index_del(npkit_plugin_render *p, npkit_plugin_task *t) {
  if (!t->indexed) return;
  int32_t *link = &p->buckets[bucket_of(t->comm1, t->f, t->nccl_seq)];
  int32_t me = task_slot(p, t);
  while (*link >= 0 && *link != me) link = &p->tasks[*link].hnext;
  if (*link == me) *link = t->hnext;
  t->indexed = 0;
}

static npkit_plugin_task *index_find(npkit_plugin_render *p, uint32_t comm1, int f, uint64_t seq) {
  for (int32_t i = p->buckets[bucket_of(comm1, f, seq)]; i >= 0; i = p->tasks[i].hnext) {
    npkit_plugin_task *t = &p->tasks[i];
    if (t->comm1 == comm1 && t->f == f && t->nccl_seq == seq) return t;
  }
  return NULL;
}

static int task_complete(const npkit_plugin_task *t) {
  return !t->expect_kch || t->kch_seen >= (t->nch > 0 ? t->nch : 1u);
}

/* ---- held calls and the batches NCCL numbers together ---- */

static npkit_plugin_call *call_at(npkit_plugin_render *p, uint64_t pos) {
  if (pos == NPKIT_PLUGIN_NO_POS) return NULL;
  npkit_plugin_call *c = &p->calls[pos % NPKIT_PLUGIN_PENDING];
  return c->used && c->pos == pos ? c : NULL;
}

static npkit_plugin_batch *batch_get(npkit_plugin_render *p, uint32_t b1) {
  return b1 != 0 && b1 <= p->nbatches && p->batches[b1 - 1].used ? &p->batches[b1 - 1] : NULL;
}

static void batch_close(npkit_plugin_render *p, uint32_t b1) {
  npkit_plugin_batch *b = &p->batches[b1 - 1];
  npkit_plugin_comm *pc = &p->comms[b->comm1 - 1];
  for (uint32_t i = 0; i < pc->nopen[b->f]; i++)
    if (pc->open[b->f][i] == b1) {
      pc->open[b->f][i] = pc->open[b->f][--pc->nopen[b->f]];
      break;
    }
  free(b->pos);
  b->pos = NULL;
  b->used = 0;
  p->free_batches[p->nfree++] = b1 - 1; /* room for every batch was made in batch_new */
}

/* The call leaves its batch (matched, or written without a match). */
static void leave_batch(npkit_plugin_render *p, npkit_plugin_call *c) {
  npkit_plugin_batch *b = batch_get(p, c->batch1);
  uint32_t b1 = c->batch1;
  c->batch1 = 0;
  if (b != NULL && --b->open == 0) batch_close(p, b1);
}

static void write_call(npkit_plugin_render *p, npkit_sink *w, npkit_plugin_call *c) {
  /* the algorithm and protocol names come from the log: strings from a log, which the sink makes
   * safe (a damaged log may hold a quote or a control character there) */
  npkit_sink_arg extra[6] = {{0}};
  size_t n = 0;
  npkit_plugin_task *t = npkit_plugin_task_find(p, c->task);
  if (t != NULL) {
    extra[n++] = (npkit_sink_arg){.key = p->key[PK_ALGORITHM], .type = NPKIT_SINK_ARG_TEXT,
                                  .len = (uint32_t)strnlen(t->algo, sizeof t->algo), .v.text = t->algo};
    extra[n++] = (npkit_sink_arg){.key = p->key[PK_PROTOCOL], .type = NPKIT_SINK_ARG_TEXT,
                                  .len = (uint32_t)strnlen(t->proto, sizeof t->proto), .v.text = t->proto};
    extra[n++] = (npkit_sink_arg){.key = p->key[PK_CHANNELS], .type = NPKIT_SINK_ARG_UINT, .v.u = t->nch};
    extra[n++] = (npkit_sink_arg){.key = p->key[PK_WARPS], .type = NPKIT_SINK_ARG_UINT, .v.u = t->nwarps};
    extra[n++] = (npkit_sink_arg){.key = p->key[PK_NCCL_SEQ], .type = NPKIT_SINK_ARG_UINT, .v.u = t->nccl_seq};
    uint64_t s0, s1;
    if (npkit_plugin_task_span(t, &s0, &s1) == 1 && s1 >= s0)
      extra[n++] = (npkit_sink_arg){.key = p->key[PK_GPU_TIME_US], .type = NPKIT_SINK_ARG_MILLI, .v.i = (int64_t)(s1 - s0)};
    t->call_pos = NPKIT_PLUGIN_NO_POS;
  }
  npkit_api_fmt_event_extra(p->fmt, w, &c->ev, extra, n);
  if (t != NULL && task_complete(t)) npkit_plugin_gpu_slice(p, w, t);
  leave_batch(p, c);
  c->used = 0;
  while (p->tail < p->head && !p->calls[p->tail % NPKIT_PLUGIN_PENDING].used) p->tail++;
}

static int key_match(const npkit_plugin_call *c, const npkit_plugin_task *t) {
  const npkit_ev_api *a = &c->ev.u.api;
  if (t->f != c->f) return 0;
  size_t es = npkit_datatype_size(a->datatype);
  int same = t->count == a->count && (t->datatype < 0 || t->datatype == a->datatype);
  /* NCCL moves AllGather and Broadcast as bytes (int8) */
  int as_bytes = (c->f == 0 || c->f == 2) && es > 0 && t->count == a->count * es &&
                 (t->datatype < 0 || t->datatype == 0);
  if (!same && !as_bytes) return 0;
  if ((c->f == 0 || c->f == 1) && t->root != a->peer) return 0;
  return 1;
}

static void claim(npkit_plugin_render *p, npkit_sink *w, npkit_plugin_call *c, npkit_plugin_task *t) {
  c->task = t->id;
  t->claimed = 1;
  t->call_pos = c->pos;
  t->api_seq = c->ev.u.api.seq;
  index_del(p, t);
  leave_batch(p, c);
  if (task_complete(t)) write_call(p, w, c);
}

/* Matches the batch's calls with tasks already read. */
static void match_batch(npkit_plugin_render *p, npkit_sink *w, uint32_t b1) {
  npkit_plugin_batch *b = batch_get(p, b1);
  if (b == NULL) return;
  uint64_t lo = b->lo, k = b->k;
  uint32_t comm1 = b->comm1;
  int f = b->f;
  for (uint64_t s = lo; s < lo + k; s++) {
    npkit_plugin_task *t = index_find(p, comm1, f, s);
    if (t == NULL) continue;
    b = batch_get(p, b1);
    if (b == NULL) return; /* every call matched: closed */
    for (uint32_t i = 0; i < b->npos; i++) {
      npkit_plugin_call *c = call_at(p, b->pos[i]);
      if (c != NULL && c->batch1 == b1 && c->task == 0 && key_match(c, t)) {
        claim(p, w, c, t);
        break;
      }
    }
  }
}

static uint32_t batch_new(npkit_plugin_render *p, uint32_t comm1, int f, uint64_t lo, uint32_t k) {
  npkit_plugin_comm *pc = &p->comms[comm1 - 1];
  if (NPKIT_GROW(pc->open[f], pc->capopen[f], (size_t)pc->nopen[f] + 1, 4) != 0) return 0;
  /* the free list first: it must hold every batch there is */
  if (p->nfree == 0 && (NPKIT_GROW(p->free_batches, p->capfree, (size_t)p->nbatches + 1, 64) != 0 ||
                        NPKIT_GROW(p->batches, p->capbatches, (size_t)p->nbatches + 1, 64) != 0))
    return 0;
  uint64_t *pos = malloc((size_t)(k ? k : 1) * sizeof *pos);
  if (pos == NULL) return 0;
  uint32_t i = p->nfree > 0 ? p->free_batches[--p->nfree] : p->nbatches++;
  npkit_plugin_batch *b = &p->batches[i];
  memset(b, 0, sizeof *b);
  b->pos = pos;
  b->lo = lo;
  b->k = k;
  b->comm1 = comm1;
  b->f = (int8_t)f;
  b->used = 1;
  pc->open[f][pc->nopen[f]++] = i + 1;
  return i + 1;
}

/* Gives the calls (all of one communicator and function, in seq order, some possibly written
 * already) NCCL's numbers and matches them. */
static void number_calls(npkit_plugin_render *p, npkit_sink *w, uint32_t comm1, int f,
                         const uint64_t *pos, uint32_t n) {
  npkit_plugin_comm *pc = &p->comms[comm1 - 1];
  uint64_t lo = pc->next[f];
  pc->next[f] += n;
  uint32_t b1 = batch_new(p, comm1, f, lo, n);
  npkit_plugin_batch *b = batch_get(p, b1);
  if (b == NULL) return;
  for (uint32_t i = 0; i < n; i++) {
    npkit_plugin_call *c = call_at(p, pos[i]);
    if (c == NULL) continue;
    c->batch1 = b1;
    b->pos[b->npos++] = pos[i];
    b->open++;
  }
  if (b->open == 0) {
    batch_close(p, b1);
    return;
  }
  match_batch(p, w, b1);
}

static npkit_plugin_call *hold(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev,
                           uint32_t comm1, int f) {
  if (p->head - p->tail == NPKIT_PLUGIN_PENDING)
    write_call(p, w, &p->calls[p->tail % NPKIT_PLUGIN_PENDING]); /* the oldest waited long enough */
  if (p->head - p->tail == NPKIT_PLUGIN_PENDING) return NULL;
  uint64_t pos = p->head++;
  npkit_plugin_call *c = &p->calls[pos % NPKIT_PLUGIN_PENDING];
  memset(c, 0, sizeof *c);
  c->ev = *ev;
  c->pos = pos;
  c->comm1 = comm1;
  c->f = (int8_t)f;
  c->used = 1;
  return c;
}

/* ---- groups: their calls are numbered when the group is launched ---- */

static npkit_plugin_group *group_find(npkit_plugin_render *p, uint64_t id) {
  for (uint32_t i = 0; i < p->ngroups; i++)
    if (p->groups[i].id == id) return &p->groups[i];
  return NULL;
}

static void group_drop(npkit_plugin_render *p, npkit_plugin_group *g) {
  free(g->m);
  *g = p->groups[--p->ngroups];
  memset(&p->groups[p->ngroups], 0, sizeof p->groups[p->ngroups]);
}

static int group_add(npkit_plugin_render *p, uint64_t id, const npkit_plugin_call *c) {
  npkit_plugin_group *g = group_find(p, id);
  if (g == NULL) {
    if (p->ngroups == NPKIT_PLUGIN_MAX_OPEN_GROUPS) return -1;
    g = &p->groups[p->ngroups++];
    memset(g, 0, sizeof *g);
    g->id = id;
  }
  if (NPKIT_GROW(g->m, g->cap, (size_t)g->n + 1, 16) != 0) return -1;
  g->m[g->n++] = (npkit_plugin_member){c->pos, c->ev.u.api.seq, c->comm1, c->f};
  return 0;
}

static int member_cmp(const void *a, const void *b) {
  const npkit_plugin_member *x = a, *y = b;
  if (x->comm1 != y->comm1) return x->comm1 < y->comm1 ? -1 : 1;
  if (x->f != y->f) return x->f < y->f ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void group_close(npkit_plugin_render *p, npkit_sink *w, const npkit_event *end) {
  npkit_plugin_group *g = group_find(p, end->u.api.group);
  if (g == NULL) return;
  int launched = end->func == NPKIT_FN_GroupEnd &&
                 (end->u.api.result == 0 || end->u.api.result == 7 /* ncclInProgress */);
  if (!launched) { /* simulated, or dropped by an error: NCCL numbered nothing */
    for (uint32_t i = 0; i < g->n; i++) {
      npkit_plugin_call *c = call_at(p, g->m[i].pos);
      if (c != NULL) write_call(p, w, c);
    }
    group_drop(p, g);
    return;
  }
  if (g->n > 1) qsort(g->m, g->n, sizeof *g->m, member_cmp);
  uint64_t *pos = malloc((size_t)(g->n ? g->n : 1) * sizeof *pos);
  for (uint32_t i = 0; i < g->n && pos != NULL;) {
    uint32_t j = i;
    while (j < g->n && g->m[j].comm1 == g->m[i].comm1 && g->m[j].f == g->m[i].f) {
      pos[j - i] = g->m[j].pos;
      j++;
    }
    number_calls(p, w, g->m[i].comm1, g->m[i].f, pos, j - i);
    i = j;
  }
  free(pos);
  group_drop(p, g);
}

/* ---- NCCL's own links (2.28+) ---- */

/* A call whose CollApi record has been read: 1 when it was handled here. */
static int linked_call(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev, uint32_t comm1,
                       int f) {
  npkit_plugin_api *api = npkit_plugin_api_of_call(p->apis, ev->thread, ev->u.api.call_no);
  if (api == NULL || api->type != NPKIT_PAPI_COLL) return 0;
  api->call_seq = ev->u.api.seq;
  if (api->flags & NPKIT_PAPI_GRAPH) { /* captured: its tasks come at every replay */
    npkit_sink_arg captured = {.key = p->key[PK_GRAPH_CAPTURED], .type = NPKIT_SINK_ARG_BOOL, .v.i = 1};
    npkit_api_fmt_event_extra(p->fmt, w, ev, &captured, 1);
    return 1;
  }
  npkit_plugin_call *c = hold(p, w, ev, comm1, f);
  if (c == NULL) return 0;
  api->call_pos = c->pos;
  npkit_plugin_task *t = npkit_plugin_task_find(p, api->task);
  if (t != NULL && !t->claimed) claim(p, w, c, t);
  return 1;
}

/* A task naming its CollApi: 1 when it was handled here. */
static int linked_task(npkit_plugin_render *p, npkit_sink *w, npkit_plugin_task *t) {
  npkit_plugin_api *api = npkit_plugin_api_get(p->apis, t->api);
  if (api == NULL) return 0;
  if (api->have_record && (api->flags & NPKIT_PAPI_GRAPH)) {
    t->replay = 1;
    t->captured_seq = api->call_seq;
    return 1;
  }
  npkit_plugin_call *c = call_at(p, api->call_pos);
  if (c != NULL && c->task == 0) {
    claim(p, w, c, t);
    return 1;
  }
  api->task = t->id; /* its call comes later in the log */
  return 1;
}

void npkit_plugin_add_api(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  (void)w;
  npkit_plugin_api *api = npkit_plugin_api_record(p->apis, ev);
  if (api == NULL || !(api->flags & NPKIT_PAPI_GRAPH)) return;
  /* Replays read before the record of the captured CollApi (another thread's events came
   * first): rare, so a look over the tasks remembered. */
  for (uint32_t i = 0; i < NPKIT_PLUGIN_TASKS; i++) {
    npkit_plugin_task *t = &p->tasks[i];
    if (t->id != 0 && t->api == api->id && !t->claimed) t->replay = 1;
  }
  api->task = 0;
}

/* ---- entry points ---- */

void npkit_plugin_render_call(npkit_plugin_render *p, npkit_api_fmt *fmt, npkit_sink *w,
                              const npkit_event *ev) {
  if (p == NULL) {
    npkit_api_fmt_event(fmt, w, ev);
    return;
  }
  const npkit_ev_api *a = &ev->u.api;
  int f = coll_index(ev->func);
  uint32_t comm1 = a->comm != 0 ? comm_index1(p, a->comm) : 0;
  if (f >= 0 && a->call_no != 0 && linked_call(p, w, ev, comm1, f)) return;
  if (f >= 0 && a->seq != NPKIT_NO_SEQ && a->count > 0 && comm1 != 0 &&
      p->comms[comm1 - 1].ctx != 0 && p->r->comms[comm1 - 1].nranks > 1) {
    npkit_plugin_call *c = hold(p, w, ev, comm1, f);
    if (c != NULL) {
      if ((a->flags & NPKIT_API_IN_GROUP) && a->group != 0) {
        if (group_add(p, a->group, c) != 0) write_call(p, w, c);
      } else {
        uint64_t pos = c->pos;
        number_calls(p, w, comm1, f, &pos, 1);
      }
      return;
    }
  }
  npkit_api_fmt_event(fmt, w, ev);
  if ((ev->func == NPKIT_FN_GroupEnd || ev->func == NPKIT_FN_GroupSimulateEnd) &&
      (a->flags & NPKIT_API_GROUP_OUTER))
    group_close(p, w, ev);
}

void npkit_plugin_add_task(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  const npkit_ev_plugin_task *pt = &ev->u.plugin_task;
  npkit_plugin_task *t = &p->tasks[pt->task % NPKIT_PLUGIN_TASKS];
  if (t->id != 0) { /* an older task leaves: what waited for it is written as it stands */
    index_del(p, t);
    npkit_plugin_call *c = t->claimed ? call_at(p, t->call_pos) : NULL;
    if (c != NULL) write_call(p, w, c);
    npkit_plugin_gpu_slice(p, w, t);
  }
  memset(t, 0, sizeof *t);
  t->id = pt->task;
  t->nccl_seq = pt->nccl_seq;
  t->count = pt->count;
  t->call_pos = NPKIT_PLUGIN_NO_POS;
  t->api_seq = NPKIT_NO_SEQ;
  t->ctx = pt->ctx;
  t->comm1 = npkit_plugin_ctx_comm(p, pt->ctx);
  t->root = pt->root;
  t->datatype = pt->datatype;
  t->hnext = -1;
  t->fn = ev->func < NPKIT_FN_COUNT ? ev->func : NPKIT_FN_NONE;
  t->p2p = (pt->flags & NPKIT_PTASK_P2P) != 0;
  t->f = (int8_t)(t->p2p ? -1 : coll_index(t->fn));
  t->nch = pt->nchannels;
  t->nwarps = pt->nwarps;
  t->expect_kch = (pt->flags & NPKIT_PTASK_KERNEL_CH) != 0;
  t->symmetric = (pt->flags & NPKIT_PTASK_SYMMETRIC) != 0;
  t->api = pt->api;
  const npkit_plugin_api *api = pt->api != 0 ? npkit_plugin_api_find(p->apis, pt->api) : NULL;
  t->user_tag = api != NULL ? api->user_tag : 0; /* the API event comes first (at the call) */
  t->captured_seq = NPKIT_NO_SEQ;
  memcpy(t->algo, pt->algo, sizeof t->algo);
  memcpy(t->proto, pt->proto, sizeof t->proto);
  t->algo[sizeof t->algo - 1] = t->proto[sizeof t->proto - 1] = '\0';
  if (t->f < 0 || t->comm1 == 0) return;
  if (t->api != 0 && linked_task(p, w, t)) return;
  /* a call already numbered for this seqNumber? */
  npkit_plugin_comm *pc = &p->comms[t->comm1 - 1];
  for (uint32_t i = 0; i < pc->nopen[t->f]; i++) {
    uint32_t b1 = pc->open[t->f][i];
    npkit_plugin_batch *b = batch_get(p, b1);
    if (b == NULL || t->nccl_seq < b->lo || t->nccl_seq >= b->lo + b->k) continue;
    for (uint32_t j = 0; j < b->npos; j++) {
      npkit_plugin_call *c = call_at(p, b->pos[j]);
      if (c != NULL && c->batch1 == b1 && c->task == 0 && key_match(c, t)) {
        claim(p, w, c, t);
        return;
      }
    }
  }
  index_add(p, t);
}

void npkit_plugin_channel_done(npkit_plugin_render *p, npkit_sink *w, npkit_plugin_task *t) {
  if (!t->claimed || !task_complete(t)) return;
  npkit_plugin_call *c = call_at(p, t->call_pos);
  if (c != NULL)
    write_call(p, w, c);
  else
    npkit_plugin_gpu_slice(p, w, t);
}

void npkit_plugin_flush_calls(npkit_plugin_render *p, npkit_sink *w) {
  while (p->tail < p->head) {
    npkit_plugin_call *c = &p->calls[p->tail % NPKIT_PLUGIN_PENDING];
    if (c->used)
      write_call(p, w, c);
    else
      p->tail++;
  }
}

void npkit_plugin_join_free(npkit_plugin_render *p) {
  for (uint32_t i = 0; i < p->nbatches; i++) free(p->batches[i].pos);
  for (uint32_t i = 0; i < p->ngroups; i++) free(p->groups[i].m);
  if (p->comms != NULL)
    for (size_t i = 0; i < p->r->n_comms; i++)
      for (int f = 0; f < NPKIT_PLUGIN_COLL_FUNCS; f++) free(p->comms[i].open[f]);
  free(p->batches);
  free(p->free_batches);
}
