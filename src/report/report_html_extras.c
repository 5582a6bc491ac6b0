/* The call-site and marks sections of the HTML report (the text view prints the same in
 * npkit_report_extras_text). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "nccl_names.h"
#include "report_extras.h"
#include "report_html_util.h"
#include "report_model.h"
#include "report_svg.h"

#define ESC(s) npkit_html_escape(o, (s))

static void callsites(npkit_callsites *cs, FILE *o) {
  char bytes[32];
  if (!npkit_html_section(o, "call-sites", "Call sites", cs->logs_with_stacks > 0, "stacks",
                          "No call stacks in these logs: run with <code>NPKIT_STACK_DEPTH=8</code> to see which line "
                          "of the program issued each NCCL call and how long those calls took."))
    return;
  fprintf(o, "<p>%zu call sites in %" PRIu32 " of %" PRIu32 " logs (NPKIT_STACK_DEPTH, up to %" PRIu32
             " frames); time is spent inside the call, CPU side.", cs->n_sites, cs->logs_with_stacks, cs->logs,
          cs->max_depth);
  if (cs->calls_without_stack > 0)
    fprintf(o, " %" PRIu64 " calls have no stack (the table of call sites was full).", cs->calls_without_stack);
  fputs("</p>\n<table id=\"call-site-rows\">", o);
  NPKIT_HTML_HEAD(o, "site", "function", "calls", "ranks", "total", "mean", "p99", "max", "bytes");
  for (size_t i = 0; i < cs->n_rows; i++) {
    npkit_callsite_row *r = &cs->rows[i];
    fprintf(o, "<tr><td class=\"l\"><a href=\"#site-%" PRIu32 "\">%" PRIu32 "</a></td>", cs->sites[r->site].number,
            cs->sites[r->site].number);
    npkit_html_td(o, 1, npkit_fn_name(r->fn));
    npkit_html_td_u64(o, r->calls);
    npkit_html_td_u64(o, r->ranks);
    npkit_html_td_dur(o, (double)r->total_ns);
    npkit_html_td_dur(o, npkit_quantile_mean(&r->time));
    npkit_html_td_dur(o, npkit_quantile_get(&r->time, 0.99));
    npkit_html_td_dur(o, (double)r->time.max);
    if (npkit_fn_moves_data(r->fn)) npkit_report_bytes(r->bytes, bytes, sizeof bytes);
    else snprintf(bytes, sizeof bytes, "-");
    npkit_html_td(o, 0, bytes);
    fputs("</tr>\n", o);
  }
  fputs("</table>\n<table id=\"call-site-frames\">", o);
  NPKIT_HTML_HEAD(o, "site", "frames, innermost (the caller of NCCL) first");
  for (uint32_t number = 1; number <= cs->n_sites; number++)
    for (size_t i = 0; i < cs->n_sites; i++) {
      if (cs->sites[i].number != number) continue;
      fprintf(o, "<tr id=\"site-%" PRIu32 "\"><td class=\"l\">%" PRIu32 "</td><td class=\"l frames\">", number, number);
      for (const char *p = cs->sites[i].text; *p;) {
        size_t len = strcspn(p, "\n");
        char frame[512];
        snprintf(frame, sizeof frame, "%.*s", (int)(len < sizeof frame ? len : sizeof frame - 1), p);
        fputs(p == cs->sites[i].text ? "<code>" : "<br><code>", o);
        ESC(frame);
        fputs("</code>", o);
        p += len;
        if (*p == '\n') p++;
      }
      fputs("</td></tr>\n", o);
    }
  fputs("</table></section>\n", o);
}

static void marks(const npkit_report *rep, FILE *o) {
  size_t with = 0, gpu = 0;
  char label[96];
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    if (rep->logs[i].overlap.ranges == 0) continue;
    if (rep->logs[i].overlap.gpu_events > 0) gpu++; else with++;
  }
  if (with == 0 && gpu > 0) {
    fprintf(o, "<section id=\"marks\"><h2>Overlap with marked computation</h2>\n<p>%zu logs have marks and GPU "
               "events: their GPU timeline measures the overlap (see above).</p></section>\n", gpu);
    return;
  }
  if (!npkit_html_section(o, "marks", "Overlap with marked computation", with > 0, "marks",
                          "No marks in these logs: call <code>npkit_mark_begin(\"forward\")</code> / "
                          "<code>npkit_mark_end(\"forward\")</code> (include/npkit_preload.h) around the program's "
                          "computation to measure, without GPU events, how much of its communication the "
                          "computation hides."))
    return;
  fputs("<p class=\"note\">Without GPU events, the ranges of npkit_mark_begin/end are the computation (outside the "
        "marking thread's own NCCL calls) and the NCCL calls that move data the communication.", o);
  if (gpu > 0) fprintf(o, " %zu logs with GPU events are left out: their GPU timeline is the better source.", gpu);
  fputs("</p>\n<table id=\"mark-overlap\">", o);
  NPKIT_HTML_HEAD(o, "rank", "overlap", "communication", "computation", "exposed", "marks (ranges, total)");
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_mark_overlap *m = &rep->logs[i].overlap;
    if (m->ranges == 0 || m->gpu_events > 0) continue;
    npkit_report_log_label(rep, i, label, sizeof label);
    fputs("<tr>", o);
    npkit_html_td(o, 1, label);
    if (isnan(m->overlap_ratio)) fputs("<td>-</td>", o);
    else fprintf(o, "<td>%.1f %%</td>", 100.0 * m->overlap_ratio);
    npkit_html_td_dur(o, (double)m->comm_ns);
    npkit_html_td_dur(o, (double)m->compute_ns);
    npkit_html_td_dur(o, (double)m->exposed_ns);
    fputs("<td class=\"l\">", o);
    for (size_t k = 0; k < m->n_totals; k++) {
      char d[32];
      npkit_report_duration((double)m->totals[k].total_ns, d, sizeof d);
      if (k) fputs(", ", o);
      ESC(m->totals[k].text);
      fprintf(o, " (%" PRIu64 ", %s)", m->totals[k].ranges, d);
    }
    if (m->incomplete) fputs(" [incomplete: log too long]", o);
    fputs("</td></tr>\n", o);
  }
  fputs("</table></section>\n", o);
}

int npkit_report_extras_html(npkit_report *rep, FILE *o) {
  callsites(&rep->sites, o);
  marks(rep, o);
  return ferror(o) ? -1 : 0;
}
