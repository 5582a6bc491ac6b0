#include "report_extras.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_model.h"

static int warn(npkit_report_extras *x, const char *text) {
  char **w = realloc(x->warnings, (x->n_warnings + 1) * sizeof *w);
  if (w == NULL) return -1;
  x->warnings = w;
  w[x->n_warnings] = strdup(text);
  if (w[x->n_warnings] == NULL) return -1;
  x->n_warnings++;
  return 0;
}

/* One pass over the log's events into both analyses.  1: read, 0: unreadable (warned), -1: memory. */
static int read_log(npkit_report_extras *x, const char *path, npkit_extras_log *l, char *err, size_t errlen) {
  npkit_log_reader *r;
  char why[512];
  if (npkit_reader_open(path, &r, why, sizeof why) != 0) return warn(x, why) == 0 ? 0 : -1;
  if (r->rank >= 0)
    snprintf(l->label, sizeof l->label, "rank %" PRId32, r->rank);
  else
    snprintf(l->label, sizeof l->label, "%.63s:%" PRId32, r->header.host, r->header.pid);
  l->rank = r->rank;
  int rc = 1;
  if (npkit_callsites_begin_log(&x->sites, r, why, sizeof why) != 0) {
    rc = warn(x, why) == 0 ? 0 : -1;
    goto done;
  }
  npkit_reader_rewind(r);
  const npkit_event *ev;
  int k, nomem = 0;
  while ((k = npkit_reader_next(r, &ev, why, sizeof why)) > 0)
    if (npkit_callsites_event(&x->sites, ev) != 0 || npkit_mark_overlap_event(&l->overlap, ev) != 0) {
      nomem = 1;
      break;
    }
  if (k < 0 && !nomem && warn(x, why) != 0) nomem = 1; /* a read error keeps what was read */
  if (nomem || npkit_mark_overlap_finish(&l->overlap, r) != 0) {
    snprintf(err, errlen, "%s: out of memory while collecting call sites and marks", path);
    rc = -1;
  }
done:
  npkit_callsites_end_log(&x->sites);
  npkit_reader_close(r);
  return rc;
}

int npkit_report_extras_run(npkit_report_extras *x, char *const *paths, size_t n, char *err, size_t errlen) {
  memset(x, 0, sizeof *x);
  npkit_callsites_init(&x->sites);
  x->logs = calloc(n ? n : 1, sizeof *x->logs);
  if (x->logs == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    npkit_extras_log *l = &x->logs[x->n_logs];
    npkit_mark_overlap_init(&l->overlap);
    x->n_logs++;
    int rc = read_log(x, paths[i], l, err, errlen);
    if (rc < 0) return -1;
    if (rc == 0) npkit_mark_overlap_free(&x->logs[--x->n_logs].overlap);
  }
  npkit_callsites_finish(&x->sites);
  return 0;
}

int npkit_report_extras_run_report(npkit_report_extras *x, const npkit_report *rep, char *err, size_t errlen) {
  char **paths = calloc(rep->n_logs ? rep->n_logs : 1, sizeof *paths);
  if (paths == NULL) {
    memset(x, 0, sizeof *x);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < rep->n_logs; i++) paths[i] = rep->logs[i].path;
  int rc = npkit_report_extras_run(x, paths, rep->n_logs, err, errlen);
  free(paths);
  return rc;
}

void npkit_report_extras_free(npkit_report_extras *x) {
  npkit_callsites_free(&x->sites);
  for (size_t i = 0; i < x->n_logs; i++) npkit_mark_overlap_free(&x->logs[i].overlap);
  free(x->logs);
  for (size_t i = 0; i < x->n_warnings; i++) free(x->warnings[i]);
  free(x->warnings);
  memset(x, 0, sizeof *x);
}

static int marks_text(npkit_report_extras *x, FILE *out) {
  size_t with = 0, gpu = 0;
  for (size_t i = 0; i < x->n_logs; i++) {
    if (x->logs[i].overlap.ranges == 0) continue;
    if (x->logs[i].overlap.gpu_events > 0) gpu++; else with++;
  }
  if (with == 0) return 0;
  char a[32], b[32], c[32], d[32];
  fprintf(out, "\nOverlap with marked computation\n");
  fprintf(out, "  Without GPU events, the ranges of npkit_mark_begin/end are the computation (outside the\n"
               "  marking thread's own NCCL calls) and the NCCL calls that move data the communication.\n");
  if (gpu > 0) fprintf(out, "  %zu logs with GPU events are left out: their GPU timeline is the better source.\n", gpu);
  fprintf(out, "  %-16s %8s %11s %11s %11s  %s\n", "rank", "overlap", "comm", "compute", "exposed", "marks (ranges, total)");
  for (size_t i = 0; i < x->n_logs; i++) {
    const npkit_mark_overlap *o = &x->logs[i].overlap;
    if (o->ranges == 0 || o->gpu_events > 0) continue;
    npkit_report_duration((double)o->comm_ns, a, sizeof a);
    npkit_report_duration((double)o->compute_ns, b, sizeof b);
    npkit_report_duration((double)o->exposed_ns, c, sizeof c);
    if (isnan(o->overlap_ratio))
      fprintf(out, "  %-16.16s %8s", x->logs[i].label, "-");
    else
      fprintf(out, "  %-16.16s %7.1f%%", x->logs[i].label, 100.0 * o->overlap_ratio);
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

int npkit_report_extras_text(npkit_report_extras *x, FILE *out) {
  for (size_t i = 0; i < x->n_warnings; i++) fprintf(stderr, "npkit report: warning: %s\n", x->warnings[i]);
  if (npkit_callsites_text(&x->sites, out) != 0 || marks_text(x, out) != 0) return -1;
  return ferror(out) ? -1 : 0;
}

int npkit_report_extras_print(char *const *paths, size_t n, FILE *out, char *err, size_t errlen) {
  npkit_report_extras x;
  int rc = npkit_report_extras_run(&x, paths, n, err, errlen);
  if (rc == 0 && npkit_report_extras_text(&x, out) != 0) {
    snprintf(err, errlen, "writing the report: %s", strerror(errno));
    rc = -1;
  }
  npkit_report_extras_free(&x);
  return rc;
}

static void kv_us(npkit_json *w, const char *key, double ns) {
  npkit_json_key(w, key);
  npkit_json_double(w, isnan(ns) ? ns : ns / 1e3);
}

void npkit_report_extras_json(npkit_report_extras *x, npkit_json *w) {
  npkit_json_key(w, "call_sites");
  npkit_callsites_json(&x->sites, w);
  npkit_json_key(w, "mark_overlap");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < x->n_logs; i++) {
    const npkit_mark_overlap *o = &x->logs[i].overlap;
    if (o->ranges == 0) continue;
    npkit_json_begin_object(w);
    npkit_json_key(w, "log");
    npkit_json_string(w, x->logs[i].label);
    npkit_json_key(w, "rank");
    npkit_json_int(w, x->logs[i].rank);
    npkit_json_key(w, "ranges");
    npkit_json_uint(w, o->ranges);
    kv_us(w, "comm_us", (double)o->comm_ns);
    kv_us(w, "compute_us", (double)o->compute_ns);
    kv_us(w, "overlap_us", (double)o->overlap_ns);
    kv_us(w, "exposed_us", (double)o->exposed_ns);
    npkit_json_key(w, "overlap_ratio");
    npkit_json_double(w, o->overlap_ratio);
    npkit_json_key(w, "gpu_events");
    npkit_json_uint(w, o->gpu_events);
    npkit_json_key(w, "incomplete");
    npkit_json_bool(w, o->incomplete);
    npkit_json_key(w, "marks");
    npkit_json_begin_array(w);
    for (size_t k = 0; k < o->n_totals; k++) {
      npkit_json_begin_object(w);
      npkit_json_key(w, "name");
      npkit_json_string(w, o->totals[k].text);
      npkit_json_key(w, "ranges");
      npkit_json_uint(w, o->totals[k].ranges);
      kv_us(w, "total_us", (double)o->totals[k].total_ns);
      npkit_json_end_object(w);
    }
    npkit_json_end_array(w);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
}
