/*
 * The timeline strip of the HTML report: one collective instance and what surrounds it, on every
 * rank, so that a reader sees who arrived late without opening a trace viewer.
 *
 * The instance is the largest arrival spread whose last rank is the straggler the findings name
 * (the largest spread of all when they name none).  Its window runs from its first arrival to its
 * last end (the times of the straggler analysis: GPU activity where known, else the API call, on
 * the reference clock), widened by half its length on each side.  Each log is then read once more
 * for the NCCL calls and the GPU activity that overlap the window: the window is known only after
 * every log was scanned, and holding every call and GPU record of the job until then would cost
 * memory that grows with the job (docs/architecture.md, "The report").  Per rank it keeps, relative to
 * the window's start: its arrival and end in the instance, the calls (the instance's own call
 * marked) and the kernels, copies and memsets (communication, computation or memory).
 */
#ifndef NPKIT_REPORT_TIMELINE_H
#define NPKIT_REPORT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report_straggler.h"

struct npkit_report;

/* Items kept per lane and row; the rest are counted. */
#define NPKIT_TL_MAX_ITEMS 2000

typedef enum npkit_tl_kind {
  NPKIT_TL_CALL = 0,           /* an NCCL API call */
  NPKIT_TL_COMM_KERNEL = 1,    /* GPU: an NCCL kernel */
  NPKIT_TL_COMPUTE_KERNEL = 2, /* GPU: any other kernel */
  NPKIT_TL_MEMORY = 3,         /* GPU: a copy or memset */
} npkit_tl_kind;

typedef struct npkit_tl_item {
  int64_t start_ns, end_ns;    /* from the window's start, clipped to the window */
  uint16_t fn;                 /* npkit_fn of the call (or of the call a GPU item is attributed to) */
  uint8_t kind;                /* npkit_tl_kind */
  uint8_t focus;               /* part of the instance shown */
  uint64_t group;              /* the group of the call (GPU: of the launching call), 0 if none */
} npkit_tl_item;

typedef struct npkit_tl_lane {
  uint32_t log;                /* index into the report's logs */
  int in_instance;             /* the log took part in the instance */
  int64_t arrival_ns, end_ns;  /* its part of the instance, from the window's start */
  npkit_tl_item *calls, *gpu;
  size_t n_calls, n_gpu, cap_calls, cap_gpu;
  uint64_t hidden;             /* items beyond NPKIT_TL_MAX_ITEMS */
} npkit_tl_lane;

typedef struct npkit_timeline {
  int found;                   /* an instance to show */
  npkit_strag_instance inst;
  uint64_t comm_id;
  int straggler;               /* the instance's last rank is the straggler of the findings */
  uint64_t t0_ns;              /* the window's start, reference clock */
  int64_t span_ns;             /* its length */
  int64_t last_arrival_ns;     /* from t0 */
  int gpu;                     /* some log has GPU activity */
  npkit_tl_lane *lanes;        /* one per log of the report, in its order */
  size_t n_lanes;
} npkit_timeline;

/* Builds rep->timeline.  found = 0 when no collective was compared across ranks.  0, or -1 with a
 * message when memory is short. */
int npkit_timeline_build(struct npkit_report *rep, char *err, size_t errlen);
void npkit_timeline_free(npkit_timeline *tl);

/* The strip as an HTML section (report_html_timeline.c): <section id="timeline-section"> holding
 * <svg id="timeline"> with one <g class="lane" data-rank=R> per log: a row of NCCL calls
 * (rect.call, the instance's own rect.call.focus), a row of GPU activity when some log has it
 * (rect.kernel.comm|compute|memory) and rect.wait from the rank's arrival to the last arrival.
 * Every rect carries data-start-ns and data-end-ns from the window's start (svg data-t0-ns, the
 * reference clock), so a test can read the picture back exactly. */
void npkit_timeline_html(const struct npkit_report *rep, const npkit_timeline *tl, FILE *o);

#endif /* NPKIT_REPORT_TIMELINE_H */
