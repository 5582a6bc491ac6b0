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
  uint64_t flows_ahead;    /* ids told ahead (npkit_sink_flow_ahead), in the same order */
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
static int64_t track_tid(npkit_cupti_render *g, npkit_sink *s, uint32_t device, uint32_t stream) {
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
  npkit_sink_track(s, pid, tid, name, NPKIT_TRACE_GPU_BAND + slot);
  return tid;
}

/* The NCCL call's part of args. */
static void call_args(const npkit_cupti_render *g, npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  if (x->ext_id != 0) npkit_sink_arg_uint(s, "ext_id", x->ext_id);
  if (ev->func == 0) {
    if (x->flags & NPKIT_GPU_CALL_LOST) npkit_sink_arg_str(s, "nccl_call", "(lost)");
    return;
  }
  npkit_sink_arg_str(s, "nccl_call", npkit_fn_name(ev->func));
  if (npkit_fn_moves_data(ev->func) || (x->flags & NPKIT_GPU_VIA_GROUP))
    npkit_sink_arg_uint(s, "nccl_bytes", x->call_bytes);
  if (x->comm != 0) {
    const npkit_comm_rec *c = npkit_reader_comm(g->r, x->comm);
    char label[64];
    if (c != NULL) {
      npkit_comm_label(label, sizeof label, c);
      npkit_sink_arg_str(s, "comm", label);
      npkit_sink_arg_hex(s, "comm_id", c->comm_id, 16);
      npkit_sink_arg_int(s, "comm_rank", c->rank);
      npkit_sink_arg_uint(s, "comm_nranks", (uint64_t)(c->nranks > 0 ? c->nranks : 0));
    } else {
      snprintf(label, sizeof label, "comm local %" PRIu32, x->comm);
      npkit_sink_arg_str(s, "comm", label);
    }
  }
  if (x->call_seq != NPKIT_NO_SEQ) npkit_sink_arg_uint(s, "seq", x->call_seq);
  if (x->group != 0) npkit_sink_arg_uint(s, "group", x->group);
  if (x->group_calls != 0) npkit_sink_arg_uint(s, "group_calls", x->group_calls);
  if (x->flags & NPKIT_GPU_GRAPH)
    npkit_sink_arg_str(s, "launched_by", "cudaGraphLaunch");
  else if (x->flags & NPKIT_GPU_VIA_GROUP)
    npkit_sink_arg_str(s, "launched_by", "ncclGroupEnd");
}

/* Bandwidth of the collective from GPU time, nccl-tests definitions (docs/metrics). */
static void bandwidth_args(const npkit_cupti_render *g, npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  if (!npkit_fn_moves_data(ev->func) || x->call_bytes == 0 || ev->end_ns <= ev->start_ns ||
      x->group_calls > 1)
    return;
  const npkit_comm_rec *c = x->comm != 0 ? npkit_reader_comm(g->r, x->comm) : NULL;
  double algbw = npkit_gbps((double)x->call_bytes, (double)(ev->end_ns - ev->start_ns));
  npkit_sink_arg_fixed(s, "algbw_gbps", algbw, 3);
  if (c != NULL && c->nranks > 0) npkit_sink_arg_fixed(s, "busbw_gbps", algbw * npkit_busbw_factor(ev->func, c->nranks), 3);
}

/* Whether the work gets an arrow from the NCCL call that launched it (drawn, and the call is in the log). */
static int has_flow(const npkit_event *ev) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  return !npkit_cupti_untimed(ev) && (x->flags & NPKIT_GPU_CALL_RECORDED) && ev->thread != 0 && x->call_ns != 0;
}

/* The arrow from the NCCL call (its thread's track, when it was made) to the work on the GPU. */
static void write_flow(npkit_cupti_render *g, npkit_sink *s, const npkit_event *ev, int64_t gpu_tid, uint64_t id) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  npkit_sink_head start = {.name = "ac2g", .cat = "ac2g", .ph = NPKIT_SINK_FLOW_START, .id = id,
                           .pid = g->fmt->ctx.pid, .tid = npkit_trace_tid(g->fmt->ctx.pid, ev->thread),
                           .has_ts = 1, .ts = npkit_trace_rel(&g->fmt->ctx, x->call_ns)};
  npkit_sink_begin(s, &start);
  npkit_sink_end(s);
  npkit_sink_head end = {.name = "ac2g", .cat = "ac2g", .ph = NPKIT_SINK_FLOW_END, .bind = 'e', .id = id,
                         .pid = g->fmt->ctx.pid, .tid = gpu_tid, .has_ts = 1,
                         .ts = npkit_trace_rel(&g->fmt->ctx, ev->start_ns)};
  npkit_sink_begin(s, &end);
  npkit_sink_end(s);
  g->stats.flows++;
}

static void kernel_args(npkit_sink *s, const npkit_ev_gpu *x) {
  uint64_t grid[3] = {x->x.kernel.grid_x, x->x.kernel.grid_y, x->x.kernel.grid_z};
  uint64_t block[3] = {x->x.kernel.block_x, x->x.kernel.block_y, x->x.kernel.block_z};
  npkit_sink_arg_uints(s, "grid", grid, 3);
  npkit_sink_arg_uints(s, "block", block, 3);
  npkit_sink_arg_uint(s, "registers_per_thread", x->x.kernel.registers);
  int64_t st = x->x.kernel.static_shared, dy = x->x.kernel.dynamic_shared;
  npkit_sink_arg_int(s, "shared_memory", st + dy);
  npkit_sink_arg_int(s, "static_shared_memory", st);
  npkit_sink_arg_int(s, "dynamic_shared_memory", dy);
}

static void copy_args(npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_gpu *x = &ev->u.gpu;
  npkit_sink_arg_uint(s, "bytes", x->x.copy.bytes);
  if (ev->kind == NPKIT_EV_CUPTI_MEMCPY) {
    npkit_sink_arg_str(s, "kind", npkit_cupti_copy_kind_name(x->x.copy.copy_kind));
    npkit_sink_arg_str(s, "src_kind", npkit_cupti_memory_kind_name(x->x.copy.src_kind));
    npkit_sink_arg_str(s, "dst_kind", npkit_cupti_memory_kind_name(x->x.copy.dst_kind));
    if (x->flags & NPKIT_GPU_PEER) {
      npkit_sink_arg_uint(s, "src_device", x->x.copy.src_device);
      npkit_sink_arg_uint(s, "dst_device", x->x.copy.dst_device);
    }
  } else {
    npkit_sink_arg_uint(s, "value", x->x.copy.value);
    npkit_sink_arg_str(s, "memory_kind", npkit_cupti_memory_kind_name(x->x.copy.dst_kind));
  }
  if (ev->end_ns > ev->start_ns)
    npkit_sink_arg_fixed(s, "bandwidth_gbps", npkit_gbps((double)x->x.copy.bytes, (double)(ev->end_ns - ev->start_ns)), 3);
}

int npkit_cupti_render_event(npkit_cupti_render *g, npkit_sink *s, const npkit_event *ev) {
  if (!npkit_ev_is_cupti(ev->kind)) return 0;
  const npkit_ev_gpu *x = &ev->u.gpu;
  if (npkit_cupti_untimed(ev)) {
    g->stats.untimed++;
    return 1;
  }
  int64_t tid = track_tid(g, s, x->device, x->stream);
  /* a kernel's name is the log's string: at most 1024 bytes of it, up to a NUL */
  char name[1025];
  npkit_sink_head h = {.ph = NPKIT_SINK_SLICE, .pid = g->fmt->ctx.pid, .tid = tid, .has_ts = 1,
                       .ts = npkit_trace_rel(&g->fmt->ctx, ev->start_ns), .has_dur = 1,
                       .dur = (int64_t)(ev->end_ns - ev->start_ns)};
  if (ev->kind == NPKIT_EV_CUPTI_KERNEL) {
    const npkit_log_string *kn = x->x.kernel.name ? npkit_reader_string(g->r, x->x.kernel.name) : NULL;
    size_t n = kn != NULL ? (kn->length < 1024 ? kn->length : 1024) : 0;
    if (n > 0) memcpy(name, kn->text, n);
    name[n] = '\0';
    h.name = n > 0 ? name : "(unnamed kernel)"; /* as before: a name that begins with a NUL shows empty */
    h.cat = "kernel";
    g->stats.kernels++;
  } else if (ev->kind == NPKIT_EV_CUPTI_MEMCPY) {
    snprintf(name, sizeof name, "Memcpy %s", npkit_cupti_copy_kind_name(x->x.copy.copy_kind));
    h.name = name;
    h.cat = "gpu_memcpy";
    g->stats.memcpys++;
  } else {
    h.name = "Memset";
    h.cat = "gpu_memset";
    g->stats.memsets++;
  }
  uint64_t flow = has_flow(ev) ? g->flow_base + ++g->flows : 0;
  h.flow_in = flow;
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
  npkit_sink_arg_uint(s, "device", x->device);
  npkit_sink_arg_uint(s, "stream", x->stream);
  npkit_sink_arg_uint(s, "correlation", x->correlation);
  if (ev->kind == NPKIT_EV_CUPTI_KERNEL)
    kernel_args(s, x);
  else
    copy_args(s, ev);
  if (x->graph_id != 0 || x->graph_node != 0) {
    npkit_sink_arg_uint(s, "graph_id", x->graph_id);
    npkit_sink_arg_uint(s, "graph_node", x->graph_node);
  }
  call_args(g, s, ev);
  if (ev->kind == NPKIT_EV_CUPTI_KERNEL) bandwidth_args(g, s, ev);
  npkit_sink_end(s);
  if (ev->end_ns > g->last_ns) g->last_ns = ev->end_ns;
  if (flow != 0) write_flow(g, s, ev, tid, flow);
  return 1;
}

/* A flow told ahead starts where write_flow's 's' event is: a call's middle (call_ns), except for
 * work replayed from a CUDA graph, whose call_ns is the capture's time inside the call. */
void npkit_cupti_render_ahead(npkit_cupti_render *g, npkit_sink *s, const npkit_event *ev) {
  if (!npkit_ev_is_cupti(ev->kind) || !has_flow(ev)) return;
  int64_t pid = g->fmt->ctx.pid;
  npkit_sink_flow_ahead(s, pid, npkit_trace_tid(pid, ev->thread), npkit_trace_rel(&g->fmt->ctx, ev->u.gpu.call_ns),
                        (ev->u.gpu.flags & NPKIT_GPU_GRAPH) == 0, g->flow_base + ++g->flows_ahead);
}

void npkit_cupti_render_finish(npkit_cupti_render *g, npkit_sink *s, npkit_cupti_render_stats *stats) {
  if (g == NULL) {
    if (stats != NULL) memset(stats, 0, sizeof *stats);
    return;
  }
  if (g->stats.untimed > 0) {
    npkit_sink_head h = {.name = "npkit untimed GPU activity", .cat = "npkit", .ph = NPKIT_SINK_INSTANT, .scope = 'p',
                         .pid = g->fmt->ctx.pid, .tid = -1, .has_ts = 1,
                         .ts = npkit_trace_rel(&g->fmt->ctx, g->last_ns ? g->last_ns : g->fmt->ctx.base_ns)};
    npkit_sink_begin(s, &h);
    npkit_sink_args(s);
    npkit_sink_arg_uint(s, "untimed", g->stats.untimed);
    npkit_sink_arg_str(s, "message", "GPU activity CUPTI could not time (start or end missing) is counted, not drawn");
    npkit_sink_end(s);
  }
  if (stats != NULL) *stats = g->stats;
}

void npkit_cupti_render_free(npkit_cupti_render *g) { free(g); }

/* ---- the trace source ---- */

static void *source_create(const npkit_log_reader *r, npkit_api_fmt *fmt) { return npkit_cupti_render_new(r, fmt); }
static int source_event(void *self, npkit_sink *s, const npkit_event *ev) { return npkit_cupti_render_event(self, s, ev); }
static void source_finish(void *self, npkit_sink *s) { npkit_cupti_render_finish(self, s, NULL); }
static void source_destroy(void *self) { npkit_cupti_render_free(self); }
static void source_ahead(void *self, npkit_sink *s, const npkit_event *ev) { npkit_cupti_render_ahead(self, s, ev); }

const npkit_trace_source npkit_cupti_trace_source = {
    "cupti", npkit_ev_is_cupti, source_create, source_event, NULL, source_finish, source_destroy, source_ahead};
