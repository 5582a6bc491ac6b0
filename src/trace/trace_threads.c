#include "trace_threads.h"

#include <stdlib.h>
#include <string.h>

void npkit_threads_init(npkit_thread_table *t) { memset(t, 0, sizeof(*t)); }

void npkit_threads_free(npkit_thread_table *t) {
  free(t->slots);
  memset(t, 0, sizeof(*t));
}

static size_t slot_of(uint32_t index, size_t cap) {
  /* Fibonacci hashing: thread indices are small consecutive numbers */
  return (size_t)(((uint64_t)index * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static npkit_thread_state *probe(npkit_thread_state *slots, size_t cap, uint32_t index) {
  size_t i = slot_of(index, cap);
  while (slots[i].used && slots[i].index != index) i = (i + 1) & (cap - 1);
  return &slots[i];
}

static int grow(npkit_thread_table *t) {
  size_t cap = t->cap ? 2 * t->cap : 16;
  npkit_thread_state *slots = calloc(cap, sizeof(*slots));
  if (slots == NULL) return -1;
  for (size_t i = 0; i < t->cap; i++)
    if (t->slots[i].used) *probe(slots, cap, t->slots[i].index) = t->slots[i];
  free(t->slots);
  t->slots = slots;
  t->cap = cap;
  return 0;
}

npkit_thread_state *npkit_threads_get(npkit_thread_table *t, uint32_t index) {
  if (t->cap > 0) {
    npkit_thread_state *s = probe(t->slots, t->cap, index);
    if (s->used) return s;
  }
  if (t->n >= NPKIT_TRACE_MAX_THREADS) return NULL;
  if (2 * (t->n + 1) > t->cap && grow(t) != 0) return NULL; /* keep the load factor <= 1/2 */
  npkit_thread_state *s = probe(t->slots, t->cap, index);
  memset(s, 0, sizeof(*s));
  s->used = 1;
  s->index = index;
  t->n++;
  return s;
}

npkit_thread_state *npkit_threads_next(npkit_thread_table *t, size_t *pos) {
  while (*pos < t->cap) {
    npkit_thread_state *s = &t->slots[(*pos)++];
    if (s->used) return s;
  }
  return NULL;
}
