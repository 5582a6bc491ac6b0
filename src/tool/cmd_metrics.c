/* `npkit metrics DIR|LOGS... -o OUTDIR`: the operations of a finished job as the files the
 * preloaded library writes live with NPKIT_METRICS (src/metrics): NCCL Inspector's JSON lines and
 * the Prometheus textfile, one dump per process covering its whole run, for jobs that ran without
 * live metrics, or whose last interval a kill cut off. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "commands.h"
#include "job.h"
#include "metrics_files.h"
#include "report_model.h"
#include "report_straggler.h"

static void help(void) {
  printf("Usage: npkit metrics DIR|LOG... -o OUTDIR [--format inspector,prometheus] [--min-bytes N]\n"
         "Writes the collectives and sends/receives of a job's logs as the files NPKIT_METRICS\n"
         "writes while a job runs, one dump per process covering the whole run:\n"
         "  OUTDIR/<host>-pid<pid>.log                NCCL Inspector's JSON lines (format v4.2),\n"
         "      read by the Inspector's tools (perf_summary_exporter.py): per communicator a\n"
         "      dump_stats line, then a coll_perf or p2p_perf line per operation with its size,\n"
         "      time (GPU time when recorded: kernel_gpu, else the call's: collective_cpu),\n"
         "      algorithm, protocol and bandwidths\n"
         "  OUTDIR/npkit_metrics_<host>-pid<pid>.prom  a Prometheus textfile (node_exporter's\n"
         "      textfile collector): the Inspector's nccl_* metrics and npkit_* counters\n"
         "Nothing is left out: no size threshold unless given; operations without a time (enqueued\n"
         "in a group, without GPU activity) are counted in coll_dropped_total /\n"
         "npkit_collectives_untimed_total.\n\n"
         "  -o, --output DIR   the folder of the files (made if missing)\n"
         "  -f, --format LIST  inspector, prometheus or both (default: both)\n"
         "  --min-bytes N      leave out operations of fewer bytes (count x type size, as NCCL\n"
         "                     Inspector's NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES), counted in\n"
         "                     npkit_collectives_below_min_total (default 0: none left out)\n");
}

static int take_format(const char *v, void *to) {
  char err[128] = "";
  if (npkit_metrics_parse(v, to, err, sizeof err) != 0 || *(unsigned *)to == 0) {
    npkit_cli_usage_error("metrics", "--format: %s", *(unsigned *)to == 0 && err[0] == '\0' ? "nothing to write" : err);
    return -1;
  }
  return 0;
}

static int take_min_bytes(const char *v, void *to) {
  char *end;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (end == v || *end != '\0' || v[0] == '-' || errno == ERANGE) {
    npkit_cli_usage_error("metrics", "--min-bytes takes a whole number of bytes, not '%s'", v);
    return -1;
  }
  *(uint64_t *)to = n;
  return 0;
}

/* The hosts of the communicator's ranks that have a log. */
static int32_t comm_nodes(const npkit_job *job, uint32_t comm) {
  const npkit_job_comm *c = &job->comms[comm];
  int32_t nodes = 0;
  for (size_t h = 0; h < job->n_hosts; h++) {
    int on = 0;
    for (int32_t r = 0; r < c->nranks && !on && c->members != NULL; r++)
      on = c->members[r] != NPKIT_JOB_NONE && job->logs[job->members[c->members[r]].log].host == h;
    nodes += on;
  }
  return nodes;
}

typedef struct totals {
  size_t files;
  uint64_t colls, p2ps, untimed, small;
} totals;

/* The cross-rank facts a process alone does not know: who arrived last, how long the others
 * waited (report_straggler.h, the report's own numbers).  NULL when they could not be had. */
static const npkit_straggler *arrivals(npkit_job *job, npkit_straggler *s) {
  npkit_report_options o;
  npkit_report_defaults(&o);
  char err[512];
  if (npkit_job_scan_collectives(job, NULL, err, sizeof err) != 0) {
    fprintf(stderr, "npkit metrics: the arrival spreads are left out: %s\n", err);
    return NULL;
  }
  if (npkit_job_align(job, o.align, 0) != 0 || npkit_straggler_init(s, job->n_logs, job->n_comms, o.threshold_ns, o.top) != 0) {
    fprintf(stderr, "npkit metrics: the arrival spreads are left out: out of memory\n");
    return NULL;
  }
  if (npkit_straggler_job(s, job) != 0) {
    npkit_straggler_free(s);
    fprintf(stderr, "npkit metrics: the arrival spreads are left out: out of memory\n");
    return NULL;
  }
  return s;
}

static int one_log(npkit_job *job, uint32_t li, const npkit_straggler *strag, const char *out, unsigned what,
                   uint64_t min_bytes, uint64_t dump_us, totals *t) {
  npkit_job_log *l = &job->logs[li];
  npkit_log_reader *r = l->reader;
  npkit_metrics_ops *ops = npkit_metrics_ops_new();
  npkit_metrics_prom *prom = npkit_metrics_prom_new();
  char err[512] = "out of memory";
  int rc = ops != NULL && prom != NULL ? 0 : -1;
  if (rc == 0) npkit_metrics_ops_min_bytes(ops, min_bytes);
  for (size_t i = 0; i < r->n_comms && rc == 0; i++) {
    rc = npkit_metrics_ops_comm(ops, &r->comms[i]);
    uint32_t c = l->comm_of[i];
    if (rc != 0 || c == NPKIT_JOB_NONE) continue;
    npkit_metrics_ops_set_nnodes(ops, r->comms[i].local_id, comm_nodes(job, c));
    if (strag != NULL && c < strag->n_comms && strag->comms[c].instances > 0)
      npkit_metrics_ops_set_spread(ops, r->comms[i].local_id, strag->comms[c].max_spread_ns,
                                   job->logs[strag->comms[c].max_last_log].rank);
  }
  npkit_reader_rewind(r);
  while (rc == 0) {
    const npkit_event *ev;
    int k = npkit_reader_next(r, &ev, err, sizeof err);
    if (k < 0) rc = -1;
    if (k <= 0) break;
    if (npkit_metrics_ops_events(ops, ev, 1) != 0) {
      snprintf(err, sizeof err, "out of memory");
      rc = -1;
    }
  }
  const npkit_metrics_op *done = NULL;
  size_t n = 0;
  if (rc == 0 && npkit_metrics_ops_take(ops, 0, 0, 0, 1, &done, &n) != 0) {
    snprintf(err, sizeof err, "out of memory");
    rc = -1;
  }
  if (rc == 0) {
    size_t nc;
    const npkit_metrics_comm *comms = npkit_metrics_ops_comms(ops, &nc);
    npkit_metrics_proc proc = {.hostname = job->hosts[l->host].name, .pid = l->pid, .rank = l->rank,
                               .device = l->device, .dump_us = dump_us, .events_recorded = l->recorded,
                               .events_dropped = l->dropped, .dumps = 1, .min_bytes = min_bytes};
    if (strag != NULL && li < strag->n_ranks) {
      proc.has_strag = 1;
      proc.arrived_last = strag->ranks[li].last;
      proc.strag_instances = strag->ranks[li].instances;
      proc.waited_ns = strag->ranks[li].waited_ns;
    }
    rc = npkit_metrics_dump_files(out, what | NPKIT_METRICS_FRESH, prom, &proc, comms, nc, done, n, err, sizeof err);
    for (size_t i = 0; i < nc && rc == 0; i++) {
      t->colls += comms[i].coll_records;
      t->p2ps += comms[i].p2p_records;
      t->untimed += comms[i].coll_dropped + comms[i].p2p_dropped;
      t->small += comms[i].coll_small + comms[i].p2p_small;
    }
    t->files += rc == 0;
  }
  if (rc != 0) fprintf(stderr, "npkit metrics: %s: %s\n", l->path, err);
  npkit_reader_done(r);
  npkit_metrics_ops_free(ops);
  npkit_metrics_prom_free(prom);
  return rc;
}

int npkit_cmd_metrics(int argc, char **argv) {
  const char *out = NULL;
  unsigned what = NPKIT_METRICS_INSPECTOR | NPKIT_METRICS_PROMETHEUS;
  uint64_t min_bytes = 0;
  const npkit_cli_option options[] = {
      {"-o", "--output", .value = &out, .nonempty = "output folder"},
      {"-f", "--format", .check = take_format, .to = &what},
      {"--min-bytes", "--min-bytes", .check = take_min_bytes, .to = &min_bytes},
  };
  const npkit_cli_spec spec = {"metrics", help, options, sizeof(options) / sizeof(options[0]), NULL, NULL};
  npkit_job job;
  int parsed = npkit_cli_open_job(&spec, argc, argv, &job, NULL);
  if (parsed != NPKIT_CLI_GO_ON) return parsed;
  if (out == NULL) {
    npkit_job_free(&job);
    npkit_cli_usage_error("metrics", "-o OUTDIR is required (the folder of the files)");
    return NPKIT_EXIT_USAGE;
  }
  if (mkdir(out, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "npkit metrics: %s: %s\n", out, strerror(errno));
    npkit_job_free(&job);
    return NPKIT_EXIT_FAIL;
  }
  for (size_t i = 0; i < job.n_warnings; i++) fprintf(stderr, "npkit metrics: warning: %s\n", job.warnings[i]);
  struct timeval tv;
  gettimeofday(&tv, NULL);
  uint64_t dump_us = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
  totals t = {0};
  int rc = NPKIT_EXIT_OK;
  npkit_straggler strag_store;
  const npkit_straggler *strag = (what & NPKIT_METRICS_PROMETHEUS) ? arrivals(&job, &strag_store) : NULL;
  for (uint32_t i = 0; i < job.n_logs; i++)
    if (one_log(&job, i, strag, out, what, min_bytes, dump_us, &t) != 0) rc = NPKIT_EXIT_FAIL;
  if (strag != NULL) npkit_straggler_free(&strag_store);
  fprintf(stderr, "npkit metrics: %s: %zu process%s, %llu collectives, %llu sends/receives\n", out, t.files,
          t.files == 1 ? "" : "es", (unsigned long long)t.colls, (unsigned long long)t.p2ps);
  if (t.untimed > 0)
    fprintf(stderr, "npkit metrics: %llu operations had no time (enqueued in groups, without GPU activity): counted "
                    "in coll_dropped_total and npkit_collectives_untimed_total\n", (unsigned long long)t.untimed);
  if (t.small > 0)
    fprintf(stderr, "npkit metrics: %llu operations of fewer than %llu bytes left out (--min-bytes): counted in "
                    "npkit_collectives_below_min_total and npkit_p2p_below_min_total\n",
            (unsigned long long)t.small, (unsigned long long)min_bytes);
  npkit_job_free(&job);
  return rc;
}
