#include "report_extras.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_names.h"

static int marks_text(npkit_report *rep, FILE *out) {
  char label[96];
  size_t with = 0, gpu = 0;
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    if (rep->logs[i].overlap.ranges == 0) continue;
    if (rep->logs[i].overlap.gpu_events > 0) gpu++; else with++;
  }
  if (with == 0) return 0;
  char a[32], b[32], c[32], d[32];
  fprintf(out, "\nOverlap with marked computation\n");
  fprintf(out, "  Without GPU events, the ranges of npkit_mark_begin/end are the computation (outside the\n"
               "  marking thread's own NCCL calls) and the NCCL calls that move data the communication.\n");
  if (gpu > 0) fprintf(out, "  %zu logs with GPU events are left out: their GPU timeline is the better source.\n", gpu);
  fprintf(out, "  %-16s %8s %11s %11s %11s  %s\n", "rank", "overlap", "comm", "compute", "exposed", "marks (ranges, total)");
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_mark_overlap *o = &rep->logs[i].overlap;
    if (o->ranges == 0 || o->gpu_events > 0) continue;
    npkit_report_log_label(rep, i, label, sizeof label);
    npkit_report_duration((double)o->comm_ns, a, sizeof a);
    npkit_report_duration((double)o->compute_ns, b, sizeof b);
    npkit_report_duration((double)o->exposed_ns, c, sizeof c);
    if (isnan(o->overlap_ratio))
      fprintf(out, "  %-16.16s %8s", label, "-");
    else
      fprintf(out, "  %-16.16s %7.1f%%", label, 100.0 * o->overlap_ratio);
    fprintf(out, " %11s %11s %11s ", a, b, c);
    for (size_t k = 0; k < o->n_totals && k < 4; k++) {
      npkit_report_duration((double)o->totals[k].total_ns, d, sizeof d);
      fprintf(out, "%s%s (%" PRIu64 ", %s)", k ? ", " : " ", o->totals[k].text, o->totals[k].ranges, d);
    }
    if (o->n_totals > 4) fprintf(out, ", +%zu more", o->n_totals - 4);
    if (o->incomplete) fprintf(out, " [incomplete: log too long]");
    fputc('\n', out);
  }
  return 0;
}

int npkit_callsites_text(npkit_callsites *cs, FILE *out) {
  if (cs->logs_with_stacks == 0) return 0;
  char total[32], mean[32], p99[32], max[32], bytes[32];
  fprintf(out, "\nCall sites\n");
  fprintf(out, "  %zu call sites in %" PRIu32 " of %" PRIu32 " logs (NPKIT_STACK_DEPTH, up to %" PRIu32
               " frames); time is spent inside the call, CPU side\n",
          cs->n_sites, cs->logs_with_stacks, cs->logs, cs->max_depth);
  if (cs->calls_without_stack > 0)
    fprintf(out, "  %" PRIu64 " calls have no stack (the table of call sites was full)\n", cs->calls_without_stack);
  fprintf(out, "  %4s  %-24s %8s %5s %10s %10s %10s %10s %10s\n", "site", "function", "calls", "ranks", "total",
          "mean", "p99", "max", "bytes");
  for (size_t i = 0; i < cs->n_rows; i++) {
    npkit_callsite_row *r = &cs->rows[i];
    npkit_report_duration((double)r->total_ns, total, sizeof total);
    npkit_report_duration(npkit_quantile_mean(&r->time), mean, sizeof mean);
    npkit_report_duration(npkit_quantile_get(&r->time, 0.99), p99, sizeof p99);
    npkit_report_duration((double)r->time.max, max, sizeof max);
    if (npkit_fn_moves_data(r->fn))
      npkit_report_bytes(r->bytes, bytes, sizeof bytes);
    else
      snprintf(bytes, sizeof bytes, "-");
    fprintf(out, "  %4" PRIu32 "  %-24s %8" PRIu64 " %5" PRIu32 " %10s %10s %10s %10s %10s\n",
            cs->sites[r->site].number, npkit_fn_name(r->fn), r->calls, r->ranks, total, mean, p99, max, bytes);
  }
  for (uint32_t number = 1; number <= cs->n_sites; number++)
    for (size_t i = 0; i < cs->n_sites; i++) {
      if (cs->sites[i].number != number) continue;
      fprintf(out, "\n  site %" PRIu32 ":", number);
      for (const char *p = cs->sites[i].text; *p;) {
        size_t len = strcspn(p, "\n");
        fprintf(out, "%s%.*s\n", p == cs->sites[i].text ? " " : "          ", (int)len, p);
        p += len;
        if (*p == '\n') p++;
      }
    }
  return ferror(out) ? -1 : 0;
}

void npkit_callsites_json(npkit_callsites *cs, npkit_json *w) {
  npkit_json_begin_object(w);
  npkit_json_kv_uint(w, "logs_with_stacks", cs->logs_with_stacks);
  npkit_json_kv_uint(w, "calls_without_stack", cs->calls_without_stack);
  npkit_json_key(w, "sites");
  npkit_json_begin_array(w);
  for (uint32_t number = 1; number <= cs->n_sites; number++)
    for (size_t i = 0; i < cs->n_sites; i++) {
      if (cs->sites[i].number != number) continue;
      npkit_json_begin_object(w);
      npkit_json_kv_uint(w, "site", number);
      npkit_json_key(w, "frames");
      npkit_json_begin_array(w);
      for (const char *p = cs->sites[i].text; *p;) {
        size_t len = strcspn(p, "\n");
        npkit_json_string_n(w, p, len);
        p += len;
        if (*p == '\n') p++;
      }
      npkit_json_end_array(w);
      npkit_json_end_object(w);
    }
  npkit_json_end_array(w);
  npkit_json_key(w, "rows");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < cs->n_rows; i++) {
    npkit_callsite_row *r = &cs->rows[i];
    npkit_json_begin_object(w);
    npkit_json_kv_uint(w, "site", cs->sites[r->site].number);
    npkit_json_kv_string(w, "function", npkit_fn_name(r->fn));
    npkit_json_kv_uint(w, "calls", r->calls);
    npkit_json_kv_uint(w, "ranks", r->ranks);
    npkit_json_kv_uint(w, "bytes", r->bytes);
    npkit_report_json_us(w, "total_us", (double)r->total_ns);
    npkit_report_json_us(w, "mean_us", npkit_quantile_mean(&r->time));
    npkit_report_json_us(w, "p99_us", npkit_quantile_get(&r->time, 0.99));
    npkit_report_json_us(w, "max_us", (double)r->time.max);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
  npkit_json_end_object(w);
}

int npkit_report_extras_text(npkit_report *rep, FILE *out) {
  if (npkit_callsites_text(&rep->sites, out) != 0 || marks_text(rep, out) != 0) return -1;
  return ferror(out) ? -1 : 0;
}

void npkit_report_extras_json(npkit_report *rep, npkit_json *w) {
  char label[96];
  npkit_json_key(w, "call_sites");
  npkit_callsites_json(&rep->sites, w);
  npkit_json_key(w, "mark_overlap");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_mark_overlap *o = &rep->logs[i].overlap;
    if (o->ranges == 0) continue;
    npkit_json_begin_object(w);
    npkit_report_log_label(rep, i, label, sizeof label);
    npkit_json_kv_string(w, "log", label);
    npkit_json_kv_int(w, "rank", rep->job.logs[i].rank);
    npkit_json_kv_uint(w, "ranges", o->ranges);
    npkit_report_json_us(w, "comm_us", (double)o->comm_ns);
    npkit_report_json_us(w, "compute_us", (double)o->compute_ns);
    npkit_report_json_us(w, "overlap_us", (double)o->overlap_ns);
    npkit_report_json_us(w, "exposed_us", (double)o->exposed_ns);
    npkit_json_kv_double(w, "overlap_ratio", o->overlap_ratio);
    npkit_json_kv_uint(w, "gpu_events", o->gpu_events);
    npkit_json_kv_bool(w, "incomplete", o->incomplete);
    npkit_json_key(w, "marks");
    npkit_json_begin_array(w);
    for (size_t k = 0; k < o->n_totals; k++) {
      npkit_json_begin_object(w);
      npkit_json_kv_string(w, "name", o->totals[k].text);
      npkit_json_kv_uint(w, "ranges", o->totals[k].ranges);
      npkit_report_json_us(w, "total_us", (double)o->totals[k].total_ns);
      npkit_json_end_object(w);
    }
    npkit_json_end_array(w);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
}
