#include "plugin_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_LOG2 12u
#define BLOCK_SLOTS (1u << BLOCK_LOG2)
#define INDEX_BITS 24u
#define MAX_BLOCKS ((1u << INDEX_BITS) / BLOCK_SLOTS) /* 4096 blocks: 16M events in flight */

static _Atomic(npkit_plugin_slot *) blocks[MAX_BLOCKS];
static uint32_t nblocks; /* under grow_lock */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
/* (ABA tag << 32) | (index + 1); 0 in the low half = empty */
static _Atomic uint64_t free_head;

static npkit_plugin_slot *slot_at(uint32_t index) {
  uint32_t b = index >> BLOCK_LOG2;
  if (b >= MAX_BLOCKS) return NULL;
  npkit_plugin_slot *block = atomic_load_explicit(&blocks[b], memory_order_acquire);
  return block != NULL ? &block[index & (BLOCK_SLOTS - 1)] : NULL;
}

/* Puts the list first..last (linked through next_free) on the shared list: last links to its head. */
static void push_list(npkit_plugin_slot *first, npkit_plugin_slot *last) {
  uint64_t head = atomic_load_explicit(&free_head, memory_order_relaxed), nhead;
  do {
    atomic_store_explicit(&last->next_free, (uint32_t)head, memory_order_relaxed);
    nhead = (((head >> 32) + 1) << 32) | (first->index + 1);
  } while (!atomic_compare_exchange_weak_explicit(&free_head, &head, nhead, memory_order_release,
                                                  memory_order_relaxed));
}

static void push(npkit_plugin_slot *s) { push_list(s, s); }

static npkit_plugin_slot *pop(void) {
  uint64_t head = atomic_load_explicit(&free_head, memory_order_acquire);
  for (;;) {
    uint32_t idx1 = (uint32_t)head;
    if (idx1 == 0) return NULL;
    npkit_plugin_slot *s = slot_at(idx1 - 1);
    uint32_t next1 = atomic_load_explicit(&s->next_free, memory_order_relaxed);
    uint64_t nhead = (((head >> 32) + 1) << 32) | next1;
    if (atomic_compare_exchange_weak_explicit(&free_head, &head, nhead, memory_order_acq_rel,
                                              memory_order_acquire))
      return s;
  }
}

/* Each thread keeps the slots it freed for its next events: NCCL starts and stops a proxy step, op
 * or kernel channel on one thread (its proxy progress thread: progressOps in src/proxy.cc runs every
 * op's progress function, whose net.cc sendProxyProgress/recvProxyProgress start and stop the steps,
 * NVIDIA/nccl v2.30.7), so an event costs no locked instruction for its slot.  The list is linked
 * through next_free like the shared one; beyond CACHE_MAX slots the whole list moves to the shared
 * list in one exchange, and so does what a thread holds when it ends. */
#define CACHE_MAX 256u
static __thread npkit_plugin_slot *tls_head __attribute__((tls_model("initial-exec")));
static __thread npkit_plugin_slot *tls_tail __attribute__((tls_model("initial-exec")));
static __thread uint32_t tls_count __attribute__((tls_model("initial-exec")));
static __thread int tls_keyed __attribute__((tls_model("initial-exec")));
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int exit_key_ok;

/* Moves this thread's list to the shared one. */
static void spill(void) {
  npkit_plugin_slot *first = tls_head, *last = tls_tail;
  if (first == NULL) return;
  tls_head = tls_tail = NULL;
  tls_count = 0;
  push_list(first, last);
}

static void thread_exit(void *unused) {
  (void)unused;
  spill();
}

static void make_exit_key(void) { exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0; }

static void cache_push(npkit_plugin_slot *s) {
  if (!tls_keyed) { /* the thread's first free: have its list given back when it ends */
    pthread_once(&exit_key_once, make_exit_key);
    if (!exit_key_ok || pthread_setspecific(exit_key, (void *)1) != 0) {
      push(s); /* no way to give them back: this thread keeps none */
      return;
    }
    tls_keyed = 1;
  }
  if (tls_head == NULL) tls_tail = s;
  atomic_store_explicit(&s->next_free, tls_head != NULL ? tls_head->index + 1 : 0, memory_order_relaxed);
  tls_head = s;
  if (++tls_count > CACHE_MAX) spill();
}

static npkit_plugin_slot *cache_pop(void) {
  npkit_plugin_slot *s = tls_head;
  if (s == NULL) return NULL;
  uint32_t next1 = atomic_load_explicit(&s->next_free, memory_order_relaxed);
  tls_head = next1 != 0 ? slot_at(next1 - 1) : NULL;
  if (tls_head == NULL) tls_tail = NULL;
  tls_count--;
  return s;
}

/* Adds a block and returns one of its slots; the others go to the free list. */
static npkit_plugin_slot *grow(void) {
  pthread_mutex_lock(&grow_lock);
  npkit_plugin_slot *s = pop(); /* another thread may have grown the pool meanwhile */
  if (s == NULL && nblocks < MAX_BLOCKS) {
    npkit_plugin_slot *block = calloc(BLOCK_SLOTS, sizeof *block);
    if (block != NULL) {
      uint32_t base = nblocks << BLOCK_LOG2;
      for (uint32_t i = 0; i < BLOCK_SLOTS; i++) block[i].index = base + i;
      atomic_store_explicit(&blocks[nblocks], block, memory_order_release);
      nblocks++;
      for (uint32_t i = BLOCK_SLOTS; i-- > 1;) push(&block[i]);
      s = &block[0];
    }
  }
  pthread_mutex_unlock(&grow_lock);
  return s;
}

npkit_plugin_slot *npkit_plugin_slot_alloc(uint32_t tag, void **handle) {
  npkit_plugin_slot *s = cache_pop();
  if (s == NULL) s = pop();
  if (s == NULL && (s = grow()) == NULL) return NULL;
  uint32_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
  s->tag = tag;
  s->ctx = 0;
  s->task = 0;
  s->start_ns = 0;
  memset(&s->u, 0, sizeof s->u);
  *handle = (void *)(uintptr_t)(((uint64_t)gen << 32) | ((uint64_t)s->index << 4) | tag);
  return s;
}

npkit_plugin_slot *npkit_plugin_slot_get(const void *handle, uint32_t tag) {
  uint64_t v = (uint64_t)(uintptr_t)handle;
  if ((v & 0xfu) != tag || tag < NPKIT_PLUGIN_H_PROXY_OP || tag > NPKIT_PLUGIN_H_KERNEL_PHASE) return NULL;
  if ((v >> 28 & 0xfu) != 0) return NULL; /* bits no handle of ours sets */
  npkit_plugin_slot *s = slot_at((uint32_t)(v >> 4) & ((1u << INDEX_BITS) - 1));
  if (s == NULL || s->tag != tag ||
      atomic_load_explicit(&s->gen, memory_order_acquire) != (uint32_t)(v >> 32))
    return NULL;
  return s;
}

void npkit_plugin_slot_free(npkit_plugin_slot *s) {
  atomic_store_explicit(&s->watch.since, 0, memory_order_relaxed);
  /* Only the thread that stops the event writes gen (NCCL stops an event once): a store, no
   * locked add; readers (npkit_plugin_slot_get, the watchdog) see the new gen or the old. */
  atomic_store_explicit(&s->gen, atomic_load_explicit(&s->gen, memory_order_relaxed) + 1, memory_order_release);
  cache_push(s);
}

void npkit_plugin_watch_publish(npkit_plugin_slot *s, uint64_t since, int channel, int is_send, int peer,
                                int step_or_nsteps) {
  npkit_plugin_watch *w = &s->watch;
  atomic_store_explicit(&w->progress, 0, memory_order_relaxed);
  atomic_store_explicit(&w->done, 0, memory_order_relaxed);
  atomic_store_explicit(&w->task, s->task, memory_order_relaxed);
  atomic_store_explicit(&w->where,
                        (uint64_t)s->ctx | (uint64_t)(uint8_t)channel << 32 | (uint64_t)(is_send != 0) << 40 |
                            0xffull << 48 | (uint64_t)(s->tag & 0xff) << 56,
                        memory_order_relaxed);
  atomic_store_explicit(&w->steps, (uint64_t)(uint32_t)peer | (uint64_t)(uint32_t)step_or_nsteps << 32,
                        memory_order_relaxed);
  atomic_store_explicit(&w->since, since != 0 ? since : 1, memory_order_release);
}

/* A copy of slot s's watch, or 0 when it holds no event or changed while read (a sequence lock on
 * its generation). */
static int read_watch(const npkit_plugin_slot *s, npkit_plugin_watched *out) {
  uint32_t gen = atomic_load_explicit(&s->gen, memory_order_acquire);
  const npkit_plugin_watch *w = &s->watch;
  uint64_t since = atomic_load_explicit(&w->since, memory_order_acquire);
  if (since == 0) return 0;
  uint64_t where = atomic_load_explicit(&w->where, memory_order_relaxed);
  uint64_t steps = atomic_load_explicit(&w->steps, memory_order_relaxed);
  out->tag = (uint32_t)(where >> 56);
  out->progress = atomic_load_explicit(&w->progress, memory_order_relaxed);
  out->task = atomic_load_explicit(&w->task, memory_order_relaxed);
  out->steps_done = atomic_load_explicit(&w->done, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&s->gen, memory_order_relaxed) != gen ||
      atomic_load_explicit(&w->since, memory_order_relaxed) != since)
    return 0;
  out->since = since;
  out->ctx = (uint32_t)where;
  out->channel = (uint8_t)(where >> 32) == 0xff ? -1 : (int32_t)(uint8_t)(where >> 32); /* 0xff: unknown */
  out->is_send = (uint8_t)(where >> 40 & 1);
  out->phase = (uint8_t)(where >> 48);
  out->peer = (int32_t)(uint32_t)steps;
  out->step_or_nsteps = (int32_t)(uint32_t)(steps >> 32);
  return 1;
}

uint32_t npkit_plugin_slots_capacity(void) {
  pthread_mutex_lock(&grow_lock);
  uint32_t n = nblocks * BLOCK_SLOTS;
  pthread_mutex_unlock(&grow_lock);
  return n;
}

void npkit_plugin_slots_each(void (*fn)(void *ctx, const npkit_plugin_watched *w), void *ctx) {
  for (uint32_t b = 0; b < MAX_BLOCKS; b++) {
    const npkit_plugin_slot *block = atomic_load_explicit(&blocks[b], memory_order_acquire);
    if (block == NULL) return; /* blocks are added in order */
    for (uint32_t i = 0; i < BLOCK_SLOTS; i++) {
      npkit_plugin_watched w;
      if (read_watch(&block[i], &w)) fn(ctx, &w);
    }
  }
}
