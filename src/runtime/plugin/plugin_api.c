#include "plugin_api.h"

#include <stdatomic.h>
#include <string.h>

#include "clock.h"
#include "comm_registry.h"
#include "cupti_corr.h"
#include "emit.h"
#include "cupti_hook.h"
#include "nccl_names.h"
#include "plugin_abi.h"
#include "plugin_calls.h"
#include "plugin_emit.h"
#include "plugin_names.h"
#include "plugin_slots.h"
#include "recorder.h"

/* Entries live on after their stop until the ring wraps, 16 K API events later (2 MB of zero
 * pages until used).  The log's records keep everything: only a lower bound of the GPU clock map
 * and the correlation of a launch read entries back. */
#define API_RING 16384u

typedef struct api_entry {
  _Atomic uint64_t id;     /* published last (release) */
  /* CollApi: the collective's communicator (local id, 0 if unknown) and the sequence number its
   * call takes, for its tasks, which may start on another thread */
  _Atomic uint32_t comm;
  _Atomic uint64_t seq;
  _Atomic uint64_t ext;    /* correlation id of the call that will launch its work (GroupApi) */
  _Atomic uint8_t flags;   /* NPKIT_PAPI_* */
  _Atomic int pushed;      /* KernelLaunch: pushed a correlation id */
  /* read back only by the thread that started the event, at its stop */
  uint64_t start_ns, parent, count, stream, call_no, user_tag;
  uint32_t ctx, thread;
  int32_t root, datatype, depth;
  uint8_t type;
  uint16_t fn;
  char func[16];
} api_entry;

static api_entry ring[API_RING];
static _Atomic uint64_t next_id = 1;
static __thread uint64_t last_launch __attribute__((tls_model("initial-exec")));

static api_entry *entry(uint64_t id) {
  if (id == 0) return NULL;
  api_entry *e = &ring[id % API_RING];
  return atomic_load_explicit(&e->id, memory_order_acquire) == id ? e : NULL;
}

uint64_t npkit_plugin_api_id(const void *handle) {
  if (npkit_plugin_handle_tag(handle) != NPKIT_PLUGIN_H_API) return 0;
  uint64_t id = npkit_plugin_handle_payload(handle);
  return entry(id) != NULL ? id : 0;
}

int npkit_plugin_api_graph(uint64_t id) {
  api_entry *e = entry(id);
  return e != NULL && (atomic_load_explicit(&e->flags, memory_order_relaxed) & NPKIT_PAPI_GRAPH);
}

uint64_t npkit_plugin_last_launch_ns(void) { return last_launch; }

int npkit_plugin_api_call_seq(uint64_t id, uint32_t *comm, uint64_t *seq) {
  api_entry *e = entry(id);
  if (e == NULL) return 0;
  *comm = atomic_load_explicit(&e->comm, memory_order_relaxed);
  *seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
  return atomic_load_explicit(&e->id, memory_order_acquire) == id && *comm != 0;
}

/* A CollApi's communicator and the sequence number its call takes when it returns: the wrapped
 * call running on the thread, or with no wrapper the communicator made for the context
 * (plugin_calls.h), whose call is made at this event's stop.  A collective captured into a CUDA
 * graph takes none (its replays are no calls). */
static void call_seq_of(uint32_t ctx, const npkit_thread *t, uint64_t call_no, const npkit_plugin_descr *d,
                        uint32_t *comm, uint64_t *seq) {
  *comm = 0;
  *seq = NPKIT_NO_SEQ;
  if (d->u.api.kind != NPKIT_PAPI_COLL || d->u.api.graph_captured) return;
  const npkit_comm *c = NULL;
  if (call_no != 0) {
    uint64_t what = atomic_load_explicit(&t->cur_what, memory_order_relaxed);
    if (npkit_fn_class_of((unsigned)(what & 0xffff)) == NPKIT_CLASS_coll) c = npkit_comm_by_id((uint32_t)(what >> 16));
  } else {
    c = npkit_plugin_calls_comm(ctx);
  }
  if (c == NULL) return;
  *comm = c->local_id;
  *seq = atomic_load_explicit(&c->coll_seq, memory_order_relaxed);
}

void npkit_plugin_api_start(uint32_t ctx, void **handle, const npkit_plugin_descr *d) {
  uint64_t id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
  api_entry *e = &ring[id % API_RING];
  atomic_store_explicit(&e->id, 0, memory_order_relaxed); /* the old entry leaves */
  uint64_t now = npkit_now_ns();
  npkit_thread *t = npkit_thread_self();
  uint8_t flags = d->u.api.graph_captured ? NPKIT_PAPI_GRAPH : 0;
  e->call_no = t != NULL ? atomic_load_explicit(&t->cur_call, memory_order_relaxed) : 0;
  if (e->call_no != 0) flags |= NPKIT_PAPI_IN_CALL;
  uint32_t comm;
  uint64_t seq;
  call_seq_of(ctx, t, e->call_no, d, &comm, &seq);
  atomic_store_explicit(&e->comm, comm, memory_order_relaxed);
  atomic_store_explicit(&e->seq, seq, memory_order_relaxed);
  e->start_ns = now;
  e->parent = npkit_plugin_api_id(d->parent);
  e->count = d->u.api.count;
  e->stream = (uint64_t)(uintptr_t)d->u.api.stream;
  e->user_tag = d->u.api.user_tag;
  e->ctx = ctx;
  e->thread = t != NULL ? t->index : 0;
  e->root = d->u.api.root;
  e->datatype = npkit_plugin_datatype_from_name(d->u.api.datatype);
  e->depth = d->u.api.group_depth;
  e->type = (uint8_t)d->u.api.kind;
  e->fn = (uint16_t)npkit_plugin_fn_from_name(d->u.api.func);
  memset(e->func, 0, sizeof e->func);
  npkit_plugin_copy_name(e->func, sizeof e->func, d->u.api.func);
  atomic_store_explicit(&e->pushed, 0, memory_order_relaxed);
  /* A group's work is launched by the call that ends it; until then by the one that began it. */
  atomic_store_explicit(&e->ext, npkit_cupti_corr_current(), memory_order_relaxed);
  if (d->u.api.kind == NPKIT_PAPI_LAUNCH) {
    last_launch = now;
    api_entry *g = entry(e->parent);
    if (g != NULL && npkit_cupti_push_launch(atomic_load_explicit(&g->ext, memory_order_relaxed))) {
      atomic_store_explicit(&e->pushed, 1, memory_order_relaxed);
      flags |= NPKIT_PAPI_PUSHED;
    }
  }
  atomic_store_explicit(&e->flags, flags, memory_order_relaxed);
  atomic_store_explicit(&e->id, id, memory_order_release);
  *handle = npkit_plugin_handle_make(NPKIT_PLUGIN_H_API, id);
}

void npkit_plugin_api_state(void *handle, int state) {
  api_entry *e = entry(npkit_plugin_api_id(handle));
  if (e == NULL) return;
  if (state == NPKIT_NCCL_ST_GROUP_END_API_START) {
    uint64_t ext = npkit_cupti_corr_current();
    if (ext != 0) atomic_store_explicit(&e->ext, ext, memory_order_relaxed);
  }
}

void npkit_plugin_api_stop(void *handle) {
  uint64_t id = npkit_plugin_api_id(handle);
  api_entry *e = entry(id);
  if (e == NULL) {
    atomic_fetch_add_explicit(&npkit_plugin_counts_now.late, 1, memory_order_relaxed);
    return;
  }
  if (atomic_exchange_explicit(&e->pushed, 0, memory_order_relaxed)) npkit_cupti_pop_launch();
  uint64_t now = npkit_now_ns();
  uint8_t flags = atomic_load_explicit(&e->flags, memory_order_relaxed);
  /* A call no wrapper saw (NCCL called through pointers of its own): this event becomes it. */
  npkit_call call;
  int synth = 0;
  if ((e->type == NPKIT_PAPI_COLL || e->type == NPKIT_PAPI_P2P) && !(flags & NPKIT_PAPI_IN_CALL)) {
    const api_entry *g = entry(e->parent);
    npkit_plugin_call p = {e->ctx, e->fn, e->type, e->datatype, e->root, e->count, e->stream, e->user_tag,
                     g != NULL && g->depth > 1 ? (e->parent | 1ull << 40) : 0, e->start_ns, now};
    uint64_t call_no = npkit_plugin_calls_begin(&p, &call);
    if (call_no != 0) {
      synth = 1;
      e->call_no = call_no;
      flags |= NPKIT_PAPI_IN_CALL | NPKIT_PAPI_SYNTH;
    }
  }
  npkit_event ev;
  npkit_event_init(&ev, NPKIT_EV_PLUGIN_API, e->start_ns, now);
  ev.func = e->fn;
  npkit_ev_plugin_api *a = &ev.u.plugin_api;
  a->api = id;
  a->parent = e->parent;
  a->count = e->count;
  a->stream = e->stream;
  a->call_no = e->call_no;
  a->user_tag = e->user_tag;
  a->ctx = e->ctx;
  a->root = e->root;
  a->datatype = e->datatype;
  a->group_depth = e->depth;
  a->type = e->type;
  a->flags = flags;
  memcpy(a->func, e->func, sizeof a->func);
  npkit_plugin_emit(&ev);
  if (synth) npkit_plugin_calls_end(&call); /* after its API record, as a wrapped call comes after */
}
