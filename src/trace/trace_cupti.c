#include "trace_cupti.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_facts.h"
#include "nccl_names.h"
#include "trace_source.h"
#include "trace_tracks.h"

#define MIDDOT NPKIT_TRACE_MIDDOT
/* Room for one event: fixed keys, ~30 numbers, a communicator label and an escaped name. */
#define EVENT_ROOM (2048 + 6 * 1100)

typedef struct gpu_track {
  uint32_t device, stream;
} gpu_track;

struct npkit_cupti_render {
  const npkit_log_reader *r;
  const npkit_api_fmt *fmt;
  gpu_track tracks[NPKIT_TRACE_GPU_TRACKS];
  uint32_t ntracks;
  uint32_t last;           /* slot of the latest lookup: activity clusters on a stream */
  uint64_t flow_base;      /* flow ids: pid × 1e9 + n, unique across the ranks of a merged trace */
  uint64_t flows;
  npkit_cupti_render_stats stats;
  uint64_t last_ns;        /* latest end drawn, where the untimed count is shown */
};

const char *npkit_cupti_copy_kind_name(unsigned k) {
  /* CUpti_ActivityMemcpyKind */
  static const char *const names[] = {"?", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                      "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < sizeof names / sizeof names[0] ? names[k] : "?";
}

const char *npkit_cupti_memory_kind_name(unsigned k) {
  /* CUpti_ActivityMemoryKind */
  static const char *const names[] = {"unknown", "pageable", "pinned", "device",
                                      "array", "managed", "device_static", "managed_static"};
  return k < sizeof names / sizeof names[0] ? names[k] : "unknown";
}

npkit_cupti_render *npkit_cupti_render_new(const npkit_log_reader *r, const npkit_api_fmt *fmt) {
  npkit_cupti_render *g = calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  g->r = r;
  g->fmt = fmt;
  g->flow_base = (uint64_t)(fmt->ctx.pid > 0 ? fmt->ctx.pid : 0) * 1000000000ull;
  return g;
}


/* The tid of ev's stream; a stream seen for the first time gets its track named. */
static int64_t track_tid(npkit_cupti_render *g, npkit_json *w, uint32_t device, uint32_t stream) {
  int64_t pid = g->fmt->ctx.pid;
  if (g->last < g->ntracks && g->tracks[g->last].device == device && g->tracks[g->last].stream == stream)
    return npkit_trace_band_tid(pid, NPKIT_TRACE_GPU_BAND, g->last);
  for (uint32_t i = 0; i < g->ntracks; i++)
    if (g->tracks[i].device == device && g->tracks[i].stream == stream) {
      g->last = i;
      return npkit_trace_band_tid(pid, NPKIT_TRACE_GPU_BAND, i);
    }
  char name[96];
  uint32_t slot;
  if (g->ntracks < NPKIT_TRACE_GPU_TRACKS - 1) {
    slot = g->ntracks++;
    g->tracks[slot].device = device;
    g->tracks[slot].stream = stream;
    g->last = slot;
    snprintf(name, sizeof name, "GPU %" PRIu32 " " MIDDOT " stream %" PRIu32, device, stream);
  } else {
    slot = NPKIT_TRACE_GPU_TRACKS - 1; /* shared by all further streams */
    if (g->ntracks == NPKIT_TRACE_GPU_TRACKS) return npkit_trace_band_tid(pid, NPKIT_TRACE_GPU_BAND, slot);
    g->ntracks = NPKIT_TRACE_GPU_TRACKS;
    snprintf(name, sizeof name, "GPU streams %u+", NPKIT_TRACE_GPU_TRACKS);
  }
  int64_t tid = npkit_trace_band_tid(pid, NPKIT_TRACE_GPU_BAND, slot);
  npkit_trace_track_meta(w, pid, tid, name, NPKIT_TRACE_GPU_BAND + slot);
  return tid;
}


static char *put_double(char *p, const char *key, double v) {
  char buf[40];
  int n = snprintf(buf, sizeof buf, "%.3f", v);
  if (n <= 0 || (size_t)n >= sizeof buf) return p;
  p = npkit_fmt_str(p, key);
  memcpy(p, buf, (size_t)n);
  return p + n;
}

static char *put_times(const npkit_cupti_render *g, char *p, uint64_t start, uint64_t end) {
  NPKIT_PUT(p, ",\"ts\":");
  p = npkit_fmt_ts(p, npkit_trace_rel(&g->fmt->ctx, start));
  NPKIT_PUT(p, ",\"dur\":");
  return npkit_fmt_ts(p, (int64_t)(end - start));
}

/* The NCCL call's part of args. */
static char *put_call(const npkit_cupti_render *g, char *p, const npkit_event *ev) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  if (x->ext_id != 0) p = npkit_fmt_key_u64(p, ",\"ext_id\":", x->ext_id);
  if (ev->func == 0) {
    if (x->flags & NPKIT_GPU_CALL_LOST) NPKIT_PUT(p, ",\"nccl_call\":\"(lost)\"");
    return p;
  }
  NPKIT_PUT(p, ",\"nccl_call\":\"");
  p = npkit_fmt_str(p, npkit_fn_name(ev->func));
  *p++ = '"';
  if (npkit_fn_moves_data(ev->func) || (x->flags & NPKIT_GPU_VIA_GROUP))
    p = npkit_fmt_key_u64(p, ",\"nccl_bytes\":", x->call_bytes);
  if (x->comm != 0) {
    const npkit_comm_rec *c = npkit_reader_comm(g->r, x->comm);
    char label[64];
    if (c != NULL) {
      npkit_comm_label(label, sizeof label, c);
      NPKIT_PUT(p, ",\"comm\":\"");
      p = npkit_fmt_str(p, label);
      NPKIT_PUT(p, "\",\"comm_id\":\"0x");
      p = npkit_fmt_hex(p, c->comm_id, 16);
      *p++ = '"';
      NPKIT_PUT(p, ",\"comm_rank\":");
      p = npkit_fmt_i64(p, c->rank);
      p = npkit_fmt_key_u64(p, ",\"comm_nranks\":", (uint64_t)(c->nranks > 0 ? c->nranks : 0));
    } else {
      NPKIT_PUT(p, ",\"comm\":\"comm local ");
      p = npkit_fmt_u64(p, x->comm);
      *p++ = '"';
    }
  }
  if (x->call_seq != NPKIT_NO_SEQ) p = npkit_fmt_key_u64(p, ",\"seq\":", x->call_seq);
  if (x->group != 0) p = npkit_fmt_key_u64(p, ",\"group\":", x->group);
  if (x->group_calls != 0) p = npkit_fmt_key_u64(p, ",\"group_calls\":", x->group_calls);
  if (x->flags & NPKIT_GPU_GRAPH)
    NPKIT_PUT(p, ",\"launched_by\":\"cudaGraphLaunch\"");
  else if (x->flags & NPKIT_GPU_VIA_GROUP)
    NPKIT_PUT(p, ",\"launched_by\":\"ncclGroupEnd\"");
  return p;
}

/* Bandwidth of the collective from GPU time, nccl-tests definitions (docs/metrics). */
static char *put_bandwidth(const npkit_cupti_render *g, char *p, const npkit_event *ev) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  if (!npkit_fn_moves_data(ev->func) || x->call_bytes == 0 || ev->end_ns <= ev->start_ns ||
      x->group_calls > 1)
    return p;
  const npkit_comm_rec *c = x->comm != 0 ? npkit_reader_comm(g->r, x->comm) : NULL;
  double algbw = npkit_gbps((double)x->call_bytes, (double)(ev->end_ns - ev->start_ns));
  p = put_double(p, ",\"algbw_gbps\":", algbw);
  if (c != NULL && c->nranks > 0) p = put_double(p, ",\"busbw_gbps\":", algbw * npkit_busbw_factor(ev->func, c->nranks));
  return p;
}

static void write_flow(npkit_cupti_render *g, npkit_json *w, const npkit_event *ev, int64_t gpu_tid) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  uint64_t id = g->flow_base + ++g->flows;
  npkit_json_element(w);
  char *p = npkit_json_reserve(w, 512);
  NPKIT_PUT(p, "\n{\"name\":\"ac2g\",\"cat\":\"ac2g\",\"ph\":\"s\",\"id\":");
  p = npkit_fmt_u64(p, id);
  NPKIT_PUT(p, ",\"pid\":");
  p = npkit_fmt_i64(p, g->fmt->ctx.pid);
  NPKIT_PUT(p, ",\"tid\":");
  p = npkit_fmt_i64(p, npkit_trace_tid(g->fmt->ctx.pid, ev->thread));
  NPKIT_PUT(p, ",\"ts\":");
  p = npkit_fmt_ts(p, npkit_trace_rel(&g->fmt->ctx, x->call_ns));
  NPKIT_PUT(p, "}");
  npkit_json_commit(w, p);
  npkit_json_element(w);
  p = npkit_json_reserve(w, 512);
  NPKIT_PUT(p, "\n{\"name\":\"ac2g\",\"cat\":\"ac2g\",\"ph\":\"f\",\"bp\":\"e\",\"id\":");
  p = npkit_fmt_u64(p, id);
  NPKIT_PUT(p, ",\"pid\":");
  p = npkit_fmt_i64(p, g->fmt->ctx.pid);
  NPKIT_PUT(p, ",\"tid\":");
  p = npkit_fmt_i64(p, gpu_tid);
  NPKIT_PUT(p, ",\"ts\":");
  p = npkit_fmt_ts(p, npkit_trace_rel(&g->fmt->ctx, ev->start_ns));
  NPKIT_PUT(p, "}");
  npkit_json_commit(w, p);
  g->stats.flows++;
}

static char *put_kernel(const npkit_cupti_render *g, char *p, const npkit_event *ev) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  const npkit_log_string *name = x->x.kernel.name ? npkit_reader_string(g->r, x->x.kernel.name) : NULL;
  NPKIT_PUT(p, "\n{\"name\":\"");
  if (name != NULL && name->length > 0)
    p = npkit_fmt_escaped(p, name->text, name->length < 1024 ? name->length : 1024);
  else
    NPKIT_PUT(p, "(unnamed kernel)");
  NPKIT_PUT(p, "\",\"cat\":\"kernel\",\"ph\":\"X\"");
  return p;
}

static char *put_kernel_args(char *p, const npkit_ev_gpu *x) {
  p = npkit_fmt_key_u64(p, ",\"grid\":[", x->x.kernel.grid_x);
  p = npkit_fmt_key_u64(p, ",", x->x.kernel.grid_y);
  p = npkit_fmt_key_u64(p, ",", x->x.kernel.grid_z);
  p = npkit_fmt_key_u64(p, "],\"block\":[", x->x.kernel.block_x);
  p = npkit_fmt_key_u64(p, ",", x->x.kernel.block_y);
  p = npkit_fmt_key_u64(p, ",", x->x.kernel.block_z);
  p = npkit_fmt_key_u64(p, "],\"registers_per_thread\":", x->x.kernel.registers);
  int64_t st = x->x.kernel.static_shared, dy = x->x.kernel.dynamic_shared;
  NPKIT_PUT(p, ",\"shared_memory\":");
  p = npkit_fmt_i64(p, st + dy);
  NPKIT_PUT(p, ",\"static_shared_memory\":");
  p = npkit_fmt_i64(p, st);
  NPKIT_PUT(p, ",\"dynamic_shared_memory\":");
  return npkit_fmt_i64(p, dy);
}

static char *put_copy_args(char *p, const npkit_event *ev) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  p = npkit_fmt_key_u64(p, ",\"bytes\":", x->x.copy.bytes);
  if (ev->kind == NPKIT_EV_CUPTI_MEMCPY) {
    NPKIT_PUT(p, ",\"kind\":\"");
    p = npkit_fmt_str(p, npkit_cupti_copy_kind_name(x->x.copy.copy_kind));
    NPKIT_PUT(p, "\",\"src_kind\":\"");
    p = npkit_fmt_str(p, npkit_cupti_memory_kind_name(x->x.copy.src_kind));
    NPKIT_PUT(p, "\",\"dst_kind\":\"");
    p = npkit_fmt_str(p, npkit_cupti_memory_kind_name(x->x.copy.dst_kind));
    *p++ = '"';
    if (x->flags & NPKIT_GPU_PEER) {
      p = npkit_fmt_key_u64(p, ",\"src_device\":", x->x.copy.src_device);
      p = npkit_fmt_key_u64(p, ",\"dst_device\":", x->x.copy.dst_device);
    }
  } else {
    p = npkit_fmt_key_u64(p, ",\"value\":", x->x.copy.value);
    NPKIT_PUT(p, ",\"memory_kind\":\"");
    p = npkit_fmt_str(p, npkit_cupti_memory_kind_name(x->x.copy.dst_kind));
    *p++ = '"';
  }
  if (ev->end_ns > ev->start_ns)
    p = put_double(p, ",\"bandwidth_gbps\":", npkit_gbps((double)x->x.copy.bytes, (double)(ev->end_ns - ev->start_ns)));
  return p;
}

int npkit_cupti_render_event(npkit_cupti_render *g, npkit_json *w, const npkit_event *ev) {
  if (!npkit_ev_is_cupti(ev->kind)) return 0;
  const npkit_ev_gpu *x = &ev->u.gpu;
  if (npkit_cupti_untimed(ev)) {
    g->stats.untimed++;
    return 1;
  }
  int64_t tid = track_tid(g, w, x->device, x->stream);
  npkit_json_element(w);
  char *p = npkit_json_reserve(w, EVENT_ROOM);
  if (ev->kind == NPKIT_EV_CUPTI_KERNEL) {
    p = put_kernel(g, p, ev);
    g->stats.kernels++;
  } else if (ev->kind == NPKIT_EV_CUPTI_MEMCPY) {
    NPKIT_PUT(p, "\n{\"name\":\"Memcpy ");
    p = npkit_fmt_str(p, npkit_cupti_copy_kind_name(x->x.copy.copy_kind));
    NPKIT_PUT(p, "\",\"cat\":\"gpu_memcpy\",\"ph\":\"X\"");
    g->stats.memcpys++;
  } else {
    NPKIT_PUT(p, "\n{\"name\":\"Memset\",\"cat\":\"gpu_memset\",\"ph\":\"X\"");
    g->stats.memsets++;
  }
  NPKIT_PUT(p, ",\"pid\":");
  p = npkit_fmt_i64(p, g->fmt->ctx.pid);
  NPKIT_PUT(p, ",\"tid\":");
  p = npkit_fmt_i64(p, tid);
  p = put_times(g, p, ev->start_ns, ev->end_ns);
  p = npkit_fmt_key_u64(p, ",\"args\":{\"device\":", x->device);
  p = npkit_fmt_key_u64(p, ",\"stream\":", x->stream);
  p = npkit_fmt_key_u64(p, ",\"correlation\":", x->correlation);
  if (ev->kind == NPKIT_EV_CUPTI_KERNEL)
    p = put_kernel_args(p, x);
  else
    p = put_copy_args(p, ev);
  if (x->graph_id != 0 || x->graph_node != 0) {
    p = npkit_fmt_key_u64(p, ",\"graph_id\":", x->graph_id);
    p = npkit_fmt_key_u64(p, ",\"graph_node\":", x->graph_node);
  }
  p = put_call(g, p, ev);
  if (ev->kind == NPKIT_EV_CUPTI_KERNEL) p = put_bandwidth(g, p, ev);
  NPKIT_PUT(p, "}}");
  npkit_json_commit(w, p);
  if (ev->end_ns > g->last_ns) g->last_ns = ev->end_ns;
  if ((x->flags & NPKIT_GPU_CALL_RECORDED) && ev->thread != 0 && x->call_ns != 0) write_flow(g, w, ev, tid);
  return 1;
}

void npkit_cupti_render_finish(npkit_cupti_render *g, npkit_json *w, npkit_cupti_render_stats *stats) {
  if (g == NULL) {
    if (stats != NULL) memset(stats, 0, sizeof *stats);
    return;
  }
  if (g->stats.untimed > 0) {
    npkit_trace_process_instant(w, g->fmt->ctx.pid,
                                npkit_trace_rel(&g->fmt->ctx, g->last_ns ? g->last_ns : g->fmt->ctx.base_ns),
                                "npkit untimed GPU activity");
    npkit_trace_args_begin(w);
    npkit_json_kv_uint(w, "untimed", g->stats.untimed);
    npkit_json_kv_string(w, "message",
                         "GPU activity CUPTI could not time (start or end missing) is counted, not drawn");
    npkit_trace_args_end(w);
  }
  if (stats != NULL) *stats = g->stats;
}

void npkit_cupti_render_free(npkit_cupti_render *g) { free(g); }

/* ---- the trace source ---- */

static void *source_create(const npkit_log_reader *r, npkit_api_fmt *fmt) { return npkit_cupti_render_new(r, fmt); }
static int source_event(void *self, npkit_sink *s, const npkit_event *ev) { return npkit_cupti_render_event(self, npkit_sink_json(s), ev); }
static void source_finish(void *self, npkit_sink *s) { npkit_cupti_render_finish(self, npkit_sink_json(s), NULL); }
static void source_destroy(void *self) { npkit_cupti_render_free(self); }

const npkit_trace_source npkit_cupti_trace_source = {
    "cupti", npkit_ev_is_cupti, source_create, source_event, NULL, source_finish, source_destroy};
