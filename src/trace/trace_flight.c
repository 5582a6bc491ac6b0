#include "trace_flight.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "inflight_text.h"
#include "nccl_names.h"
#include "trace_tracks.h"

typedef struct flight_render {
  npkit_trace_ctx ctx;
  int used; /* the track has events: it gets its name */
} flight_render;

static const char *what_name(unsigned what) {
  static const char *const names[] = {"?", "call", "queued", "kernel_channel", "proxy_op", "proxy_step"};
  return what < sizeof names / sizeof names[0] ? names[what] : "?";
}

static const char *trigger_name(unsigned trigger) {
  static const char *const names[] = {"?", "exit", "signal", "hang", "nccl_error", "comm_abort", "fatal_signal"};
  return trigger < sizeof names / sizeof names[0] ? names[trigger] : "?";
}

static void inflight(flight_render *f, npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_inflight *in = &ev->u.inflight;
  char name[96], buf[200];
  if (in->seq != NPKIT_NO_SEQ)
    snprintf(name, sizeof name, "%s #%" PRIu64 " in flight", npkit_fn_short_name(ev->func), in->seq);
  else
    snprintf(name, sizeof name, "%s in flight", ev->func != 0 ? npkit_fn_short_name(ev->func) : "NCCL work");
  npkit_sink_head h = {.name = name, .cat = "npkit_flight", .ph = NPKIT_SINK_SLICE, .pid = f->ctx.pid,
                       .tid = npkit_trace_band_tid(f->ctx.pid, NPKIT_TRACE_FLIGHT_TRACK, 0), .has_ts = 1,
                       .ts = npkit_trace_rel(&f->ctx, ev->start_ns), .has_dur = 1,
                       .dur = ev->end_ns > ev->start_ns ? (int64_t)(ev->end_ns - ev->start_ns) : 0};
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
  npkit_sink_arg_str(s, "what", what_name(in->what));
  npkit_sink_arg_str(s, "where", npkit_inflight_where(ev, buf, sizeof buf));
  if (in->seq != NPKIT_NO_SEQ) npkit_sink_arg_int(s, "seq", (int64_t)in->seq);
  if (in->comm_id != 0) npkit_sink_arg_hex(s, "comm", in->comm_id, 16);
  if (in->rank >= 0) npkit_sink_arg_int(s, "rank", in->rank);
  if (in->nranks > 0) npkit_sink_arg_int(s, "nranks", in->nranks);
  if (in->channel >= 0) npkit_sink_arg_int(s, "channel", in->channel);
  if (in->peer >= 0) npkit_sink_arg_int(s, "peer", in->peer);
  if (in->step >= 0) npkit_sink_arg_int(s, "step", in->step);
  if (in->nsteps >= 0) npkit_sink_arg_int(s, "nsteps", in->nsteps);
  if (in->task != 0) npkit_sink_arg_int(s, "task", (int64_t)in->task);
  npkit_sink_arg_int(s, "dump", in->dump);
  npkit_sink_arg_bool(s, "hang", (in->flags & NPKIT_INFL_F_HANG) != 0);
  npkit_sink_end(s);
}

static void dump(flight_render *f, npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_flight *d = &ev->u.flight;
  char name[96], reason[sizeof d->reason + 1];
  snprintf(reason, sizeof reason, "%.*s", (int)sizeof d->reason, d->reason);
  snprintf(name, sizeof name, "npkit dump %" PRIu32 " (%s)", d->dump, trigger_name(d->trigger));
  npkit_sink_head h = {.name = name, .cat = "npkit_flight", .ph = NPKIT_SINK_INSTANT, .scope = 't', .scope_last = 1,
                       .pid = f->ctx.pid, .tid = npkit_trace_band_tid(f->ctx.pid, NPKIT_TRACE_FLIGHT_TRACK, 0),
                       .has_ts = 1, .ts = npkit_trace_rel(&f->ctx, ev->start_ns)};
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
  npkit_sink_arg_str(s, "trigger", trigger_name(d->trigger));
  if (reason[0] != '\0') npkit_sink_arg_str(s, "reason", reason);
  if (d->signal != 0) npkit_sink_arg_int(s, "signal", d->signal);
  if (d->result != 0) npkit_sink_arg_str(s, "result", npkit_result_name(d->result));
  npkit_sink_arg_int(s, "dump", d->dump);
  npkit_sink_arg_int(s, "in_flight", d->inflight);
  if (d->inflight_omitted > 0) npkit_sink_arg_int(s, "in_flight_omitted", d->inflight_omitted);
  if (d->ring_bytes > 0) {
    npkit_sink_arg_int(s, "ring_bytes", (int64_t)d->ring_bytes);
    npkit_sink_arg_int(s, "events_kept", (int64_t)d->events_kept);
    npkit_sink_arg_int(s, "events_overwritten", (int64_t)d->events_overwritten);
  }
  npkit_sink_end(s);
}

/* ---- the trace source ---- */

static int source_kinds(unsigned kind) { return kind == NPKIT_EV_INFLIGHT || kind == NPKIT_EV_FLIGHT; }

static void *source_create(const npkit_log_reader *r, npkit_api_fmt *fmt) {
  flight_render *f = calloc(1, sizeof *f);
  (void)r;
  if (f != NULL) f->ctx = fmt->ctx;
  return f;
}

static int source_event(void *self, npkit_sink *s, const npkit_event *ev) {
  flight_render *f = self;
  if (ev->kind == NPKIT_EV_INFLIGHT) inflight(f, s, ev);
  else if (ev->kind == NPKIT_EV_FLIGHT) dump(f, s, ev);
  else return 0;
  f->used = 1;
  return 1;
}

static void source_finish(void *self, npkit_sink *s) {
  flight_render *f = self;
  if (f->used)
    npkit_sink_track(s, f->ctx.pid, npkit_trace_band_tid(f->ctx.pid, NPKIT_TRACE_FLIGHT_TRACK, 0),
                           "npkit in flight at dumps", NPKIT_TRACE_FLIGHT_TRACK);
}

static void source_destroy(void *self) { free(self); }

const npkit_trace_source npkit_flight_trace_source = {
    "flight", source_kinds, source_create, source_event, NULL, source_finish, source_destroy, NULL};
