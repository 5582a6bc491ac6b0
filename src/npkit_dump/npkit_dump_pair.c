#include "npkit_dump_pair.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* ---- open ENTRYs of one kind ---- */

/* Ring capacities are powers of two (4..NPKIT_DUMP_MAX_OPEN, 8..LANE_DEPTH), so indices wrap with
 * a mask. */
_Static_assert((NPKIT_DUMP_MAX_OPEN & (NPKIT_DUMP_MAX_OPEN - 1)) == 0, "NPKIT_DUMP_MAX_OPEN: a power of two");

/* Reallocates a ring of `size`-byte entries (the newest at head - 1, the oldest at head - count)
 * to new_cap entries, oldest first.  0, or -1 when memory is short (the ring is unchanged). */
static int ring_grow(void **v, size_t size, uint32_t *cap, uint32_t *head, uint32_t count, uint32_t new_cap) {
  unsigned char *nv = malloc((size_t)new_cap * size);
  if (nv == NULL) return -1;
  const unsigned char *old = *v;
  for (uint32_t i = 0; i < count; i++)
    memcpy(nv + (size_t)i * size, old + (size_t)((*head + *cap - count + i) % *cap) * size, size);
  free(*v);
  *v = nv;
  *cap = new_cap;
  *head = count;
  return 0;
}

/* RING_GROW(r, new_cap) for a ring struct with members v, cap, head and count (the kind stacks,
 * the lanes). */
#define RING_GROW(r, new_cap) ring_grow((void **)&(r)->v, sizeof(*(r)->v), &(r)->cap, &(r)->head, (r)->count, (new_cap))

int npkit_kind_push(npkit_kind_stack *s, const npkit_open_entry *e, npkit_open_entry *evicted) {
  int rc = 0;
  if (s->count == s->cap) {
    if (s->cap < NPKIT_DUMP_MAX_OPEN) {
      uint32_t c = s->cap ? s->cap * 2 : 4;
      if (RING_GROW(s, c > NPKIT_DUMP_MAX_OPEN ? NPKIT_DUMP_MAX_OPEN : c) != 0) return -1;
    } else {
      /* full: the oldest open ENTRY is the least likely to still get its EXIT */
      *evicted = s->v[s->head]; /* oldest == head when full */
      s->count--;
      rc = 1;
    }
  }
  s->v[s->head] = *e;
  s->head = (s->head + 1) & (s->cap - 1);
  s->count++;
  return rc;
}

int npkit_kind_pop(npkit_kind_stack *s, npkit_open_entry *out) {
  if (s->count == 0) return 0;
  s->head = (s->head + s->cap - 1) & (s->cap - 1);
  *out = s->v[s->head];
  s->count--;
  return 1;
}

int npkit_kind_pop_oldest(npkit_kind_stack *s, npkit_open_entry *out) {
  if (s->count == 0) return 0;
  *out = s->v[(s->head + s->cap - s->count) & (s->cap - 1)];
  s->count--;
  return 1;
}

void npkit_kind_free(npkit_kind_stack *s) {
  free(s->v);
  memset(s, 0, sizeof(*s));
}

/* ---- GPU lanes ---- */

#define LANE_DEPTH 256 /* disjoint slices remembered per lane; a power of two */

/* Number of newest intervals that [s, e] would enclose, or -1 if it overlaps one partially. */
static int lane_fit(const npkit_dump_lane *ln, int64_t s, int64_t e) {
  uint32_t j = 0;
  for (; j < ln->count; j++) {
    const npkit_lane_iv *iv = &ln->v[(ln->head + ln->cap - 1 - j) & (ln->cap - 1)];
    if (iv->s >= s) {
      if (iv->e > e) return -1; /* starts inside [s, e] but ends after it */
      continue;                 /* enclosed: nests */
    }
    if (iv->e > s) return -1; /* started before s and still runs at s */
    break;                    /* the rest ended even earlier */
  }
  return (int)j;
}

static int lane_commit(npkit_dump_lane *ln, uint32_t absorbed, int64_t s, int64_t e) {
  ln->count -= absorbed;
  if (ln->cap > 0) ln->head = (ln->head + ln->cap - absorbed) & (ln->cap - 1);
  if (ln->count == ln->cap) {
    if (ln->cap < LANE_DEPTH) {
      if (RING_GROW(ln, ln->cap ? ln->cap * 2 : 8) != 0) return -1;
    } else {
      ln->count--; /* forget the oldest: it ended before everything else on the lane */
    }
  }
  ln->v[ln->head].s = s;
  ln->v[ln->head].e = e;
  ln->head = (ln->head + 1) & (ln->cap - 1);
  ln->count++;
  return 0;
}

int npkit_dump_lanes_place(npkit_dump_lanes *l, int64_t s, int64_t e, uint32_t *lane) {
  for (uint32_t i = 0; i < l->n; i++) {
    int k = lane_fit(&l->lane[i], s, e);
    if (k >= 0) {
      *lane = i;
      return lane_commit(&l->lane[i], (uint32_t)k, s, e);
    }
  }
  uint32_t i = l->n < NPKIT_DUMP_MAX_GPU_LANES ? l->n++ : NPKIT_DUMP_MAX_GPU_LANES - 1;
  npkit_dump_lane *ln = &l->lane[i];
  *lane = i;
  /* on a new lane nothing is in the way; on the last one (all full) the viewer will cope */
  int k = lane_fit(ln, s, e);
  if (k < 0) {
    ln->count = 0;
    ln->head = 0;
    k = 0;
  }
  return lane_commit(ln, (uint32_t)k, s, e);
}

void npkit_dump_lanes_reset(npkit_dump_lanes *l) {
  for (uint32_t i = 0; i < NPKIT_DUMP_MAX_GPU_LANES; i++) l->lane[i].count = l->lane[i].head = 0;
  l->n = 0;
}

void npkit_dump_lanes_free(npkit_dump_lanes *l) {
  for (uint32_t i = 0; i < NPKIT_DUMP_MAX_GPU_LANES; i++) free(l->lane[i].v);
  memset(l, 0, sizeof(*l));
}

/* ---- CPU slots ---- */

static uint32_t slot_hash(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

npkit_slot_entry *npkit_slot_find(npkit_slot_table *t, uint32_t key) {
  if (t->count == 0) return NULL;
  uint32_t mask = t->cap - 1, i = slot_hash(key) & mask;
  while (t->v[i].used) {
    if (t->v[i].key == key) return &t->v[i];
    i = (i + 1) & mask;
  }
  return NULL;
}

static int slot_rehash(npkit_slot_table *t, uint32_t new_cap) {
  npkit_slot_entry *v = calloc(new_cap, sizeof(*v));
  if (v == NULL) return -1;
  for (uint32_t i = 0; i < t->cap; i++) {
    if (!t->v[i].used) continue;
    uint32_t j = slot_hash(t->v[i].key) & (new_cap - 1);
    while (v[j].used) j = (j + 1) & (new_cap - 1);
    v[j] = t->v[i];
  }
  free(t->v);
  t->v = v;
  t->cap = new_cap;
  return 0;
}

static int lane_alloc(npkit_slot_table *t, uint32_t *lane) {
  for (uint32_t w = 0; w < t->lane_words; w++) {
    if (t->lane_bits[w] != UINT64_MAX) {
      uint32_t b = (uint32_t)__builtin_ctzll(~t->lane_bits[w]);
      t->lane_bits[w] |= 1ull << b;
      *lane = w * 64 + b;
      return 0;
    }
  }
  size_t words = t->lane_words; /* every word allocated is in use: capacity and count are one */
  if (NPKIT_GROW(t->lane_bits, words, words + 1, 1) != 0) return -1;
  memset(t->lane_bits + t->lane_words, 0, (words - t->lane_words) * sizeof(*t->lane_bits));
  t->lane_bits[t->lane_words] = 1;
  *lane = t->lane_words * 64;
  t->lane_words = (uint32_t)words;
  return 0;
}

npkit_slot_entry *npkit_slot_insert(npkit_slot_table *t, uint32_t key, int *full) {
  *full = 0;
  if (t->count >= NPKIT_DUMP_MAX_OPEN_SLOTS) {
    *full = 1;
    return NULL;
  }
  if ((t->count + 1) * 2 > t->cap && slot_rehash(t, t->cap ? t->cap * 2 : 64) != 0) return NULL;
  uint32_t lane;
  if (lane_alloc(t, &lane) != 0) return NULL;
  uint32_t mask = t->cap - 1, i = slot_hash(key) & mask;
  while (t->v[i].used) i = (i + 1) & mask;
  npkit_slot_entry *e = &t->v[i];
  memset(e, 0, sizeof(*e));
  e->used = 1;
  e->key = key;
  e->lane = lane;
  t->count++;
  return e;
}

void npkit_slot_remove(npkit_slot_table *t, npkit_slot_entry *e) {
  uint32_t mask = t->cap - 1, i = (uint32_t)(e - t->v), j = i;
  t->lane_bits[e->lane / 64] &= ~(1ull << (e->lane % 64));
  /* backward-shift deletion keeps every probe chain unbroken without tombstones */
  for (;;) {
    j = (j + 1) & mask;
    if (!t->v[j].used) break;
    uint32_t k = slot_hash(t->v[j].key) & mask;
    int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    t->v[i] = t->v[j];
    i = j;
  }
  t->v[i].used = 0;
  t->count--;
}

void npkit_slot_clear(npkit_slot_table *t) {
  if (t->v != NULL) memset(t->v, 0, (size_t)t->cap * sizeof(*t->v));
  if (t->lane_bits != NULL) memset(t->lane_bits, 0, (size_t)t->lane_words * sizeof(*t->lane_bits));
  t->count = 0;
}

void npkit_slot_free(npkit_slot_table *t) {
  free(t->v);
  free(t->lane_bits);
  memset(t, 0, sizeof(*t));
}
