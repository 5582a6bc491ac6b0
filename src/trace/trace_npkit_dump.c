#include "trace_npkit_dump.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_facts.h"
#include "trace_source.h"
#include "trace_tracks.h"

#define MIDDOT NPKIT_TRACE_MIDDOT
/* Room for one event: fixed keys and ~25 numbers (2 KB), an escaped folder (512 bytes, up to 6
 * bytes each) or name (255), a communicator label (64). */
#define EVENT_ROOM (2048 + 6 * (512 + 64))

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

/* ---- formatting ---- */


/* GB/s with three decimals, rounded like `npkit convert`. */
static char *put_bandwidth(char *p, uint64_t bytes, uint64_t dur_ns) {
  if (dur_ns == 0) return p;
  NPKIT_PUT(p, ",\"bandwidth_gbps\":");
  return npkit_fmt_ts(p, (int64_t)npkit_gbps_milli(bytes, dur_ns));
}

/* {"name":"<name>","cat":"<cat>","ph":"<ph>", ... ,"pid":P,"tid":T,"ts":... */
static char *put_head(const npkit_dump_render *n, char *p, const char *name, const char *cat, const char *ph,
                      int64_t tid, uint64_t t) {
  NPKIT_PUT(p, "\n{\"name\":\"");
  p = npkit_fmt_escaped(p, name, 255);
  NPKIT_PUT(p, "\",\"cat\":\"");
  p = npkit_fmt_str(p, cat);
  NPKIT_PUT(p, "\",\"ph\":\"");
  p = npkit_fmt_str(p, ph);
  NPKIT_PUT(p, "\",\"pid\":");
  p = npkit_fmt_i64(p, n->fmt->ctx.pid);
  if (tid >= 0) {
    NPKIT_PUT(p, ",\"tid\":");
    p = npkit_fmt_i64(p, tid);
  }
  NPKIT_PUT(p, ",\"ts\":");
  return npkit_fmt_ts(p, npkit_trace_rel(&n->fmt->ctx, t));
}

static const char *event_name(const npkit_dump_render *n, const npkit_ev_npkit *x, char *buf, size_t len) {
  const npkit_log_string *s = x->name != 0 ? npkit_reader_string(n->r, x->name) : NULL;
  if (s != NULL && s->text[0] != '\0') return s->text;
  snprintf(buf, len, "NPKit event 0x%02x", x->id);
  return buf;
}

static void write_slice(npkit_dump_render *n, npkit_json *w, const npkit_event *ev) {
  const npkit_ev_npkit *x = &ev->u.npkit;
  int gpu = x->source == NPKIT_DUMP_SLICE_GPU;
  char nbuf[32];
  const char *name = event_name(n, x, nbuf, sizeof nbuf);
  int64_t tid = track_tid(n, x);
  npkit_json_element(w);
  char *p = npkit_json_reserve(w, EVENT_ROOM);
  if (x->type == NPKIT_DUMP_SLICE_PAIR) {
    p = put_head(n, p, name, gpu ? "npkit_gpu" : "npkit_cpu", "X", tid, ev->start_ns);
    NPKIT_PUT(p, ",\"dur\":");
    uint64_t dur = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
    p = npkit_fmt_ts(p, (int64_t)dur);
  } else {
    const char *cat = x->type == NPKIT_DUMP_SLICE_POINT ? (gpu ? "npkit_gpu" : "npkit_cpu") : "npkit_unpaired";
    p = put_head(n, p, name, cat, "i", tid, ev->start_ns);
    NPKIT_PUT(p, ",\"s\":\"t\"");
  }
  p = npkit_fmt_key_u64(p, ",\"args\":{\"rank\":", x->rank);
  p = npkit_fmt_key_u64(p, gpu ? ",\"buffer\":" : ",\"channel\":", x->buffer);
  p = npkit_fmt_key_u64(p, ",\"size\":", x->size);
  p = npkit_fmt_key_u64(p, gpu ? ",\"rsvd\":" : ",\"slot\":", x->rsvd);
  if (x->type == NPKIT_DUMP_SLICE_PAIR) {
    if (x->entry_size != x->size) p = npkit_fmt_key_u64(p, ",\"entry_size\":", x->entry_size);
    if (gpu && x->entry_rsvd != 0) p = npkit_fmt_key_u64(p, ",\"entry_rsvd\":", x->entry_rsvd);
    p = put_bandwidth(p, x->size, ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0);
    p = npkit_fmt_key_u64(p, ",\"seq\":", x->seq);
  } else if (x->type == NPKIT_DUMP_SLICE_UNPAIRED_ENTRY) {
    NPKIT_PUT(p, ",\"unpaired\":\"entry\"");
  } else if (x->type == NPKIT_DUMP_SLICE_UNPAIRED_EXIT) {
    NPKIT_PUT(p, ",\"unpaired\":\"exit\"");
  }
  if (x->flags & NPKIT_DUMP_SLICE_UNALIGNED) NPKIT_PUT(p, ",\"unaligned\":true");
  NPKIT_PUT(p, "}}");
  npkit_json_commit(w, p);
}

static void write_read(npkit_dump_render *n, npkit_json *w, const npkit_event *ev) {
  const npkit_ev_npkit_read *x = &ev->u.npkit_read;
  npkit_json_element(w);
  char *p = npkit_json_reserve(w, EVENT_ROOM);
  if (ev->thread != 0) { /* the ncclCommDestroy that read it: the time it took there */
    int64_t tid = npkit_trace_tid(n->fmt->ctx.pid, ev->thread);
    p = put_head(n, p, "NPKit dump read", "npkit", "X", tid, ev->start_ns);
    NPKIT_PUT(p, ",\"dur\":");
    p = npkit_fmt_ts(p, (int64_t)(ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0));
  } else {
    p = put_head(n, p, "NPKit dump read", "npkit", "i", -1, ev->start_ns);
    NPKIT_PUT(p, ",\"s\":\"p\"");
  }
  NPKIT_PUT(p, ",\"args\":{\"trigger\":\"");
  p = npkit_fmt_str(p, x->trigger == NPKIT_DUMP_READ_AFTER_DESTROY ? "ncclCommDestroy"
                 : x->trigger == NPKIT_DUMP_READ_AFTER_ABORT ? "ncclCommAbort"
                                                         : "exit");
  *p++ = '"';
  if (x->flags & NPKIT_DUMP_READ_SHARED) NPKIT_PUT(p, ",\"shared_state\":true");
  if (x->comm != 0) {
    const npkit_comm_rec *c = npkit_reader_comm(n->r, x->comm);
    char label[64];
    if (c != NULL)
      npkit_comm_label(label, sizeof label, c);
    else
      snprintf(label, sizeof label, "comm local %" PRIu32, x->comm);
    NPKIT_PUT(p, ",\"comm\":\"");
    p = npkit_fmt_escaped(p, label, sizeof label);
    *p++ = '"';
  }
  const npkit_log_string *dir = x->dir != 0 ? npkit_reader_string(n->r, x->dir) : NULL;
  if (dir != NULL) {
    NPKIT_PUT(p, ",\"dump_dir\":\"");
    p = npkit_fmt_escaped(p, dir->text, 512);
    *p++ = '"';
  }
  p = npkit_fmt_key_u64(p, ",\"read\":", x->read);
  p = npkit_fmt_key_u64(p, ",\"files\":", x->files);
  p = npkit_fmt_key_u64(p, ",\"bytes\":", x->bytes);
  p = npkit_fmt_key_u64(p, ",\"events\":", x->events);
  p = npkit_fmt_key_u64(p, ",\"pairs\":", x->pairs);
  p = npkit_fmt_key_u64(p, ",\"unpaired_entries\":", x->unpaired_entries);
  p = npkit_fmt_key_u64(p, ",\"unpaired_exits\":", x->unpaired_exits);
  p = npkit_fmt_key_u64(p, ",\"point_events\":", x->point_events);
  p = npkit_fmt_key_u64(p, ",\"unknown_ids\":", x->unknown_ids);
  p = npkit_fmt_key_u64(p, ",\"invalid_events\":", x->invalid_events);
  p = npkit_fmt_key_u64(p, ",\"bad_times\":", x->bad_times);
  p = npkit_fmt_key_u64(p, ",\"out_of_order\":", x->out_of_order);
  p = npkit_fmt_key_u64(p, ",\"time_sync_cpu\":", x->time_sync_cpu);
  p = npkit_fmt_key_u64(p, ",\"time_sync_gpu\":", x->time_sync_gpu);
  p = npkit_fmt_key_u64(p, ",\"unaligned_events\":", x->unaligned_events);
  p = npkit_fmt_key_u64(p, ",\"truncated_files\":", x->truncated_files);
  p = npkit_fmt_key_u64(p, ",\"unreadable_files\":", x->unreadable_files);
  p = npkit_fmt_key_u64(p, ",\"skipped_ranks\":", x->skipped_ranks);
  p = npkit_fmt_key_u64(p, ",\"not_stored\":", x->not_stored);
  p = npkit_fmt_key_u64(p, ",\"files_over_limit\":", x->files_over_limit);
  NPKIT_PUT(p, "}}");
  npkit_json_commit(w, p);
}

int npkit_dump_render_event(npkit_dump_render *n, npkit_json *w, const npkit_event *ev) {
  if (n == NULL) return 0;
  if (ev->kind == NPKIT_EV_NPKIT_DUMP_SLICE) {
    write_slice(n, w, ev);
    return 1;
  }
  if (ev->kind == NPKIT_EV_NPKIT_DUMP_READ) {
    write_read(n, w, ev);
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

void npkit_dump_render_finish(npkit_dump_render *n, npkit_json *w) {
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
    npkit_trace_track_meta(w, n->fmt->ctx.pid, band_tid(n, i), name, sort_index(t));
  }
  if (n->shared_used) {
    int64_t tid = band_tid(n, NPKIT_TRACE_NPKIT_TRACKS - 1);
    npkit_trace_track_meta(w, n->fmt->ctx.pid, tid, "NPKit " MIDDOT " more tracks", 3000000 + ((int64_t)8192 << 18));
  }
}

void npkit_dump_render_free(npkit_dump_render *n) { free(n); }

/* ---- the trace source ---- */

static int source_kinds(unsigned kind) {
  return kind == NPKIT_EV_NPKIT_DUMP_SLICE || kind == NPKIT_EV_NPKIT_DUMP_READ;
}
static void *source_create(const npkit_log_reader *r, npkit_api_fmt *fmt) { return npkit_dump_render_new(r, fmt); }
static int source_event(void *self, npkit_sink *s, const npkit_event *ev) { return npkit_dump_render_event(self, npkit_sink_json(s), ev); }
static void source_finish(void *self, npkit_sink *s) { npkit_dump_render_finish(self, npkit_sink_json(s)); }
static void source_destroy(void *self) { npkit_dump_render_free(self); }

const npkit_trace_source npkit_dump_trace_source = {
    "npkit_dump", source_kinds, source_create, source_event, NULL, source_finish, source_destroy};
