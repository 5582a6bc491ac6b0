/* The plugin renderer's bottom half (trace_plugin_int.h): contexts and their communicators, the
 * tracks of NCCL's channels and proxy lanes, and the JSON of slices and of NCCL's tasks.  Used by
 * trace_plugin.c (NCCL's events) and trace_plugin_join.c (the calls held for their task). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "nccl_names.h"
#include "trace_plugin_int.h"
#include "trace_tracks.h"

#define MIDDOT NPKIT_TRACE_MIDDOT
#define ARROW_R "\xe2\x86\x92"
#define ARROW_L "\xe2\x86\x90"
#define CHANNEL_BAND NPKIT_TRACE_CHANNEL_BAND
#define PROXY_BAND NPKIT_TRACE_PROXY_BAND

/* ---- contexts and their communicators ---- */

npkit_plugin_ctx *npkit_plugin_ctx_get(npkit_plugin_render *p, uint32_t id) {
  if (id == 0 || id >= NPKIT_PLUGIN_MAX_CTX) return NULL;
  if (id >= p->nctx) {
    size_t n = p->nctx; /* at most NPKIT_PLUGIN_MAX_CTX */
    if (NPKIT_GROW(p->ctx, n, (size_t)id + 1, 16) != 0) return NULL;
    memset(p->ctx + p->nctx, 0, (n - p->nctx) * sizeof *p->ctx);
    for (size_t i = p->nctx; i < n; i++) p->ctx[i].rank = p->ctx[i].nranks = -1;
    p->nctx = (uint32_t)n;
  }
  return &p->ctx[id];
}

uint32_t npkit_plugin_ctx_comm(npkit_plugin_render *p, uint32_t ctx) {
  npkit_plugin_ctx *x = npkit_plugin_ctx_get(p, ctx);
  return x != NULL ? x->comm1 : 0;
}

/* Only for the track names written at the end: a context may be bound late in the log. */
const char *npkit_plugin_ctx_label(npkit_plugin_render *p, uint32_t id) {
  npkit_plugin_ctx *x = npkit_plugin_ctx_get(p, id);
  if (x == NULL) return "NCCL comm ?";
  if (x->label[0] == '\0') {
    if (x->comm1 != 0)
      npkit_comm_label(x->label, sizeof x->label, &p->r->comms[x->comm1 - 1]);
    else if (x->nccl_id != 0)
      snprintf(x->label, sizeof x->label, "NCCL comm %08" PRIx64 " (rank %" PRId32 "/%" PRId32 ")",
               x->nccl_id >> 32, x->rank, x->nranks);
    else
      snprintf(x->label, sizeof x->label, "NCCL comm ctx %" PRIu32, id);
  }
  return x->label;
}

/* ---- event pieces ---- */

static void meta(npkit_plugin_render *p, npkit_sink *w, int64_t tid, const char *name, int64_t sort) {
  npkit_sink_track(w, p->fmt->ctx.pid, tid, name, sort);
}

/* A slice with its args open; close with npkit_sink_end. */
void npkit_plugin_slice_begin(npkit_plugin_render *p, npkit_sink *w, const char *name, const char *cat,
                        int64_t tid, uint64_t start_ns, uint64_t end_ns) {
  npkit_sink_head h = {.name = name, .cat = cat, .ph = NPKIT_SINK_SLICE, .pid = p->fmt->ctx.pid, .tid = tid,
                       .has_ts = 1, .ts = npkit_trace_rel(&p->fmt->ctx, start_ns), .has_dur = 1,
                       .dur = end_ns > start_ns ? (int64_t)(end_ns - start_ns) : 0};
  npkit_sink_begin(w, &h);
  npkit_sink_args(w);
}

void npkit_plugin_arg_str(npkit_sink *w, const char *key, const char *v, size_t n) { npkit_sink_arg_strn(w, key, v, n); }

void npkit_plugin_arg_int(npkit_sink *w, const char *key, int64_t v) { npkit_sink_arg_int(w, key, v); }

void npkit_plugin_arg_us(npkit_sink *w, const char *key, uint64_t from, uint64_t to) {
  npkit_sink_arg_us(w, key, to > from ? (int64_t)(to - from) : 0);
}

/* ---- tracks ---- */

static int64_t band_tid(npkit_plugin_render *p, int band, uint32_t idx) {
  return npkit_trace_band_tid(p->fmt->ctx.pid, band, idx);
}

/* Track of (ctx, channel) in the channel band; channel TRACK_GPU is the collectives track.
 * Tracks are named at the end, when every context has been bound to its communicator. */
int64_t npkit_plugin_channel_tid(npkit_plugin_render *p, uint32_t ctx, int channel) {
  for (uint32_t i = 0; i < p->nchan; i++)
    if (p->chan[i].ctx == ctx && p->chan[i].channel == channel) return band_tid(p, CHANNEL_BAND, i);
  if (p->nchan == NPKIT_TRACE_CHANNEL_TRACKS) {
    p->chan_shared_used = 1;
    return band_tid(p, CHANNEL_BAND, NPKIT_TRACE_CHANNEL_TRACKS);
  }
  p->chan[p->nchan] = (npkit_plugin_track){ctx, channel, 0, 0};
  return band_tid(p, CHANNEL_BAND, p->nchan++);
}

int64_t npkit_plugin_lane_tid(npkit_plugin_render *p, uint32_t ctx, int channel, int peer, int dir) {
  for (uint32_t i = 0; i < p->nlane; i++) {
    const npkit_plugin_track *t = &p->lane[i];
    if (t->ctx == ctx && t->channel == channel && t->peer == peer && t->dir == dir)
      return band_tid(p, PROXY_BAND, i);
  }
  if (p->nlane == NPKIT_TRACE_PROXY_TRACKS) {
    p->lane_shared_used = 1;
    return band_tid(p, PROXY_BAND, NPKIT_TRACE_PROXY_TRACKS);
  }
  p->lane[p->nlane] = (npkit_plugin_track){ctx, channel, peer, dir};
  return band_tid(p, PROXY_BAND, p->nlane++);
}

void npkit_plugin_name_tracks(npkit_plugin_render *p, npkit_sink *w) {
  char name[192];
  for (uint32_t i = 0; i < p->nchan; i++) {
    const npkit_plugin_track *t = &p->chan[i];
    int phases = t->channel >= TRACK_PHASES, ch = phases ? t->channel - TRACK_PHASES : t->channel;
    if (t->channel == TRACK_GPU)
      snprintf(name, sizeof name, "collectives (GPU) " MIDDOT " %s", npkit_plugin_ctx_label(p, t->ctx));
    else
      snprintf(name, sizeof name, "channel %d%s " MIDDOT " %s", ch, phases ? " phases" : "", npkit_plugin_ctx_label(p, t->ctx));
    /* a channel's phases right below it */
    meta(p, w, band_tid(p, CHANNEL_BAND, i), name,
         1000000 + (int64_t)(t->ctx % 1000) * 1000 + 2 * (ch + 1) + phases);
  }
  if (p->chan_shared_used)
    meta(p, w, band_tid(p, CHANNEL_BAND, NPKIT_TRACE_CHANNEL_TRACKS),
         "channels " MIDDOT " more communicators",
         1999999);
  for (uint32_t i = 0; i < p->nlane; i++) {
    const npkit_plugin_track *t = &p->lane[i];
    if (t->channel == TRACK_CTRL)
      snprintf(name, sizeof name, "proxy thread " MIDDOT " %s", npkit_plugin_ctx_label(p, t->ctx));
    else
      snprintf(name, sizeof name, "proxy ch %d %s %d " MIDDOT " %s", t->channel,
               t->dir ? "send " ARROW_R : "recv " ARROW_L, t->peer, npkit_plugin_ctx_label(p, t->ctx));
    meta(p, w, band_tid(p, PROXY_BAND, i), name,
         2000000 + (int64_t)(t->ctx % 1000) * 1000 + (t->channel + 2) * 2 + t->dir);
  }
  if (p->lane_shared_used)
    meta(p, w, band_tid(p, PROXY_BAND, NPKIT_TRACE_PROXY_TRACKS), "proxy " MIDDOT " more lanes",
         2999999);
}

/* Opens a metadata record `name` of context id's "collectives (GPU)" track, its args open with
 * the communicator's label; the caller adds the rest and closes it with npkit_sink_end. */
static void gpu_track_meta_begin(npkit_plugin_render *p, npkit_sink *w, const char *name, uint32_t id) {
  npkit_sink_head h = {.name = name, .ph = NPKIT_SINK_META, .pid = p->fmt->ctx.pid,
                       .tid = npkit_plugin_channel_tid(p, id, TRACK_GPU)};
  npkit_sink_begin(w, &h);
  npkit_sink_args(w);
  npkit_sink_arg_str(w, "comm", npkit_plugin_ctx_label(p, id));
}

/* Which profiler interface NCCL loaded for a communicator, and the events asked of it. */
static void write_profiler(npkit_plugin_render *p, npkit_sink *w, uint32_t id) {
  static const char *const names[16] = {"Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl",
                                        "KernelCh", "NetPlugin", "GroupApi", "CollApi", "P2pApi",
                                        "KernelLaunch", "CeColl", "CeSync", "CeBatch", "KernelPhase"};
  const npkit_plugin_ctx *x = &p->ctx[id];
  gpu_track_meta_begin(p, w, "nccl_profiler", id);
  npkit_sink_arg_uint(w, "abi", x->abi);
  const char *asked[16];
  size_t n = 0;
  for (int b = 0; b < 16; b++)
    if (x->mask & (1u << b)) asked[n++] = names[b];
  npkit_sink_arg_strs(w, "events", asked, n);
  npkit_sink_end(w);
}

/* How each communicator's GPU clock was mapped onto the host's (gpu_clock_map.h), as a metadata
 * event of its "collectives (GPU)" track: offset, drift and how far the mapped times may be off. */
void npkit_plugin_write_clocks(npkit_plugin_render *p, npkit_sink *w) {
  for (uint32_t id = 1; id < p->nctx; id++) {
    if (p->ctx[id].abi != 0) write_profiler(p, w, id);
    const npkit_ev_plugin_clock *c = &p->ctx[id].clock;
    if (c->samples == 0) continue;
    gpu_track_meta_begin(p, w, "gpu_clock", id);
    npkit_sink_arg_uint(w, "samples", c->samples);
    npkit_sink_arg_int(w, "offset_ns", c->offset_ns); /* host minus GPU */
    npkit_sink_arg_milli(w, "drift_ppm", c->drift_ppb);
    npkit_sink_arg_int(w, "max_error_ns", c->max_error_ns);
    npkit_sink_arg_int(w, "median_error_ns", c->median_error_ns);
    npkit_sink_arg_uint(w, "windows", c->windows);
    npkit_sink_arg_uint(w, "one_sided", c->one_sided);
    npkit_sink_arg_uint(w, "inconsistent", c->inconsistent);
    npkit_sink_end(w);
  }
}

/* ---- slices ---- */

int npkit_plugin_task_name(const npkit_plugin_task *t, char *buf, size_t len) {
  const char *fn = npkit_fn_short_name(t->fn);
  const char *replay = t->replay ? " (graph replay)" : "";
  if (t->algo[0] != '\0')
    return snprintf(buf, len, "%s %.*s/%.*s%s", fn, (int)sizeof t->algo, t->algo,
                    (int)sizeof t->proto, t->proto, replay);
  return snprintf(buf, len, "%s%s", fn, replay);
}

int npkit_plugin_task_span(const npkit_plugin_task *t, uint64_t *start, uint64_t *stop) {
  if (t->kch_gpu > 0) {
    *start = t->gpu_start;
    *stop = t->gpu_stop;
    return 1;
  }
  if (t->kch_cpu > 0) {
    *start = t->cpu_start;
    *stop = t->cpu_stop;
    return 0;
  }
  return -1;
}

void npkit_plugin_task_args(npkit_sink *w, const npkit_plugin_task *t) {
  npkit_sink_arg_str(w, "func", npkit_fn_short_name(t->fn));
  if (t->algo[0] != '\0') npkit_plugin_arg_str(w, "algorithm", t->algo, sizeof t->algo);
  if (t->symmetric) { /* the algorithm is the tail of the kernel variant's name */
    npkit_sink_arg_bool(w, "symmetric", 1);
  }
  if (t->proto[0] != '\0') npkit_plugin_arg_str(w, "protocol", t->proto, sizeof t->proto);
  if (!t->p2p) {
    npkit_sink_arg_uint(w, "nccl_seq", t->nccl_seq);
  }
  if (t->api_seq != NPKIT_NO_SEQ) {
    npkit_sink_arg_uint(w, "seq", t->api_seq);
  }
  if (t->user_tag != 0) {
    char tag[24];
    snprintf(tag, sizeof tag, "0x%" PRIx64, t->user_tag);
    npkit_sink_arg_str(w, "user_tag", tag);
  }
  if (t->replay) {
    npkit_sink_arg_bool(w, "graph_replay", 1);
    if (t->captured_seq != NPKIT_NO_SEQ) {
      npkit_sink_arg_uint(w, "captured_seq", t->captured_seq);
    }
  }
}

/* The task from its first channel's start to its last channel's stop. */
void npkit_plugin_gpu_slice(npkit_plugin_render *p, npkit_sink *w, npkit_plugin_task *t) {
  uint64_t start, stop;
  int timer = npkit_plugin_task_span(t, &start, &stop);
  if (t->gpu_written || timer < 0) return;
  t->gpu_written = 1;
  if (t->replay && t->captured_seq == NPKIT_NO_SEQ) { /* the captured call may have come since */
    const npkit_plugin_api *api = npkit_plugin_api_find(p->apis, t->api);
    if (api != NULL) t->captured_seq = api->call_seq;
  }
  char name[80];
  npkit_plugin_task_name(t, name, sizeof name);
  npkit_plugin_slice_begin(p, w, name, "nccl_gpu", npkit_plugin_channel_tid(p, t->ctx, TRACK_GPU), start, stop);
  npkit_plugin_task_args(w, t);
  npkit_plugin_arg_int(w, "channels", t->nch);
  npkit_plugin_arg_int(w, "channels_seen", t->kch_seen);
  npkit_sink_arg_uint(w, "count", t->count);
  /* host-timed channels (no GPU stamps) only say when NCCL's proxy saw them */
  npkit_plugin_arg_us(w, timer ? "gpu_time_us" : "reported_time_us", start, stop);
  if (timer && t->raw_stop >= t->raw_start && t->raw_start != 0) {
    npkit_sink_arg_uint(w, "gpu_clock_span_ns", t->raw_stop - t->raw_start); /* the same span on the GPU's own clock */
  }
  npkit_sink_end(w);
}

