#include "merge_trace.h"

#include "merge_collective.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "job.h"
#include "trace_render.h"
#include "trace_sink_json.h"
#include "trace_stacks.h"

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "unknown"
#endif

void npkit_merge_defaults(npkit_merge_options *o) {
  memset(o, 0, sizeof(*o));
  o->align = 1;
}

void npkit_merge_stats_free(npkit_merge_stats *st) {
  for (size_t i = 0; i < st->n_warnings; i++) free(st->warnings[i]);
  free(st->warnings);
  st->warnings = NULL;
  st->n_warnings = 0;
}

static int add_warning(npkit_merge_stats *st, const char *text) {
  if (NPKIT_GROW(st->warnings, st->cap_warnings, st->n_warnings + 1, 8) != 0) return -1;
  if ((st->warnings[st->n_warnings] = strdup(text)) == NULL) return -1;
  st->n_warnings++;
  return 0;
}

/* Trace pids: rank + 1 as in single-rank traces, unless two logs claim the same one. */
static int assign_pids(const npkit_job *job, const unsigned char *sel, int64_t *pid, npkit_merge_stats *st) {
  for (size_t i = 0; i < job->n_logs; i++) {
    if (!sel[i]) continue;
    const npkit_job_log *l = &job->logs[i];
    int64_t p = l->rank >= 0 && l->rank < 2000000 ? (int64_t)l->rank + 1 : 1 + (int64_t)((uint32_t)l->pid % 2000000u);
    for (int clash = 1; clash;) {
      clash = 0;
      for (size_t k = 0; k < i; k++)
        if (sel[k] && pid[k] == p) clash = 1;
      if (clash) {
        char msg[400];
        snprintf(msg, sizeof(msg), "%s: its process id in the trace is taken by another log (two logs of one rank?); "
                 "shown as pid %" PRId64, l->path, p + 2000000);
        if (add_warning(st, msg) != 0) return -1;
        p += 2000000;
      }
    }
    pid[i] = p;
  }
  return 0;
}

static void ranks_of_host(npkit_tree *w, const npkit_job *job, size_t h) {
  npkit_tree_begin_array(w);
  for (size_t i = 0; i < job->n_logs; i++)
    if (job->logs[i].host == h && job->logs[i].rank >= 0) npkit_tree_int(w, job->logs[i].rank);
  npkit_tree_end_array(w);
}

static void write_alignment(npkit_tree *w, const npkit_job *job, const npkit_merge_options *o) {
  npkit_tree_key(w, "clock_alignment");
  npkit_tree_begin_object(w);
  npkit_tree_kv_bool(w, "enabled", o->align);
  npkit_tree_kv_bool(w, "estimated", job->align_done);
  npkit_tree_key(w, "method");
  npkit_tree_string(w, "median of end-time differences of shared collectives (same communicator and sequence "
                       "number), outliers beyond 5 sigma (MAD) rejected; ranks on one host share its clock");
  npkit_tree_kv_string(w, "source", job->align_done ? (job->align_source == NPKIT_TIME_GPU ? "gpu" : "cpu") : "none");
  npkit_tree_kv_string(w, "reference_host", job->n_hosts ? job->hosts[0].name : "");
  npkit_tree_kv_uint(w, "cycle_checks", job->align.cycle_checks);
  npkit_tree_kv_uint(w, "cycle_failures", job->align.cycle_failures);
  npkit_tree_key(w, "hosts");
  npkit_tree_begin_array(w);
  for (size_t h = 0; h < job->n_hosts; h++) {
    const npkit_align_host *a = &job->hosts[h].align;
    npkit_tree_begin_object(w);
    npkit_tree_kv_string(w, "host", job->hosts[h].name);
    npkit_tree_key(w, "ranks");
    ranks_of_host(w, job, h);
    npkit_tree_kv_int(w, "offset_ns", a->offset_ns);
    npkit_tree_kv_double(w, "uncertainty_ns", a->status == NPKIT_ALIGN_OK ? a->uncertainty_ns : 0);
    npkit_tree_kv_double(w, "sigma_ns", a->sigma_ns);
    npkit_tree_kv_uint(w, "samples", a->samples);
    npkit_tree_kv_uint(w, "used", a->used);
    npkit_tree_kv_uint(w, "rejected", a->rejected);
    npkit_tree_key(w, "via");
    if (a->via >= 0) npkit_tree_string(w, job->hosts[a->via].name);
    else npkit_tree_null(w);
    npkit_tree_kv_string(w, "status", npkit_align_status_name(a->status));
    npkit_tree_end_object(w);
  }
  npkit_tree_end_array(w);
  npkit_tree_end_object(w);
}

/* A filter given as an array, one not given as null: returns whether the array was begun. */
static int filter_array(npkit_tree *w, const char *key, int given) {
  npkit_tree_key(w, key);
  if (given) npkit_tree_begin_array(w);
  else npkit_tree_null(w);
  return given;
}

static void write_filters(npkit_tree *w, const npkit_merge_filter *f) {
  npkit_tree_key(w, "filters");
  npkit_tree_begin_object(w);
  if (filter_array(w, "window_ns", f->has_window)) { /* an open end is null */
    if (f->window_start_ns == INT64_MIN) npkit_tree_null(w);
    else npkit_tree_int(w, f->window_start_ns);
    if (f->window_end_ns == INT64_MAX) npkit_tree_null(w);
    else npkit_tree_int(w, f->window_end_ns);
    npkit_tree_end_array(w);
  }
  if (filter_array(w, "ranks", f->has_ranks)) {
    for (size_t i = 0; i < f->n_ranges; i++) {
      npkit_tree_begin_array(w);
      npkit_tree_int(w, f->rank_lo[i]);
      npkit_tree_int(w, f->rank_hi[i]);
      npkit_tree_end_array(w);
    }
    npkit_tree_end_array(w);
  }
  if (f->has_collective) {
    npkit_tree_key(w, "collective");
    npkit_tree_begin_object(w);
    npkit_tree_kv_string(w, "comm", f->coll_comm);
    npkit_tree_key(w, "seq");
    npkit_tree_begin_array(w);
    npkit_tree_uint(w, f->coll_seq_lo);
    npkit_tree_uint(w, f->coll_seq_hi);
    npkit_tree_end_array(w);
    npkit_tree_kv_int(w, "context_ns", f->has_context ? f->context_ns : NPKIT_MERGE_CONTEXT_DEFAULT_NS);
    npkit_tree_end_object(w);
  }
  if (filter_array(w, "ops", f->has_ops)) {
    for (unsigned k = 1; k < NPKIT_FN_COUNT; k++)
      if (f->op[k]) npkit_tree_string(w, npkit_fn_name(k));
    npkit_tree_end_array(w);
  }
  npkit_tree_end_object(w);
}

/* One log's entry of otherData.logs: where it is in the trace, and its own summary. */
static void write_log_entry(npkit_tree *w, const npkit_job_log *l, int64_t pid, int64_t offset, uint64_t base) {
  npkit_tree_next_line(w);
  npkit_tree_begin_object(w);
  npkit_tree_kv_int(w, "trace_pid", pid);
  npkit_tree_kv_string(w, "path", l->path);
  npkit_tree_kv_int(w, "clock_offset_ns", offset);
  npkit_tree_key(w, "summary");
  npkit_render_summary(l->reader, w, base);
  npkit_tree_end_object(w);
}

typedef struct keep_ctx {
  const npkit_merge_filter *f;
  int64_t offset_ns;
  uint64_t base_ns;
} keep_ctx;

static int keeps(void *p, const npkit_event *ev) {
  const keep_ctx *k = p;
  return npkit_merge_keeps(k->f, ev, k->offset_ns, k->base_ns);
}

static int render_one(npkit_sink *sink, const npkit_job_log *l, const npkit_merge_options *o, const npkit_render_opts *ro,
                      npkit_merge_stats *st, char *err, size_t errlen) {
  npkit_log_reader *r = l->reader;
  npkit_render_stats rs;
  npkit_reader_rewind(r);
  st->events_in += r->n_events;
  int filtering = npkit_merge_filters_events(&o->filter);
  keep_ctx k = {&o->filter, ro->offset_ns, ro->base_ns};
  if (filtering) {
    uint64_t lo, hi;
    npkit_merge_log_window(&o->filter, ro->offset_ns, ro->base_ns, &lo, &hi);
    npkit_reader_filter(r, keeps, &k, lo, hi);
  }
  int rc = npkit_render_log(r, sink, ro, &rs, err, errlen);
  st->events_kept += filtering ? r->filter_kept : r->n_events; /* the renderer's last pass */
  npkit_reader_filter(r, NULL, NULL, 0, UINT64_MAX);
  npkit_sink_forget(sink); /* the next log's renderers intern their own */
  st->calls += rs.events;
  st->groups += rs.groups;
  npkit_reader_release(r); /* rendered: no cursor kept for the rest of the merge */
  return rc;
}

/* The top-level stackFrames of the merged trace: the nodes of every selected log with call stacks,
 * each with the trace pid its events were rendered with, so that the ids ("<pid>.<n>") of the
 * logs do not collide and every "sf" of a call resolves.  Written only when a log has stacks. */
static int write_stack_frames(npkit_sink *w, const npkit_job *job, const unsigned char *sel, const int64_t *pid,
                              char *err, size_t errlen) {
  int open = 0, rc = 0;
  for (size_t i = 0; i < job->n_logs && rc == 0; i++) {
    npkit_stack_fmt f;
    if (!sel[i]) continue;
    if (npkit_stack_fmt_init(&f, job->logs[i].reader, pid[i], NULL, err, errlen) != 0) {
      rc = -1;
      break;
    }
    if (f.n_nodes > 0) {
      if (!open) {
        npkit_sink_frames_begin(w);
        open = 1;
      }
      npkit_stack_fmt_write_nodes(&f, w);
    }
    npkit_stack_fmt_free(&f);
  }
  if (open) npkit_sink_frames_end(w); /* well formed also after an error */
  return rc;
}

/* The communicator --collective names, or UINT32_MAX with a message listing the job's. */
static uint32_t find_comm(const npkit_job *job, const char *ref, char *err, size_t errlen) {
  uint32_t c = npkit_job_find_comm(job, ref);
  if (c != UINT32_MAX) return c;
  int n = snprintf(err, errlen, "--collective: no communicator '%s' in the job; its communicators:", ref);
  for (uint32_t k = 0; k < job->n_comms && n > 0 && (size_t)n < errlen; k++) {
    char b[40];
    n += snprintf(err + n, errlen - (size_t)n, "%s %s (%" PRId32 " ranks)", k ? "," : "", npkit_job_comm_ref(job, k, b, sizeof b),
                  job->comms[k].nranks);
  }
  return UINT32_MAX;
}

/* The logs --ranks (and --collective: the communicator's members) selects, their full scan made (a job opened lazily identified them only); a log
 * whose scan fails is left out with a warning.  0 or -1 (memory). */
static int select_logs(npkit_job *job, const npkit_merge_filter *f, uint32_t comm, unsigned char *sel) {
  for (size_t i = 0; i < job->n_logs; i++) {
    char why[512];
    sel[i] = (unsigned char)npkit_merge_rank_selected(f, job->logs[i].rank);
    if (comm != UINT32_MAX) sel[i] = sel[i] && npkit_merge_log_in_comm(job, comm, i);
    if (sel[i] && npkit_job_complete(job, (uint32_t)i, why, sizeof why) != 0) {
      sel[i] = 0;
      if (npkit_job_warn(job, "skipped %s", why) != 0) return -1;
    }
  }
  return 0;
}

/* The logs whose collectives align the clocks: the selected ones and, on a host without any, its
 * first log (the job's logs are sorted by rank).  NULL when memory is short. */
static unsigned char *aligning_logs(const npkit_job *job, const unsigned char *sel) {
  unsigned char *need = malloc(job->n_logs ? job->n_logs : 1);
  unsigned char *host_done = calloc(job->n_hosts ? job->n_hosts : 1, 1);
  if (need == NULL || host_done == NULL) {
    free(need), free(host_done);
    return NULL;
  }
  for (size_t i = 0; i < job->n_logs; i++)
    if ((need[i] = sel[i])) host_done[job->logs[i].host] = 1;
  for (size_t i = 0; i < job->n_logs; i++)
    if (!host_done[job->logs[i].host]) need[i] = host_done[job->logs[i].host] = 1;
  free(host_done);
  return need;
}

int npkit_merge_write(char *const *paths, size_t n_paths, const npkit_merge_options *o, int fd, npkit_merge_stats *st,
                      char *err, size_t errlen) {
  npkit_job job = {0}; /* no recover hook */
  int rc = npkit_job_open(&job, paths, n_paths, err, errlen);
  if (rc == 0) rc = npkit_merge_write_job(&job, n_paths, o, fd, st, err, errlen);
  else memset(st, 0, sizeof(*st));
  npkit_job_free(&job);
  return rc;
}

int npkit_merge_write_job(npkit_job *job, size_t n_paths, const npkit_merge_options *o, int fd, npkit_merge_stats *st,
                          char *err, size_t errlen) {
  memset(st, 0, sizeof(*st));
  int rc = -1;
  unsigned char *sel = calloc(job->n_logs, 1);
  int64_t *pid = calloc(job->n_logs, sizeof(*pid));
  npkit_trace_writer tw;
  npkit_sink *w = NULL;
  int w_open = 0;
  if (sel == NULL || pid == NULL) goto oom;
  npkit_merge_options oo = *o; /* with --collective, the window its instances give */
  uint32_t comm = UINT32_MAX;
  if (o->filter.has_collective && (comm = find_comm(job, o->filter.coll_comm, err, errlen)) == UINT32_MAX) goto fail;
  if (select_logs(job, &o->filter, comm, sel) != 0) goto oom;
  /* the events matter to align several hosts, and to find the instances of --collective: those
   * of the selected logs, and of one log per host that has none selected, so that every host
   * keeps its offset */
  if ((o->align && job->n_hosts > 1) || comm != UINT32_MAX) {
    unsigned char *need = aligning_logs(job, sel);
    if (need == NULL) goto oom;
    rc = npkit_job_scan_collectives(job, need, err, errlen);
    free(need);
    if (rc != 0) goto fail;
  }
  if (npkit_job_align(job, o->align, 0) != 0) goto oom;
  int64_t coll_first = 0, coll_last = 0;
  if (comm != UINT32_MAX) {
    const npkit_merge_filter *f = &o->filter;
    int64_t found = npkit_merge_collective_span(job, comm, sel, f->coll_seq_lo, f->coll_seq_hi, &coll_first, &coll_last);
    if (found < 0) goto oom;
    if (found == 0) {
      snprintf(err, errlen, "no timed instance of %s:%" PRIu64 "-%" PRIu64 " on the selected ranks (%" PRIu64
               " collectives recorded on that communicator)", f->coll_comm, f->coll_seq_lo, f->coll_seq_hi,
               job->comms[comm].collectives);
      goto fail;
    }
  }
  for (size_t i = 0; i < job->n_warnings; i++)
    if (add_warning(st, job->warnings[i]) != 0) goto oom;
  st->skipped = n_paths - job->n_logs;
  st->hosts = job->n_hosts;
  st->aligned = job->align_done;
  uint64_t base = 0;
  for (size_t i = 0; i < job->n_logs; i++) {
    const npkit_job_log *l = &job->logs[i];
    if (!sel[i]) {
      st->skipped++;
      continue;
    }
    st->logs++;
    const npkit_align_host *a = &job->hosts[l->host].align;
    if (a->uncertainty_ns > st->max_uncertainty_ns) st->max_uncertainty_ns = a->uncertainty_ns;
    uint64_t b = l->clock_base_ns + (uint64_t)a->offset_ns;
    if (base == 0 || b < base) base = b;
  }
  if (st->logs == 0) {
    snprintf(err, errlen, comm != UINT32_MAX ? "no log of communicator %s matches --ranks" : "no log matches --ranks",
             o->filter.coll_comm);
    goto fail;
  }
  if (comm != UINT32_MAX) { /* the instances and their context, in trace time */
    int64_t ctx = o->filter.has_context ? o->filter.context_ns : NPKIT_MERGE_CONTEXT_DEFAULT_NS;
    oo.filter.has_window = 1;
    oo.filter.window_start_ns = coll_first - ctx - (int64_t)base;
    oo.filter.window_end_ns = coll_last + ctx - (int64_t)base;
  }
  if (assign_pids(job, sel, pid, st) != 0) goto oom;

  if (npkit_trace_writer_open(&tw, o->format, fd, base) != 0) {
    npkit_trace_writer_finish(&tw, NULL, err, errlen);
    goto oom;
  }
  w = npkit_trace_writer_sink(&tw);
  w_open = 1;
  char buf[32];
  npkit_sink_open(w);
  npkit_tree *t = npkit_sink_meta_begin(w);
  npkit_tree_begin_object(t);
  npkit_tree_kv_string(t, "tool", "npkit-preload");
  npkit_tree_kv_string(t, "version", NPKIT_VERSION_STRING);
  npkit_tree_kv_bool(t, "merged", 1);
  npkit_tree_kv_string(t, "clock", "CLOCK_REALTIME");
  npkit_tree_key(t, "base_ns");
  snprintf(buf, sizeof(buf), "%" PRIu64, base);
  npkit_tree_string(t, buf);
  npkit_tree_kv_uint(t, "ranks", st->logs);
  write_alignment(t, job, o);
  write_filters(t, &oo.filter);
  npkit_tree_key(t, "logs");
  npkit_tree_begin_array(t);
  for (size_t i = 0; i < job->n_logs; i++)
    if (sel[i]) write_log_entry(t, &job->logs[i], pid[i], job->hosts[job->logs[i].host].align.offset_ns, base);
  npkit_tree_end_array(t);
  npkit_tree_key(t, "warnings");
  npkit_tree_begin_array(t);
  for (size_t i = 0; i < st->n_warnings; i++) npkit_tree_string(t, st->warnings[i]);
  npkit_tree_end_array(t);
  npkit_tree_end_object(t);
  npkit_sink_meta_end(w);
  npkit_sink_events_begin(w);
  for (size_t i = 0; i < job->n_logs; i++) {
    if (!sel[i]) continue;
    npkit_render_opts opts = {pid[i], base, job->hosts[job->logs[i].host].align.offset_ns};
    if (render_one(w, &job->logs[i], &oo, &opts, st, err, errlen) != 0) goto fail;
  }
  npkit_sink_events_end(w);
  if (write_stack_frames(w, job, sel, pid, err, errlen) != 0) goto fail;
  npkit_sink_close(w);
  w_open = 0;
  rc = npkit_trace_writer_finish(&tw, &st->bytes, err, errlen);
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
fail:
  rc = -1;
out:
  if (w_open) npkit_trace_writer_finish(&tw, NULL, NULL, 0);
  free(sel);
  free(pid);
  return rc;
}
