/*
 * Bounded structures used to pair NPKit ENTRY and EXIT events (internal to npkit_dump_*.c).
 *
 *  - npkit_kind_stack: open ENTRYs of one kind in one GPU buffer, last in first out, so that a
 *    lost EXIT leaves its ENTRY unpaired instead of shifting every later pair by one.
 *  - npkit_dump_lanes: places complete GPU slices on lanes of their buffer so that the slices of a
 *    lane nest properly (what Chrome-trace viewers need); overlapping kinds get another lane.
 *  - npkit_slot_table: open CPU events keyed by (slot, kind), each on the lowest free lane, like
 *    the proxy "fibers" of the reference converter.
 * Every structure has a fixed ceiling, so hostile dumps cannot make memory grow without bound.
 */
#ifndef NPKIT_DUMP_PAIR_H
#define NPKIT_DUMP_PAIR_H

#include <stdint.h>

#include "npkit_dump.h"

typedef struct npkit_open_entry {
  int64_t ns;
  uint32_t size, rsvd;
  uint8_t flags;
} npkit_open_entry;

typedef struct npkit_kind_stack {
  npkit_open_entry *v; /* ring: the newest is at (head - 1), the oldest at (head - count) */
  uint32_t cap, head, count;
} npkit_kind_stack;

/* Pushes e.  Returns 0, 1 if the stack was full and its oldest entry was moved to *evicted, or
 * -1 if memory is short. */
int npkit_kind_push(npkit_kind_stack *s, const npkit_open_entry *e, npkit_open_entry *evicted);
/* Pops the newest entry into *out: 1, or 0 if empty. */
int npkit_kind_pop(npkit_kind_stack *s, npkit_open_entry *out);
/* Oldest first: 1 and *out, or 0 when empty. */
int npkit_kind_pop_oldest(npkit_kind_stack *s, npkit_open_entry *out);
void npkit_kind_free(npkit_kind_stack *s);

/* Per lane, the maximal slices placed so far that later slices could still overlap: disjoint,
 * sorted by start (a ring; the oldest are forgotten beyond a fixed depth). */
typedef struct npkit_lane_iv {
  int64_t s, e;
} npkit_lane_iv;

typedef struct npkit_dump_lane {
  npkit_lane_iv *v;
  uint32_t cap, head, count;
} npkit_dump_lane;

typedef struct npkit_dump_lanes {
  npkit_dump_lane lane[NPKIT_DUMP_MAX_GPU_LANES];
  uint32_t n;
} npkit_dump_lanes;

/* Lane for the slice [s, e]: the lowest on which it nests with what is there.  Slices must come
 * in order of their ends for the result to be exact (they do: an EXIT completes a slice).
 * Returns 0, or -1 if memory is short. */
int npkit_dump_lanes_place(npkit_dump_lanes *l, int64_t s, int64_t e, uint32_t *lane);
void npkit_dump_lanes_reset(npkit_dump_lanes *l);
void npkit_dump_lanes_free(npkit_dump_lanes *l);

typedef struct npkit_slot_entry {
  int64_t ns;
  uint32_t key; /* slot << 8 | kind */
  uint32_t lane;
  uint32_t size, rsvd;
  uint8_t used;
} npkit_slot_entry;

typedef struct npkit_slot_table {
  npkit_slot_entry *v; /* open addressing, linear probing; cap is a power of two */
  uint32_t cap, count;
  uint64_t *lane_bits; /* lanes in use */
  uint32_t lane_words;
} npkit_slot_table;

npkit_slot_entry *npkit_slot_find(npkit_slot_table *t, uint32_t key);
/* Opens key on the lowest free lane.  Returns the entry, or NULL with *full = 1 when
 * NPKIT_DUMP_MAX_OPEN_SLOTS are open, or *full = 0 when memory is short. */
npkit_slot_entry *npkit_slot_insert(npkit_slot_table *t, uint32_t key, int *full);
/* Closes an entry returned by find or insert, freeing its lane. */
void npkit_slot_remove(npkit_slot_table *t, npkit_slot_entry *e);
void npkit_slot_clear(npkit_slot_table *t);
void npkit_slot_free(npkit_slot_table *t);

#endif /* NPKIT_DUMP_PAIR_H */
