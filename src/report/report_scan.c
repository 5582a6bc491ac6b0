#include "report_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_names.h"
#include "report_plugin_gpu.h"

#define NCCL_SUCCESS 0
#define NCCL_IN_PROGRESS 7
/* Streams are numbered per log by (device, CUPTI stream id); more distinct ones share the last. */
#define MAX_STREAMS 4096

typedef struct plugin_ctx {
  uint32_t ctx;
  int32_t nranks;
} plugin_ctx;

typedef struct scan_state {
  npkit_report *rep;
  npkit_rep_log *log;
  const npkit_log_reader *r;
  const npkit_scan_comms *map;
  size_t last_pos;          /* position in r->comms of the latest lookup */
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

/* Position of a local communicator id in r->comms (sorted by local_id), SIZE_MAX if unknown. */
static size_t comm_pos(scan_state *s, uint32_t local_id) {
  const npkit_log_reader *r = s->r;
  if (s->last_pos < r->n_comms && r->comms[s->last_pos].local_id == local_id) return s->last_pos;
  size_t lo = 0, hi = r->n_comms;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->comms[mid].local_id == local_id) return s->last_pos = mid;
    if (r->comms[mid].local_id < local_id) lo = mid + 1; else hi = mid;
  }
  return SIZE_MAX;
}

static int rooted(unsigned fn) {
  return fn == NPKIT_FN_Broadcast || fn == NPKIT_FN_Bcast || fn == NPKIT_FN_Reduce || fn == NPKIT_FN_Gather ||
         fn == NPKIT_FN_Scatter;
}

static int oom(scan_state *s, char *err, size_t errlen) {
  snprintf(err, errlen, "%s: out of memory while analysing", s->r->path);
  return -1;
}

/* ---- NCCL calls ---- */

static int api_event(scan_state *s, const npkit_event *ev, char *err, size_t errlen) {
  const npkit_ev_api *a = &ev->u.api;
  unsigned fn = ev->func;
  s->log->api_calls++;
  if (!npkit_fn_moves_data(fn)) return 0;
  int ok = a->result == NCCL_SUCCESS || (a->result == NCCL_IN_PROGRESS && (a->flags & NPKIT_API_ASYNC));
  if (!ok) {
    s->log->failed_calls++;
    return 0;
  }
  s->log->data_calls++;
  size_t pos = a->comm != 0 ? comm_pos(s, a->comm) : SIZE_MAX;
  uint32_t comm = pos != SIZE_MAX ? s->map->comm[pos] : NPKIT_SCAN_NONE;
  uint32_t member = pos != SIZE_MAX ? s->map->member[pos] : NPKIT_SCAN_NONE;
  int32_t nranks = pos != SIZE_MAX ? s->r->comms[pos].nranks : -1;
  /* Inside a group the call only enqueues (the group's end runs it), and a non-blocking
   * communicator returns at once: their CPU time is not the collective's. */
  int timed = (a->flags & (NPKIT_API_IN_GROUP | NPKIT_API_ASYNC)) == 0 && ev->end_ns >= ev->start_ns;
  if (!timed) s->log->untimed_calls++;

  uint32_t row_index = NPKIT_INST_NO_ROW;
  if (s->rep->opts.analyses) {
    npkit_table_key k = {
      .fn = fn, .comm = comm == NPKIT_SCAN_NONE ? NPKIT_TABLE_NO_COMM : comm, .bytes = a->bytes,
      .count = a->count, .datatype = a->datatype, .redop = a->redop, .root = rooted(fn) ? a->peer : -1,
      .tag = (a->flags & NPKIT_API_CONFIG) ? a->user_tag : 0,
    };
    npkit_table_row *row = npkit_table_row_for(&s->rep->table, &k, nranks);
    if (row == NULL) return oom(s, err, errlen);
    row_index = (uint32_t)(row - s->rep->table.rows);
    row->calls++;
    if (!timed)
      row->untimed++;
    else if (npkit_quantile_add(&row->cpu, ev->end_ns - ev->start_ns) != 0)
      return oom(s, err, errlen);
  }
  if (npkit_fn_class_of(fn) == NPKIT_CLASS_coll && a->seq != NPKIT_NO_SEQ && comm != NPKIT_SCAN_NONE) {
    s->rep->comms[comm].collectives++;
    if (member != NPKIT_SCAN_NONE &&
        npkit_inst_put_call(s->rep->inst, member, a->seq, fn, row_index, ev->start_ns, ev->end_ns, timed) < 0)
      return oom(s, err, errlen);
  }
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
  if ((g->flags & NPKIT_GPU_UNTIMED) || ev->end_ns < ev->start_ns || ev->start_ns == 0) {
    s->log->gpu_untimed++;
    return 0;
  }
  s->log->gpu_events++;
  uint8_t cls = ev->kind == NPKIT_EV_CUPTI_KERNEL ? kernel_class(s, ev) : NPKIT_KCLASS_MEMORY;
  if (s->rep->opts.analyses) {
    if (s->n_kernels == s->cap_kernels) {
      size_t cap = s->cap_kernels ? 2 * s->cap_kernels : 1024;
      npkit_kernel *nk = realloc(s->kernels, cap * sizeof(*nk));
      if (nk == NULL) return oom(s, err, errlen);
      s->kernels = nk;
      s->cap_kernels = cap;
    }
    s->kernels[s->n_kernels++] = (npkit_kernel){(int64_t)ev->start_ns, (int64_t)ev->end_ns,
                                                stream_index(s, g->device, g->stream), cls};
  }
  /* A kernel attributed to one collective call times that collective on the GPU.  Not a CUDA
   * graph replay: every replay carries the sequence number of the one call that was captured. */
  if (ev->kind == NPKIT_EV_CUPTI_KERNEL && npkit_fn_class_of(ev->func) == NPKIT_CLASS_coll && ev->func != NPKIT_FN_NONE &&
      g->call_seq != NPKIT_NO_SEQ && g->comm != 0 && !(g->flags & NPKIT_GPU_GRAPH)) {
    size_t pos = comm_pos(s, g->comm);
    uint32_t member = pos != SIZE_MAX ? s->map->member[pos] : NPKIT_SCAN_NONE;
    if (member != NPKIT_SCAN_NONE &&
        npkit_inst_put_gpu(s->rep->inst, member, g->call_seq, ev->func, ev->start_ns, ev->end_ns) < 0)
      return oom(s, err, errlen);
  }
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
    if (s->n_ctxs == s->cap_ctxs) {
      size_t cap = s->cap_ctxs ? 2 * s->cap_ctxs : 8;
      plugin_ctx *nc = realloc(s->ctxs, cap * sizeof(*nc));
      if (nc == NULL) return oom(s, err, errlen);
      s->ctxs = nc;
      s->cap_ctxs = cap;
    }
    s->ctxs[s->n_ctxs++] = (plugin_ctx){ev->u.plugin_comm.ctx, ev->u.plugin_comm.nranks};
  } else if (ev->kind == NPKIT_EV_PLUGIN_TASK && s->rep->opts.analyses) {
    const npkit_ev_plugin_task *t = &ev->u.plugin_task;
    int32_t nranks = ctx_nranks(s, t->ctx);
    char algo[sizeof(t->algo) + 1], proto[sizeof(t->proto) + 1];
    memcpy(algo, t->algo, sizeof(t->algo));
    algo[sizeof(t->algo)] = '\0';
    memcpy(proto, t->proto, sizeof(t->proto));
    proto[sizeof(t->proto)] = '\0';
    if ((t->flags & NPKIT_PTASK_P2P) || ev->func == NPKIT_FN_NONE || nranks <= 0 || algo[0] == '\0') return 0;
    uint64_t bytes = npkit_message_bytes(ev->func, t->count, t->datatype, nranks);
    if (npkit_table_note_task(&s->rep->table, ev->func, nranks, bytes, algo, proto) != 0) return oom(s, err, errlen);
  }
  if (ev->kind == NPKIT_EV_PLUGIN_STATS) {
    /* cumulative: the latest is the total */
    if (ev->u.plugin_stats.lost > s->log->plugin_lost) s->log->plugin_lost = ev->u.plugin_stats.lost;
  }
  return 0;
}

static int is_plugin(unsigned kind) {
  return kind >= NPKIT_EV_PLUGIN_INIT && kind <= NPKIT_EV_PLUGIN_LAST;
}

/* ---- the pass ---- */

/* The plugin's losses become one more source in the log's list. */
static void plugin_loss(npkit_rep_log *l) {
  if (l->plugin_events == 0 && l->plugin_lost == 0) return;
  if (l->n_loss == NPKIT_REPORT_MAX_SOURCES) return;
  npkit_rep_loss *p = &l->loss[l->n_loss++];
  p->source = NPKIT_REPORT_SRC_PLUGIN;
  p->recorded = l->plugin_events;
  p->dropped = l->plugin_lost;
}

int npkit_report_scan(npkit_report *rep, uint32_t log, npkit_log_reader *r, const npkit_scan_comms *map, char *err,
                      size_t errlen) {
  scan_state *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    snprintf(err, errlen, "%s: out of memory while analysing", r->path);
    return -1;
  }
  *s = (scan_state){.rep = rep, .log = &rep->logs[log], .r = r, .map = map, .last_pos = SIZE_MAX,
                    .last_stream = UINT32_MAX};
  int rc = 0;
  if (rep->opts.analyses && (s->pgpu = npkit_plugin_gpu_new(rep)) == NULL) {
    free(s);
    snprintf(err, errlen, "%s: out of memory while analysing", r->path);
    return -1;
  }
  npkit_reader_rewind(r);
  for (;;) {
    const npkit_event *ev;
    int k = npkit_reader_next(r, &ev, err, errlen);
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
    case NPKIT_EV_NPKIT_DUMP_READ:
      s->log->npkit_reads++;
      if (ev->u.npkit_read.flags & NPKIT_NPK_READ_SHARED) s->log->npkit_shared_reads++;
      break;
    default:
      if (is_plugin(ev->kind)) rc = plugin_event(s, ev, err, errlen);
      else s->log->other_events++; /* kinds this build does not analyse */
    }
    if (rc != 0) break;
  }
  plugin_loss(s->log);
  if (rc == 0 && npkit_plugin_gpu_finish(s->pgpu) != 0) rc = oom(s, err, errlen);
  npkit_plugin_gpu_free(s->pgpu);
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
  return rc;
}
