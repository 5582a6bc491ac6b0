/* The HTML view of a report: one self-contained page, inline CSS and SVG, no script. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_names.h"
#include "report_extras.h"
#include "report_hang_views.h"
#include "report_html_util.h"
#include "report_machine_view.h"
#include "report_render.h"
#include "report_svg.h"
#include "report_timeline.h"

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "unknown"
#endif

static const char style[] =
  "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1200px;color:#222;"
  "padding:0 16px}\n"
  "h1{font-size:1.6em;margin-bottom:4px}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:4px;"
  "margin-top:32px}\n"
  "table{border-collapse:collapse;font-size:.85em;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 7px;"
  "text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}tr.flag td{background:#fde8e8}\n"
  "ol.findings li{margin-bottom:12px}.stake{font-weight:bold;color:#b00}.data{font-weight:bold;color:#666}\n"
  ".ev,.next{margin:2px 0 0 0}.next{color:#064}.note{color:#555;font-size:.9em}\n"
  "svg.plot{border:1px solid #eee;margin:8px 8px 8px 0;background:#fff}\n"
  "svg .grid{stroke:#eee}svg .axis{stroke:#888}svg text{font-size:11px;fill:#333}"
  "svg .ytick{text-anchor:end}svg .xtick{text-anchor:middle}svg .alabel{text-anchor:middle;font-size:12px}"
  "svg .ptitle{font-size:13px;font-weight:bold}svg .legend{text-anchor:end}\n"
  ".simulated{background:#fff4d6;border:1px solid #e0b040;padding:8px 12px;font-weight:bold}\n"
  "code{font-size:.9em}td.frames{font-family:monospace;font-size:.9em}\n"
  "svg.timeline .row-bg{fill:#f7f7f7}svg.timeline .lane-label{font-weight:bold}svg.timeline .late .lane-label{fill:#b00}"
  "svg.timeline .row-label{text-anchor:end;fill:#888;font-size:10px}"
  "svg.timeline .call{fill:#8fb3d9}svg.timeline .call.focus{fill:#1f4e8c;stroke:#000;stroke-width:.6}"
  "svg.timeline .kernel.comm{fill:#59a14f}svg.timeline .kernel.comm.focus{fill:#2d6a2a;stroke:#000;stroke-width:.6}"
  "svg.timeline .kernel.compute{fill:#b07aa1}svg.timeline .kernel.memory{fill:#bab0ac}"
  "svg.timeline .wait{fill:#f28e2b;fill-opacity:.75}\n";

#define ESC(s) npkit_html_escape(o, (s))

#define HEAD NPKIT_HTML_HEAD

static void findings(npkit_report *rep, FILE *o) {
  char t[32];
  fputs("<section id=\"findings\"><h2>Findings, ranked by time at stake</h2>\n", o);
  if (rep->findings.n == 0) {
    fputs("<p>Nothing stands out: no straggler, no arrival spread above the threshold, no bandwidth drop, no lost "
          "events.</p></section>\n", o);
    return;
  }
  fputs("<ol class=\"findings\">\n", o);
  for (size_t i = 0; i < rep->findings.n; i++) {
    const npkit_finding *f = &rep->findings.f[i];
    fprintf(o, "<li class=\"finding\" data-kind=\"%s\">", npkit_finding_kind_name(f->kind));
    char label[48];
    npkit_finding_label(f, label, sizeof label);
    if (label[0] != '\0') {
      fputs("<span class=\"data\">[", o);
      ESC(label);
      fputs("]</span> ", o);
    } else if (isnan(f->at_stake_ns)) {
      fputs("<span class=\"data\">[data quality]</span> ", o);
    } else {
      npkit_report_duration(f->at_stake_ns, t, sizeof(t));
      fprintf(o, "<span class=\"stake\">[%s at stake]</span> ", t);
    }
    ESC(f->title);
    fputs("<p class=\"ev\"><b>Evidence:</b> ", o);
    ESC(f->evidence);
    fputs("</p><p class=\"next\"><b>Next step:</b> ", o);
    ESC(f->next_step);
    if (f->command[0] != '\0') {
      fputs("</p><p class=\"see\"><b>See it:</b> <code>", o);
      ESC(f->command);
      fputs("</code>", o);
    }
    fputs("</p></li>\n", o);
  }
  fputs("</ol></section>\n", o);
}

static void alignment(npkit_report *rep, FILE *o) {
  fputs("<section id=\"alignment\"><h2>Clock alignment</h2>\n", o);
  if (rep->job.n_hosts <= 1) {
    fputs("<p>All ranks ran on one host and share its clock: no offsets needed.</p>\n", o);
  } else if (!rep->opts.align) {
    fputs("<p>Disabled: the hosts' clocks are taken as they are.</p>\n", o);
  } else {
    fprintf(o, "<p>Offsets estimated from the ends of shared collectives (%s end times); reference host ",
            rep->job.align_source == NPKIT_TIME_GPU ? "GPU" : "API call");
    ESC(rep->job.hosts[0].name);
    fputs(".</p>\n<table id=\"hosts\">", o);
    HEAD(o, "host", "logs", "offset", "uncertainty", "sigma", "samples", "used", "rejected", "via", "status");
    for (size_t h = 0; h < rep->job.n_hosts; h++) {
      const npkit_align_host *a = &rep->job.hosts[h].align;
      fputs("<tr>", o);
      npkit_html_td(o, 1, rep->job.hosts[h].name);
      npkit_html_td_u64(o, rep->job.hosts[h].n_logs);
      npkit_html_td_dur(o, (double)a->offset_ns);
      npkit_html_td_dur(o, a->status == NPKIT_ALIGN_OK ? a->uncertainty_ns : NAN);
      npkit_html_td_dur(o, a->status == NPKIT_ALIGN_OK ? a->sigma_ns : NAN);
      npkit_html_td_u64(o, a->samples);
      npkit_html_td_u64(o, a->used);
      npkit_html_td_u64(o, a->rejected);
      npkit_html_td(o, 0, a->via >= 0 ? rep->job.hosts[a->via].name : "-");
      npkit_html_td(o, 0, npkit_align_status_name(a->status));
      fputs("</tr>\n", o);
    }
    fputs("</table>\n", o);
    if (rep->job.align.cycle_checks > 0) {
      char w[32];
      npkit_report_duration(rep->job.align.worst_cycle_ns, w, sizeof(w));
      fprintf(o, "<p class=\"note\">Consistency: %" PRIu32 " of %" PRIu32 " cross-checks failed (largest mismatch %s)."
                 "</p>\n", rep->job.align.cycle_failures, rep->job.align.cycle_checks, w);
    }
  }
  if (rep->job.host_end_spread.n > 0) {
    char a[32], b[32];
    npkit_report_duration(npkit_quantile_get(&rep->job.host_end_spread, 0.5), a, sizeof(a));
    npkit_report_duration(npkit_quantile_get(&rep->job.host_end_spread, 0.99), b, sizeof(b));
    fprintf(o, "<p class=\"note\">Ranks of one host leave the same collective within %s (median), %s (p99).</p>\n", a, b);
  }
  fputs("</section>\n", o);
}

static void table(npkit_report *rep, FILE *o) {
  char cl[96], sz[32], root[16];
  fputs("<section id=\"collectives-section\"><h2>Collectives (nccl-tests table)</h2>\n"
        "<p class=\"note\">Time per call and rank: <b>gpu</b> = GPU activity of the call, <b>cpu</b> = the API call's "
        "duration, <b>none</b> = no timed call (inside a group or non-blocking). algbw = S / mean time, busbw = algbw "
        "&times; the nccl-tests factor; GB/s with 1 GB = 10<sup>9</sup> B.</p>\n<table id=\"collectives\">", o);
  HEAD(o, "op", "communicator", "size", "count", "type", "redop", "root", "calls", "timed", "time source", "mean", "p50",
       "p99", "algbw", "busbw", "algo/proto");
  for (size_t i = 0; i < rep->table.n; i++) {
    const npkit_table_row *r = &rep->table.rows[i];
    fputs("<tr>", o);
    npkit_html_td(o, 1, npkit_fn_short_name(r->key.fn));
    npkit_report_comm_label(rep, r->key.comm, cl, sizeof(cl));
    npkit_html_td(o, 1, cl);
    npkit_report_bytes(r->key.bytes, sz, sizeof(sz));
    npkit_html_td(o, 0, sz);
    npkit_html_td_u64(o, r->key.count);
    npkit_html_td(o, 0, npkit_datatype_name(r->key.datatype));
    npkit_html_td(o, 0, r->key.redop >= 0 ? npkit_redop_name(r->key.redop) : "-");
    if (r->key.root >= 0) snprintf(root, sizeof(root), "%" PRId32, r->key.root);
    else snprintf(root, sizeof(root), "-");
    npkit_html_td(o, 0, root);
    npkit_html_td_u64(o, r->calls);
    npkit_html_td_u64(o, r->samples);
    npkit_html_td(o, 0, npkit_time_source_name(r->source));
    npkit_html_td_dur(o, r->mean_ns);
    npkit_html_td_dur(o, r->p50_ns);
    npkit_html_td_dur(o, r->p99_ns);
    npkit_html_td_gbs(o, r->algbw_gbs);
    npkit_html_td_gbs(o, r->busbw_gbs);
    if (r->algo[0] || r->proto[0]) {
      fputs("<td>", o);
      ESC(r->algo[0] ? r->algo : "?");
      fputs("/", o);
      ESC(r->proto[0] ? r->proto : "?");
      fputs("</td>", o);
    } else {
      fputs("<td>-</td>", o);
    }
    fputs("</tr>\n", o);
  }
  fputs("</table></section>\n", o);
}

/* One chart per operation, one series per communicator. */
static int curves(npkit_report *rep, FILE *o) {
  char cl[96], sz[32], title[160], id[32];
  fputs("<section id=\"bandwidth\"><h2>Bandwidth versus size</h2>\n", o);
  if (rep->curves.n == 0) {
    fputs("<p>No timed data-moving calls.</p></section>\n", o);
    return 0;
  }
  fputs("<p class=\"note\">busbw per message size; red points: bandwidth bottleneck (busbw more than 10 % below the best "
        "of the smaller sizes: time grows faster than size).</p>\n", o);
  size_t max_pts = 0;
  for (size_t i = 0; i < rep->curves.n; i++)
    if (rep->curves.c[i].n > max_pts) max_pts = rep->curves.c[i].n;
  npkit_svg_series *series = calloc(rep->curves.n, sizeof(*series));
  double *x = malloc(rep->curves.n * max_pts * sizeof(*x)), *y = malloc(rep->curves.n * max_pts * sizeof(*y));
  int *flag = malloc(rep->curves.n * max_pts * sizeof(*flag));
  char (*names)[96] = malloc(rep->curves.n * sizeof(*names));
  int rc = 0;
  if (series == NULL || x == NULL || y == NULL || flag == NULL || names == NULL) {
    rc = -1;
    goto out;
  }
  for (size_t i = 0; i < rep->curves.n;) {
    size_t j = i;
    while (j < rep->curves.n && rep->curves.c[j].fn == rep->curves.c[i].fn) {
      const npkit_curve *cv = &rep->curves.c[j];
      npkit_report_comm_label(rep, cv->comm, names[j], sizeof(names[j]));
      for (size_t k = 0; k < cv->n; k++) {
        x[j * max_pts + k] = (double)cv->pts[k].bytes;
        y[j * max_pts + k] = cv->pts[k].busbw_gbs;
        flag[j * max_pts + k] = cv->pts[k].flagged;
      }
      series[j - i] = (npkit_svg_series){names[j], &x[j * max_pts], &y[j * max_pts], &flag[j * max_pts], cv->n};
      j++;
    }
    snprintf(title, sizeof(title), "%s: bus bandwidth vs message size (%s time)", npkit_fn_short_name(rep->curves.c[i].fn),
             npkit_time_source_name(rep->curves.c[i].source));
    snprintf(id, sizeof(id), "bw-%s", npkit_fn_short_name(rep->curves.c[i].fn));
    npkit_svg_lines(o, id, title, "message size (bytes, log scale)", "busbw (GB/s)", series, j - i, 1);
    i = j;
  }
  fputs("<table id=\"bandwidth-points\">", o);
  HEAD(o, "op", "communicator", "size", "time", "algbw", "busbw", "instances", "bottleneck");
  for (size_t i = 0; i < rep->curves.n; i++) {
    const npkit_curve *cv = &rep->curves.c[i];
    npkit_report_comm_label(rep, cv->comm, cl, sizeof(cl));
    for (size_t k = 0; k < cv->n; k++) {
      const npkit_curve_point *p = &cv->pts[k];
      fputs(p->flagged ? "<tr class=\"flag\">" : "<tr>", o);
      npkit_html_td(o, 1, npkit_fn_short_name(cv->fn));
      npkit_html_td(o, 1, cl);
      npkit_report_bytes(p->bytes, sz, sizeof(sz));
      npkit_html_td(o, 0, sz);
      npkit_html_td_dur(o, p->time_ns);
      npkit_html_td_gbs(o, p->algbw_gbs);
      npkit_html_td_gbs(o, p->busbw_gbs);
      fprintf(o, "<td>%.0f</td>", p->instances);
      npkit_html_td(o, 0, p->flagged ? "yes" : "");
      fputs("</tr>\n", o);
    }
  }
  fputs("</table></section>\n", o);
out:
  free(series);
  free(x);
  free(y);
  free(flag);
  free(names);
  return rc;
}

static int stragglers(npkit_report *rep, FILE *o) {
  npkit_straggler *s = &rep->strag;
  char a[32], lab[64], cl[96];
  npkit_report_duration(s->threshold_ns, a, sizeof(a));
  fprintf(o, "<section id=\"stragglers\"><h2>Stragglers and synchronisation delay (threshold %s)</h2>\n", a);
  if (s->instances == 0) {
    fputs("<p>No collective was recorded by two ranks or more outside groups: nothing to compare.</p></section>\n", o);
    return 0;
  }
  char summary[512];
  npkit_report_straggler_summary(rep, summary, sizeof(summary));
  fputs("<p>", o);
  ESC(summary);
  fputs("</p>\n", o);
  const char **labels = malloc((s->n_ranks ? s->n_ranks : 1) * sizeof(*labels));
  char (*store)[64] = malloc((s->n_ranks ? s->n_ranks : 1) * sizeof(*store));
  double *delay = malloc((s->n_ranks ? s->n_ranks : 1) * sizeof(*delay));
  double *last = malloc((s->n_ranks ? s->n_ranks : 1) * sizeof(*last));
  int *hi = calloc(s->n_ranks ? s->n_ranks : 1, sizeof(*hi));
  if (labels == NULL || store == NULL || delay == NULL || last == NULL || hi == NULL) {
    free(labels);
    free(store);
    free(delay);
    free(last);
    free(hi);
    return -1;
  }
  for (size_t i = 0; i < rep->findings.n; i++)
    if (rep->findings.f[i].kind == NPKIT_FIND_STRAGGLER && rep->findings.f[i].log >= 0 &&
        (size_t)rep->findings.f[i].log < s->n_ranks)
      hi[rep->findings.f[i].log] = 1;
  for (size_t i = 0; i < s->n_ranks; i++) {
    npkit_report_log_label(rep, i, store[i], sizeof(store[i]));
    labels[i] = store[i];
    delay[i] = s->ranks[i].delay_caused_ns / 1e3;
    last[i] = (double)s->ranks[i].last;
  }
  npkit_svg_bars(o, "strag-delay", "Delay caused per rank (arrived last, spread above threshold)", "us", labels, delay,
                 hi, s->n_ranks);
  npkit_svg_bars(o, "strag-last", "Times each rank arrived last", "instances", labels, last, hi, s->n_ranks);
  free(labels);
  free(store);
  free(delay);
  free(last);
  free(hi);
  fputs("<table id=\"straggler-ranks\">", o);
  HEAD(o, "rank", "instances", "arrived last", "last, above threshold", "delay caused", "mean lag", "waited for others");
  for (size_t i = 0; i < s->n_ranks; i++) {
    const npkit_strag_rank *r = &s->ranks[i];
    npkit_report_log_label(rep, i, lab, sizeof(lab));
    fputs("<tr>", o);
    npkit_html_td(o, 1, lab);
    npkit_html_td_u64(o, r->instances);
    npkit_html_td_u64(o, r->last);
    npkit_html_td_u64(o, r->last_over);
    npkit_html_td_dur(o, r->delay_caused_ns);
    npkit_html_td_dur(o, r->instances ? r->lag_ns / (double)r->instances : NAN);
    npkit_html_td_dur(o, r->waited_ns);
    fputs("</tr>\n", o);
  }
  fputs("</table>\n<table id=\"largest-spreads\">", o);
  HEAD(o, "op", "seq", "communicator", "ranks", "spread", "arrived last", "arrived first");
  for (size_t i = 0; i < s->n_top; i++) {
    const npkit_strag_instance *in = &s->top[i];
    fputs("<tr>", o);
    npkit_html_td(o, 1, npkit_fn_short_name(in->fn));
    npkit_html_td_u64(o, in->seq);
    npkit_report_comm_label(rep, in->comm, cl, sizeof(cl));
    npkit_html_td(o, 1, cl);
    npkit_html_td_u64(o, in->ranks);
    npkit_html_td_dur(o, in->spread_ns);
    npkit_report_log_label(rep, in->last_log, lab, sizeof(lab));
    npkit_html_td(o, 0, lab);
    npkit_report_log_label(rep, in->first_log, lab, sizeof(lab));
    npkit_html_td(o, 0, lab);
    fputs("</tr>\n", o);
  }
  fputs("</table></section>\n", o);
  return 0;
}

static int gpu(npkit_report *rep, FILE *o) {
  char lab[64], why[400], missing[600];
  npkit_report_no_gpu_reason(rep, why, sizeof(why));
  snprintf(missing, sizeof(missing),
           "Needs GPU kernel events: %s, so overlap, exposed communication and GPU idle time are not computed.", why);
  if (!npkit_html_section(o, "gpu", "Communication/computation overlap and GPU idle time (bubbles)",
                          rep->gpu_ranks > 0, "gpu", missing))
    return 0;
  size_t n = 0;
  const char **labels = malloc(rep->job.n_logs * sizeof(*labels));
  char (*store)[64] = malloc(rep->job.n_logs * sizeof(*store));
  double *ratio = malloc(rep->job.n_logs * sizeof(*ratio));
  if (labels == NULL || store == NULL || ratio == NULL) {
    free(labels);
    free(store);
    free(ratio);
    return -1;
  }
  fputs("<table id=\"overlap\">", o);
  HEAD(o, "rank", "overlap ratio", "communication", "computation", "exposed communication", "busy", "idle", "streams",
       "regular gaps");
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_rep_log *l = &rep->logs[i];
    if (!l->has_gpu) continue;
    npkit_report_log_label(rep, i, lab, sizeof(lab));
    snprintf(store[n], sizeof(store[n]), "%s", lab);
    labels[n] = store[n];
    ratio[n++] = 100.0 * l->gpu.overlap_ratio;
    size_t regular = 0;
    for (size_t s = 0; s < l->gpu.n_streams; s++) regular += l->gpu.streams[s].regular != 0;
    fputs("<tr>", o);
    npkit_html_td(o, 1, lab);
    if (isnan(l->gpu.overlap_ratio)) fputs("<td>-</td>", o);
    else fprintf(o, "<td>%.1f %%</td>", 100.0 * l->gpu.overlap_ratio);
    npkit_html_td_dur(o, (double)l->gpu.comm_ns);
    npkit_html_td_dur(o, (double)l->gpu.compute_ns);
    npkit_html_td_dur(o, (double)l->gpu.exposed_ns);
    npkit_html_td_dur(o, (double)l->gpu.busy_ns);
    npkit_html_td_dur(o, (double)l->gpu.idle_ns);
    npkit_html_td_u64(o, l->gpu.n_streams);
    npkit_html_td_u64(o, regular);
    fputs("</tr>\n", o);
  }
  fputs("</table>\n<table id=\"gpu-idle\">", o);
  HEAD(o, "rank", "timeline", "kernels", "idle", "gaps", "largest gap", "regular gaps", "gap", "period");
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_rep_log *l = &rep->logs[i];
    if (!l->has_gpu) continue;
    npkit_report_log_label(rep, i, lab, sizeof(lab));
    for (size_t s = 0; s <= l->gpu.n_streams; s++) {
      const npkit_stream_idle *st = s == 0 ? &l->gpu.gpu : &l->gpu.streams[s - 1];
      char name[48];
      if (s == 0) snprintf(name, sizeof(name), "whole GPU");
      else snprintf(name, sizeof(name), "stream %" PRIu32 ":%" PRIu32, st->device, st->stream);
      fputs(st->regular ? "<tr class=\"flag\">" : "<tr>", o);
      npkit_html_td(o, 1, lab);
      npkit_html_td(o, 1, name);
      npkit_html_td_u64(o, st->kernels);
      npkit_html_td_dur(o, (double)st->idle_ns);
      npkit_html_td_u64(o, st->gaps);
      npkit_html_td_dur(o, (double)st->max_gap_ns);
      npkit_html_td_u64(o, st->regular ? st->regular_gaps : 0);
      npkit_html_td_dur(o, st->regular ? st->gap_ns : NAN);
      npkit_html_td_dur(o, st->regular ? st->period_ns : NAN);
      fputs("</tr>\n", o);
    }
  }
  fputs("</table>\n", o);
  npkit_svg_bars(o, "overlap-plot", "Communication/computation overlap per rank", "% of communication time", labels,
                 ratio, NULL, n);
  free(labels);
  free(store);
  free(ratio);
  fputs("</section>\n", o);
  return 0;
}

static void losses(npkit_report *rep, FILE *o) {
  char lab[64];
  fputs("<section id=\"lost\"><h2>Lost events</h2>\n<table id=\"lost-events\">", o);
  HEAD(o, "rank", "source", "recorded", "lost", "lost %");
  int advice = 0;
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_job_log *jl = &rep->job.logs[i];
    npkit_report_log_label(rep, i, lab, sizeof(lab));
    for (uint32_t k = 0; k < jl->n_loss; k++) {
      const npkit_job_loss *s = &jl->loss[k];
      double total = (double)(s->recorded + s->dropped), pct = total > 0 ? 100.0 * (double)s->dropped / total : 0;
      int over = pct > 100.0 * NPKIT_REPORT_LOSS_LIMIT;
      advice |= over;
      fputs(over ? "<tr class=\"flag\">" : "<tr>", o);
      npkit_html_td(o, 1, lab);
      npkit_html_td(o, 0, npkit_source_name(s->source));
      npkit_html_td_u64(o, s->recorded);
      npkit_html_td_u64(o, s->dropped);
      fprintf(o, "<td>%.2f %%</td></tr>\n", pct);
    }
  }
  fputs("</table>\n", o);
  if (advice)
    fputs("<p>More than 3 % lost: raise the event buffer (NPKIT_EVENT_BUF_SIZE, MB, default 64) and run again.</p>\n", o);
  fputs("</section>\n", o);
}

/* The timeline strip, built by the analyses when the report was asked for it (opts.timeline). */
static void timeline(npkit_report *rep, FILE *o) {
  if (!rep->opts.timeline) {
    fputs("<section id=\"timeline-section\"><h2>Timeline of the largest arrival spread</h2><p class=\"note\">"
          "Not built for this report.</p></section>\n", o);
    return;
  }
  npkit_timeline_html(rep, &rep->timeline, o);
}

int npkit_report_html(npkit_report *rep, FILE *o) {
  char line[256], sim[320];
  fprintf(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
             "<meta name=\"generator\" content=\"npkit-preload %s\">\n<title>npkit report</title>\n<style>\n%s</style>"
             "</head>\n<body>\n<h1>npkit report</h1>\n", NPKIT_VERSION_STRING, style);
  npkit_report_simulated_note(rep, sim, sizeof(sim));
  if (sim[0] != '\0') {
    fputs("<p class=\"simulated\" id=\"simulated\">", o);
    ESC(sim);
    fputs("</p>\n", o);
  }
  npkit_report_overview(rep, line, sizeof(line));
  fputs("<p id=\"summary\">", o);
  ESC(line);
  fputs(".</p>\n", o);
  if (rep->job.n_warnings > 0) {
    fputs("<ul class=\"warnings\">", o);
    for (size_t i = 0; i < rep->job.n_warnings; i++) {
      fputs("<li>", o);
      ESC(rep->job.warnings[i]);
      fputs("</li>", o);
    }
    fputs("</ul>\n", o);
  }
  findings(rep, o);
  if (npkit_report_hangs_html(rep, o) != 0) return -1;
  timeline(rep, o);
  table(rep, o);
  npkit_report_html_tags(rep, o);
  int rc = curves(rep, o);
  if (rc == 0) rc = stragglers(rep, o);
  if (rc == 0) rc = gpu(rep, o);
  alignment(rep, o);
  losses(rep, o);
  if (rc == 0) rc = npkit_report_machine_html(rep, o);
  npkit_report_extras_html(rep, o);
  fputs("<p class=\"note\">Generated by npkit-preload " NPKIT_VERSION_STRING ". Definitions: docs/report.md.</p>\n"
        "</body></html>\n", o);
  fflush(o);
  return rc != 0 || ferror(o) ? -1 : 0;
}
