/* The Prometheus textfile (the text exposition format node_exporter's textfile collector reads).
 * The nccl_* metrics are the Inspector's (NVIDIA/nccl plugins/profiler/inspector/inspector_prom.cc
 * at 2.30/2.31): per bucket of communicator, operation, power-of-1024 size range and algorithm_
 * protocol, the geometric mean of the bus bandwidths and the mean time of the interval's
 * operations, with its labels, so that its dashboards work.  "rank", "pid" and "comm_id" are
 * added: two processes on one GPU, or two unnamed communicators of one size, would otherwise
 * write the same series, which node_exporter refuses.  Unlike
 * the Inspector's, every metric has HELP and TYPE lines and its samples together, as the format
 * asks.  The npkit_* metrics are counters of the whole run. */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "metrics_out.h"
#include "nccl_names.h"

/* the Inspector's "version" label: v<profiler interface>.<prom format minor> of its source */
#define PROM_VERSION "v5.1"

typedef struct bucket {
  uint32_t comm;
  uint16_t fn;
  uint8_t p2p;
  uint64_t range; /* lower bound of the size range */
  char algo_proto[26];
  uint64_t count;
  double exec_sum, bus_log_sum;
  uint64_t bus_count;
} bucket;

struct npkit_metrics_prom {
  bucket *b;
  size_t n, cap;
};

npkit_metrics_prom *npkit_metrics_prom_new(void) { return calloc(1, sizeof(npkit_metrics_prom)); }

void npkit_metrics_prom_free(npkit_metrics_prom *p) {
  if (p == NULL) return;
  free(p->b);
  free(p);
}

/* inspectorPromMessageSizeRangeLowerBound and inspectorPromFormatMessageSizeRange: the size in
 * the largest unit of 1024 (up to TB) in which it is >= 1, floored: [lower, lower + 1) units. */
static uint64_t range_of(uint64_t bytes, unsigned *unit) {
  *unit = 0;
  if (bytes == 0) return 0;
  double v = (double)bytes;
  uint64_t scale = 1;
  while (v >= 1024.0 && *unit < 4) {
    v /= 1024.0;
    scale *= 1024;
    (*unit)++;
  }
  return (uint64_t)floor(v < 1.0 ? 1.0 : v) * scale;
}

void npkit_metrics_size_range(uint64_t bytes, char *out, size_t len) {
  static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
  unsigned unit;
  uint64_t lower = range_of(bytes, &unit);
  if (bytes == 0) {
    snprintf(out, len, "0B");
    return;
  }
  uint64_t scale = 1;
  for (unsigned i = 0; i < unit; i++) scale *= 1024;
  snprintf(out, len, "%" PRIu64 "-%" PRIu64 "%s", lower / scale, lower / scale + 1, units[unit]);
}

static int bucket_order(const void *pa, const void *pb) {
  const bucket *a = pa, *b = pb;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->p2p != b->p2p) return a->p2p < b->p2p ? -1 : 1;
  if (a->fn != b->fn) return a->fn < b->fn ? -1 : 1;
  if (a->range != b->range) return a->range < b->range ? -1 : 1;
  return strcmp(a->algo_proto, b->algo_proto);
}

int npkit_metrics_prom_add(npkit_metrics_prom *p, const npkit_metrics_comm *comms, size_t n_comms,
                           const npkit_metrics_op *ops, size_t n_ops) {
  (void)comms, (void)n_comms;
  if (n_ops == 0) return 0;
  p->n = 0;
  for (size_t i = 0; i < n_ops; i++) {
    const npkit_metrics_op *o = &ops[i];
    bucket key = {.comm = o->comm, .fn = o->fn, .p2p = o->p2p};
    unsigned unit;
    key.range = range_of(o->msg_bytes, &unit);
    if (!o->p2p) snprintf(key.algo_proto, sizeof(key.algo_proto), "%s_%s", o->algo, o->proto);
    bucket *b = NULL;
    for (size_t j = p->n; j-- > 0 && b == NULL;) /* the operations come sorted by communicator */
      if (bucket_order(&p->b[j], &key) == 0) b = &p->b[j];
      else if (p->b[j].comm != key.comm) break;
    if (b == NULL) {
      if (NPKIT_GROW(p->b, p->cap, p->n + 1, 32) != 0) return -1;
      b = &p->b[p->n++];
      *b = key;
    }
    b->count++;
    b->exec_sum += (double)(o->exec_ns / 1000);
    if (o->busbw_gbs > 0.0) { /* the geometric mean, as log sums (inspectorPromAggUpdate) */
      b->bus_log_sum += log(o->busbw_gbs);
      b->bus_count++;
    }
  }
  qsort(p->b, p->n, sizeof(*p->b), bucket_order);
  return 0;
}

/* A label value: backslash, double quote and newline escaped, as the text format asks. */
static void put_label(FILE *f, const char *name, const char *v) {
  fprintf(f, "%s=\"", name);
  for (; *v != '\0'; v++) {
    if (*v == '\\' || *v == '"') fputc('\\', f);
    if (*v == '\n') {
      fputs("\\n", f);
      continue;
    }
    fputc(*v, f);
  }
  fputc('"', f);
}

static void proc_labels(FILE *f, const npkit_metrics_proc *p, int32_t device) {
  char gpu[24], rank[16], pid[16];
  if (device >= 0) snprintf(gpu, sizeof gpu, "GPU%" PRId32, device);
  else snprintf(gpu, sizeof gpu, "unknown");
  snprintf(rank, sizeof rank, "%" PRId32, p->rank);
  put_label(f, "slurm_job_id", p->slurm_job_id != NULL ? p->slurm_job_id : "unknown");
  fputc(',', f);
  put_label(f, "node", p->hostname);
  fputc(',', f);
  put_label(f, "gpu", gpu);
  fputc(',', f);
  put_label(f, "rank", rank);
  fputc(',', f);
  snprintf(pid, sizeof pid, "%" PRId32, p->pid);
  put_label(f, "pid", pid);
}

static void comm_labels(FILE *f, const npkit_metrics_proc *p, const npkit_metrics_comm *c) {
  char num[24];
  proc_labels(f, p, c->device >= 0 ? c->device : p->device);
  fputc(',', f);
  put_label(f, "comm_name", c->name[0] != '\0' ? c->name : "unknown");
  fputc(',', f);
  snprintf(num, sizeof num, "%" PRId32, c->nnodes);
  put_label(f, "n_nodes", num);
  fputc(',', f);
  snprintf(num, sizeof num, "%" PRId32, c->nranks);
  put_label(f, "nranks", num);
  fputc(',', f);
  if (c->comm_id != 0) snprintf(num, sizeof num, "%016" PRIx64, c->comm_id);
  else snprintf(num, sizeof num, "local-%" PRIu32, c->local_id); /* its record not read (yet) */
  put_label(f, "comm_id", num);
}

static void bucket_labels(FILE *f, const npkit_metrics_proc *p, const npkit_metrics_comm *c, const bucket *b) {
  char size[32];
  fputs("{version=\"" PROM_VERSION "\",", f);
  comm_labels(f, p, c);
  fputc(',', f);
  put_label(f, b->p2p ? "p2p_operation" : "collective", npkit_fn_short_name(b->fn));
  fputc(',', f);
  npkit_metrics_size_range(b->range, size, sizeof size);
  put_label(f, "message_size", size);
  if (!b->p2p) {
    fputc(',', f);
    put_label(f, "algo_proto", b->algo_proto);
  }
  fputc('}', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void buckets(FILE *f, const npkit_metrics_prom *p, const npkit_metrics_proc *proc,
                    const npkit_metrics_comm *comms, size_t n_comms, int p2p, int time) {
  for (size_t i = 0; i < p->n; i++) {
    const bucket *b = &p->b[i];
    if (b->p2p != p2p || b->comm >= n_comms) continue;
    double v = time ? (b->count ? b->exec_sum / (double)b->count : 0.0)
                    : (b->bus_count ? exp(b->bus_log_sum / (double)b->bus_count) : 0.0);
    fputs(time ? (p2p ? "nccl_p2p_exec_time_microseconds" : "nccl_collective_exec_time_microseconds")
               : (p2p ? "nccl_p2p_bus_bandwidth_gbs" : "nccl_bus_bandwidth_gbs"), f);
    bucket_labels(f, proc, &comms[b->comm], b);
    fprintf(f, " %.6g\n", v);
  }
}

static int has_kind(const npkit_metrics_prom *p, int p2p) {
  for (size_t i = 0; i < p->n; i++)
    if (p->b[i].p2p == p2p) return 1;
  return 0;
}

/* One npkit_* counter per communicator. */
static void per_comm(FILE *f, const npkit_metrics_proc *proc, const npkit_metrics_comm *comms, size_t n_comms,
                     const char *name, const char *help, size_t offset, double scale) {
  family(f, name, "counter", help);
  for (size_t i = 0; i < n_comms; i++) {
    fprintf(f, "%s{", name);
    comm_labels(f, proc, &comms[i]);
    fprintf(f, "} %.17g\n", (double)*(const uint64_t *)((const char *)&comms[i] + offset) * scale);
  }
}

static int spread_known(const npkit_metrics_comm *comms, size_t n_comms) {
  for (size_t i = 0; i < n_comms; i++)
    if (comms[i].has_spread) return 1;
  return 0;
}

static void spread(FILE *f, const npkit_metrics_proc *proc, const npkit_metrics_comm *comms, size_t n_comms, int rank) {
  for (size_t i = 0; i < n_comms; i++) {
    if (!comms[i].has_spread) continue;
    fputs(rank ? "npkit_arrival_last_rank{" : "npkit_arrival_spread_max_seconds{", f);
    comm_labels(f, proc, &comms[i]);
    if (rank) fprintf(f, "} %" PRId32 "\n", comms[i].spread_last_rank);
    else fprintf(f, "} %.9g\n", comms[i].spread_max_ns * 1e-9);
  }
}

/* A family of one sample per process. */
static void per_proc(FILE *f, const npkit_metrics_proc *proc, const char *name, const char *type, const char *help,
                     double v) {
  family(f, name, type, help);
  fprintf(f, "%s{", name);
  proc_labels(f, proc, proc->device);
  fprintf(f, "} %.17g\n", v);
}

/* The Inspector's bucket families of one kind (collectives, or sends and receives). */
static void inspector_families(FILE *f, const npkit_metrics_prom *p, const npkit_metrics_proc *proc,
                               const npkit_metrics_comm *comms, size_t n_comms, int p2p) {
  static const char *const name[2][2] = {{"nccl_bus_bandwidth_gbs", "nccl_collective_exec_time_microseconds"},
                                         {"nccl_p2p_bus_bandwidth_gbs", "nccl_p2p_exec_time_microseconds"}};
  static const char *const what[2] = {"the collectives", "the sends and receives"};
  if (!has_kind(p, p2p)) return;
  char help[160];
  snprintf(help, sizeof help, "Bus bandwidth of %s of the last interval with any, geometric mean per bucket (GB/s)",
           what[p2p]);
  family(f, name[p2p][0], "gauge", help);
  buckets(f, p, proc, comms, n_comms, p2p, 0);
  snprintf(help, sizeof help, "Execution time of %s of the last interval with any, mean per bucket (us)", what[p2p]);
  family(f, name[p2p][1], "gauge", help);
  buckets(f, p, proc, comms, n_comms, p2p, 1);
}

int npkit_metrics_prom_write(const npkit_metrics_prom *p, FILE *f, const npkit_metrics_proc *proc,
                             const npkit_metrics_comm *comms, size_t n_comms) {
  inspector_families(f, p, proc, comms, n_comms, 0);
  inspector_families(f, p, proc, comms, n_comms, 1);
  per_proc(f, proc, "npkit_events_recorded_total", "counter", "Events npkit-preload recorded in this process",
           (double)proc->events_recorded);
  per_proc(f, proc, "npkit_events_dropped_total", "counter",
           "Events npkit-preload lost in this process (full buffers, refused writes)", (double)proc->events_dropped);
  per_proc(f, proc, "npkit_metrics_dumps_total", "counter", "Metrics dumps written by this process", (double)proc->dumps);
  if (proc->has_strag) {
    per_proc(f, proc, "npkit_arrived_last_total", "counter",
             "Collectives (of two ranks or more) this process arrived at last, on the aligned clocks",
             (double)proc->arrived_last);
    per_proc(f, proc, "npkit_wait_for_last_seconds_total", "counter",
             "Time this process's collectives waited for the last rank to arrive (s)", proc->waited_ns * 1e-9);
  }
  if (spread_known(comms, n_comms)) {
    family(f, "npkit_arrival_spread_max_seconds", "gauge",
           "The largest arrival spread (last rank's arrival - first's) of the communicator's collectives (s)");
    spread(f, proc, comms, n_comms, 0);
    family(f, "npkit_arrival_last_rank", "gauge", "The global rank that arrived last at that collective");
    spread(f, proc, comms, n_comms, 1);
  }
  if (n_comms > 0) {
    per_comm(f, proc, comms, n_comms, "npkit_collectives_total", "Collectives completed with a time, per communicator",
             offsetof(npkit_metrics_comm, coll_records), 1.0);
    per_comm(f, proc, comms, n_comms, "npkit_collectives_untimed_total",
             "Collectives without a time (enqueued in a group, no GPU activity): counted, not measured",
             offsetof(npkit_metrics_comm, coll_dropped), 1.0);
    per_comm(f, proc, comms, n_comms, "npkit_p2p_total", "Sends and receives completed with a time, per communicator",
             offsetof(npkit_metrics_comm, p2p_records), 1.0);
    per_comm(f, proc, comms, n_comms, "npkit_p2p_untimed_total", "Sends and receives without a time, per communicator",
             offsetof(npkit_metrics_comm, p2p_dropped), 1.0);
    if (proc->min_bytes > 0) {
      per_comm(f, proc, comms, n_comms, "npkit_collectives_below_min_total",
               "Collectives smaller than NPKIT_METRICS_MIN_BYTES: counted, not in the Inspector's metrics",
               offsetof(npkit_metrics_comm, coll_small), 1.0);
      per_comm(f, proc, comms, n_comms, "npkit_p2p_below_min_total",
               "Sends and receives smaller than NPKIT_METRICS_MIN_BYTES: counted, not in the Inspector's metrics",
               offsetof(npkit_metrics_comm, p2p_small), 1.0);
    }
    per_comm(f, proc, comms, n_comms, "npkit_operation_seconds_total",
             "Summed execution time of the communicator's timed operations (s)", offsetof(npkit_metrics_comm, busy_ns),
             1e-9);
  }
  return ferror(f) ? -1 : 0;
}
