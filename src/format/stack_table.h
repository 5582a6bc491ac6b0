/*
 * The call stacks of an event log: its NPKIT_BLOCK_STACK records with their frames resolved to the
 * STRING texts (include/npkit/event_log.h), looked up by npkit_ev_api.stack_id.
 *
 * The log reader skips STACK blocks (they are written once, at exit, and only renderers of stacks
 * need them), so the table is read with a separate pass over the block headers of the complete
 * part of the log; every size is checked, and a damaged STACK block ends the table without an
 * error: stacks are an addition, never a reason to reject a log.
 */
#ifndef NPKIT_STACK_TABLE_H
#define NPKIT_STACK_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"

/* Deeper records are treated as damaged (the library keeps at most 64 frames). */
#define NPKIT_STACK_TABLE_MAX_DEPTH 1024

typedef struct npkit_stack {
  uint32_t id;
  uint32_t depth;
  const char **frames;  /* depth texts, innermost first; pointers into the reader's strings, or to
                           a fixed "??" for a frame id without a string */
} npkit_stack;

typedef struct npkit_stack_table {
  npkit_stack *stacks;  /* sorted by id, one per id (the latest record) */
  size_t n;
  const char **frames;  /* storage of every stack's frames */
} npkit_stack_table;

/* Reads the table of an opened log; valid while the reader is open.  Returns 0 (an empty table for
 * a log without stacks), or -1 with a message when memory is short or the file cannot be read. */
int npkit_stack_table_load(const npkit_log_reader *r, npkit_stack_table *t, char *err, size_t errlen);
void npkit_stack_table_free(npkit_stack_table *t);

/* NULL if id is not in the table. */
const npkit_stack *npkit_stack_find(const npkit_stack_table *t, uint64_t id);

/* The function part of a frame text ("train_step" of "train_step+0x1c (train+0x11c0) a.c:42"),
 * into buf; the whole text if it has no recognisable function. */
void npkit_stack_frame_function(const char *frame, char *buf, size_t len);

#endif /* NPKIT_STACK_TABLE_H */
