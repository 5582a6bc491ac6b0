/* The report's rows grouped by the user profiler tag of their calls (the userProfilerTag of
 * ncclCollConfig_t that NCCL 2.31's nccl*Config collectives take): which operations a tag covers,
 * how many calls, bytes and time, and its share of the communication time of the run.  A tag is
 * the application's own name for a phase of its work (a layer, a pipeline stage), so this is what
 * a user asks first: where does the time of each tagged part go. */
#ifndef NPKIT_REPORT_TAGS_H
#define NPKIT_REPORT_TAGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report_table.h"

#define NPKIT_TAG_OPS 4 /* distinct operations named per tag; more are counted in more_ops */

typedef struct npkit_tag_sum {
  uint64_t tag;          /* 0: the untagged calls */
  uint64_t calls;        /* successful calls, summed over ranks */
  uint64_t timed;        /* of them, with a time (the table's timed calls) */
  uint64_t bytes;        /* S summed over the calls */
  double time_ns;        /* the timed calls' time, summed (rows' mean x timed calls) */
  double share;          /* of the time of every row, 0..1; NaN when nothing was timed */
  npkit_time_source source; /* gpu when every timed row is GPU-timed, cpu when some are not */
  uint32_t ops[NPKIT_TAG_OPS];
  uint32_t n_ops, more_ops;
} npkit_tag_sum;

/* The sums of a finished table, largest time first, the untagged calls last; none (0, *out NULL)
 * when no row has a tag.  Returns the count, or -1 when memory is short. */
int npkit_tags_summarize(const npkit_table *t, npkit_tag_sum **out, size_t *n);

/* "0x1001" (as the trace shows it); "untagged" for 0. */
void npkit_tag_string(uint64_t tag, char *buf, size_t len);
/* "AllReduce, ReduceScatter" (", +2" when more). */
void npkit_tag_ops_string(const npkit_tag_sum *s, char *buf, size_t len);

struct npkit_report;
/* The HTML section (report_html_tags.c); nothing when no call is tagged. */
void npkit_report_html_tags(const struct npkit_report *rep, FILE *o);

#endif
