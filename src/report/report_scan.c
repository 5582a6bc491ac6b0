#include "report_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_facts.h"
#include "grow.h"
#include "nccl_names.h"
#include "report_plugin_gpu.h"

/* Streams are numbered per log by (device, CUPTI stream id); more distinct ones share the last. */
#define MAX_STREAMS 4096

typedef struct plugin_ctx {
  uint32_t ctx;
  int32_t nranks;
} plugin_ctx;

typedef struct scan_state {
  npkit_report *rep;
  uint32_t log_index;
  npkit_rep_log *log;
  const npkit_log_reader *r;
  size_t last_pos;          /* position in r->comms of the latest lookup */
  int sites;                /* the log's stacks feed the call-site table */
  int overlap_done;         /* the marks' overlap was computed by the thread that read the log ahead */
  /* GPU activity of this log, for the overlap and idle analyses */
  npkit_kernel *kernels;
  size_t n_kernels, cap_kernels;
  uint64_t streams[MAX_STREAMS]; /* (device << 32 | stream) of each stream index */
  uint32_t n_streams, last_stream;
  uint32_t last_name;       /* the latest kernel name id and its class */
  uint8_t last_class;
  /* profiler-plugin communicators: ctx → size */
  plugin_ctx *ctxs;
  size_t n_ctxs, cap_ctxs;
  npkit_plugin_gpu *pgpu;   /* GPU times from NCCL's kernel-channel events; NULL without analyses */
} scan_state;

/* Position of a local communicator id in r->comms, SIZE_MAX if unknown. */
static size_t comm_pos(scan_state *s, uint32_t local_id) {
  return local_id != 0 ? npkit_reader_comm_pos(s->r, local_id, &s->last_pos) : SIZE_MAX;
}

static int oom(scan_state *s, char *err, size_t errlen) {
  snprintf(err, errlen, "%s: out of memory while analysing", s->r->path);
  return -1;
}

/* ---- NCCL calls ---- */

/* The log's member of the communicator with local id `local` (NPKIT_JOB_NONE if unknown). */
static uint32_t member_of(scan_state *s, uint32_t local) {
  size_t pos = comm_pos(s, local);
  return pos != SIZE_MAX ? s->rep->job.logs[s->log_index].member_of[pos] : NPKIT_JOB_NONE;
}

static int api_event(scan_state *s, const npkit_event *ev, char *err, size_t errlen) {
  const npkit_ev_api *a = &ev->u.api;
  unsigned fn = ev->func;
  s->log->api_calls++;
  if (npkit_fn_class_of(fn) == NPKIT_CLASS_coll) npkit_hang_scan_call(&s->rep->hscan, member_of(s, a->comm), ev);
  if (!npkit_fn_moves_data(fn)) return 0;
  if (!npkit_api_succeeded(ev)) {
    s->log->failed_calls++;
    return 0;
  }
  s->log->data_calls++;
  const npkit_job_log *jl = &s->rep->job.logs[s->log_index];
  size_t pos = comm_pos(s, a->comm);
  uint32_t comm = pos != SIZE_MAX ? jl->comm_of[pos] : NPKIT_JOB_NONE;
  uint32_t member = pos != SIZE_MAX ? jl->member_of[pos] : NPKIT_JOB_NONE;
  int32_t nranks = pos != SIZE_MAX ? s->r->comms[pos].nranks : -1;
  int timed = npkit_api_timed(ev);
  if (!timed) s->log->untimed_calls++;

  npkit_table_key k = {
    .fn = fn, .comm = comm == NPKIT_JOB_NONE ? NPKIT_TABLE_NO_COMM : comm, .bytes = a->bytes,
    .count = a->count, .datatype = a->datatype, .redop = a->redop, .root = npkit_fn_has_root(fn) ? a->peer : -1,
    .tag = (a->flags & NPKIT_API_CONFIG) ? a->user_tag : 0,
  };
  npkit_table_row *row = npkit_table_row_for(&s->rep->table, &k, nranks);
  if (row == NULL) return oom(s, err, errlen);
  uint32_t row_index = (uint32_t)(row - s->rep->table.rows);
  row->calls++;
  if (!timed)
    row->untimed++;
  else if (npkit_quantile_add(&row->cpu, ev->end_ns - ev->start_ns) != 0)
    return oom(s, err, errlen);
  if (npkit_job_collective(&s->rep->job, s->log_index, ev, pos, row_index) != 0) return oom(s, err, errlen);
  if (npkit_plugin_gpu_call(s->pgpu, ev, member, row_index) != 0) return oom(s, err, errlen);
  return 0;
}

/* ---- GPU activity ---- */

static uint32_t stream_index(scan_state *s, uint32_t device, uint32_t stream) {
  uint64_t key = (uint64_t)device << 32 | stream;
  if (s->last_stream < s->n_streams && s->streams[s->last_stream] == key) return s->last_stream;
  for (uint32_t i = 0; i < s->n_streams; i++)
    if (s->streams[i] == key) return s->last_stream = i;
  if (s->n_streams == MAX_STREAMS) return MAX_STREAMS - 1;
  s->streams[s->n_streams] = key;
  return s->last_stream = s->n_streams++;
}

static uint8_t kernel_class(scan_state *s, const npkit_event *ev) {
  uint32_t id = ev->u.gpu.x.kernel.name;
  if (id != 0 && id == s->last_name) return s->last_class;
  const npkit_log_string *name = id != 0 ? npkit_reader_string(s->r, id) : NULL;
  uint8_t cls;
  if (name != NULL)
    cls = (uint8_t)npkit_kernel_class_of(name->text);
  else /* no name: a kernel attributed to an NCCL call is NCCL's */
    cls = ev->func != NPKIT_FN_NONE ? NPKIT_KCLASS_COMM : NPKIT_KCLASS_COMPUTE;
  s->last_name = id;
  s->last_class = cls;
  return cls;
}

static int gpu_event(scan_state *s, const npkit_event *ev, char *err, size_t errlen) {
  const npkit_ev_gpu *g = &ev->u.gpu;
  if (npkit_cupti_untimed(ev)) {
    s->log->gpu_untimed++;
    return 0;
  }
  s->log->gpu_events++;
  uint8_t cls = ev->kind == NPKIT_EV_CUPTI_KERNEL ? kernel_class(s, ev) : NPKIT_KCLASS_MEMORY;
  if (NPKIT_GROW(s->kernels, s->cap_kernels, s->n_kernels + 1, 1024) != 0) return oom(s, err, errlen);
  s->kernels[s->n_kernels++] = (npkit_kernel){(int64_t)ev->start_ns, (int64_t)ev->end_ns,
                                              stream_index(s, g->device, g->stream), cls};
  if (ev->kind == NPKIT_EV_CUPTI_KERNEL &&
      npkit_job_collective(&s->rep->job, s->log_index, ev, comm_pos(s, g->comm), NPKIT_INST_NO_ROW) != 0)
    return oom(s, err, errlen);
  return 0;
}

/* ---- profiler plugin ---- */

static int32_t ctx_nranks(const scan_state *s, uint32_t ctx) {
  for (size_t i = 0; i < s->n_ctxs; i++)
    if (s->ctxs[i].ctx == ctx) return s->ctxs[i].nranks;
  return -1;
}

static int plugin_event(scan_state *s, const npkit_event *ev, char *err, size_t errlen) {
  s->log->plugin_events++;
  if (ev->kind == NPKIT_EV_PLUGIN_TASK && npkit_plugin_gpu_task(s->pgpu, ev) != 0) return oom(s, err, errlen);
  if (ev->kind == NPKIT_EV_PLUGIN_KERNEL_CH && npkit_plugin_gpu_channel(s->pgpu, ev) != 0) return oom(s, err, errlen);
  if (ev->kind == NPKIT_EV_PLUGIN_API && npkit_plugin_gpu_api(s->pgpu, ev) != 0) return oom(s, err, errlen);
  if (ev->kind == NPKIT_EV_PLUGIN_INIT) {
    if (NPKIT_GROW(s->ctxs, s->cap_ctxs, s->n_ctxs + 1, 8) != 0) return oom(s, err, errlen);
    s->ctxs[s->n_ctxs++] = (plugin_ctx){ev->u.plugin_comm.ctx, ev->u.plugin_comm.nranks};
  } else if (ev->kind == NPKIT_EV_PLUGIN_TASK) {
    const npkit_ev_plugin_task *t = &ev->u.plugin_task;
    int32_t nranks = ctx_nranks(s, t->ctx);
    char algo[sizeof(t->algo) + 1], proto[sizeof(t->proto) + 1];
    memcpy(algo, t->algo, sizeof(t->algo));
    algo[sizeof(t->algo)] = '\0';
    memcpy(proto, t->proto, sizeof(t->proto));
    proto[sizeof(t->proto)] = '\0';
    if ((t->flags & NPKIT_PTASK_P2P) || ev->func == NPKIT_FN_NONE || nranks <= 0 || algo[0] == '\0') return 0;
    uint64_t bytes = npkit_message_bytes(ev->func, t->count, t->datatype, nranks);
    if (npkit_table_note_task(&s->rep->table, ev->func, nranks, bytes, algo, proto, t->nchannels) != 0)
      return oom(s, err, errlen);
  }
  if (ev->kind == NPKIT_EV_PLUGIN_STATS) {
    /* cumulative: the latest is the total */
    if (ev->u.plugin_stats.lost > s->log->plugin_lost) s->log->plugin_lost = ev->u.plugin_stats.lost;
  }
  return 0;
}

/* ---- the pass ---- */

/* The plugin's losses become one more source in the log's list. */
static void plugin_loss(const npkit_rep_log *l, npkit_job_log *jl) {
  if (l->plugin_events == 0 && l->plugin_lost == 0) return;
  if (jl->n_loss == NPKIT_JOB_MAX_SOURCES) return;
  npkit_job_loss *p = &jl->loss[jl->n_loss++];
  p->source = NPKIT_REPORT_SRC_PLUGIN;
  p->recorded = l->plugin_events;
  p->dropped = l->plugin_lost;
}

/* The call-site table and the marks' overlap see every event too. */
static int extras_event(scan_state *s, const npkit_event *ev) {
  if (s->sites && npkit_callsites_event(&s->rep->sites, ev) != 0) return -1;
  return s->overlap_done ? 0 : npkit_mark_overlap_event(&s->log->overlap, ev);
}

/* The marks' overlap of a log read ahead: it is the log's alone, so the reading thread computes it
 * (sorting every call's span is the scan's largest part after unpacking). */
static void overlap_ahead(npkit_log_reader *r, npkit_mark_overlap *o, npkit_scan_events *a) {
  for (size_t i = 0; i < a->n; i++)
    if (npkit_mark_overlap_event(o, &a->ev[i]) != 0) {
      a->overlap = -1;
      return;
    }
  a->overlap = npkit_mark_overlap_finish(o, r) == 0 ? 1 : -1;
}

void npkit_scan_read_ahead(npkit_log_reader *r, npkit_mark_overlap *o, npkit_scan_events *a, size_t max_events) {
  a->n = 0;
  a->rc = 0;
  a->overlap = 0;
  a->err[0] = '\0';
  if (r->n_events > max_events) {
    a->rc = 1;
    return;
  }
  npkit_reader_rewind(r);
  for (;;) {
    const npkit_event *ev;
    int k = npkit_reader_next(r, &ev, a->err, sizeof a->err);
    if (k <= 0) {
      a->rc = k;
      break;
    }
    if (a->n == a->cap) {
      size_t cap = a->cap ? 2 * a->cap : 4096;
      npkit_event *g = realloc(a->ev, cap * sizeof *g);
      if (g == NULL) { /* the main thread reads it from the file */
        a->rc = 1;
        break;
      }
      a->ev = g;
      a->cap = cap;
    }
    a->ev[a->n++] = *ev;
  }
  npkit_reader_release(r);
  if (a->rc == 0) overlap_ahead(r, o, a); /* not after an error: the scan stops at it */
}

int npkit_report_scan(npkit_report *rep, uint32_t log, const npkit_scan_events *ahead, char *err, size_t errlen) {
  npkit_log_reader *r = rep->job.logs[log].reader;
  scan_state *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    snprintf(err, errlen, "%s: out of memory while analysing", r->path);
    return -1;
  }
  *s = (scan_state){.rep = rep, .log_index = log, .log = &rep->logs[log], .r = r, .last_pos = SIZE_MAX,
                    .last_stream = UINT32_MAX};
  int rc = 0;
  char why[512];
  if ((s->pgpu = npkit_plugin_gpu_new(rep)) == NULL) {
    free(s);
    snprintf(err, errlen, "%s: out of memory while analysing", r->path);
    return -1;
  }
  if (npkit_rep_machine_load(&s->log->machine, r, why, sizeof why) != 0 && npkit_job_warn(&rep->job, "%s", why) != 0)
    rc = oom(s, err, errlen);
  s->sites = npkit_callsites_begin_log(&rep->sites, r, why, sizeof why) == 0;
  if (!s->sites && npkit_job_warn(&rep->job, "%s", why) != 0) rc = oom(s, err, errlen);
  s->overlap_done = ahead != NULL && ahead->overlap != 0;
  if (s->overlap_done && ahead->overlap < 0) rc = oom(s, err, errlen);
  if (ahead == NULL) npkit_reader_rewind(r);
  for (size_t next = 0; rc == 0;) {
    const npkit_event *ev;
    int k;
    if (ahead == NULL) {
      k = npkit_reader_next(r, &ev, err, errlen);
    } else if (next < ahead->n) {
      ev = &ahead->ev[next++];
      k = 1;
    } else {
      k = ahead->rc;
      if (k < 0) snprintf(err, errlen, "%s", ahead->err);
    }
    if (k <= 0) {
      rc = k;
      break;
    }
    if (ev->start_ns != 0 && (s->log->first_ns == 0 || ev->start_ns < s->log->first_ns)) s->log->first_ns = ev->start_ns;
    if (ev->end_ns > s->log->last_ns) s->log->last_ns = ev->end_ns;
    switch (ev->kind) {
    case NPKIT_EV_API:
      rc = api_event(s, ev, err, errlen);
      break;
    case NPKIT_EV_CUPTI_KERNEL:
    case NPKIT_EV_CUPTI_MEMCPY:
    case NPKIT_EV_CUPTI_MEMSET:
      rc = gpu_event(s, ev, err, errlen);
      break;
    case NPKIT_EV_MARK_BEGIN:
    case NPKIT_EV_MARK_END:
    case NPKIT_EV_MARK_INSTANT:
      s->log->marks++;
      break;
    case NPKIT_EV_INFLIGHT:
      if (npkit_hang_scan_item(&rep->hscan, log, member_of(s, ev->u.inflight.comm), ev) != 0) rc = oom(s, err, errlen);
      break;
    case NPKIT_EV_FLIGHT:
      npkit_hang_scan_flight(&rep->hscan, log, ev);
      break;
    case NPKIT_EV_MACHINE_GPU:
    case NPKIT_EV_MACHINE_PORT:
    case NPKIT_EV_MACHINE_CPU:
      if (npkit_rep_machine_event(&s->log->machine, ev) != 0) rc = oom(s, err, errlen);
      break;
    case NPKIT_EV_NPKIT_DUMP_READ:
      s->log->npkit_reads++;
      if (ev->u.npkit_read.flags & NPKIT_DUMP_READ_SHARED)
        s->log->npkit_shared_reads++;
      break;
    default:
      if (npkit_ev_is_plugin(ev->kind)) rc = plugin_event(s, ev, err, errlen);
      else s->log->other_events++; /* kinds this build does not analyse */
    }
    if (rc == 0 && extras_event(s, ev) != 0) rc = oom(s, err, errlen);
  }
  if (s->sites) npkit_callsites_end_log(&rep->sites);
  if (rc == 0 && !s->overlap_done && npkit_mark_overlap_finish(&s->log->overlap, r) != 0) rc = oom(s, err, errlen);
  plugin_loss(s->log, &rep->job.logs[log]);
  if (rc == 0 && npkit_plugin_gpu_finish(s->pgpu) != 0) rc = oom(s, err, errlen);
  npkit_plugin_gpu_free(s->pgpu);
  if (rc == 0 && npkit_job_log_read(&rep->job, log) != 0) rc = oom(s, err, errlen);
  if (rc == 0 && s->n_kernels > 0) {
    if (npkit_gpu_analyse(s->kernels, s->n_kernels, &s->log->gpu) != 0) {
      rc = oom(s, err, errlen);
    } else {
      s->log->has_gpu = 1;
      for (size_t i = 0; i < s->log->gpu.n_streams; i++) { /* indices back to CUDA's numbers */
        npkit_stream_idle *st = &s->log->gpu.streams[i];
        uint64_t key = s->streams[st->stream < s->n_streams ? st->stream : 0];
        st->device = (uint32_t)(key >> 32);
        st->stream = (uint32_t)key;
      }
    }
  }
  free(s->kernels);
  free(s->ctxs);
  free(s);
  /* scanned: only the HTML view's timeline reads events again (it rewinds); the other views
   * read the tables, so the file is closed */
  if (rep->opts.timeline) npkit_reader_release(r);
  else npkit_reader_done(r);
  return rc;
}
