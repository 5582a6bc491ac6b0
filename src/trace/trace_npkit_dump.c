#include "trace_npkit_dump.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_facts.h"
#include "trace_source.h"
#include "trace_tracks.h"

#define MIDDOT NPKIT_TRACE_MIDDOT

typedef struct npk_track {
  uint32_t rank, buffer, lane;
  uint8_t source, unaligned;
} npk_track;

struct npkit_dump_render {
  const npkit_log_reader *r;
  const npkit_api_fmt *fmt;
  npk_track tracks[NPKIT_TRACE_NPKIT_TRACKS - 1];
  uint32_t ntracks;
  int shared_used; /* some events went to the last, shared track */
  uint32_t last;   /* slot of the latest lookup: events of a buffer come together */
};

npkit_dump_render *npkit_dump_render_new(const npkit_log_reader *r, const npkit_api_fmt *fmt) {
  npkit_dump_render *n = calloc(1, sizeof *n);
  if (n == NULL) return NULL;
  n->r = r;
  n->fmt = fmt;
  return n;
}

static int same_track(const npk_track *t, const npkit_ev_npkit *x) {
  return t->rank == x->rank && t->buffer == x->buffer && t->lane == x->lane && t->source == x->source &&
         t->unaligned == ((x->flags & NPKIT_DUMP_SLICE_UNALIGNED) != 0);
}

static int64_t band_tid(const npkit_dump_render *n, uint32_t slot) {
  return npkit_trace_band_tid(n->fmt->ctx.pid, NPKIT_TRACE_NPKIT_BAND, slot);
}

static int64_t track_tid(npkit_dump_render *n, const npkit_ev_npkit *x) {
  if (n->last < n->ntracks && same_track(&n->tracks[n->last], x)) return band_tid(n, n->last);
  for (uint32_t i = 0; i < n->ntracks; i++)
    if (same_track(&n->tracks[i], x)) {
      n->last = i;
      return band_tid(n, i);
    }
  if (n->ntracks < NPKIT_TRACE_NPKIT_TRACKS - 1) {
    npk_track *t = &n->tracks[n->ntracks];
    *t = (npk_track){x->rank, x->buffer, x->lane, x->source, (x->flags & NPKIT_DUMP_SLICE_UNALIGNED) != 0};
    n->last = n->ntracks++;
    return band_tid(n, n->last);
  }
  n->shared_used = 1;
  return band_tid(n, NPKIT_TRACE_NPKIT_TRACKS - 1);
}

/* ---- events ---- */

static const char *event_name(const npkit_dump_render *n, const npkit_ev_npkit *x, char *buf, size_t len) {
  const npkit_log_string *s = x->name != 0 ? npkit_reader_string(n->r, x->name) : NULL;
  if (s != NULL && s->text[0] != '\0') {
    snprintf(buf, len, "%s", s->text); /* names are shown up to 255 bytes */
    return buf;
  }
  snprintf(buf, len, "NPKit event 0x%02x", x->id);
  return buf;
}

static void write_slice(npkit_dump_render *n, npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_npkit *x = &ev->u.npkit;
  int gpu = x->source == NPKIT_DUMP_SLICE_GPU;
  char nbuf[256];
  uint64_t dur = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
  npkit_sink_head h = {.name = event_name(n, x, nbuf, sizeof nbuf), .pid = n->fmt->ctx.pid, .tid = track_tid(n, x),
                       .has_ts = 1, .ts = npkit_trace_rel(&n->fmt->ctx, ev->start_ns)};
  if (x->type == NPKIT_DUMP_SLICE_PAIR) {
    h.cat = gpu ? "npkit_gpu" : "npkit_cpu";
    h.ph = NPKIT_SINK_SLICE;
    h.has_dur = 1;
    h.dur = (int64_t)dur;
  } else {
    h.cat = x->type == NPKIT_DUMP_SLICE_POINT ? (gpu ? "npkit_gpu" : "npkit_cpu") : "npkit_unpaired";
    h.ph = NPKIT_SINK_INSTANT;
    h.scope = 't';
    h.scope_last = 1;
  }
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
  npkit_sink_arg_uint(s, "rank", x->rank);
  npkit_sink_arg_uint(s, gpu ? "buffer" : "channel", x->buffer);
  npkit_sink_arg_uint(s, "size", x->size);
  npkit_sink_arg_uint(s, gpu ? "rsvd" : "slot", x->rsvd);
  if (x->type == NPKIT_DUMP_SLICE_PAIR) {
    if (x->entry_size != x->size) npkit_sink_arg_uint(s, "entry_size", x->entry_size);
    if (gpu && x->entry_rsvd != 0) npkit_sink_arg_uint(s, "entry_rsvd", x->entry_rsvd);
    /* GB/s with three decimals, rounded like `npkit convert` */
    if (dur > 0) npkit_sink_arg_milli(s, "bandwidth_gbps", (int64_t)npkit_gbps_milli(x->size, dur));
    npkit_sink_arg_uint(s, "seq", x->seq);
  } else if (x->type == NPKIT_DUMP_SLICE_UNPAIRED_ENTRY) {
    npkit_sink_arg_str(s, "unpaired", "entry");
  } else if (x->type == NPKIT_DUMP_SLICE_UNPAIRED_EXIT) {
    npkit_sink_arg_str(s, "unpaired", "exit");
  }
  if (x->flags & NPKIT_DUMP_SLICE_UNALIGNED) npkit_sink_arg_bool(s, "unaligned", 1);
  npkit_sink_end(s);
}

static void write_read(npkit_dump_render *n, npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_npkit_read *x = &ev->u.npkit_read;
  npkit_sink_head h = {.name = "NPKit dump read", .cat = "npkit", .pid = n->fmt->ctx.pid, .tid = -1, .has_ts = 1,
                       .ts = npkit_trace_rel(&n->fmt->ctx, ev->start_ns)};
  if (ev->thread != 0) { /* the ncclCommDestroy that read it: the time it took there */
    h.ph = NPKIT_SINK_SLICE;
    h.tid = npkit_trace_tid(n->fmt->ctx.pid, ev->thread);
    h.has_dur = 1;
    h.dur = (int64_t)(ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0);
  } else {
    h.ph = NPKIT_SINK_INSTANT;
    h.scope = 'p';
    h.scope_last = 1;
  }
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
  npkit_sink_arg_str(s, "trigger", x->trigger == NPKIT_DUMP_READ_AFTER_DESTROY ? "ncclCommDestroy"
                                   : x->trigger == NPKIT_DUMP_READ_AFTER_ABORT ? "ncclCommAbort"
                                                                               : "exit");
  if (x->flags & NPKIT_DUMP_READ_SHARED) npkit_sink_arg_bool(s, "shared_state", 1);
  if (x->comm != 0) {
    const npkit_comm_rec *c = npkit_reader_comm(n->r, x->comm);
    char label[64];
    if (c != NULL)
      npkit_comm_label(label, sizeof label, c);
    else
      snprintf(label, sizeof label, "comm local %" PRIu32, x->comm);
    npkit_sink_arg_strn(s, "comm", label, sizeof label);
  }
  const npkit_log_string *dir = x->dir != 0 ? npkit_reader_string(n->r, x->dir) : NULL;
  if (dir != NULL) npkit_sink_arg_strn(s, "dump_dir", dir->text, 512);
  npkit_sink_arg_uint(s, "read", x->read);
  npkit_sink_arg_uint(s, "files", x->files);
  npkit_sink_arg_uint(s, "bytes", x->bytes);
  npkit_sink_arg_uint(s, "events", x->events);
  npkit_sink_arg_uint(s, "pairs", x->pairs);
  npkit_sink_arg_uint(s, "unpaired_entries", x->unpaired_entries);
  npkit_sink_arg_uint(s, "unpaired_exits", x->unpaired_exits);
  npkit_sink_arg_uint(s, "point_events", x->point_events);
  npkit_sink_arg_uint(s, "unknown_ids", x->unknown_ids);
  npkit_sink_arg_uint(s, "invalid_events", x->invalid_events);
  npkit_sink_arg_uint(s, "bad_times", x->bad_times);
  npkit_sink_arg_uint(s, "out_of_order", x->out_of_order);
  npkit_sink_arg_uint(s, "time_sync_cpu", x->time_sync_cpu);
  npkit_sink_arg_uint(s, "time_sync_gpu", x->time_sync_gpu);
  npkit_sink_arg_uint(s, "unaligned_events", x->unaligned_events);
  npkit_sink_arg_uint(s, "truncated_files", x->truncated_files);
  npkit_sink_arg_uint(s, "unreadable_files", x->unreadable_files);
  npkit_sink_arg_uint(s, "skipped_ranks", x->skipped_ranks);
  npkit_sink_arg_uint(s, "not_stored", x->not_stored);
  npkit_sink_arg_uint(s, "files_over_limit", x->files_over_limit);
  npkit_sink_end(s);
}

int npkit_dump_render_event(npkit_dump_render *n, npkit_sink *s, const npkit_event *ev) {
  if (n == NULL) return 0;
  if (ev->kind == NPKIT_EV_NPKIT_DUMP_SLICE) {
    write_slice(n, s, ev);
    return 1;
  }
  if (ev->kind == NPKIT_EV_NPKIT_DUMP_READ) {
    write_read(n, s, ev);
    return 1;
  }
  return 0;
}

/* ---- track names ---- */


/* After the profiler plugin's tracks (sort indices below 3,000,000): by rank, GPU buffers before
 * network channels, then buffer and lane. */
static int64_t sort_index(const npk_track *t) {
  uint64_t buffer = t->buffer < 4095 ? t->buffer : 4095, lane = t->lane < 31 ? t->lane : 31;
  return 3000000 + (int64_t)((((uint64_t)(t->rank % 4096) * 2 + t->source) << 18) + buffer * 64 + lane * 2 +
                             t->unaligned);
}

void npkit_dump_render_finish(npkit_dump_render *n, npkit_sink *s) {
  if (n == NULL) return;
  /* The rank goes into the names when it is not simply the process's own. */
  int with_rank = 0;
  for (uint32_t i = 0; i < n->ntracks; i++)
    if (n->r->rank < 0 || n->tracks[i].rank != (uint32_t)n->r->rank) with_rank = 1;
  for (uint32_t i = 0; i < n->ntracks; i++) {
    const npk_track *t = &n->tracks[i];
    char name[160], prefix[48] = "NPKit";
    if (with_rank) snprintf(prefix, sizeof prefix, "NPKit rank %" PRIu32 " " MIDDOT, t->rank);
    if (t->source == NPKIT_DUMP_SLICE_CPU)
      snprintf(name, sizeof name, "%s net channel %" PRIu32 " " MIDDOT " lane %" PRIu32, prefix, t->buffer,
               t->lane);
    else if (t->lane == 0)
      snprintf(name, sizeof name, "%s GPU buf %" PRIu32 "%s", prefix, t->buffer,
               t->unaligned ? " " MIDDOT " unaligned" : "");
    else
      snprintf(name, sizeof name, "%s GPU buf %" PRIu32 " " MIDDOT " lane %" PRIu32 "%s", prefix, t->buffer,
               t->lane, t->unaligned ? " " MIDDOT " unaligned" : "");
    npkit_sink_track(s, n->fmt->ctx.pid, band_tid(n, i), name, sort_index(t));
  }
  if (n->shared_used) {
    int64_t tid = band_tid(n, NPKIT_TRACE_NPKIT_TRACKS - 1);
    npkit_sink_track(s, n->fmt->ctx.pid, tid, "NPKit " MIDDOT " more tracks", 3000000 + ((int64_t)8192 << 18));
  }
}

void npkit_dump_render_free(npkit_dump_render *n) { free(n); }

/* ---- the trace source ---- */

static int source_kinds(unsigned kind) {
  return kind == NPKIT_EV_NPKIT_DUMP_SLICE || kind == NPKIT_EV_NPKIT_DUMP_READ;
}
static void *source_create(const npkit_log_reader *r, npkit_api_fmt *fmt) { return npkit_dump_render_new(r, fmt); }
static int source_event(void *self, npkit_sink *s, const npkit_event *ev) { return npkit_dump_render_event(self, s, ev); }
static void source_finish(void *self, npkit_sink *s) { npkit_dump_render_finish(self, s); }
static void source_destroy(void *self) { npkit_dump_render_free(self); }

const npkit_trace_source npkit_dump_trace_source = {
    "npkit_dump", source_kinds, source_create, source_event, NULL, source_finish, source_destroy, NULL};
