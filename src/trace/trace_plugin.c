/* The plugin renderer (trace_plugin.h): contexts and their communicators, the tracks and slices
 * of NCCL's own events, and the records that came before their task. */
#include "trace_plugin.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_names.h"
#include "trace_plugin_int.h"

#define MIDDOT "\xc2\xb7"
#define ARROW_R "\xe2\x86\x92"
#define ARROW_L "\xe2\x86\x90"
#define CHANNEL_BAND 700
#define PROXY_BAND 900
#define TRACK_GPU (-1)  /* channel value of a communicator's "collectives (GPU)" track */
#define TRACK_PHASES 256 /* + channel: the track of a channel's phases (NCCL 2.31+) */
#define TRACK_CTRL (-2) /* channel value of a communicator's proxy-thread lane */

int npkit_plugin_kind(unsigned kind) {
  return kind >= NPKIT_EV_PLUGIN_INIT && kind <= NPKIT_EV_PLUGIN_LAST;
}

npkit_plugin_render *npkit_plugin_render_new(const npkit_log_reader *r, npkit_api_fmt *fmt) {
  npkit_plugin_render *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->r = r;
  p->fmt = fmt;
  p->calls = calloc(NPKIT_PLUGIN_PENDING, sizeof *p->calls);
  p->tasks = calloc(NPKIT_PLUGIN_TASKS, sizeof *p->tasks);
  p->buckets = malloc(NPKIT_PL_BUCKETS * sizeof *p->buckets);
  p->comms = calloc(r->n_comms > 0 ? r->n_comms : 1, sizeof *p->comms);
  p->held = calloc(NPKIT_PLUGIN_HELD, sizeof *p->held);
  p->hbuckets = malloc(NPKIT_PL_HBUCKETS * sizeof *p->hbuckets);
  p->apis = npkit_pl_api_new();
  if (p->calls == NULL || p->tasks == NULL || p->buckets == NULL || p->comms == NULL ||
      p->held == NULL || p->hbuckets == NULL || p->apis == NULL) {
    npkit_plugin_render_free(p);
    return NULL;
  }
  for (uint32_t i = 0; i < NPKIT_PL_BUCKETS; i++) p->buckets[i] = -1;
  for (uint32_t i = 0; i < NPKIT_PL_HBUCKETS; i++) p->hbuckets[i] = -1;
  return p;
}

void npkit_plugin_render_free(npkit_plugin_render *p) {
  if (p == NULL) return;
  npkit_plugin_join_free(p);
  free(p->comms);
  free(p->calls);
  free(p->tasks);
  free(p->buckets);
  free(p->held);
  free(p->hbuckets);
  npkit_pl_api_free(p->apis);
  free(p->ctx);
  free(p);
}

/* ---- contexts and their communicators ---- */

static npkit_pl_ctx *ctx_get(npkit_plugin_render *p, uint32_t id) {
  if (id == 0 || id >= NPKIT_PL_MAX_CTX) return NULL;
  if (id >= p->nctx) {
    uint32_t n = p->nctx ? p->nctx : 16;
    while (n <= id) n *= 2;
    npkit_pl_ctx *x = realloc(p->ctx, (size_t)n * sizeof *x);
    if (x == NULL) return NULL;
    memset(x + p->nctx, 0, (size_t)(n - p->nctx) * sizeof *x);
    for (uint32_t i = p->nctx; i < n; i++) x[i].rank = x[i].nranks = -1;
    p->ctx = x;
    p->nctx = n;
  }
  return &p->ctx[id];
}

uint32_t npkit_plugin_ctx_comm(npkit_plugin_render *p, uint32_t ctx) {
  npkit_pl_ctx *x = ctx_get(p, ctx);
  return x != NULL ? x->comm1 : 0;
}

/* Only for the track names written at the end: a context may be bound late in the log. */
static const char *ctx_label(npkit_plugin_render *p, uint32_t id) {
  npkit_pl_ctx *x = ctx_get(p, id);
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

/* The communicator NCCL was creating when it initialised the plugin: an unbound one with the same
 * rank and size (when NCCL says them) registered right after the init (its creating call returned
 * after it), else the latest registered before (a non-blocking creation). */
static void on_init(npkit_plugin_render *p, const npkit_event *ev) {
  const npkit_ev_plugin_comm *c = &ev->u.plugin_comm;
  npkit_pl_ctx *x = ctx_get(p, c->ctx);
  if (x == NULL) return;
  x->rank = c->rank;
  x->nranks = c->nranks;
  x->nccl_id = c->nccl_comm_id;
  x->abi = c->abi;
  x->mask = c->mask;
  if (x->comm1 != 0) return; /* the same context twice: keep the first binding */
  size_t after = SIZE_MAX, before = SIZE_MAX;
  for (size_t i = 0; i < p->r->n_comms; i++) {
    const npkit_comm_rec *rc = &p->r->comms[i];
    if (p->comms[i].ctx != 0 || (c->rank >= 0 && rc->rank != c->rank) ||
        (c->nranks >= 0 && rc->nranks != c->nranks))
      continue;
    if (rc->create_ns >= ev->start_ns) {
      if (after == SIZE_MAX || rc->create_ns < p->r->comms[after].create_ns) after = i;
    } else if (before == SIZE_MAX || rc->create_ns > p->r->comms[before].create_ns) {
      before = i;
    }
  }
  size_t pick = after != SIZE_MAX ? after : before;
  if (pick == SIZE_MAX) return;
  p->comms[pick].ctx = c->ctx;
  x->comm1 = (uint32_t)pick + 1;
}

/* ---- JSON pieces ---- */

static void meta(npkit_plugin_render *p, npkit_json *w, int64_t tid, const char *name,
                 int64_t sort) {
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_key(w, "name");
  npkit_json_string(w, "thread_name");
  npkit_json_key(w, "ph");
  npkit_json_string(w, "M");
  npkit_json_key(w, "pid");
  npkit_json_int(w, p->fmt->pid);
  npkit_json_key(w, "tid");
  npkit_json_int(w, tid);
  npkit_json_key(w, "args");
  npkit_json_begin_object(w);
  npkit_json_key(w, "name");
  npkit_json_string(w, name);
  npkit_json_end_object(w);
  npkit_json_end_object(w);
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_key(w, "name");
  npkit_json_string(w, "thread_sort_index");
  npkit_json_key(w, "ph");
  npkit_json_string(w, "M");
  npkit_json_key(w, "pid");
  npkit_json_int(w, p->fmt->pid);
  npkit_json_key(w, "tid");
  npkit_json_int(w, tid);
  npkit_json_key(w, "args");
  npkit_json_begin_object(w);
  npkit_json_key(w, "sort_index");
  npkit_json_int(w, sort);
  npkit_json_end_object(w);
  npkit_json_end_object(w);
}

/* Opens {"name":…,"cat":…,"ph":"X",…,"args":{ ; close with slice_end. */
static void slice_begin(npkit_plugin_render *p, npkit_json *w, const char *name, const char *cat,
                        int64_t tid, uint64_t start_ns, uint64_t end_ns) {
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_key(w, "name");
  npkit_json_string(w, name);
  npkit_json_key(w, "cat");
  npkit_json_string(w, cat);
  npkit_json_key(w, "ph");
  npkit_json_string(w, "X");
  npkit_json_key(w, "pid");
  npkit_json_int(w, p->fmt->pid);
  npkit_json_key(w, "tid");
  npkit_json_int(w, tid);
  npkit_json_key(w, "ts");
  npkit_json_ts(w, npkit_api_fmt_rel(p->fmt, start_ns));
  npkit_json_key(w, "dur");
  npkit_json_ts(w, end_ns > start_ns ? (int64_t)(end_ns - start_ns) : 0);
  npkit_json_key(w, "args");
  npkit_json_begin_object(w);
}

static void slice_end(npkit_json *w) {
  npkit_json_end_object(w);
  npkit_json_end_object(w);
}

static void arg_str(npkit_json *w, const char *key, const char *v, size_t n) {
  npkit_json_key(w, key);
  npkit_json_string_n(w, v, n);
}

static void arg_int(npkit_json *w, const char *key, int64_t v) {
  npkit_json_key(w, key);
  npkit_json_int(w, v);
}

static void arg_us(npkit_json *w, const char *key, uint64_t from, uint64_t to) {
  npkit_json_key(w, key);
  npkit_json_ts(w, to > from ? (int64_t)(to - from) : 0);
}

/* ---- tracks ---- */

static int64_t band_tid(npkit_plugin_render *p, int band, uint32_t idx) {
  return p->fmt->pid * 1000 + band + (int64_t)idx;
}

/* Track of (ctx, channel) in the channel band; channel TRACK_GPU is the collectives track.
 * Tracks are named at the end, when every context has been bound to its communicator. */
static int64_t channel_tid(npkit_plugin_render *p, uint32_t ctx, int channel) {
  for (uint32_t i = 0; i < p->nchan; i++)
    if (p->chan[i].ctx == ctx && p->chan[i].channel == channel) return band_tid(p, CHANNEL_BAND, i);
  if (p->nchan == NPKIT_PL_CHANNEL_TRACKS) {
    p->chan_shared_used = 1;
    return band_tid(p, CHANNEL_BAND, NPKIT_PL_CHANNEL_TRACKS);
  }
  p->chan[p->nchan] = (npkit_pl_track){ctx, channel, 0, 0};
  return band_tid(p, CHANNEL_BAND, p->nchan++);
}

static int64_t lane_tid(npkit_plugin_render *p, uint32_t ctx, int channel, int peer, int dir) {
  for (uint32_t i = 0; i < p->nlane; i++) {
    const npkit_pl_track *t = &p->lane[i];
    if (t->ctx == ctx && t->channel == channel && t->peer == peer && t->dir == dir)
      return band_tid(p, PROXY_BAND, i);
  }
  if (p->nlane == NPKIT_PL_PROXY_LANES) {
    p->lane_shared_used = 1;
    return band_tid(p, PROXY_BAND, NPKIT_PL_PROXY_LANES);
  }
  p->lane[p->nlane] = (npkit_pl_track){ctx, channel, peer, dir};
  return band_tid(p, PROXY_BAND, p->nlane++);
}

static void name_tracks(npkit_plugin_render *p, npkit_json *w) {
  char name[192];
  for (uint32_t i = 0; i < p->nchan; i++) {
    const npkit_pl_track *t = &p->chan[i];
    int phases = t->channel >= TRACK_PHASES, ch = phases ? t->channel - TRACK_PHASES : t->channel;
    if (t->channel == TRACK_GPU)
      snprintf(name, sizeof name, "collectives (GPU) " MIDDOT " %s", ctx_label(p, t->ctx));
    else
      snprintf(name, sizeof name, "channel %d%s " MIDDOT " %s", ch, phases ? " phases" : "", ctx_label(p, t->ctx));
    /* a channel's phases right below it */
    meta(p, w, band_tid(p, CHANNEL_BAND, i), name,
         1000000 + (int64_t)(t->ctx % 1000) * 1000 + 2 * (ch + 1) + phases);
  }
  if (p->chan_shared_used)
    meta(p, w, band_tid(p, CHANNEL_BAND, NPKIT_PL_CHANNEL_TRACKS),
         "channels " MIDDOT " more communicators",
         1999999);
  for (uint32_t i = 0; i < p->nlane; i++) {
    const npkit_pl_track *t = &p->lane[i];
    if (t->channel == TRACK_CTRL)
      snprintf(name, sizeof name, "proxy thread " MIDDOT " %s", ctx_label(p, t->ctx));
    else
      snprintf(name, sizeof name, "proxy ch %d %s %d " MIDDOT " %s", t->channel,
               t->dir ? "send " ARROW_R : "recv " ARROW_L, t->peer, ctx_label(p, t->ctx));
    meta(p, w, band_tid(p, PROXY_BAND, i), name,
         2000000 + (int64_t)(t->ctx % 1000) * 1000 + (t->channel + 2) * 2 + t->dir);
  }
  if (p->lane_shared_used)
    meta(p, w, band_tid(p, PROXY_BAND, NPKIT_PL_PROXY_LANES), "proxy " MIDDOT " more lanes",
         2999999);
}

/* How each communicator's GPU clock was mapped onto the host's (gpu_clock_map.h), as a metadata
 * event of its "collectives (GPU)" track: offset, drift and how far the mapped times may be off. */
/* Which profiler interface NCCL loaded for a communicator, and the events asked of it. */
static void write_profiler(npkit_plugin_render *p, npkit_json *w, uint32_t id) {
  static const char *const names[16] = {"Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl",
                                        "KernelCh", "NetPlugin", "GroupApi", "CollApi", "P2pApi",
                                        "KernelLaunch", "CeColl", "CeSync", "CeBatch", "KernelPhase"};
  const npkit_pl_ctx *x = &p->ctx[id];
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_key(w, "name");
  npkit_json_string(w, "nccl_profiler");
  npkit_json_key(w, "ph");
  npkit_json_string(w, "M");
  npkit_json_key(w, "pid");
  npkit_json_int(w, p->fmt->pid);
  npkit_json_key(w, "tid");
  npkit_json_int(w, channel_tid(p, id, TRACK_GPU));
  npkit_json_key(w, "args");
  npkit_json_begin_object(w);
  npkit_json_key(w, "comm");
  npkit_json_string(w, ctx_label(p, id));
  npkit_json_key(w, "abi");
  npkit_json_uint(w, x->abi);
  npkit_json_key(w, "events");
  npkit_json_begin_array(w);
  for (int b = 0; b < 16; b++)
    if (x->mask & (1u << b)) npkit_json_string(w, names[b]);
  npkit_json_end_array(w);
  npkit_json_end_object(w);
  npkit_json_end_object(w);
}

static void write_clocks(npkit_plugin_render *p, npkit_json *w) {
  for (uint32_t id = 1; id < p->nctx; id++) {
    if (p->ctx[id].abi != 0) write_profiler(p, w, id);
    const npkit_ev_plugin_clock *c = &p->ctx[id].clock;
    if (c->samples == 0) continue;
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    npkit_json_key(w, "name");
    npkit_json_string(w, "gpu_clock");
    npkit_json_key(w, "ph");
    npkit_json_string(w, "M");
    npkit_json_key(w, "pid");
    npkit_json_int(w, p->fmt->pid);
    npkit_json_key(w, "tid");
    npkit_json_int(w, channel_tid(p, id, TRACK_GPU));
    npkit_json_key(w, "args");
    npkit_json_begin_object(w);
    npkit_json_key(w, "comm");
    npkit_json_string(w, ctx_label(p, id));
    npkit_json_key(w, "samples");
    npkit_json_uint(w, c->samples);
    npkit_json_key(w, "offset_ns"); /* host minus GPU */
    npkit_json_int(w, c->offset_ns);
    npkit_json_key(w, "drift_ppm");
    npkit_json_ts(w, c->drift_ppb); /* ppb / 1000, three decimals */
    npkit_json_key(w, "max_error_ns");
    npkit_json_int(w, c->max_error_ns);
    npkit_json_key(w, "median_error_ns");
    npkit_json_int(w, c->median_error_ns);
    npkit_json_key(w, "windows");
    npkit_json_uint(w, c->windows);
    npkit_json_key(w, "one_sided");
    npkit_json_uint(w, c->one_sided);
    npkit_json_key(w, "inconsistent");
    npkit_json_uint(w, c->inconsistent);
    npkit_json_end_object(w);
    npkit_json_end_object(w);
  }
}

/* ---- slices ---- */

static int task_name(const npkit_pl_task *t, char *buf, size_t len) {
  const char *fn = npkit_fn_short_name(t->fn);
  const char *replay = t->replay ? " (graph replay)" : "";
  if (t->algo[0] != '\0')
    return snprintf(buf, len, "%s %.*s/%.*s%s", fn, (int)sizeof t->algo, t->algo,
                    (int)sizeof t->proto, t->proto, replay);
  return snprintf(buf, len, "%s%s", fn, replay);
}

int npkit_plugin_task_span(const npkit_pl_task *t, uint64_t *start, uint64_t *stop) {
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

static void task_args(npkit_json *w, const npkit_pl_task *t) {
  npkit_json_key(w, "func");
  npkit_json_string(w, npkit_fn_short_name(t->fn));
  if (t->algo[0] != '\0') arg_str(w, "algorithm", t->algo, sizeof t->algo);
  if (t->symmetric) { /* the algorithm is the tail of the kernel variant's name */
    npkit_json_key(w, "symmetric");
    npkit_json_bool(w, 1);
  }
  if (t->proto[0] != '\0') arg_str(w, "protocol", t->proto, sizeof t->proto);
  if (!t->p2p) {
    npkit_json_key(w, "nccl_seq");
    npkit_json_uint(w, t->nccl_seq);
  }
  if (t->api_seq != NPKIT_NO_SEQ) {
    npkit_json_key(w, "seq");
    npkit_json_uint(w, t->api_seq);
  }
  if (t->user_tag != 0) {
    char tag[24];
    snprintf(tag, sizeof tag, "0x%" PRIx64, t->user_tag);
    npkit_json_key(w, "user_tag");
    npkit_json_string(w, tag);
  }
  if (t->replay) {
    npkit_json_key(w, "graph_replay");
    npkit_json_bool(w, 1);
    if (t->captured_seq != NPKIT_NO_SEQ) {
      npkit_json_key(w, "captured_seq");
      npkit_json_uint(w, t->captured_seq);
    }
  }
}

/* The task from its first channel's start to its last channel's stop. */
void npkit_plugin_gpu_slice(npkit_plugin_render *p, npkit_json *w, npkit_pl_task *t) {
  uint64_t start, stop;
  int timer = npkit_plugin_task_span(t, &start, &stop);
  if (t->gpu_written || timer < 0) return;
  t->gpu_written = 1;
  if (t->replay && t->captured_seq == NPKIT_NO_SEQ) { /* the captured call may have come since */
    const npkit_pl_api *api = npkit_pl_api_find(p->apis, t->api);
    if (api != NULL) t->captured_seq = api->call_seq;
  }
  char name[80];
  task_name(t, name, sizeof name);
  slice_begin(p, w, name, "nccl_gpu", channel_tid(p, t->ctx, TRACK_GPU), start, stop);
  task_args(w, t);
  arg_int(w, "channels", t->nch);
  arg_int(w, "channels_seen", t->kch_seen);
  npkit_json_key(w, "count");
  npkit_json_uint(w, t->count);
  /* host-timed channels (no GPU stamps) only say when NCCL's proxy saw them */
  arg_us(w, timer ? "gpu_time_us" : "reported_time_us", start, stop);
  if (timer && t->raw_stop >= t->raw_start && t->raw_start != 0) {
    npkit_json_key(w, "gpu_clock_span_ns"); /* the same span on the GPU's own clock */
    npkit_json_uint(w, t->raw_stop - t->raw_start);
  }
  slice_end(w);
}

static void on_kernel_ch(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  const npkit_ev_kernel_ch *k = &ev->u.kernel_ch;
  npkit_pl_task *t = npkit_plugin_task_find(p, k->task);
  char name[64];
  if (t != NULL)
    task_name(t, name, sizeof name);
  else
    snprintf(name, sizeof name, "kernel channel");
  slice_begin(p, w, name, "nccl_kernel", channel_tid(p, k->ctx, k->channel), ev->start_ns,
              ev->end_ns);
  arg_int(w, "channel", k->channel);
  if (t != NULL) task_args(w, t);
  int gpu = (k->flags & NPKIT_PKCH_GPU_TIMER) != 0;
  npkit_json_key(w, "gpu_timer");
  npkit_json_bool(w, gpu);
  if (gpu) { /* logs before 0.3 kept the GPU's raw clock: not on the host's axis */
    npkit_json_key(w, "gpu_clock");
    npkit_json_string(w, (k->flags & NPKIT_PKCH_MAPPED) ? "mapped" : "unmapped");
  }
  if (gpu && (k->flags & NPKIT_PKCH_MAPPED) && k->map_error_ns >= 0) {
    npkit_json_key(w, "map_error_us");
    npkit_json_ts(w, k->map_error_ns);
  }
  if (k->flags & NPKIT_PKCH_NO_STOP) {
    npkit_json_key(w, "stop_missing");
    npkit_json_bool(w, 1);
  }
  slice_end(w);
  if (t == NULL) return;
  if (gpu) {
    if (t->kch_gpu == 0 || ev->start_ns < t->gpu_start) t->gpu_start = ev->start_ns;
    if (t->kch_gpu == 0 || ev->end_ns > t->gpu_stop) t->gpu_stop = ev->end_ns;
    if (k->flags & NPKIT_PKCH_MAPPED) {
      if (t->raw_start == 0 || k->gpu_start < t->raw_start) t->raw_start = k->gpu_start;
      if (k->gpu_stop > t->raw_stop) t->raw_stop = k->gpu_stop;
    }
    t->kch_gpu++;
  } else {
    if (t->kch_cpu == 0 || ev->start_ns < t->cpu_start) t->cpu_start = ev->start_ns;
    if (t->kch_cpu == 0 || ev->end_ns > t->cpu_stop) t->cpu_stop = ev->end_ns;
    t->kch_cpu++;
  }
  t->kch_seen++;
  npkit_plugin_channel_done(p, w, t);
}

/* A phase of a channel (NCCL 2.31+), on a track of its own below the channel's: its stamps are
 * mapped as the channel's, but NCCL's phase stamps and the channel's are separate reads of the GPU
 * clock, so the two need not nest exactly. */
static void on_kernel_phase(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  const npkit_ev_kernel_phase *k = &ev->u.kernel_phase;
  npkit_pl_task *t = npkit_plugin_task_find(p, k->task);
  char name[sizeof k->name + 1];
  memcpy(name, k->name, sizeof k->name);
  name[sizeof k->name] = '\0';
  if (name[0] == '\0') snprintf(name, sizeof name, "phase %u", (unsigned)k->phase);
  slice_begin(p, w, name, "nccl_kernel_phase", channel_tid(p, k->ctx, TRACK_PHASES + k->channel),
              ev->start_ns, ev->end_ns);
  arg_int(w, "channel", k->channel);
  arg_int(w, "phase", k->phase);
  if (t != NULL) task_args(w, t);
  int gpu = (k->flags & NPKIT_PKCH_GPU_TIMER) != 0;
  npkit_json_key(w, "gpu_timer");
  npkit_json_bool(w, gpu);
  if (gpu && (k->flags & NPKIT_PKCH_MAPPED) && k->map_error_ns >= 0) {
    npkit_json_key(w, "map_error_us");
    npkit_json_ts(w, k->map_error_ns);
  }
  if (gpu && k->gpu_stop >= k->gpu_start) {
    npkit_json_key(w, "gpu_clock_span_ns");
    npkit_json_uint(w, k->gpu_stop - k->gpu_start);
  }
  if (k->flags & NPKIT_PKCH_NO_STOP) {
    npkit_json_key(w, "stop_missing");
    npkit_json_bool(w, 1);
  }
  slice_end(w);
}

static void task_ref_args(npkit_plugin_render *p, npkit_json *w, uint64_t task) {
  npkit_pl_task *t = npkit_plugin_task_find(p, task);
  if (t != NULL) task_args(w, t);
}

static void on_proxy_op(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  const npkit_ev_proxy_op *o = &ev->u.proxy_op;
  int send = o->is_send != 0;
  slice_begin(p, w, send ? "proxy send" : "proxy recv", "nccl_proxy",
              lane_tid(p, o->ctx, o->channel, o->peer, send), ev->start_ns, ev->end_ns);
  arg_int(w, "channel", o->channel);
  arg_int(w, "peer", o->peer);
  arg_int(w, "steps", o->nsteps);
  npkit_json_key(w, "steps_done");
  npkit_json_uint(w, o->steps_done);
  arg_int(w, "chunk_size", o->chunk_size);
  npkit_json_key(w, "bytes");
  npkit_json_uint(w, o->bytes);
  if (o->progress_ns >= ev->start_ns && o->progress_ns != 0)
    arg_us(w, "wait_us", ev->start_ns, o->progress_ns);
  task_ref_args(p, w, o->task);
  slice_end(w);
}

static void on_proxy_step(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  const npkit_ev_proxy_step *s = &ev->u.proxy_step;
  int send = s->is_send != 0;
  slice_begin(p, w, send ? "net send" : "net recv", "nccl_net",
              lane_tid(p, s->ctx, s->channel, s->peer, send), ev->start_ns, ev->end_ns);
  arg_int(w, "step", s->step);
  npkit_json_key(w, "size");
  npkit_json_uint(w, s->size);
  arg_int(w, "channel", s->channel);
  arg_int(w, "peer", s->peer);
  /* How long each phase lasted: a phase ends where the next recorded one (or the step) ends. */
  static const char *const send_keys[3] = {"gpu_wait_us", "peer_wait_us", "net_us"};
  static const char *const recv_keys[3] = {"net_us", "flush_us", "gpu_wait_us"};
  for (int i = 0; i < 3; i++) {
    uint64_t from = s->phase_ns[i], to = ev->end_ns;
    if (from == 0) continue;
    for (int j = i + 1; j < 3; j++)
      if (s->phase_ns[j] != 0) {
        to = s->phase_ns[j];
        break;
      }
    arg_us(w, send ? send_keys[i] : recv_keys[i], from, to);
  }
  task_ref_args(p, w, s->task);
  slice_end(w);
}

static void on_proxy_ctrl(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  static const char *const names[] = {"Idle", "Active", "Sleep", "Wakeup", "Append", "AppendEnd"};
  const npkit_ev_proxy_ctrl *c = &ev->u.proxy_ctrl;
  const char *name = c->state >= 13 && c->state <= 18 ? names[c->state - 13] : "proxy";
  slice_begin(p, w, name, "nccl_proxy", lane_tid(p, c->ctx, TRACK_CTRL, -1, 0), ev->start_ns,
              ev->end_ns);
  arg_int(w, "appended", c->appended);
  slice_end(w);
}

/* ---- records that came before their task ---- */

static uint64_t child_task(const npkit_event *ev) {
  switch (ev->kind) {
  case NPKIT_EV_PLUGIN_KERNEL_CH: return ev->u.kernel_ch.task;
  case NPKIT_EV_PLUGIN_KERNEL_PHASE: return ev->u.kernel_phase.task;
  case NPKIT_EV_PLUGIN_PROXY_OP: return ev->u.proxy_op.task;
  case NPKIT_EV_PLUGIN_PROXY_STEP: return ev->u.proxy_step.task;
  default: return 0;
  }
}

static void render_child(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  switch (ev->kind) {
  case NPKIT_EV_PLUGIN_KERNEL_CH: on_kernel_ch(p, w, ev); break;
  case NPKIT_EV_PLUGIN_KERNEL_PHASE: on_kernel_phase(p, w, ev); break;
  case NPKIT_EV_PLUGIN_PROXY_OP: on_proxy_op(p, w, ev); break;
  case NPKIT_EV_PLUGIN_PROXY_STEP: on_proxy_step(p, w, ev); break;
  default: break;
  }
}

static uint32_t hbucket(uint64_t task) {
  return (uint32_t)((task * 0x9e3779b97f4a7c15ull) >> 40) % NPKIT_PL_HBUCKETS;
}

/* Takes a held record out of its chain and renders it (its task is known by now, or gone). */
static void release_held(npkit_plugin_render *p, npkit_json *w, npkit_pl_held *h) {
  int32_t me = (int32_t)(h - p->held);
  int32_t *link = &p->hbuckets[hbucket(child_task(&h->ev))];
  while (*link >= 0 && *link != me) link = &p->held[*link].hnext;
  if (*link == me) *link = h->hnext;
  h->used = 0;
  render_child(p, w, &h->ev);
  while (p->htail < p->hhead && !p->held[p->htail % NPKIT_PLUGIN_HELD].used) p->htail++;
}

static void hold_child(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  if (p->hhead - p->htail == NPKIT_PLUGIN_HELD) /* the oldest waited long enough */
    release_held(p, w, &p->held[p->htail % NPKIT_PLUGIN_HELD]);
  uint64_t pos = p->hhead++;
  npkit_pl_held *h = &p->held[pos % NPKIT_PLUGIN_HELD];
  h->ev = *ev;
  h->pos = pos;
  h->used = 1;
  uint32_t b = hbucket(child_task(ev));
  h->hnext = p->hbuckets[b];
  p->hbuckets[b] = (int32_t)(h - p->held);
}

/* Renders, oldest first, the records held for a task that has just been read. */
static void release_task(npkit_plugin_render *p, npkit_json *w, uint64_t task) {
  for (;;) {
    npkit_pl_held *oldest = NULL;
    for (int32_t i = p->hbuckets[hbucket(task)]; i >= 0; i = p->held[i].hnext)
      if (child_task(&p->held[i].ev) == task && (oldest == NULL || p->held[i].pos < oldest->pos))
        oldest = &p->held[i];
    if (oldest == NULL) return;
    release_held(p, w, oldest);
  }
}

/* A child comes before its task when the task's slot still holds an older task (ids grow). */
static void on_child(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  uint64_t task = child_task(ev);
  if (task != 0 && p->tasks[task % NPKIT_PLUGIN_TASKS].id < task)
    hold_child(p, w, ev);
  else
    render_child(p, w, ev);
}

static void on_task(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  uint64_t id = ev->u.plugin_task.task;
  if (id == 0 || p->tasks[id % NPKIT_PLUGIN_TASKS].id > id) return; /* garbage, or too late */
  npkit_plugin_add_task(p, w, ev);
  release_task(p, w, id);
}

/* ---- entry points ---- */

int npkit_plugin_render_event(npkit_plugin_render *p, npkit_json *w, const npkit_event *ev) {
  if (!npkit_plugin_kind(ev->kind)) return 0;
  if (p == NULL) return 1;
  if (ev->end_ns > p->last_ns) p->last_ns = ev->end_ns;
  switch (ev->kind) {
  case NPKIT_EV_PLUGIN_INIT: on_init(p, ev); break;
  case NPKIT_EV_PLUGIN_TASK: on_task(p, w, ev); break;
  case NPKIT_EV_PLUGIN_KERNEL_CH:
  case NPKIT_EV_PLUGIN_KERNEL_PHASE:
  case NPKIT_EV_PLUGIN_PROXY_OP:
  case NPKIT_EV_PLUGIN_PROXY_STEP: on_child(p, w, ev); break;
  case NPKIT_EV_PLUGIN_PROXY_CTRL: on_proxy_ctrl(p, w, ev); break;
  case NPKIT_EV_PLUGIN_STATS: /* cumulative: the last one counts */
    p->stats = ev->u.plugin_stats;
    p->has_stats = 1;
    break;
  case NPKIT_EV_PLUGIN_API: npkit_plugin_add_api(p, w, ev); break;
  case NPKIT_EV_PLUGIN_CLOCK: { /* cumulative: the last one counts */
    npkit_pl_ctx *x = ctx_get(p, ev->u.plugin_clock.ctx);
    if (x != NULL) x->clock = ev->u.plugin_clock;
    break;
  }
  default: break; /* FINALIZE: nothing to draw */
  }
  return 1;
}

void npkit_plugin_render_finish(npkit_plugin_render *p, npkit_json *w) {
  if (p == NULL) return;
  while (p->htail < p->hhead) {
    npkit_pl_held *h = &p->held[p->htail % NPKIT_PLUGIN_HELD];
    if (h->used)
      release_held(p, w, h);
    else
      p->htail++;
  }
  npkit_plugin_flush_calls(p, w);
  for (uint32_t i = 0; i < NPKIT_PLUGIN_TASKS; i++)
    if (p->tasks[i].id != 0) npkit_plugin_gpu_slice(p, w, &p->tasks[i]);
  write_clocks(p, w); /* may add a "collectives (GPU)" track: before the names */
  name_tracks(p, w);
  const npkit_ev_plugin_stats *s = &p->stats;
  if (p->has_stats && (s->lost | s->late | s->foreign | s->unknown) != 0) {
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    npkit_json_key(w, "name");
    npkit_json_string(w, "npkit plugin");
    npkit_json_key(w, "ph");
    npkit_json_string(w, "C");
    npkit_json_key(w, "pid");
    npkit_json_int(w, p->fmt->pid);
    npkit_json_key(w, "ts");
    npkit_json_ts(w, npkit_api_fmt_rel(p->fmt, p->last_ns));
    npkit_json_key(w, "args");
    npkit_json_begin_object(w);
    npkit_json_key(w, "lost");
    npkit_json_uint(w, s->lost);
    npkit_json_key(w, "late");
    npkit_json_uint(w, s->late);
    npkit_json_key(w, "foreign");
    npkit_json_uint(w, s->foreign);
    npkit_json_key(w, "ignored");
    npkit_json_uint(w, s->unknown);
    npkit_json_end_object(w);
    npkit_json_end_object(w);
  }
}
