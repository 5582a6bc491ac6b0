#include "trace_render.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "machine_json.h"
#include "nccl_names.h"
#include "out_file.h"
#include "trace_api.h"
#include "trace_sink_json.h"
#include "trace_source.h"
#include "trace_stacks.h"
#include "trace_threads.h"
#include "trace_tracks.h"

/* The trace sources, each with its counter in npkit_render_stats.  A new source: one line here. */
static const struct {
  const npkit_trace_source *source;
  size_t stat;
} sources[] = {
    {&npkit_plugin_trace_source, offsetof(npkit_render_stats, plugin)},
    {&npkit_marks_trace_source, offsetof(npkit_render_stats, marks)},
    {&npkit_dump_trace_source, offsetof(npkit_render_stats, npkit)},
    {&npkit_cupti_trace_source, offsetof(npkit_render_stats, gpu)},
    {&npkit_flight_trace_source, offsetof(npkit_render_stats, flight)},
    {&npkit_machine_trace_source, offsetof(npkit_render_stats, machine)},
};
#define N_SOURCES (sizeof(sources) / sizeof(sources[0]))

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "unknown"
#endif

#define MIDDOT NPKIT_TRACE_MIDDOT

/* CUDA device of the process: from PROCESS, else from the first communicator that knows it. */
static int32_t process_device(const npkit_log_reader *r) {
  if (r->device >= 0) return r->device;
  for (size_t i = 0; i < r->n_comms; i++)
    if (r->comms[i].device >= 0) return r->comms[i].device;
  return -1;
}

/* ---- otherData ---- */

/* The machine snapshot (version 3 logs), when the log has one. */
static void write_machine(const npkit_log_reader *r, npkit_tree *w) {
  npkit_machine m;
  char err[300];
  if (npkit_machine_load(r, &m, err, sizeof(err)) != 0) {
    npkit_tree_key(w, "machine_error");
    npkit_tree_string(w, err);
    return;
  }
  if (m.present) {
    npkit_tree_key(w, "machine");
    npkit_machine_json(w, &m);
  }
  npkit_machine_free(&m);
}

void npkit_render_summary(const npkit_log_reader *r, npkit_tree *w, uint64_t base_ns) {
  char buf[160];
  npkit_tree_begin_object(w);
  npkit_tree_kv_string(w, "tool", "npkit-preload");
  npkit_tree_kv_string(w, "version", NPKIT_VERSION_STRING);
  npkit_tree_kv_uint(w, "log_version", r->header.version);
  npkit_tree_kv_string(w, "writer_version", r->header.library_version);
  npkit_tree_kv_uint(w, "nccl_header_version", r->header.nccl_header_version);
  npkit_tree_kv_string(w, "clock", "CLOCK_REALTIME");
  /* How the times were read: the time-stamp counter mapped onto CLOCK_REALTIME, with the worst
   * difference the writer found when it compared the two (known once the log was closed). */
  int tsc = (r->header.flags & NPKIT_LOG_F_TSC_CLOCK) != 0;
  npkit_tree_kv_string(w, "clock_source", tsc ? "tsc" : "clock_gettime");
  if (tsc && r->has_end && r->end.clock_checks > 0) {
    npkit_tree_kv_uint(w, "clock_checks", r->end.clock_checks);
    npkit_tree_kv_uint(w, "clock_steps", r->end.clock_steps);
    npkit_tree_kv_uint(w, "clock_max_error_ns", r->end.clock_max_error_ns);
  }
  /* Traces of the demo (and of tests) run against stand-ins for NCCL and CUPTI say so. */
  npkit_tree_kv_bool(w, "simulated", (r->header.flags & NPKIT_LOG_F_SIMULATED) != 0);
  npkit_tree_key(w, "base_ns"); /* a string: a double would round it */
  snprintf(buf, sizeof(buf), "%" PRIu64, base_ns);
  npkit_tree_string(w, buf);
  npkit_tree_kv_string(w, "host", r->header.host);
  npkit_tree_kv_int(w, "pid", r->header.pid);
  npkit_tree_kv_int(w, "rank", r->rank);
  npkit_tree_kv_int(w, "world_size", r->world_size);
  npkit_tree_kv_int(w, "local_rank", r->local_rank);
  npkit_tree_kv_string(w, "rank_source", r->rank_source);
  npkit_tree_kv_uint(w, "events", r->n_events);
  npkit_tree_kv_uint(w, "dropped", r->dropped);
  npkit_tree_kv_bool(w, "truncated", r->truncated);
  if (r->truncated) {
    npkit_tree_key(w, "truncation");
    snprintf(buf, sizeof(buf), "%s at offset %" PRIu64, r->truncation, r->truncated_at);
    npkit_tree_string(w, buf);
  }
  npkit_tree_kv_bool(w, "closed_cleanly", r->has_end);
  npkit_tree_kv_uint(w, "skipped_blocks", r->skipped_blocks);
  npkit_tree_kv_uint(w, "skipped_bytes", r->skipped_bytes);
  if (r->skipped_blocks > 0) {
    char damage[400];
    npkit_tree_kv_string(w, "damage", npkit_reader_damage(r, damage, sizeof(damage)));
  }
  npkit_tree_key(w, "comms");
  npkit_tree_begin_array(w);
  for (size_t i = 0; i < r->n_comms; i++) {
    const npkit_comm_rec *c = &r->comms[i];
    npkit_tree_begin_object(w);
    npkit_tree_key(w, "comm_id");
    npkit_tree_hex(w, c->comm_id, 16);
    npkit_tree_kv_uint(w, "local_id", c->local_id);
    npkit_tree_kv_int(w, "rank", c->rank);
    npkit_tree_kv_int(w, "nranks", c->nranks);
    npkit_tree_kv_int(w, "device", c->device);
    npkit_tree_key(w, "label");
    npkit_comm_label(buf, sizeof(buf), c);
    npkit_tree_string(w, buf);
    npkit_tree_key(w, "name");
    npkit_tree_string_n(w, c->name, sizeof(c->name));
    npkit_tree_kv_uint(w, "parent", c->parent);
    npkit_tree_kv_string(w, "created_by", npkit_fn_name(c->created_by));
    npkit_tree_end_object(w);
  }
  npkit_tree_end_array(w);
  write_machine(r, w);
  npkit_tree_end_object(w);
}

/* ---- metadata, notes, counters ---- */

static void write_process_meta(const npkit_log_reader *r, npkit_sink *s, int64_t pid) {
  char name[256], part[64];
  if (r->rank >= 0)
    snprintf(name, sizeof(name), "rank %" PRId32 " " MIDDOT " %s:%" PRId32, r->rank, r->header.host, r->header.pid);
  else
    snprintf(name, sizeof(name), "%s:%" PRId32, r->header.host, r->header.pid);
  int32_t dev = process_device(r);
  if (dev >= 0) {
    snprintf(part, sizeof(part), " " MIDDOT " GPU %" PRId32, dev);
    strncat(name, part, sizeof(name) - strlen(name) - 1);
  }
  int simulated = (r->header.flags & NPKIT_LOG_F_SIMULATED) != 0;
  if (simulated) strncat(name, " " MIDDOT " simulated GPU", sizeof(name) - strlen(name) - 1);
  npkit_sink_meta_str(s, "process_name", pid, -1, "name", name);
  npkit_sink_meta_int(s, "process_sort_index", pid, -1, "sort_index", r->rank >= 0 ? r->rank : r->header.pid);
  if (r->world_size > 0)
    snprintf(name, sizeof(name), "npkit-preload, world %" PRId32 "%s", r->world_size,
             simulated ? ", simulated: fake NCCL and CUPTI" : "");
  else
    snprintf(name, sizeof(name), "npkit-preload%s", simulated ? ", simulated: fake NCCL and CUPTI" : "");
  npkit_sink_meta_str(s, "process_labels", pid, -1, "labels", name);
}

/* Names a host-thread track.  os_tid < 0: no THREAD record.  The shared track is named once. */
static void write_thread_meta(npkit_sink *s, int64_t pid, uint32_t index, int32_t os_tid, int *shared_named) {
  char name[96];
  if (index >= NPKIT_TRACE_SHARED_TRACK) {
    if (*shared_named) return;
    *shared_named = 1;
    snprintf(name, sizeof(name), "NCCL API " MIDDOT " threads %u+", NPKIT_TRACE_SHARED_TRACK);
    index = NPKIT_TRACE_SHARED_TRACK;
  } else if (os_tid >= 0) {
    snprintf(name, sizeof(name), "NCCL API " MIDDOT " tid %" PRId32, os_tid);
  } else {
    snprintf(name, sizeof(name), "NCCL API " MIDDOT " thread %" PRIu32, index);
  }
  npkit_sink_track(s, pid, npkit_trace_tid(pid, index), name, index);
}

static const char *level_name(uint32_t level) {
  switch (level) {
  case 1: return "error";
  case 2: return "warning";
  case 3: return "info";
  default: return "note";
  }
}

static void write_note(npkit_sink *s, int64_t pid, int64_t ts, uint32_t level, const char *text, size_t len) {
  char name[32];
  snprintf(name, sizeof(name), "npkit %s", level_name(level));
  npkit_sink_head h = {.name = name, .cat = "npkit", .ph = NPKIT_SINK_INSTANT, .scope = 'p', .pid = pid, .tid = -1,
                       .has_ts = 1, .ts = ts};
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
  npkit_sink_arg_str(s, "level", level_name(level));
  /* text may hold NULs; the sink stops at the first, which is what a reader would show anyway */
  npkit_sink_arg_strn(s, "message", text, len);
  npkit_sink_end(s);
}

static void write_notes(const npkit_log_reader *r, npkit_sink *s, const npkit_api_fmt *f) {
  uint64_t last = 0;
  for (size_t i = 0; i < r->n_notes; i++) {
    const npkit_log_note *n = &r->notes[i];
    write_note(s, f->ctx.pid, npkit_trace_rel(&f->ctx, n->time_ns), n->level, n->text, n->length);
    if (n->time_ns > last) last = n->time_ns;
  }
  if (r->notes_omitted > 0) {
    char text[96];
    snprintf(text, sizeof(text), "%" PRIu64 " more notes in the log are not shown", r->notes_omitted);
    write_note(s, f->ctx.pid, npkit_trace_rel(&f->ctx, last), 3, text, strlen(text));
  }
}

static void write_drop_counter(npkit_sink *s, const npkit_api_fmt *f, uint64_t at_ns, uint64_t dropped) {
  npkit_sink_counter(s, "npkit dropped events", NULL, f->ctx.pid, npkit_trace_rel(&f->ctx, at_ns));
  npkit_sink_args(s);
  npkit_sink_arg_uint(s, "dropped", dropped);
  npkit_sink_end(s);
}

/* ---- calls and groups ---- */

typedef struct render_ctx {
  npkit_sink *sink;
  npkit_api_fmt fmt;
  npkit_thread_table threads;
  npkit_render_stats *stats;
  uint64_t last_ns;     /* latest end of any call */
  void *state[N_SOURCES]; /* each source's, NULL when it could not start */
} render_ctx;

/* An API call: to the source that takes calls (the plugin, which may hold it back until NCCL's
 * own events for it come), else straight out. */
static void write_call(render_ctx *c, const npkit_event *ev) {
  for (size_t i = 0; i < N_SOURCES; i++)
    if (sources[i].source->call != NULL && c->state[i] != NULL) {
      sources[i].source->call(c->state[i], &c->fmt, c->sink, ev);
      return;
    }
  npkit_api_fmt_event(&c->fmt, c->sink, ev);
}

/* Any other event: to the source of its kind. */
static void write_other(render_ctx *c, const npkit_event *ev) {
  for (size_t i = 0; i < N_SOURCES; i++)
    if (sources[i].source->kinds(ev->kind)) {
      if (c->state[i] != NULL && sources[i].source->event(c->state[i], c->sink, ev)) {
        (*(uint64_t *)((char *)c->stats + sources[i].stat))++;
        return;
      }
      break;
    }
  c->stats->skipped++;
}

/* Ends the open group of thread s at end_ns: its slice, then its GroupStart call.  The call comes
 * after the slice in the file because both start at the same instant, and viewers that sort
 * stably by start would otherwise nest the slice under the call. */
static void close_group(render_ctx *c, npkit_thread_state *s, uint64_t end_ns) {
  npkit_api_fmt_group(&c->fmt, c->sink, s->index, s->group, s->start_ns, end_ns, s->calls);
  c->stats->groups++;
  if (s->has_deferred) {
    npkit_api_fmt_event(&c->fmt, c->sink, &s->deferred);
    c->stats->events++;
  }
  s->open = 0;
  s->has_deferred = 0;
  s->depth = 0;
}

static void render_call(render_ctx *c, const npkit_event *ev) {
  npkit_thread_state *s = npkit_threads_get(&c->threads, ev->thread);
  unsigned fn = ev->func;
  if (ev->end_ns > c->last_ns) c->last_ns = ev->end_ns;
  if (s == NULL) { /* beyond the thread cap: the call alone */
    write_call(c, ev);
    c->stats->events++;
    return;
  }
  /* Pairing by thread and group id, counting nesting depth; the writer's GROUP_OUTER flag, when
   * present, marks the outermost Start and End explicitly. */
  int outer = (ev->u.api.flags & NPKIT_API_GROUP_OUTER) != 0;
  if (fn == NPKIT_FN_GroupStart) {
    if (s->open && s->group == ev->u.api.group && !outer) {
      s->depth++; /* nested inside the open group */
    } else {
      if (s->open) close_group(c, s, s->last_end_ns); /* its end was never recorded */
      s->open = 1;
      s->depth = 1;
      s->group = ev->u.api.group;
      s->start_ns = ev->start_ns;
      s->calls = 0;
      s->deferred = *ev;
      s->has_deferred = 1;
      if (ev->end_ns > s->last_end_ns) s->last_end_ns = ev->end_ns;
      return;
    }
  } else if (s->open && npkit_fn_class_of(fn) != NPKIT_CLASS_group) {
    s->calls++;
  }
  write_call(c, ev);
  c->stats->events++;
  if (ev->end_ns > s->last_end_ns) s->last_end_ns = ev->end_ns;
  if ((fn == NPKIT_FN_GroupEnd || fn == NPKIT_FN_GroupSimulateEnd) && s->open && s->group == ev->u.api.group &&
      (outer || --s->depth == 0))
    close_group(c, s, ev->end_ns);
  /* an end without a matching start is only a call */
}

static void finish_threads(render_ctx *c, const npkit_log_reader *r, int *shared_named) {
  size_t pos = 0;
  npkit_thread_state *s;
  while ((s = npkit_threads_next(&c->threads, &pos)) != NULL) {
    if (s->open) close_group(c, s, s->last_end_ns);
    if (npkit_reader_thread(r, s->index) == NULL) write_thread_meta(c->sink, c->fmt.ctx.pid, s->index, -1, shared_named);
  }
}

/* The first of two reads of the log, for a sink that wants its flows ahead (trace_sink.h): each
 * source that draws flows tells them.  An error ends it early: the second read says it. */
static void tell_flows_ahead(render_ctx *c, npkit_log_reader *r) {
  char ignored[8];
  npkit_reader_rewind(r);
  for (;;) {
    const npkit_event *ev;
    if (npkit_reader_next(r, &ev, ignored, sizeof ignored) <= 0) break;
    if (ev->kind == NPKIT_EV_API) continue;
    for (size_t i = 0; i < N_SOURCES; i++)
      if (sources[i].source->kinds(ev->kind)) {
        if (sources[i].source->ahead != NULL && c->state[i] != NULL) sources[i].source->ahead(c->state[i], c->sink, ev);
        break;
      }
  }
}

int npkit_render_log(npkit_log_reader *r, npkit_sink *sink, const npkit_render_opts *opts,
                     npkit_render_stats *stats, char *err, size_t errlen) {
  npkit_render_stats local;
  render_ctx c;
  int rc = 0, shared_named = 0;
  int64_t pid = opts != NULL && opts->pid > 0 ? opts->pid : npkit_trace_pid(r);
  uint64_t base = opts != NULL && opts->base_ns != 0 ? opts->base_ns : r->header.clock_base_ns;
  int64_t offset = opts != NULL ? opts->offset_ns : 0;

  if (stats == NULL) stats = &local;
  memset(stats, 0, sizeof(*stats));
  stats->dropped = r->dropped;
  stats->truncated = r->truncated;
  stats->closed_cleanly = r->has_end;
  stats->skipped_blocks = r->skipped_blocks;
  npkit_reader_damage(r, stats->damage, sizeof(stats->damage));
  npkit_reader_version_note(r, stats->version_note, sizeof(stats->version_note));
  memset(&c, 0, sizeof(c));
  c.sink = sink;
  c.stats = stats;
  if (npkit_api_fmt_init(&c.fmt, r, sink, pid, base, offset) != 0) {
    snprintf(err, errlen, "%s: out of memory while rendering", r->path);
    return -1;
  }
  npkit_threads_init(&c.threads);
  for (size_t i = 0; i < N_SOURCES; i++) c.state[i] = sources[i].source->create(r, &c.fmt);

  write_process_meta(r, sink, pid);
  for (size_t i = 0; i < r->n_threads; i++)
    write_thread_meta(sink, pid, r->threads[i].index, r->threads[i].os_tid, &shared_named);
  write_notes(r, sink, &c.fmt);

  if (npkit_sink_wants_flows_ahead(sink)) tell_flows_ahead(&c, r);
  npkit_reader_rewind(r);
  for (;;) {
    const npkit_event *ev;
    int k = npkit_reader_next(r, &ev, err, errlen);
    if (k == 0) break;
    if (k < 0) {
      rc = -1; /* finish the JSON anyway: what was read is still worth a look */
      break;
    }
    if (ev->kind == NPKIT_EV_API) render_call(&c, ev);
    else write_other(&c, ev);
  }
  finish_threads(&c, r, &shared_named);
  for (size_t i = 0; i < N_SOURCES; i++)
    if (c.state[i] != NULL) sources[i].source->finish(c.state[i], sink);
  if (r->dropped > 0) {
    uint64_t at = c.last_ns;
    if (r->has_end && r->end.end_ns > at) at = r->end.end_ns;
    if (at == 0) at = base;
    write_drop_counter(sink, &c.fmt, at, r->dropped);
  }
  npkit_threads_free(&c.threads);
  for (size_t i = 0; i < N_SOURCES; i++)
    if (c.state[i] != NULL) sources[i].source->destroy(c.state[i]);
  npkit_api_fmt_free(&c.fmt);
  return rc;
}

/* ---- one log → one file ---- */

static int write_trace(npkit_log_reader *r, int fd, npkit_trace_format format, npkit_render_stats *stats, char *err,
                       size_t errlen) {
  npkit_trace_writer tw;
  char werr[256];
  if (npkit_trace_writer_open(&tw, format, fd, r->header.clock_base_ns) != 0) {
    npkit_trace_writer_finish(&tw, NULL, werr, sizeof werr);
    snprintf(err, errlen, "out of memory for the %s writer", npkit_trace_format_name(format));
    return -1;
  }
  npkit_sink *s = npkit_trace_writer_sink(&tw);
  npkit_sink_open(s);
  npkit_render_summary(r, npkit_sink_meta_begin(s), r->header.clock_base_ns);
  npkit_sink_meta_end(s);
  npkit_sink_events_begin(s);
  int rc = npkit_render_log(r, s, NULL, stats, err, errlen);
  npkit_sink_events_end(s);
  if (npkit_trace_stack_frames(r, s, npkit_trace_pid(r), werr, sizeof(werr)) != 0 && rc == 0) {
    snprintf(err, errlen, "%s", werr);
    rc = -1;
  }
  npkit_sink_close(s);
  if (npkit_trace_writer_finish(&tw, NULL, werr, sizeof(werr)) != 0 && rc == 0) {
    snprintf(err, errlen, "%s", werr);
    rc = -1;
  }
  return rc;
}

int npkit_render_trace(const char *log_path, const char *json_path, npkit_render_stats *stats, char *err,
                       size_t errlen) {
  return npkit_render_trace_as(log_path, json_path, NPKIT_TRACE_JSON, stats, err, errlen);
}

int npkit_render_trace_as(const char *log_path, const char *out_path, npkit_trace_format format,
                          npkit_render_stats *stats, char *err, size_t errlen) {
  const char *json_path = out_path;
  npkit_log_reader *r;
  npkit_render_stats local;
  npkit_out_file out;

  if (stats == NULL) stats = &local;
  memset(stats, 0, sizeof(*stats));
  if (npkit_reader_open(log_path, &r, err, errlen) != 0) return -1;
  if (npkit_out_open(&out, json_path, err, errlen) != 0) {
    npkit_reader_close(r);
    return -1;
  }
  int rc = npkit_out_close(&out, write_trace(r, out.fd, format, stats, err, errlen), err, errlen);
  npkit_reader_close(r);
  return rc;
}
