/*
 * Summary diagnostics of an NPKit dump conversion (internal to npkit_dump_*.c): problems are
 * tallied per kind while buffers are read, with the ranks where they occurred, and reported once
 * at the end as one message per kind ("... (ranks 0-3,7)") instead of one per buffer.
 */
#ifndef NPKIT_DUMP_DIAG_H
#define NPKIT_DUMP_DIAG_H

#include <stdint.h>

#include "npkit_dump.h"

/* Ranks as "0-3,7,9-12", added in ascending order, cut short with "..." when long: in the
 * messages of a conversion, and in the trace's otherData.rank_list. */
typedef struct npkit_rank_set {
  char text[256];
  uint32_t first, last;
  int has, full;
} npkit_rank_set;

typedef struct npkit_dump_diags {
  npkit_rank_set unknown, invalid, unaligned, no_sync_gpu, unpaired, out_of_order, bad_times, truncated, overflow,
      absent, bad_sync, late_sync;
  uint64_t unknown_bits[4];     /* ids seen that the table does not define */
  /* GPU buffers with unaligned events (no usable TIME_SYNC_CPU before them), by cause, with the
   * events each cause left unaligned: */
  uint64_t unaligned_buffers, unaligned_events;   /* no TIME_SYNC_CPU in the buffer at all */
  uint64_t bad_sync_buffers, bad_sync_events;     /* TIME_SYNC_CPU whose value does not convert */
  uint64_t late_sync_buffers, late_sync_events;   /* events before the buffer's first TIME_SYNC_CPU */
  uint64_t no_sync_gpu_buffers; /* GPU buffers with TIME_SYNC_CPU but no TIME_SYNC_GPU */
  uint64_t absent_ranks;        /* selected ranks not in the dump */
  char truncated_example[192];  /* the first truncated file */
} npkit_dump_diags;

void npkit_rank_set_add(npkit_rank_set *s, uint32_t rank);
/* The text of the ranks added so far; the set then starts afresh. */
const char *npkit_rank_set_text(npkit_rank_set *s);

/* Records which counters grew while one rank was read. */
void npkit_dump_diags_note_rank(npkit_dump_diags *g, const npkit_dump_counters *before, const npkit_dump_counters *now,
                                uint32_t rank);

typedef void (*npkit_dump_emit_fn)(void *ctx, npkit_dump_severity severity, const char *message);

/* Issues one message per kind of problem found since `start`. */
void npkit_dump_diags_report(npkit_dump_diags *g, const npkit_dump_counters *start, const npkit_dump_counters *now,
                             const npkit_dump_event_table *table, npkit_dump_emit_fn emit, void *ctx);

#endif /* NPKIT_DUMP_DIAG_H */
