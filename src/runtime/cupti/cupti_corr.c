#include "cupti_corr.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_names.h"

/* ---- the call ring ----
 * A slot is a tag (the external id, 0 while being written) and the call packed in words.  The
 * words are relaxed atomics so that a reader racing with a writer that wrapped around the ring is
 * well defined; the tag, read before and after the copy, tells whether the copy is whole. */
#define CALL_WORDS 7

typedef struct call_slot {
  _Atomic uint64_t tag;
  _Atomic uint64_t w[CALL_WORDS];
} call_slot;

static call_slot *ring;
static _Atomic uint64_t next_ext = 1;

/* Group bookkeeping of one thread: the coll/p2p calls of its open outermost group. */
typedef struct group_track {
  uint64_t group;
  uint32_t calls;
  uint32_t comm;       /* the common communicator, or 0 when they differ */
  uint64_t bytes;
  npkit_cupti_call first;
} group_track;

static __thread group_track tls_group __attribute__((tls_model("initial-exec")));
static __thread uint64_t tls_ext __attribute__((tls_model("initial-exec")));

/* ---- correlation map, completion path only ---- */
typedef struct corr_slot {
  uint32_t correlation;
  uint32_t used;
  uint64_t ext_id;
} corr_slot;

static corr_slot *corr_map;

/* ---- graph nodes: written by CUPTI resource callbacks on capturing threads ---- */
#define NODE_MAX (1u << 16)

typedef struct node_slot {
  uint64_t node_id;   /* 0 = empty */
  uint64_t ext_id;
  uint8_t state;      /* 0 unresolved, 1 call copied, 2 call lost */
  npkit_cupti_call call;
} node_slot;

static pthread_mutex_t node_lock = PTHREAD_MUTEX_INITIALIZER;
static node_slot *nodes;
static size_t node_cap, node_count;
static int node_dirty; /* some node's call is not copied yet */

int npkit_cupti_corr_init(void) {
  if (ring != NULL) return 0;
  /* Large and mostly untouched: calloc maps zero pages that cost nothing until written. */
  call_slot *r = calloc(NPKIT_CUPTI_CALL_RING, sizeof *r);
  corr_slot *m = calloc(NPKIT_CUPTI_CORR_MAP, sizeof *m);
  if (r == NULL || m == NULL) {
    free(r);
    free(m);
    return -1;
  }
  corr_map = m;
  ring = r;
  return 0;
}

uint64_t npkit_cupti_corr_begin(void) {
  uint64_t id = atomic_fetch_add_explicit(&next_ext, 1, memory_order_relaxed);
  tls_ext = id;
  return id;
}

void npkit_cupti_corr_end(void) { tls_ext = 0; }

void npkit_cupti_corr_enter(uint64_t id) { tls_ext = id; }

uint64_t npkit_cupti_corr_current(void) { return tls_ext; }

uint64_t npkit_cupti_corr_issued(void) { return atomic_load(&next_ext) - 1; }

static void pack(const npkit_cupti_call *c, uint64_t w[CALL_WORDS]) {
  w[0] = c->start_ns;
  w[1] = c->end_ns;
  w[2] = c->bytes;
  w[3] = c->seq;
  w[4] = c->group;
  w[5] = (uint64_t)c->thread | (uint64_t)c->comm << 32;
  w[6] = (uint64_t)c->func | (uint64_t)c->flags << 16 | (uint64_t)c->group_calls << 32;
}

static void unpack(const uint64_t w[CALL_WORDS], npkit_cupti_call *c) {
  c->start_ns = w[0];
  c->end_ns = w[1];
  c->bytes = w[2];
  c->seq = w[3];
  c->group = w[4];
  c->thread = (uint32_t)w[5];
  c->comm = (uint32_t)(w[5] >> 32);
  c->func = (uint16_t)w[6];
  c->flags = (uint16_t)(w[6] >> 16);
  c->group_calls = (uint16_t)(w[6] >> 32);
}

static int accepted(int32_t result) { return result == 0 || result == 7 /* ncclInProgress */; }

/* Notes a coll/p2p call issued inside a group. */
static void group_note(const npkit_event *ev) {
  const npkit_ev_api *a = &ev->u.api;
  group_track *g = &tls_group;
  if (g->group != a->group) {
    memset(g, 0, sizeof *g);
    g->group = a->group;
  }
  if (g->calls == 0) {
    g->first.func = ev->func;
    g->first.bytes = a->bytes;
    g->first.seq = a->seq;
    g->first.comm = a->comm;
    g->comm = a->comm;
  } else if (g->comm != a->comm) {
    g->comm = 0;
  }
  g->calls++;
  g->bytes += a->bytes;
}

void npkit_cupti_corr_publish(const npkit_event *ev, int recorded) {
  const npkit_ev_api *a = &ev->u.api;
  if (ring == NULL || a->corr_id == 0) return;
  npkit_fn_class cls = npkit_fn_class_of(ev->func);
  if ((a->flags & NPKIT_API_IN_GROUP) && (cls == NPKIT_CLASS_coll || cls == NPKIT_CLASS_p2p) &&
      accepted(a->result))
    group_note(ev);

  npkit_cupti_call c;
  memset(&c, 0, sizeof c);
  c.start_ns = ev->start_ns;
  c.end_ns = ev->end_ns;
  c.bytes = a->bytes;
  c.seq = a->seq;
  c.group = a->group;
  c.thread = ev->thread;
  c.comm = a->comm;
  c.func = ev->func;
  c.flags = recorded ? NPKIT_GPU_CALL_RECORDED : 0;
  if ((ev->func == NPKIT_FN_GroupEnd || ev->func == NPKIT_FN_GroupSimulateEnd) &&
      (a->flags & NPKIT_API_GROUP_OUTER)) {
    group_track *g = &tls_group;
    if (g->group == a->group && g->calls > 0) {
      c.flags |= NPKIT_GPU_VIA_GROUP;
      c.group_calls = g->calls > 0xffff ? 0xffff : (uint16_t)g->calls;
      if (g->calls == 1) {
        c.func = g->first.func;
        c.bytes = g->first.bytes;
        c.seq = g->first.seq;
        c.comm = g->first.comm;
      } else {
        c.bytes = g->bytes;
        c.seq = NPKIT_NO_SEQ;
        c.comm = g->comm;
      }
    }
    memset(g, 0, sizeof *g);
  }

  uint64_t w[CALL_WORDS];
  pack(&c, w);
  call_slot *s = &ring[a->corr_id & (NPKIT_CUPTI_CALL_RING - 1)];
  atomic_store_explicit(&s->tag, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  for (int i = 0; i < CALL_WORDS; i++) atomic_store_explicit(&s->w[i], w[i], memory_order_relaxed);
  atomic_store_explicit(&s->tag, a->corr_id, memory_order_release);
}

npkit_cupti_lookup npkit_cupti_call_find(uint64_t ext_id, npkit_cupti_call *out) {
  if (ring == NULL || ext_id == 0) return NPKIT_CUPTI_GONE;
  call_slot *s = &ring[ext_id & (NPKIT_CUPTI_CALL_RING - 1)];
  uint64_t t1 = atomic_load_explicit(&s->tag, memory_order_acquire);
  if (t1 != ext_id) {
    /* Ids grow: an older tag (or 0, a write in progress) means the call is still running. */
    return t1 > ext_id ? NPKIT_CUPTI_GONE : NPKIT_CUPTI_PENDING;
  }
  uint64_t w[CALL_WORDS];
  for (int i = 0; i < CALL_WORDS; i++) w[i] = atomic_load_explicit(&s->w[i], memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&s->tag, memory_order_relaxed) != t1) return NPKIT_CUPTI_GONE;
  unpack(w, out);
  return NPKIT_CUPTI_FOUND;
}

void npkit_cupti_corr_put(uint32_t correlation, uint64_t ext_id) {
  if (corr_map == NULL) return;
  corr_slot *s = &corr_map[correlation & (NPKIT_CUPTI_CORR_MAP - 1)];
  s->correlation = correlation;
  s->used = 1;
  s->ext_id = ext_id;
}

uint64_t npkit_cupti_corr_get(uint32_t correlation) {
  if (corr_map == NULL) return 0;
  const corr_slot *s = &corr_map[correlation & (NPKIT_CUPTI_CORR_MAP - 1)];
  return s->used && s->correlation == correlation ? s->ext_id : 0;
}

/* ---- graph nodes ---- */

static size_t node_hash(uint64_t id, size_t cap) {
  return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static node_slot *node_probe(node_slot *tab, size_t cap, uint64_t id) {
  size_t i = node_hash(id, cap);
  while (tab[i].node_id != 0 && tab[i].node_id != id) i = (i + 1) & (cap - 1);
  return &tab[i];
}

/* The slot for id (found or empty), growing the table; NULL when full. Under node_lock. */
static node_slot *node_slot_for(uint64_t id) {
  if (node_cap == 0 || 2 * (node_count + 1) > node_cap) {
    size_t cap = node_cap ? 2 * node_cap : 256;
    if (cap > 2 * NODE_MAX) {
      if (node_cap == 0 || node_count + 1 >= node_cap) return NULL;
    } else {
      node_slot *tab = calloc(cap, sizeof *tab);
      if (tab == NULL) return NULL;
      for (size_t i = 0; i < node_cap; i++)
        if (nodes[i].node_id != 0) *node_probe(tab, cap, nodes[i].node_id) = nodes[i];
      free(nodes);
      nodes = tab;
      node_cap = cap;
    }
  }
  return node_probe(nodes, node_cap, id);
}

void npkit_cupti_node_created(uint64_t node_id, uint64_t ext_id) {
  if (node_id == 0 || ext_id == 0) return;
  pthread_mutex_lock(&node_lock);
  node_slot *s = node_slot_for(node_id);
  if (s != NULL) {
    if (s->node_id == 0) node_count++;
    memset(s, 0, sizeof *s);
    node_dirty = 1;
    s->node_id = node_id;
    s->ext_id = ext_id;
  }
  pthread_mutex_unlock(&node_lock);
}

void npkit_cupti_node_cloned(uint64_t original, uint64_t clone) {
  if (original == 0 || clone == 0 || original == clone) return;
  pthread_mutex_lock(&node_lock);
  if (node_cap > 0) {
    node_slot *o = node_probe(nodes, node_cap, original);
    if (o->node_id == original) {
      node_slot copy = *o;
      node_slot *s = node_slot_for(clone);
      if (s != NULL) {
        if (s->node_id == 0) node_count++;
        *s = copy;
        s->node_id = clone;
        if (copy.state == 0) node_dirty = 1;
      }
    }
  }
  pthread_mutex_unlock(&node_lock);
}

void npkit_cupti_nodes_resolve(void) {
  pthread_mutex_lock(&node_lock);
  int pending = 0;
  for (size_t i = 0; i < node_cap && node_dirty; i++) {
    node_slot *s = &nodes[i];
    if (s->node_id == 0 || s->state != 0) continue;
    npkit_cupti_lookup k = npkit_cupti_call_find(s->ext_id, &s->call);
    if (k == NPKIT_CUPTI_PENDING) {
      pending = 1;
      continue;
    }
    s->state = k == NPKIT_CUPTI_FOUND ? 1 : 2;
  }
  node_dirty = pending;
  pthread_mutex_unlock(&node_lock);
}

npkit_cupti_lookup npkit_cupti_node_find(uint64_t node_id, uint64_t *ext_id, npkit_cupti_call *out) {
  npkit_cupti_lookup k = NPKIT_CUPTI_GONE;
  *ext_id = 0;
  pthread_mutex_lock(&node_lock);
  if (node_cap > 0 && node_id != 0) {
    node_slot *s = node_probe(nodes, node_cap, node_id);
    if (s->node_id == node_id) {
      *ext_id = s->ext_id;
      if (s->state == 1) {
        *out = s->call;
        k = NPKIT_CUPTI_FOUND;
      }
    }
  }
  pthread_mutex_unlock(&node_lock);
  return k;
}
