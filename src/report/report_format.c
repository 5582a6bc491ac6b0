/* Labels and human-readable numbers shared by the report renderers. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npkit/event_log.h"
#include "report_model.h"

void npkit_report_log_label(const npkit_report *rep, size_t log, char *buf, size_t len) {
  npkit_job_log_label(&rep->job, log, buf, len);
}

void npkit_report_json_us(npkit_json *w, const char *key, double ns) { npkit_json_kv_double(w, key, ns / 1e3); }

void npkit_report_comm_label(const npkit_report *rep, uint32_t comm, char *buf, size_t len) {
  if (comm >= rep->job.n_comms) {
    snprintf(buf, len, "unknown comm");
    return;
  }
  const npkit_job_comm *c = &rep->job.comms[comm];
  if (c->name[0] != '\0')
    snprintf(buf, len, "%.32s (%" PRId32 " ranks)", c->name, c->nranks);
  else
    snprintf(buf, len, "comm %08" PRIx64 " (%" PRId32 " ranks)", c->comm_id >> 32, c->nranks);
}

void npkit_report_overview(const npkit_report *rep, char *buf, size_t len) {
  uint64_t calls = 0, events = 0, first = 0, last = 0;
  char a[32], b[32];
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_rep_log *l = &rep->logs[i];
    const npkit_job_log *jl = &rep->job.logs[i];
    calls += l->api_calls;
    events += jl->events;
    if (l->first_ns && (first == 0 || l->first_ns < first)) first = l->first_ns;
    if (l->last_ns > last) last = l->last_ns;
  }
  npkit_report_bytes(rep->job.input_bytes, a, sizeof(a));
  npkit_report_duration(last > first ? (double)(last - first) : 0, b, sizeof(b));
  snprintf(buf, len, "%zu log%s on %zu host%s, %" PRIu64 " events (%" PRIu64 " NCCL calls), %s of activity, %s read",
           rep->job.n_logs, rep->job.n_logs == 1 ? "" : "s", rep->job.n_hosts, rep->job.n_hosts == 1 ? "" : "s", events, calls, b, a);
}

void npkit_report_straggler_summary(npkit_report *rep, char *buf, size_t len) {
  npkit_straggler *s = &rep->strag; /* the quantiles sort on first use */
  char th[32], med[32], p99[32], max[32], delay[32];
  npkit_report_duration(s->threshold_ns, th, sizeof(th));
  npkit_report_duration(npkit_quantile_get(&s->spread, 0.5), med, sizeof(med));
  npkit_report_duration(npkit_quantile_get(&s->spread, 0.99), p99, sizeof(p99));
  npkit_report_duration((double)s->spread.max, max, sizeof(max));
  npkit_report_duration(s->over_ns, delay, sizeof(delay));
  int n = snprintf(buf, len,
                   "%" PRIu64 " collective instances compared across ranks (%s times); arrival spread median %s, "
                   "p99 %s, max %s. %" PRIu64 " (%.1f %%) exceed the threshold of %s, %s of delay in all.",
                   s->instances, s->gpu == s->instances ? "GPU" : "API call", med, p99, max, s->over,
                   s->instances ? 100.0 * (double)s->over / (double)s->instances : 0.0, th, delay);
  if (s->mixed && n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, " %" PRIu64 " instances skipped: GPU times on some ranks, CPU times on others.",
             s->mixed);
}

size_t npkit_report_simulated_logs(const npkit_report *rep) {
  size_t n = 0;
  for (size_t i = 0; i < rep->job.n_logs; i++) n += rep->job.logs[i].simulated != 0;
  return n;
}

void npkit_report_simulated_note(const npkit_report *rep, char *buf, size_t len) {
  size_t n = npkit_report_simulated_logs(rep);
  if (n == 0) {
    snprintf(buf, len, "%s", "");
    return;
  }
  snprintf(buf, len,
           "SIMULATED GPU: %s%zu of %zu logs were recorded with NPKIT_SIMULATED=1, against the fake NCCL and CUPTI "
           "of the test suite: kernels, GPU times and NCCL's own events come from a simulation on the CPU, not from "
           "a GPU.", n == rep->job.n_logs ? "all " : "", n, rep->job.n_logs);
}

void npkit_report_gpu_coverage(const npkit_report *rep, npkit_gpu_coverage *c) {
  memset(c, 0, sizeof(*c));
  for (size_t i = 0; i < rep->table.n; i++) {
    const npkit_table_row *r = &rep->table.rows[i];
    c->rows++;
    c->calls += r->calls;
    if (r->source == NPKIT_TIME_GPU) {
      c->gpu_rows++;
      c->gpu_calls += r->calls;
    }
  }
  for (size_t i = 0; i < rep->job.n_logs; i++)
    if (rep->logs[i].plugin_events > 0) c->plugin_ranks++;
}

void npkit_report_no_gpu_reason(const npkit_report *rep, char *buf, size_t len) {
  npkit_gpu_coverage c;
  npkit_report_gpu_coverage(rep, &c);
  if (c.gpu_rows == 0) {
    snprintf(buf, len, "these logs hold NCCL API events only");
    return;
  }
  snprintf(buf, len,
           "NCCL's own GPU stamps (profiler plugin) time %zu of the table's %zu rows, but the logs hold no kernels, "
           "copies or memsets of the application (no CUPTI records)",
           c.gpu_rows, c.rows);
}

static void three_digits(double v, const char *unit, char *buf, size_t len);

void npkit_report_bytes(uint64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  if (v < 1024 || u == 4) {
    snprintf(buf, len, "%" PRIu64 " %s", v, units[u]);
    return;
  }
  if (bytes < 10000000) { /* exact, as nccl-tests prints sizes */
    snprintf(buf, len, "%" PRIu64 " B", bytes);
    return;
  }
  double d = (double)bytes;
  u = 0;
  while (u < 4 && d >= 1024) {
    d /= 1024;
    u++;
  }
  three_digits(d, units[u], buf, len);
}

/* Three significant digits without switching to exponents. */
static void three_digits(double v, const char *unit, char *buf, size_t len) {
  double a = fabs(v);
  snprintf(buf, len, a < 10 ? "%.2f %s" : a < 100 ? "%.1f %s" : "%.0f %s", v, unit);
}

void npkit_report_duration(double ns, char *buf, size_t len) {
  if (isnan(ns)) {
    snprintf(buf, len, "-");
    return;
  }
  double a = fabs(ns);
  if (a < 1e3)
    snprintf(buf, len, "%.0f ns", ns);
  else if (a < 999.5e3)
    three_digits(ns / 1e3, "us", buf, len);
  else if (a < 999.5e6)
    three_digits(ns / 1e6, "ms", buf, len);
  else
    three_digits(ns / 1e9, "s", buf, len);
}

const char *npkit_source_name(uint32_t source) {
  switch (source) {
  case NPKIT_SRC_API: return "api";
  case NPKIT_SRC_CUPTI: return "gpu";
  case NPKIT_REPORT_SRC_PLUGIN: return "plugin";
  case NPKIT_SRC_NPKIT_DUMP: return "npkit_dump";
  default: return "other";
  }
}

/* Appends "a" or "a-b" to a list of rank ranges. */
static void put_range(char *buf, size_t len, int32_t a, int32_t b) {
  size_t n = strlen(buf);
  if (n + 1 >= len) return;
  if (a == b) snprintf(buf + n, len - n, n ? ",%" PRId32 : "%" PRId32, a);
  else snprintf(buf + n, len - n, n ? ",%" PRId32 "-%" PRId32 : "%" PRId32 "-%" PRId32, a, b);
}

/* The ranks of a host as ranges, "0-3,8" (logs are sorted by rank). */
void npkit_report_host_ranks(const npkit_report *rep, uint32_t host, char *buf, size_t len) {
  int32_t start = -1, prev = -1;
  buf[0] = '\0';
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    int32_t r = rep->job.logs[i].rank;
    if (rep->job.logs[i].host != host || r < 0) continue;
    if (start >= 0 && r == prev + 1) {
      prev = r;
      continue;
    }
    if (start >= 0) put_range(buf, len, start, prev);
    start = prev = r;
  }
  if (start >= 0) put_range(buf, len, start, prev);
  if (buf[0] == '\0') snprintf(buf, len, "?");
}
