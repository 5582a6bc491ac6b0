#include "trace_marks.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "trace_source.h"
#include "trace_stacks.h"
#include "trace_tracks.h"

/* ---- pairing ---- */

void npkit_mark_pairer_init(npkit_mark_pairer *p) { memset(p, 0, sizeof *p); }

void npkit_mark_pairer_free(npkit_mark_pairer *p) {
  free(p->open);
  memset(p, 0, sizeof *p);
}

int npkit_mark_pair(npkit_mark_pairer *p, const npkit_event *ev, npkit_mark_range *out) {
  uint32_t name = (uint32_t)ev->u.mark.name;
  if (ev->kind == NPKIT_EV_MARK_BEGIN) {
    if (p->n == p->cap && (p->n >= NPKIT_MARKS_MAX_OPEN || NPKIT_GROW(p->open, p->cap, p->n + 1, 16) != 0)) {
      p->ignored_begins++;
      return 0;
    }
    p->open[p->n++] = (npkit_mark_range){ev->thread, name, ev->start_ns, ev->start_ns, 0};
    return 0;
  }
  if (ev->kind != NPKIT_EV_MARK_END) return 0;
  for (size_t i = p->n; i-- > 0;) {
    if (p->open[i].thread != ev->thread || p->open[i].name != name) continue;
    *out = p->open[i];
    out->end_ns = ev->start_ns > out->start_ns ? ev->start_ns : out->start_ns;
    memmove(&p->open[i], &p->open[i + 1], (p->n - i - 1) * sizeof *p->open);
    p->n--;
    return 1;
  }
  p->unmatched_ends++;
  return 0;
}

int npkit_mark_pair_flush(npkit_mark_pairer *p, uint64_t end_ns, int cut, npkit_mark_range *out) {
  if (p->n == 0) return 0;
  *out = p->open[--p->n];
  out->end_ns = end_ns > out->start_ns ? end_ns : out->start_ns;
  out->cut = cut;
  return 1;
}

const char *npkit_mark_name(const npkit_log_reader *r, uint32_t id, char *buf, size_t len) {
  const npkit_log_string *s = id != 0 ? npkit_reader_string(r, id) : NULL;
  if (s != NULL) return s->text;
  snprintf(buf, len, "mark %" PRIu32, id);
  return buf;
}

/* ---- rendering ---- */

struct npkit_marks_render {
  const npkit_log_reader *r;
  npkit_api_fmt *f;
  npkit_stack_fmt stacks;
  npkit_mark_pairer pairer;
  uint64_t last_ns; /* latest mark or recording change */
};

npkit_marks_render *npkit_marks_render_new(const npkit_log_reader *r, npkit_api_fmt *f) {
  npkit_marks_render *m = calloc(1, sizeof *m);
  char err[256];
  if (m == NULL) return NULL;
  if (npkit_stack_fmt_init(&m->stacks, r, f->ctx.pid, f->sink, err, sizeof err) != 0) {
    free(m);
    return NULL;
  }
  m->r = r;
  m->f = f;
  npkit_mark_pairer_init(&m->pairer);
  f->stacks = &m->stacks;
  return m;
}

void npkit_marks_render_free(npkit_marks_render *m) {
  if (m == NULL) return;
  if (m->f->stacks == &m->stacks) m->f->stacks = NULL;
  npkit_stack_fmt_free(&m->stacks);
  npkit_mark_pairer_free(&m->pairer);
  free(m);
}

static void write_range(npkit_marks_render *m, npkit_sink *s, const npkit_mark_range *rg) {
  char buf[32];
  npkit_sink_head h = {.name = npkit_mark_name(m->r, rg->name, buf, sizeof buf), .cat = "npkit_mark",
                       .ph = NPKIT_SINK_SLICE, .pid = m->f->ctx.pid, .tid = npkit_trace_tid(m->f->ctx.pid, rg->thread),
                       .has_ts = 1, .ts = npkit_trace_rel(&m->f->ctx, rg->start_ns), .has_dur = 1,
                       .dur = (int64_t)(rg->end_ns - rg->start_ns)};
  npkit_sink_begin(s, &h);
  if (rg->cut) {
    npkit_sink_args(s);
    npkit_sink_arg_bool(s, rg->cut == NPKIT_MARK_CUT_BY_PAUSE ? "cut_by_pause" : "unterminated", 1);
  }
  npkit_sink_end(s);
}

static const char *reason_name(const npkit_ev_recording *rec) {
  switch (rec->reason) {
  case NPKIT_REC_START_AFTER: return "NPKIT_START_AFTER";
  case NPKIT_REC_STOP_AFTER: return "NPKIT_STOP_AFTER";
  case NPKIT_REC_API: return rec->recording ? "npkit_resume()" : "npkit_pause()";
  case NPKIT_REC_SIGNAL: return "NPKIT_TOGGLE_SIGNAL";
  default: return "unknown";
  }
}

static void signal_name(int sig, char *buf, size_t len) {
  static const struct { int sig; const char *name; } names[] = {
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGHUP, "SIGHUP"}, {SIGWINCH, "SIGWINCH"}, {SIGURG, "SIGURG"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].sig == sig) {
      snprintf(buf, len, "%s", names[i].name);
      return;
    }
  snprintf(buf, len, "signal %d", sig);
}

static void write_recording(npkit_marks_render *m, npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_recording *rec = &ev->u.recording;
  npkit_sink_head h = {.name = rec->recording ? "npkit recording resumed" : "npkit recording paused", .cat = "npkit",
                       .ph = NPKIT_SINK_INSTANT, .scope = 'p', .scope_last = 1, .pid = m->f->ctx.pid, .tid = -1,
                       .has_ts = 1, .ts = npkit_trace_rel(&m->f->ctx, ev->start_ns)};
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
  npkit_sink_arg_str(s, "reason", reason_name(rec));
  npkit_sink_arg_uint(s, "collectives", rec->collectives);
  if (rec->reason == NPKIT_REC_SIGNAL) {
    char buf[32];
    signal_name(rec->signal, buf, sizeof buf);
    npkit_sink_arg_str(s, "signal", buf);
  }
  npkit_sink_end(s);
}

int npkit_marks_render_event(npkit_marks_render *m, npkit_sink *s, const npkit_event *ev) {
  if (m == NULL) return 0;
  npkit_mark_range rg;
  char buf[32];
  switch (ev->kind) {
  case NPKIT_EV_MARK_BEGIN:
  case NPKIT_EV_MARK_END:
    if (npkit_mark_pair(&m->pairer, ev, &rg)) write_range(m, s, &rg);
    break;
  case NPKIT_EV_MARK_INSTANT: {
    npkit_sink_head h = {.name = npkit_mark_name(m->r, (uint32_t)ev->u.mark.name, buf, sizeof buf),
                         .cat = "npkit_mark", .ph = NPKIT_SINK_INSTANT, .scope = 't', .scope_last = 1,
                         .pid = m->f->ctx.pid, .tid = npkit_trace_tid(m->f->ctx.pid, ev->thread), .has_ts = 1,
                         .ts = npkit_trace_rel(&m->f->ctx, ev->start_ns)};
    npkit_sink_begin(s, &h);
    npkit_sink_end(s);
    break;
  }
  case NPKIT_EV_RECORDING:
    if (!ev->u.recording.recording)
      while (npkit_mark_pair_flush(&m->pairer, ev->start_ns, NPKIT_MARK_CUT_BY_PAUSE, &rg)) write_range(m, s, &rg);
    write_recording(m, s, ev);
    break;
  default:
    return 0;
  }
  if (ev->start_ns > m->last_ns) m->last_ns = ev->start_ns;
  return 1;
}

void npkit_marks_render_finish(npkit_marks_render *m, npkit_sink *s) {
  if (m == NULL) return;
  uint64_t end = m->r->has_end && m->r->end.end_ns > m->last_ns ? m->r->end.end_ns : m->last_ns;
  npkit_mark_range rg;
  while (npkit_mark_pair_flush(&m->pairer, end, NPKIT_MARK_OPEN_AT_END, &rg)) write_range(m, s, &rg);
}

/* ---- the trace source ---- */

static int source_kinds(unsigned kind) {
  return kind == NPKIT_EV_MARK_BEGIN || kind == NPKIT_EV_MARK_END || kind == NPKIT_EV_MARK_INSTANT ||
         kind == NPKIT_EV_RECORDING;
}
static void *source_create(const npkit_log_reader *r, npkit_api_fmt *fmt) { return npkit_marks_render_new(r, fmt); }
static int source_event(void *self, npkit_sink *s, const npkit_event *ev) { return npkit_marks_render_event(self, s, ev); }
static void source_finish(void *self, npkit_sink *s) { npkit_marks_render_finish(self, s); }
static void source_destroy(void *self) { npkit_marks_render_free(self); }

const npkit_trace_source npkit_marks_trace_source = {
    "marks", source_kinds, source_create, source_event, NULL, source_finish, source_destroy, NULL};
