#include "slots.h"

#include <stdlib.h>

void npkit_slots_put(npkit_slots *s, uint64_t h, size_t pos) {
  size_t k = npkit_slots_start(s, h);
  while (s->slot[k] != 0) k = (k + 1) & (s->n - 1);
  s->slot[k] = (uint32_t)(pos + 1);
  s->last = s->slot[k];
}

int npkit_slots_reserve(npkit_slots *s, size_t count, size_t first, uint64_t (*hash_of)(const void *ctx, size_t pos),
                        const void *ctx) {
  if (2 * (count + 1) <= s->n) return 0;
  if (count >= UINT32_MAX - 1) return -1;
  size_t n = s->n ? 2 * s->n : first;
  while (2 * (count + 1) > n) n *= 2;
  uint32_t *slot = calloc(n, sizeof *slot);
  if (slot == NULL) return -1;
  free(s->slot);
  s->slot = slot;
  s->n = n;
  for (size_t i = 0; i < count; i++) npkit_slots_put(s, hash_of(ctx, i), i);
  return 0;
}

void npkit_slots_free(npkit_slots *s) {
  free(s->slot);
  s->slot = NULL;
  s->n = 0;
  s->last = 0;
}
