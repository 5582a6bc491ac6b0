/* The timeline strip of the HTML report as inline SVG swimlanes (model: report_timeline.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nccl_names.h"
#include "report_model.h"
#include "report_svg.h"
#include "report_timeline.h"

#define W 1120.0
#define LABEL 120.0 /* the column of lane names */
#define MR 12.0
#define AXIS 26.0   /* tick labels above the lanes */
#define ROW 14.0
#define GAP 10.0    /* between lanes */
#define LEGEND 28.0
#define WAIT_H 6.0  /* height of the waiting band */
#define PW (W - LABEL - MR)

#define ESC(s) npkit_html_escape(o, (s))

static double x_of(const npkit_timeline *tl, int64_t ns) {
  return LABEL + (double)ns / (double)tl->span_ns * PW;
}

static const char *kind_class(uint8_t kind) {
  switch (kind) {
  case NPKIT_TL_CALL: return "call";
  case NPKIT_TL_COMM_KERNEL: return "kernel comm";
  case NPKIT_TL_COMPUTE_KERNEL: return "kernel compute";
  default: return "kernel memory";
  }
}

static void rect_h(FILE *o, const npkit_timeline *tl, const char *cls, int focus, int64_t a, int64_t b, double y,
                   double h, const char *tip) {
  double x0 = x_of(tl, a), w = x_of(tl, b) - x0;
  if (w < 0.6) w = 0.6; /* a short call stays visible */
  fprintf(o, "<rect class=\"%s%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" data-start-ns=\"%" PRId64
             "\" data-end-ns=\"%" PRId64 "\"><title>", cls, focus ? " focus" : "", x0, y, w, h, a, b);
  ESC(tip);
  fputs("</title></rect>\n", o);
}

static void rect(FILE *o, const npkit_timeline *tl, const char *cls, int focus, int64_t a, int64_t b, double y,
                 const char *tip) {
  rect_h(o, tl, cls, focus, a, b, y, ROW - 2, tip);
}

static void item(FILE *o, const npkit_timeline *tl, const npkit_tl_item *it, double y) {
  char d[32], tip[160];
  npkit_report_duration((double)(it->end_ns - it->start_ns), d, sizeof d);
  const char *what = it->kind == NPKIT_TL_CALL ? npkit_fn_name(it->fn)
                     : it->kind == NPKIT_TL_COMM_KERNEL ? "NCCL kernel"
                     : it->kind == NPKIT_TL_COMPUTE_KERNEL ? "computation" : "copy or memset";
  snprintf(tip, sizeof tip, "%s%s%s, %s%s", what,
           it->kind != NPKIT_TL_CALL && it->fn != NPKIT_FN_NONE ? " of " : "",
           it->kind != NPKIT_TL_CALL && it->fn != NPKIT_FN_NONE ? npkit_fn_name(it->fn) : "", d,
           it->focus ? " (the collective shown)" : "");
  rect(o, tl, kind_class(it->kind), it->focus, it->start_ns, it->end_ns, y, tip);
}

/* Ticks relative to the instance's first arrival, at a round step. */
static void axis(FILE *o, const npkit_timeline *tl, int64_t first, double bottom) {
  double raw = (double)tl->span_ns / 8, mag = pow(10, floor(log10(raw))), f = raw / mag;
  double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  for (double v = ceil(-(double)first / step) * step; first + v <= (double)tl->span_ns; v += step) {
    char t[32];
    double x = x_of(tl, first + (int64_t)llround(v));
    if (fabs(v) < step / 2) snprintf(t, sizeof t, "0");
    else {
      npkit_report_duration(fabs(v), t + 1, sizeof t - 1);
      t[0] = v < 0 ? '-' : '+';
    }
    fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" class=\"xtick\">%s</text>\n", x, AXIS - 4, x, bottom, x, AXIS - 8, t);
  }
}

static void legend(FILE *o, double y) {
  static const char *const cls[] = {"call", "call focus", "kernel comm", "kernel compute", "kernel memory", "wait"};
  static const char *const text[] = {"NCCL call", "the collective shown", "NCCL kernel", "computation",
                                     "copy / memset", "waiting for the last rank"};
  double x = LABEL;
  for (size_t i = 0; i < sizeof cls / sizeof cls[0]; i++) {
    fprintf(o, "<rect class=\"legend-key %s\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\"/>"
               "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", cls[i], x, y, x + 16, y + 9, text[i]);
    x += 40 + 6.2 * (double)strlen(text[i]);
  }
}

static void lanes(const npkit_report *rep, const npkit_timeline *tl, FILE *o, int64_t first) {
  int rows = tl->gpu ? 2 : 1;
  double lane_h = rows * ROW + GAP, bottom = AXIS + (double)tl->n_lanes * lane_h;
  axis(o, tl, first, bottom);
  for (size_t i = 0; i < tl->n_lanes; i++) {
    const npkit_tl_lane *l = &tl->lanes[i];
    char lab[64], tip[224], d[32];
    double y = AXIS + (double)i * lane_h;
    int late = l->log == tl->inst.last_log;
    npkit_report_log_label(rep, l->log, lab, sizeof lab);
    fprintf(o, "<g class=\"lane%s\" data-rank=\"%" PRId32 "\" data-log=\"%" PRIu32 "\">\n", late ? " late" : "",
            rep->job.logs[l->log].rank, l->log);
    fprintf(o, "<text x=\"4\" y=\"%.1f\" class=\"lane-label\">", y + ROW - 3);
    ESC(lab);
    fprintf(o, "%s</text>\n", late ? " (last)" : "");
    fprintf(o, "<rect class=\"row-bg\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", LABEL, y, PW,
            rows * ROW - 2);
    if (tl->gpu)
      fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" class=\"row-label\">GPU</text>\n", LABEL - 6, y + 2 * ROW - 4);
    for (size_t k = 0; k < l->n_calls; k++) item(o, tl, &l->calls[k], y);
    for (size_t k = 0; k < l->n_gpu; k++) item(o, tl, &l->gpu[k], y + ROW);
    if (l->in_instance && l->arrival_ns < tl->last_arrival_ns) {
      char last[64];
      npkit_report_log_label(rep, tl->inst.last_log, last, sizeof last);
      npkit_report_duration((double)(tl->last_arrival_ns - l->arrival_ns), d, sizeof d);
      snprintf(tip, sizeof tip, "%s waited %s for %s", lab, d, last);
      /* a band across the middle of the row, so the call or kernel it is part of stays visible */
      rect_h(o, tl, "wait", 0, l->arrival_ns, tl->last_arrival_ns,
             y + (tl->inst.gpu && tl->gpu ? ROW : 0) + (ROW - 2 - WAIT_H) / 2, WAIT_H, tip);
    }
    fputs("</g>\n", o);
  }
  legend(o, bottom + 8);
}

void npkit_timeline_html(const npkit_report *rep, const npkit_timeline *tl, FILE *o) {
  char a[32], b[32], cl[96], last[64], firstl[64];
  fputs("<section id=\"timeline-section\"><h2>Timeline of the largest arrival spread</h2>\n", o);
  if (!tl->found) {
    fputs("<p>No collective was recorded by two ranks or more outside groups: nothing to draw.</p></section>\n", o);
    return;
  }
  int64_t first = tl->span_ns;
  for (size_t i = 0; i < tl->n_lanes; i++)
    if (tl->lanes[i].in_instance && tl->lanes[i].arrival_ns < first) first = tl->lanes[i].arrival_ns;
  npkit_report_comm_label(rep, tl->inst.comm, cl, sizeof cl);
  npkit_report_log_label(rep, tl->inst.last_log, last, sizeof last);
  npkit_report_log_label(rep, tl->inst.first_log, firstl, sizeof firstl);
  npkit_report_duration(tl->inst.spread_ns, a, sizeof a);
  npkit_report_duration((double)tl->span_ns, b, sizeof b);
  fprintf(o, "<p id=\"timeline-caption\">%s #%" PRIu64 " on ", npkit_fn_name(tl->inst.fn), tl->inst.seq);
  ESC(cl);
  fputs(": ", o);
  ESC(last);
  fprintf(o, " arrived last, %s after ", a);
  ESC(firstl);
  fprintf(o, "%s (%s times). Orange: the time each rank waited for it. %s around it; times from the first "
             "arrival.</p>\n", tl->straggler ? ", the straggler of the findings" : "",
          tl->inst.gpu ? "GPU" : "API call", b);
  int rows = tl->gpu ? 2 : 1;
  double h = AXIS + (double)tl->n_lanes * (rows * ROW + GAP) + LEGEND;
  fprintf(o, "<svg class=\"plot timeline\" id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f "
             "%.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" data-t0-ns=\"%" PRIu64 "\" data-span-ns=\"%" PRId64
             "\" data-last-arrival-ns=\"%" PRId64 "\">\n<title>",
          W, h, W, h, tl->t0_ns, tl->span_ns, tl->last_arrival_ns);
  fprintf(o, "%s #%" PRIu64 " on every rank</title>\n", npkit_fn_name(tl->inst.fn), tl->inst.seq);
  lanes(rep, tl, o, first);
  fputs("</svg>\n", o);
  uint64_t hidden = 0;
  for (size_t i = 0; i < tl->n_lanes; i++) hidden += tl->lanes[i].hidden;
  if (hidden > 0)
    fprintf(o, "<p class=\"note\">%" PRIu64 " more events in this window are not drawn (at most %d per row).</p>\n",
            hidden, NPKIT_TL_MAX_ITEMS);
  fputs("</section>\n", o);
}
