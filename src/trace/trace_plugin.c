/* The plugin renderer (trace_plugin.h): its entry points, NCCL's own events as they come, and the
 * records that came before their task (tracks and slices: trace_plugin_tracks.c; the calls held for
 * their task: trace_plugin_join.c). */
#include "trace_plugin.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_facts.h"
#include "nccl_names.h"
#include "trace_plugin_int.h"
#include "trace_source.h"


npkit_plugin_render *npkit_plugin_render_new(const npkit_log_reader *r, npkit_api_fmt *fmt) {
  npkit_plugin_render *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->r = r;
  p->fmt = fmt;
  p->calls = calloc(NPKIT_PLUGIN_PENDING, sizeof *p->calls);
  p->tasks = calloc(NPKIT_PLUGIN_TASKS, sizeof *p->tasks);
  p->buckets = malloc(NPKIT_PLUGIN_BUCKETS * sizeof *p->buckets);
  p->comms = calloc(r->n_comms > 0 ? r->n_comms : 1, sizeof *p->comms);
  p->held = calloc(NPKIT_PLUGIN_HELD, sizeof *p->held);
  p->hbuckets = malloc(NPKIT_PLUGIN_HBUCKETS * sizeof *p->hbuckets);
  p->apis = npkit_plugin_api_new();
  static const char *const keys[PK_COUNT] = {"algorithm", "protocol", "channels",      "warps",
                                             "nccl_seq",  "gpu_time_us", "graph_captured"};
  int interned = 1;
  for (int k = 0; k < PK_COUNT; k++) interned &= (p->key[k] = npkit_sink_intern_name(fmt->sink, keys[k])) != 0;
  if (!interned || p->calls == NULL || p->tasks == NULL || p->buckets == NULL || p->comms == NULL ||
      p->held == NULL || p->hbuckets == NULL || p->apis == NULL) {
    npkit_plugin_render_free(p);
    return NULL;
  }
  for (uint32_t i = 0; i < NPKIT_PLUGIN_BUCKETS; i++) p->buckets[i] = -1;
  for (uint32_t i = 0; i < NPKIT_PLUGIN_HBUCKETS; i++) p->hbuckets[i] = -1;
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
  npkit_plugin_api_free(p->apis);
  free(p->ctx);
  free(p);
}

/* The communicator NCCL was creating when it initialised the plugin: an unbound one with the same
 * rank and size (when NCCL says them) registered right after the init (its creating call returned
 * after it), else the latest registered before (a non-blocking creation). */
static void on_init(npkit_plugin_render *p, const npkit_event *ev) {
  const npkit_ev_plugin_comm *c = &ev->u.plugin_comm;
  npkit_plugin_ctx *x = npkit_plugin_ctx_get(p, c->ctx);
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

static void on_kernel_ch(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  const npkit_ev_kernel_ch *k = &ev->u.kernel_ch;
  npkit_plugin_task *t = npkit_plugin_task_find(p, k->task);
  char name[64];
  if (t != NULL)
    npkit_plugin_task_name(t, name, sizeof name);
  else
    snprintf(name, sizeof name, "kernel channel");
  npkit_plugin_slice_begin(p, w, name, "nccl_kernel", npkit_plugin_channel_tid(p, k->ctx, k->channel), ev->start_ns,
              ev->end_ns);
  npkit_plugin_arg_int(w, "channel", k->channel);
  if (t != NULL) npkit_plugin_task_args(w, t);
  int gpu = (k->flags & NPKIT_PKCH_GPU_TIMER) != 0;
  npkit_sink_arg_bool(w, "gpu_timer", gpu);
  if (gpu) { /* logs before 0.3 kept the GPU's raw clock: not on the host's axis */
    npkit_sink_arg_str(w, "gpu_clock", (k->flags & NPKIT_PKCH_MAPPED) ? "mapped" : "unmapped");
  }
  if (gpu && (k->flags & NPKIT_PKCH_MAPPED) && k->map_error_ns >= 0) {
    npkit_sink_arg_us(w, "map_error_us", k->map_error_ns);
  }
  if (k->flags & NPKIT_PKCH_NO_STOP) {
    npkit_sink_arg_bool(w, "stop_missing", 1);
  }
  npkit_sink_end(w);
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
static void on_kernel_phase(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  const npkit_ev_kernel_phase *k = &ev->u.kernel_phase;
  npkit_plugin_task *t = npkit_plugin_task_find(p, k->task);
  char name[sizeof k->name + 1];
  memcpy(name, k->name, sizeof k->name);
  name[sizeof k->name] = '\0';
  if (name[0] == '\0') snprintf(name, sizeof name, "phase %u", (unsigned)k->phase);
  npkit_plugin_slice_begin(p, w, name, "nccl_kernel_phase", npkit_plugin_channel_tid(p, k->ctx, TRACK_PHASES + k->channel),
              ev->start_ns, ev->end_ns);
  npkit_plugin_arg_int(w, "channel", k->channel);
  npkit_plugin_arg_int(w, "phase", k->phase);
  if (t != NULL) npkit_plugin_task_args(w, t);
  int gpu = (k->flags & NPKIT_PKCH_GPU_TIMER) != 0;
  npkit_sink_arg_bool(w, "gpu_timer", gpu);
  if (gpu && (k->flags & NPKIT_PKCH_MAPPED) && k->map_error_ns >= 0) {
    npkit_sink_arg_us(w, "map_error_us", k->map_error_ns);
  }
  if (gpu && k->gpu_stop >= k->gpu_start) {
    npkit_sink_arg_uint(w, "gpu_clock_span_ns", k->gpu_stop - k->gpu_start);
  }
  if (k->flags & NPKIT_PKCH_NO_STOP) {
    npkit_sink_arg_bool(w, "stop_missing", 1);
  }
  npkit_sink_end(w);
}

static void task_ref_args(npkit_plugin_render *p, npkit_sink *w, uint64_t task) {
  npkit_plugin_task *t = npkit_plugin_task_find(p, task);
  if (t != NULL) npkit_plugin_task_args(w, t);
}

/* A slice on the lane of one channel and peer (a send and a receive lane each), with those two args. */
static void lane_slice_begin(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev, int send,
                             const char *send_name, const char *recv_name, const char *cat, uint32_t ctx, int channel,
                             int peer) {
  npkit_plugin_slice_begin(p, w, send ? send_name : recv_name, cat, npkit_plugin_lane_tid(p, ctx, channel, peer, send),
                           ev->start_ns, ev->end_ns);
  npkit_plugin_arg_int(w, "channel", channel);
  npkit_plugin_arg_int(w, "peer", peer);
}

static void on_proxy_op(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  const npkit_ev_proxy_op *o = &ev->u.proxy_op;
  lane_slice_begin(p, w, ev, o->is_send != 0, "proxy send", "proxy recv", "nccl_proxy", o->ctx, o->channel, o->peer);
  npkit_plugin_arg_int(w, "steps", o->nsteps);
  npkit_sink_arg_uint(w, "steps_done", o->steps_done);
  npkit_plugin_arg_int(w, "chunk_size", o->chunk_size);
  npkit_sink_arg_uint(w, "bytes", o->bytes);
  if (o->progress_ns >= ev->start_ns && o->progress_ns != 0)
    npkit_plugin_arg_us(w, "wait_us", ev->start_ns, o->progress_ns);
  task_ref_args(p, w, o->task);
  npkit_sink_end(w);
}

static void on_proxy_step(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  const npkit_ev_proxy_step *s = &ev->u.proxy_step;
  int send = s->is_send != 0;
  lane_slice_begin(p, w, ev, send, "net send", "net recv", "nccl_net", s->ctx, s->channel, s->peer);
  npkit_plugin_arg_int(w, "step", s->step);
  npkit_sink_arg_uint(w, "size", s->size);
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
    npkit_plugin_arg_us(w, send ? send_keys[i] : recv_keys[i], from, to);
  }
  task_ref_args(p, w, s->task);
  npkit_sink_end(w);
}

static void on_proxy_ctrl(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  static const char *const names[] = {"Idle", "Active", "Sleep", "Wakeup", "Append", "AppendEnd"};
  const npkit_ev_proxy_ctrl *c = &ev->u.proxy_ctrl;
  const char *name = c->state >= 13 && c->state <= 18 ? names[c->state - 13] : "proxy";
  npkit_plugin_slice_begin(p, w, name, "nccl_proxy", npkit_plugin_lane_tid(p, c->ctx, TRACK_CTRL, -1, 0), ev->start_ns,
              ev->end_ns);
  npkit_plugin_arg_int(w, "appended", c->appended);
  npkit_sink_end(w);
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

static void render_child(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  switch (ev->kind) {
  case NPKIT_EV_PLUGIN_KERNEL_CH: on_kernel_ch(p, w, ev); break;
  case NPKIT_EV_PLUGIN_KERNEL_PHASE: on_kernel_phase(p, w, ev); break;
  case NPKIT_EV_PLUGIN_PROXY_OP: on_proxy_op(p, w, ev); break;
  case NPKIT_EV_PLUGIN_PROXY_STEP: on_proxy_step(p, w, ev); break;
  default: break;
  }
}

static uint32_t hbucket(uint64_t task) {
  return (uint32_t)((task * 0x9e3779b97f4a7c15ull) >> 40) % NPKIT_PLUGIN_HBUCKETS;
}

/* Takes a held record out of its chain and renders it (its task is known by now, or gone). */
static void release_held(npkit_plugin_render *p, npkit_sink *w, npkit_plugin_held *h) {
  int32_t me = (int32_t)(h - p->held);
  int32_t *link = &p->hbuckets[hbucket(child_task(&h->ev))];
  while (*link >= 0 && *link != me) link = &p->held[*link].hnext;
  if (*link == me) *link = h->hnext;
  h->used = 0;
  render_child(p, w, &h->ev);
  while (p->htail < p->hhead && !p->held[p->htail % NPKIT_PLUGIN_HELD].used) p->htail++;
}

static void hold_child(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  if (p->hhead - p->htail == NPKIT_PLUGIN_HELD) /* the oldest waited long enough */
    release_held(p, w, &p->held[p->htail % NPKIT_PLUGIN_HELD]);
  uint64_t pos = p->hhead++;
  npkit_plugin_held *h = &p->held[pos % NPKIT_PLUGIN_HELD];
  h->ev = *ev;
  h->pos = pos;
  h->used = 1;
  uint32_t b = hbucket(child_task(ev));
  h->hnext = p->hbuckets[b];
  p->hbuckets[b] = (int32_t)(h - p->held);
}

/* Renders, oldest first, the records held for a task that has just been read. */
static void release_task(npkit_plugin_render *p, npkit_sink *w, uint64_t task) {
  for (;;) {
    npkit_plugin_held *oldest = NULL;
    for (int32_t i = p->hbuckets[hbucket(task)]; i >= 0; i = p->held[i].hnext)
      if (child_task(&p->held[i].ev) == task && (oldest == NULL || p->held[i].pos < oldest->pos))
        oldest = &p->held[i];
    if (oldest == NULL) return;
    release_held(p, w, oldest);
  }
}

/* A child comes before its task when the task's slot still holds an older task (ids grow). */
static void on_child(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  uint64_t task = child_task(ev);
  if (task != 0 && p->tasks[task % NPKIT_PLUGIN_TASKS].id < task)
    hold_child(p, w, ev);
  else
    render_child(p, w, ev);
}

static void on_task(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  uint64_t id = ev->u.plugin_task.task;
  if (id == 0 || p->tasks[id % NPKIT_PLUGIN_TASKS].id > id) return; /* garbage, or too late */
  npkit_plugin_add_task(p, w, ev);
  release_task(p, w, id);
}

/* ---- entry points ---- */

int npkit_plugin_render_event(npkit_plugin_render *p, npkit_sink *w, const npkit_event *ev) {
  if (!npkit_ev_is_plugin(ev->kind)) return 0;
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
    npkit_plugin_ctx *x = npkit_plugin_ctx_get(p, ev->u.plugin_clock.ctx);
    if (x != NULL) x->clock = ev->u.plugin_clock;
    break;
  }
  default: break; /* FINALIZE: nothing to draw */
  }
  return 1;
}

void npkit_plugin_render_finish(npkit_plugin_render *p, npkit_sink *w) {
  if (p == NULL) return;
  while (p->htail < p->hhead) {
    npkit_plugin_held *h = &p->held[p->htail % NPKIT_PLUGIN_HELD];
    if (h->used)
      release_held(p, w, h);
    else
      p->htail++;
  }
  npkit_plugin_flush_calls(p, w);
  for (uint32_t i = 0; i < NPKIT_PLUGIN_TASKS; i++)
    if (p->tasks[i].id != 0) npkit_plugin_gpu_slice(p, w, &p->tasks[i]);
  npkit_plugin_write_clocks(p, w); /* may add a "collectives (GPU)" track: before the names */
  npkit_plugin_name_tracks(p, w);
  const npkit_ev_plugin_stats *s = &p->stats;
  if (p->has_stats && (s->lost | s->late | s->foreign | s->unknown) != 0) {
    npkit_sink_counter(w, "npkit plugin", NULL, p->fmt->ctx.pid, npkit_trace_rel(&p->fmt->ctx, p->last_ns));
    npkit_sink_args(w);
    npkit_sink_arg_uint(w, "lost", s->lost);
    npkit_sink_arg_uint(w, "late", s->late);
    npkit_sink_arg_uint(w, "foreign", s->foreign);
    npkit_sink_arg_uint(w, "ignored", s->unknown);
    npkit_sink_end(w);
  }
}

/* ---- the trace source ---- */

static void *source_create(const npkit_log_reader *r, npkit_api_fmt *fmt) { return npkit_plugin_render_new(r, fmt); }
static int source_event(void *self, npkit_sink *s, const npkit_event *ev) { return npkit_plugin_render_event(self, s, ev); }
static void source_call(void *self, npkit_api_fmt *fmt, npkit_sink *s, const npkit_event *ev) {
  npkit_plugin_render_call(self, fmt, s, ev);
}
static void source_finish(void *self, npkit_sink *s) { npkit_plugin_render_finish(self, s); }
static void source_destroy(void *self) { npkit_plugin_render_free(self); }

const npkit_trace_source npkit_plugin_trace_source = {
    "plugin", npkit_ev_is_plugin, source_create, source_event, source_call, source_finish, source_destroy, NULL};
