/*
 * An index of the elements of a growing array by a hash of their keys: open addressing over a
 * power-of-two table of slots, each 0 (free) or 1 + an element's position.  The owner keeps the
 * elements and says when two keys are the same; the index only finds the candidates.  The job's
 * communicators, the report table's rows and the clock alignment's host pairs are found through
 * it: keys met again and again while the logs are read.
 */
#ifndef NPKIT_SLOTS_H
#define NPKIT_SLOTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct npkit_slots {
  uint32_t *slot;
  size_t n;      /* a power of two; 0 until the first element */
  uint32_t last; /* 1 + the position found or put last (0: none), tried first: keys come in runs */
} npkit_slots;

/* The slot where the probe for hash h starts (n > 0). */
static inline size_t npkit_slots_start(const npkit_slots *s, uint64_t h) {
  return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 20) & (s->n - 1);
}

/* The position of owner's element whose key is `key` (is(owner, position, key) says whether it
 * is; hash(key) is its hash, computed only when the element found last is another one), or
 * SIZE_MAX.  Inline, so that fixed `is` and `hash` functions are inlined too. */
static inline size_t npkit_slots_find(npkit_slots *s, const void *owner, const void *key,
                                      int (*is)(const void *owner, size_t pos, const void *key),
                                      uint64_t (*hash)(const void *key)) {
  if (s->last != 0 && is(owner, s->last - 1, key)) return s->last - 1;
  if (s->n == 0) return SIZE_MAX;
  for (size_t k = npkit_slots_start(s, hash(key)); s->slot[k] != 0; k = (k + 1) & (s->n - 1))
    if (is(owner, s->slot[k] - 1, key)) {
      s->last = s->slot[k];
      return s->slot[k] - 1;
    }
  return SIZE_MAX;
}

/* Makes room for one more element after the `count` already indexed (positions 0..count-1), so
 * that at most half the slots are used: when it must grow, the table doubles (from `first`
 * slots, a power of two) and the elements are put back with hash_of(ctx, position).  0, or -1
 * when memory is short or count reaches UINT32_MAX (the index is then unchanged). */
int npkit_slots_reserve(npkit_slots *s, size_t count, size_t first, uint64_t (*hash_of)(const void *ctx, size_t pos),
                        const void *ctx);

/* Indexes the element at pos under hash h (after npkit_slots_reserve made room for it); it is
 * the one found last now. */
void npkit_slots_put(npkit_slots *s, uint64_t h, size_t pos);

void npkit_slots_free(npkit_slots *s);

#endif /* NPKIT_SLOTS_H */
