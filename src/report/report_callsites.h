/*
 * The call-site table of `npkit report` (in the manner of mpiP): for every call stack recorded with
 * NPKIT_STACK_DEPTH, the NCCL functions called from it, with calls, ranks, total / mean / p99 / max
 * time inside the call (CPU side, start to return) and bytes — "which line of my code issued the
 * slow all-reduce".
 *
 * A call site is identified by its symbolised frames, so the same line of the same program is one
 * site on every rank (frames name module offsets, not addresses, so address-space randomisation
 * does not split them).  Rows are ordered by total time, largest first; sites are numbered in the
 * order of their largest row.
 *
 * Use: npkit_callsites_new(), then per log either npkit_callsites_add_log() (a pass of its own) or,
 * inside an existing pass over its events, npkit_callsites_begin_log() / _event() / _end_log();
 * then npkit_callsites_finish() and the printers.  Nothing here prints except the printers.
 */
#ifndef NPKIT_REPORT_CALLSITES_H
#define NPKIT_REPORT_CALLSITES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json_writer.h"
#include "log_reader.h"
#include "stack_table.h"
#include "stats_quantile.h"

typedef struct npkit_callsite {
  char *text;          /* the frames, one per line, innermost (the caller of NCCL) first */
  uint32_t depth;
  uint32_t number;     /* 1-based, after npkit_callsites_finish() */
  uint64_t total_ns;   /* all its rows */
} npkit_callsite;

typedef struct npkit_callsite_row {
  uint32_t site;       /* index in sites */
  uint16_t fn;         /* npkit_fn */
  uint64_t calls;
  uint32_t ranks;      /* logs with calls in this row */
  uint32_t last_log;   /* private: the latest log counted in ranks */
  uint64_t bytes;      /* sum of the calls' message sizes */
  uint64_t total_ns;
  npkit_quantile time; /* per call, ns */
} npkit_callsite_row;

typedef struct npkit_callsites {
  npkit_callsite *sites;
  size_t n_sites, cap_sites;
  npkit_callsite_row *rows;  /* sorted by total time after finish */
  size_t n_rows, cap_rows;
  uint64_t calls_without_stack; /* API calls of logs that have stacks, recorded without one */
  uint32_t logs, logs_with_stacks;
  uint32_t max_depth;
  /* private: the log being read */
  uint32_t *site_of;   /* per stack of the log's table: site index */
  int32_t *row_of;     /* per (site, fn): row index + 1, grown with the sites */
  size_t row_of_sites;
  npkit_stack_table table; /* the log's stacks */
  uint32_t log_index;
} npkit_callsites;

void npkit_callsites_init(npkit_callsites *cs);
void npkit_callsites_free(npkit_callsites *cs);

/* Reads the log's stacks.  Returns 0, or -1 with a message (memory, read error). */
int npkit_callsites_begin_log(npkit_callsites *cs, const npkit_log_reader *r, char *err, size_t errlen);
/* Counts one event of that log (API calls with a stack; everything else is ignored).  0, or -1
 * when memory is short. */
int npkit_callsites_event(npkit_callsites *cs, const npkit_event *ev);
void npkit_callsites_end_log(npkit_callsites *cs);
/* begin, every event, end.  Rewinds the reader's event iterator. */
int npkit_callsites_add_log(npkit_callsites *cs, npkit_log_reader *r, char *err, size_t errlen);

/* Orders the rows and numbers the sites. */
void npkit_callsites_finish(npkit_callsites *cs);

#endif /* NPKIT_REPORT_CALLSITES_H */
