/*
 * Communication/computation overlap of one log from the application's marks
 * (npkit_mark_begin/end), so that `npkit report` can answer "does my communication hide behind
 * computation" without GPU events:
 *  - computation = the time inside marked ranges of a thread, minus the time that same thread
 *    spends inside NCCL calls (a thread blocked in NCCL does not compute, so a range around a
 *    whole training step counts only where the step is not waiting for communication);
 *  - communication = the union over all threads of the NCCL calls that move data (collectives,
 *    send/recv) and of ncclGroupEnd, CPU side (start to return);
 *  - overlap = time that is both; exposed = communication − overlap; ratio = overlap /
 *    communication (NaN without communication).
 * With GPU activity in the log, the GPU timeline is the better source (report_gpu.h); this result
 * says how many GPU events it saw so that the caller can choose.
 *
 * Use: init, npkit_mark_overlap_event() for every event of the log in file order, finish, read,
 * free.  Nothing here prints.
 */
#ifndef NPKIT_REPORT_MARKS_H
#define NPKIT_REPORT_MARKS_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"
#include "trace_marks.h"

/* Spans kept per log; a longer log gives an incomplete (flagged) result. */
#define NPKIT_MARK_OVERLAP_MAX_SPANS (1u << 24)

typedef struct npkit_mark_total {
  uint32_t name;        /* string id */
  char text[64];        /* the name (cut) */
  uint64_t ranges;
  uint64_t total_ns;    /* whole ranges, NCCL time included */
} npkit_mark_total;

typedef struct npkit_overlap_span {
  uint32_t thread;
  uint32_t tag;         /* calls: 1 when the call is communication; marks: the name (string id) */
  uint64_t a, b;
} npkit_overlap_span;

typedef struct npkit_mark_overlap {
  /* result, after finish */
  uint64_t ranges;      /* mark ranges, those closed by a pause or the end of the log included */
  uint64_t comm_ns, compute_ns, overlap_ns, exposed_ns;
  double overlap_ratio;
  uint64_t gpu_events;  /* GPU kernels, copies and memsets seen */
  int incomplete;       /* more than NPKIT_MARK_OVERLAP_MAX_SPANS spans: later ones left out */
  npkit_mark_total *totals; /* per name, largest total first */
  size_t n_totals, cap_totals;
  /* private */
  npkit_mark_pairer pairer;
  npkit_overlap_span *marks, *calls;
  size_t n_marks, cap_marks, n_calls, cap_calls;
  uint64_t last_ns;
} npkit_mark_overlap;

void npkit_mark_overlap_init(npkit_mark_overlap *o);
void npkit_mark_overlap_free(npkit_mark_overlap *o);
/* One event of the log, in file order.  0, or -1 when memory is short. */
int npkit_mark_overlap_event(npkit_mark_overlap *o, const npkit_event *ev);
/* Closes the ranges still open at the log's end and computes the result (names from r's strings).
 * 0, or -1 when memory is short. */
int npkit_mark_overlap_finish(npkit_mark_overlap *o, const npkit_log_reader *r);

#endif /* NPKIT_REPORT_MARKS_H */
