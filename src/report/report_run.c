/* npkit_report_run(): the job (every log opened once), one streaming pass per log, then the analyses. */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_model.h"
#include "report_scan.h"
#include "report_steps.h"

void npkit_report_defaults(npkit_report_options *o) {
  o->threshold_ns = NPKIT_REPORT_DEFAULT_THRESHOLD_NS;
  o->align = 1;
  o->timeline = 0;
  o->top = NPKIT_REPORT_DEFAULT_TOP;
}

/* ---- reading the logs: `-j N` ----
 * The scan of a log turns its events into the job's shared tables (rows, instances, hang
 * records, call sites) in log order, and that order is the report's: it stays on this thread.
 * What takes the time besides, reading and unpacking the events, is done ahead by N - 1 threads,
 * each taking the next log not yet taken, at most AHEAD_PER_THREAD logs per thread ahead of the
 * scan, each held as its events (about 2 MB for 20,000) in a ring of buffers that are kept, not
 * given back to the system and faulted in again for every log.  A log of more than
 * AHEAD_MAX_EVENTS events is read by the scan itself from its file.  The report is the same bytes
 * at any N. */
#define AHEAD_PER_THREAD 2
#define AHEAD_MAX_EVENTS (1u << 20)

typedef struct ahead_pool {
  npkit_report *rep;
  npkit_scan_events *slots; /* the ring: log i in slots[i % window] */
  unsigned char *ready;     /* per log */
  uint32_t next, scanned, window;
  int stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} ahead_pool;

static void *ahead_worker(void *arg) {
  ahead_pool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->next < p->rep->job.n_logs && p->next >= p->scanned + p->window)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->stop || p->next >= p->rep->job.n_logs) break;
    uint32_t i = p->next++;
    pthread_mutex_unlock(&p->mu);
    npkit_scan_read_ahead(p->rep->job.logs[i].reader, &p->rep->logs[i].overlap, &p->slots[i % p->window],
                          AHEAD_MAX_EVENTS);
    pthread_mutex_lock(&p->mu);
    p->ready[i] = 1;
    pthread_cond_broadcast(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static int read_logs_ahead(npkit_report *rep, unsigned threads, char *err, size_t errlen) {
  uint32_t n = (uint32_t)rep->job.n_logs;
  ahead_pool p = {.rep = rep, .window = threads * AHEAD_PER_THREAD};
  p.slots = calloc(p.window, sizeof *p.slots);
  p.ready = calloc(n, 1);
  pthread_t *th = calloc(threads, sizeof *th);
  unsigned started = 0;
  int rc = 0;
  if (p.slots == NULL || p.ready == NULL || th == NULL || pthread_mutex_init(&p.mu, NULL) != 0) {
    free(p.slots), free(p.ready), free(th);
    return 1; /* read them here instead */
  }
  pthread_cond_init(&p.cv, NULL);
  for (unsigned t = 0; t < threads; t++)
    if (pthread_create(&th[t], NULL, ahead_worker, &p) == 0) started++;
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    const npkit_scan_events *a = NULL;
    if (started > 0) {
      pthread_mutex_lock(&p.mu);
      while (!p.ready[i]) pthread_cond_wait(&p.cv, &p.mu);
      pthread_mutex_unlock(&p.mu);
      const npkit_scan_events *s = &p.slots[i % p.window];
      a = s->rc <= 0 ? s : NULL; /* 1: too many events, or no memory: from the file */
    }
    rc = npkit_report_scan(rep, i, a, err, errlen);
    pthread_mutex_lock(&p.mu);
    p.scanned = i + 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
  }
  pthread_mutex_lock(&p.mu);
  p.stop = 1;
  pthread_cond_broadcast(&p.cv);
  pthread_mutex_unlock(&p.mu);
  for (unsigned t = 0; t < started; t++) pthread_join(th[t], NULL);
  for (uint32_t i = 0; i < p.window; i++) free(p.slots[i].ev);
  pthread_cond_destroy(&p.cv);
  pthread_mutex_destroy(&p.mu);
  free(p.slots), free(p.ready), free(th);
  return rc != 0 ? -1 : 0;
}

static int read_logs(npkit_report *rep, char *err, size_t errlen) {
  unsigned jobs = rep->opts.jobs > 0 ? rep->opts.jobs : 1;
  int rc = 1;
  if (jobs > 1 && rep->job.n_logs > 1) rc = read_logs_ahead(rep, jobs - 1, err, errlen);
  if (rc < 0) return -1;
  for (uint32_t i = 0; rc == 1 && i < rep->job.n_logs; i++)
    if (npkit_report_scan(rep, i, NULL, err, errlen) != 0) return -1;
  npkit_callsites_finish(&rep->sites);
  return 0;
}

/* ---- cross-rank analyses ---- */

static int stragglers(npkit_report *rep) {
  if (npkit_straggler_init(&rep->strag, rep->job.n_logs, rep->job.n_comms, rep->opts.threshold_ns, rep->opts.top) != 0)
    return -1;
  return npkit_straggler_job(&rep->strag, &rep->job);
}

/* A GPU-timed instance gives its call's table row a GPU sample. */
static int gpu_sample(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  npkit_table *t = p;
  (void)seq;
  (void)n;
  if (!e->gpu || e->row >= t->n) return 0;
  return npkit_quantile_add(&t->rows[e->row].gpu, e->end_ns - e->start_ns) != 0 ? -1 : 0;
}

static int analyse(npkit_report *rep, char *err, size_t errlen) {
  npkit_job *job = &rep->job;
  if (npkit_job_align(job, rep->opts.align, 1) != 0) goto oom;
  for (uint32_t m = 0; m < job->n_members; m++)
    if (npkit_inst_each(job->inst, m, gpu_sample, &rep->table) != 0) goto oom;
  if (npkit_report_link_use(rep) != 0) goto oom;
  npkit_table_finish(&rep->table); /* row indices change here */
  if (stragglers(rep) != 0) goto oom;
  uint32_t *logged = malloc((job->n_comms ? job->n_comms : 1) * sizeof(*logged));
  if (logged == NULL) goto oom;
  for (size_t c = 0; c < job->n_comms; c++) logged[c] = job->comms[c].n_members;
  int rc = npkit_curves_build(&rep->curves, &rep->table, logged, job->n_comms);
  free(logged);
  if (rc != 0) goto oom;
  if (npkit_tags_summarize(&rep->table, &rep->tags, &rep->n_tags) < 0) goto oom;
  for (size_t i = 0; i < job->n_logs; i++) rep->gpu_ranks += rep->logs[i].has_gpu != 0;
  if (npkit_report_hangs(rep) != 0) goto oom;
  if (npkit_report_diagnose(rep) != 0) goto oom;
  if (rep->opts.timeline && npkit_timeline_build(rep, err, errlen) != 0) return -1;
  return 0;
oom:
  snprintf(err, errlen, "out of memory while analysing");
  return -1;
}

int npkit_report_run_job(npkit_report *rep, npkit_job *job, const npkit_report_options *o, char *err, size_t errlen) {
  memset(rep, 0, sizeof(*rep));
  rep->opts = *o;
  rep->job = *job;
  memset(job, 0, sizeof(*job));
  npkit_table_init(&rep->table);
  npkit_callsites_init(&rep->sites);
  rep->logs = calloc(rep->job.n_logs ? rep->job.n_logs : 1, sizeof(*rep->logs));
  if (rep->logs == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < rep->job.n_logs; i++) npkit_mark_overlap_init(&rep->logs[i].overlap);
  if (npkit_hang_scan_init(&rep->hscan, rep->job.n_members, rep->job.n_logs) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (read_logs(rep, err, errlen) != 0) return -1;
  int rc = analyse(rep, err, errlen);
  for (size_t i = 0; i < rep->job.n_logs; i++) npkit_reader_done(rep->job.logs[i].reader); /* all read */
  return rc;
}

int npkit_report_run(npkit_report *rep, char *const *paths, size_t n_paths, const npkit_report_options *o,
                     char *err, size_t errlen) {
  npkit_job job = {0}; /* no recover hook */
  if (npkit_job_open(&job, paths, n_paths, err, errlen) != 0) {
    npkit_job_free(&job);
    memset(rep, 0, sizeof(*rep));
    return -1;
  }
  return npkit_report_run_job(rep, &job, o, err, errlen);
}

void npkit_report_free(npkit_report *rep) {
  for (size_t i = 0; rep->logs != NULL && i < rep->job.n_logs; i++) {
    npkit_gpu_rank_free(&rep->logs[i].gpu);
    npkit_mark_overlap_free(&rep->logs[i].overlap);
    npkit_rep_machine_free(&rep->logs[i].machine);
  }
  free(rep->logs);
  npkit_job_free(&rep->job);
  npkit_table_free(&rep->table);
  free(rep->tags);
  npkit_straggler_free(&rep->strag);
  npkit_curves_free(&rep->curves);
  npkit_callsites_free(&rep->sites);
  npkit_timeline_free(&rep->timeline);
  npkit_hang_scan_free(&rep->hscan);
  npkit_hangs_free(&rep->hangs);
  npkit_findings_free(&rep->findings);
  memset(rep, 0, sizeof(*rep));
}
