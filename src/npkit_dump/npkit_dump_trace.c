#include "npkit_dump_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event_facts.h"
#include "grow.h"
#include "json_writer.h"
#include "out_file.h"
#include "npkit_dump_diag.h"

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "unknown"
#endif

/* Room for one event: fixed text, a name escaped at up to 6 bytes per byte, numbers, and the 15
 * bytes that copy16() may write beyond the end of a fragment. */
#define EVENT_ROOM (NPKIT_DUMP_NAME_MAX * 6 + 512)

enum { CLASS_X_GPU, CLASS_X_CPU, CLASS_UNPAIRED, CLASS_POINT_GPU, CLASS_POINT_CPU, N_CLASSES };

typedef struct tw {
  npkit_json w;
  const npkit_dump_trace_opts *o;
  int64_t base_ns;
  int aligned;

  int have_rank;
  uint32_t rank;
  char pid_text[40]; /* ",\"pid\":R+1" (npkit_fmt_u64 writes 24 bytes whatever the number) */
  size_t pid_len;
  uint64_t ranks;
  npkit_rank_set rank_list; /* "0-3,5" */

  int have_buf; /* the buffer whose tracks are in lane_tid */
  uint32_t buf_index;
  uint8_t buf_source;
  uint32_t *lane_tid; /* [lane * 2 + unaligned] -> tid, 0: none yet */
  size_t lane_cap;
  uint32_t tracks;
  int nomem;

  /* Pre-built text, copied in 16-byte steps (fixed-size copies compile to a few moves):
   * per event class and id, "\n{...,"name":"NAME"", and for the current track ","pid":P,"tid":T,"ts":". */
  char *head[N_CLASSES][NPKIT_DUMP_NUM_IDS];
  uint16_t head_len[N_CLASSES][NPKIT_DUMP_NUM_IDS];
  char track_text[64];
  size_t track_len;
  uint32_t track_text_tid;

  char *diag_text[NPKIT_DUMP_TRACE_MAX_DIAGS];
  uint8_t diag_sev[NPKIT_DUMP_TRACE_MAX_DIAGS];
  unsigned n_diags;
  uint64_t diags_omitted;
} tw;

static int64_t sub_sat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return a > b ? INT64_MAX : INT64_MIN;
  return r;
}

/* ---- metadata ---- */

/* Written by hand like the slices: each event of the array starts on its own line. */
static void put_meta(tw *t, const char *what, uint32_t tid, const char *key, const char *str, int64_t num) {
  npkit_json_element(&t->w);
  char *p = npkit_json_reserve(&t->w, EVENT_ROOM);
  NPKIT_PUT(p, "\n{\"ph\":\"M\",\"name\":\"");
  p = npkit_fmt_escaped(p, what, strlen(what));
  *p++ = '"';
  p = npkit_fmt_lit(p, t->pid_text, t->pid_len);
  if (tid != 0) {
    NPKIT_PUT(p, ",\"tid\":");
    p = npkit_fmt_u64(p, tid);
  }
  NPKIT_PUT(p, ",\"args\":{\"");
  p = npkit_fmt_escaped(p, key, strlen(key));
  NPKIT_PUT(p, "\":");
  if (str != NULL) {
    *p++ = '"';
    p = npkit_fmt_escaped(p, str, strnlen(str, NPKIT_DUMP_NAME_MAX));
    *p++ = '"';
  } else {
    p = npkit_fmt_i64(p, num);
  }
  NPKIT_PUT(p, "}}");
  npkit_json_commit(&t->w, p);
}

static void new_rank(tw *t, uint32_t rank) {
  char name[48];
  t->have_rank = 1;
  t->rank = rank;
  t->ranks++;
  npkit_rank_set_add(&t->rank_list, rank);
  char *p = t->pid_text;
  NPKIT_PUT(p, ",\"pid\":");
  p = npkit_fmt_u64(p, (uint64_t)rank + 1);
  t->pid_len = (size_t)(p - t->pid_text);
  snprintf(name, sizeof(name), "rank %u (NPKit)", rank);
  put_meta(t, "process_name", 0, "name", name, 0);
  put_meta(t, "process_sort_index", 0, "sort_index", NULL, rank);
  put_meta(t, "process_labels", 0, "labels", "NPKit dump", 0);
  t->have_buf = 0;
}

static uint32_t track_tid(tw *t, const npkit_dump_slice *s) {
  if (!t->have_rank || s->rank != t->rank) new_rank(t, s->rank);
  if (!t->have_buf || s->buffer != t->buf_index || s->source != t->buf_source) {
    t->have_buf = 1;
    t->buf_index = s->buffer;
    t->buf_source = s->source;
    if (t->lane_tid != NULL) memset(t->lane_tid, 0, t->lane_cap * sizeof(*t->lane_tid));
  }
  int unaligned = (s->flags & NPKIT_SLICE_UNALIGNED) != 0;
  size_t idx = (size_t)s->lane * 2 + (size_t)unaligned;
  if (idx >= t->lane_cap) {
    size_t old = t->lane_cap;
    if (NPKIT_GROW(t->lane_tid, t->lane_cap, idx + 1, 32) != 0) {
      t->nomem = 1;
      return 0;
    }
    memset(t->lane_tid + old, 0, (t->lane_cap - old) * sizeof(*t->lane_tid));
  }
  if (t->lane_tid[idx] != 0) return t->lane_tid[idx];
  uint32_t tid = NPKIT_DUMP_TID_BASE + ++t->tracks;
  t->lane_tid[idx] = tid;
  char name[96];
  const char *tail = unaligned ? " \xc2\xb7 unaligned" : "";
  if (s->source == NPKIT_SOURCE_GPU && s->lane == 0)
    snprintf(name, sizeof(name), "GPU buf %u%s", s->buffer, tail);
  else if (s->source == NPKIT_SOURCE_GPU)
    snprintf(name, sizeof(name), "GPU buf %u \xc2\xb7 lane %u%s", s->buffer, s->lane, tail);
  else
    snprintf(name, sizeof(name), "net channel %u \xc2\xb7 lane %u", s->buffer, s->lane);
  /* GPU buffers by index, then network channels; lanes in order within each */
  int64_t order = s->source == NPKIT_SOURCE_GPU
                      ? ((int64_t)s->buffer * NPKIT_DUMP_MAX_GPU_LANES + s->lane) * 2 + unaligned
                      : ((int64_t)1 << 30) + (int64_t)s->buffer * 4096 + (s->lane < 4095 ? s->lane : 4095);
  put_meta(t, "thread_name", tid, "name", name, 0);
  put_meta(t, "thread_sort_index", tid, "sort_index", NULL, order);
  return tid;
}

/* ---- events ---- */

static int on_begin(void *user, const npkit_dump_info *info) {
  tw *t = user;
  t->aligned = info->has_aligned;
  t->base_ns = info->has_aligned ? info->base_ns : 0;
  return 0;
}

static char *copy16(char *p, const char *src, size_t n) {
  for (size_t i = 0; i < n; i += 16) memcpy(p + i, src + i, 16);
  return p + n;
}

/* "\n{"ph":..,"cat":..,"name":"NAME"" of a class and id, built on first use (NULL: no memory). */
static const char *event_head(tw *t, int cls, const npkit_dump_slice *s, size_t *len) {
  char *h = t->head[cls][s->id];
  if (h != NULL) {
    *len = t->head_len[cls][s->id];
    return h;
  }
  static const char *const starts[N_CLASSES] = {
      "\n{\"ph\":\"X\",\"cat\":\"npkit_gpu\",\"name\":\"",
      "\n{\"ph\":\"X\",\"cat\":\"npkit_cpu\",\"name\":\"",
      "\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"npkit_unpaired\",\"name\":\"",
      "\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"npkit_gpu\",\"name\":\"",
      "\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"npkit_cpu\",\"name\":\"",
  };
  size_t n0 = strlen(starts[cls]), cap = n0 + 6 * s->name_len + 1;
  h = calloc(1, (cap + 15) / 16 * 16 + 16);
  if (h == NULL) return NULL;
  char *p = npkit_fmt_lit(h, starts[cls], n0);
  p = npkit_fmt_escaped(p, s->name, s->name_len);
  *p++ = '"';
  t->head[cls][s->id] = h;
  t->head_len[cls][s->id] = (uint16_t)(p - h);
  *len = (size_t)(p - h);
  return h;
}

/* ,"args":{"size":N,"rsvd":R (GPU events) or ,"slot":S (CPU events): the head of every slice's args. */
static char *put_size_args(char *p, const npkit_dump_slice *s, int gpu) {
  NPKIT_PUT(p, ",\"args\":{\"size\":");
  p = npkit_fmt_u64(p, s->size);
  if (gpu) {
    NPKIT_PUT(p, ",\"rsvd\":");
  } else {
    NPKIT_PUT(p, ",\"slot\":");
  }
  return npkit_fmt_u64(p, s->rsvd);
}

static int on_slice(void *user, const npkit_dump_slice *s) {
  tw *t = user;
  uint32_t tid = track_tid(t, s);
  if (t->nomem) return 1;
  int gpu = s->source == NPKIT_SOURCE_GPU;
  int unaligned = (s->flags & NPKIT_SLICE_UNALIGNED) != 0;
  int64_t ts = unaligned ? s->start_ns : sub_sat(s->start_ns, t->base_ns);
  int cls = s->type == NPKIT_SLICE_COMPLETE ? (gpu ? CLASS_X_GPU : CLASS_X_CPU)
            : s->type == NPKIT_SLICE_UNPAIRED_ENTRY || s->type == NPKIT_SLICE_UNPAIRED_EXIT ? CLASS_UNPAIRED
            : gpu                                                                           ? CLASS_POINT_GPU
                                                                                            : CLASS_POINT_CPU;
  size_t head_len;
  const char *head = event_head(t, cls, s, &head_len);
  if (head == NULL) {
    t->nomem = 1;
    return 1;
  }
  if (tid != t->track_text_tid) {
    char *q = t->track_text;
    q = npkit_fmt_lit(q, t->pid_text, t->pid_len);
    NPKIT_PUT(q, ",\"tid\":");
    q = npkit_fmt_u64(q, tid);
    NPKIT_PUT(q, ",\"ts\":");
    t->track_len = (size_t)(q - t->track_text);
    t->track_text_tid = tid;
  }

  npkit_json_element(&t->w);
  char *p = npkit_json_reserve(&t->w, EVENT_ROOM);
  p = copy16(p, head, head_len);
  p = copy16(p, t->track_text, t->track_len);
  p = npkit_fmt_ts(p, ts);
  if (s->type == NPKIT_SLICE_COMPLETE) {
    int64_t dur = sub_sat(s->end_ns, s->start_ns);
    NPKIT_PUT(p, ",\"dur\":");
    p = npkit_fmt_ts(p, dur);
    p = put_size_args(p, s, gpu);
    if (s->entry_size != s->size) {
      NPKIT_PUT(p, ",\"entry_size\":");
      p = npkit_fmt_u64(p, s->entry_size);
    }
    if (s->entry_rsvd != 0 && gpu) {
      NPKIT_PUT(p, ",\"entry_rsvd\":");
      p = npkit_fmt_u64(p, s->entry_rsvd);
    }
    if (dur > 0) {
      NPKIT_PUT(p, ",\"bw_GBps\":");
      p = npkit_fmt_ts(p, (int64_t)npkit_gbps_milli(s->size, (uint64_t)dur));
    }
    NPKIT_PUT(p, ",\"seq\":");
    p = npkit_fmt_u64(p, s->seq);
  } else {
    p = put_size_args(p, s, gpu);
    if (s->type == NPKIT_SLICE_UNPAIRED_ENTRY) {
      NPKIT_PUT(p, ",\"unpaired\":\"entry\"");
    } else if (s->type == NPKIT_SLICE_UNPAIRED_EXIT) {
      NPKIT_PUT(p, ",\"unpaired\":\"exit\"");
    }
  }
  if (unaligned) NPKIT_PUT(p, ",\"unaligned\":true");
  NPKIT_PUT(p, "}}");
  npkit_json_commit(&t->w, p);
  return t->w.err != 0; /* stop early when the output is lost */
}

static void on_diag(void *user, npkit_dump_severity sev, const char *msg) {
  tw *t = user;
  if (t->n_diags < NPKIT_DUMP_TRACE_MAX_DIAGS && (t->diag_text[t->n_diags] = strdup(msg)) != NULL)
    t->diag_sev[t->n_diags++] = (uint8_t)sev;
  else
    t->diags_omitted++;
  if (t->o->diag != NULL) t->o->diag(t->o->user, sev, msg);
}

/* ---- otherData ---- */

static void put_count(npkit_json *w, const char *key, uint64_t v) {
  npkit_json_key(w, key);
  npkit_json_uint(w, v);
}

static void put_diags(tw *t, const char *key, npkit_dump_severity sev) {
  npkit_json *w = &t->w;
  npkit_json_key(w, key);
  npkit_json_begin_array(w);
  for (unsigned i = 0; i < t->n_diags; i++)
    if (t->diag_sev[i] == sev) npkit_json_string(w, t->diag_text[i]);
  npkit_json_end_array(w);
}

static void put_other_data(tw *t, const npkit_dump *d, const npkit_dump_counters *c) {
  npkit_json *w = &t->w;
  char base[32];
  snprintf(base, sizeof(base), "%lld", (long long)t->base_ns);
  npkit_json_key(w, "otherData");
  npkit_json_begin_object(w);
  npkit_json_kv_string(w, "tool", "npkit-preload");
  npkit_json_kv_string(w, "version", NPKIT_VERSION_STRING);
  npkit_json_kv_string(w, "source", "NPKit dump");
  npkit_json_kv_string(w, "dump_dir", d->dir);
  npkit_json_kv_string(w, "event_table",
                       t->o->table_source != NULL ? t->o->table_source : "built-in (NPKit patch for NCCL 2.17.1)");
  npkit_json_kv_string(w, "clock", "CLOCK_REALTIME");
  npkit_json_kv_string(w, "base_ns", base);
  npkit_json_kv_bool(w, "aligned", t->aligned);
  put_count(w, "ranks", t->ranks);
  npkit_json_kv_string(w, "rank_list", npkit_rank_set_text(&t->rank_list));
  put_count(w, "tracks", t->tracks);
  put_count(w, "files", c->files);
  put_count(w, "bytes", c->bytes);
  put_count(w, "events", c->events);
  put_count(w, "slices", c->slices);
  put_count(w, "point_events", c->point_events);
  put_count(w, "unpaired_entries", c->unpaired_entries);
  put_count(w, "unpaired_exits", c->unpaired_exits);
  npkit_json_kv_string(w, "unpaired_shown_as", "instant events (ph i, cat npkit_unpaired)");
  put_count(w, "unknown_ids", c->unknown_ids);
  put_count(w, "invalid_events", c->invalid_events);
  put_count(w, "out_of_order", c->out_of_order);
  put_count(w, "time_sync_cpu", c->time_sync_cpu);
  put_count(w, "time_sync_gpu", c->time_sync_gpu);
  put_count(w, "unaligned_events", c->unaligned_events);
  put_count(w, "bad_times", c->bad_times);
  put_count(w, "truncated_files", c->truncated_files);
  put_count(w, "unreadable_files", c->unreadable_files);
  put_count(w, "skipped_ranks", c->skipped_ranks);
  put_count(w, "stack_overflows", c->stack_overflows);
  put_diags(t, "warnings", NPKIT_DIAG_WARNING);
  put_diags(t, "errors", NPKIT_DIAG_ERROR);
  put_count(w, "diagnostics_omitted", t->diags_omitted);
  npkit_json_end_object(w);
}

int npkit_dump_write_trace(const npkit_dump *d, const npkit_dump_trace_opts *opts, int fd,
                           npkit_dump_trace_result *result, char *err, size_t errlen) {
  static const npkit_dump_trace_opts no_opts;
  tw *t = calloc(1, sizeof(*t));
  if (t == NULL) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "out of memory");
    return NPKIT_DUMP_ENOMEM;
  }
  t->o = opts != NULL ? opts : &no_opts;
  memset(result, 0, sizeof(*result));
  if (npkit_json_init(&t->w, fd) != 0) {
    npkit_json_finish(&t->w, NULL, 0);
    free(t);
    if (err != NULL && errlen > 0) snprintf(err, errlen, "out of memory");
    return NPKIT_DUMP_ENOMEM;
  }
  npkit_json *w = &t->w;
  npkit_json_begin_object(w);
  npkit_json_kv_string(w, "displayTimeUnit", "ns");
  npkit_json_key(w, "traceEvents");
  npkit_json_begin_array(w);

  npkit_dump_options dopts = {t->o->table, t->o->ranks, t->o->n_ranks, t->o->block_bytes};
  npkit_dump_callbacks cb = {on_begin, on_slice, on_diag, t};
  int rc = npkit_dump_convert(d, &dopts, &cb, &result->counters, err, errlen);
  if (rc == NPKIT_DUMP_ESTOPPED && t->nomem) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "out of memory");
    rc = NPKIT_DUMP_ENOMEM;
  }
  npkit_json_raw(w, "\n", 1);
  npkit_json_end_array(w);
  put_other_data(t, d, &result->counters);
  npkit_json_end_object(w);
  npkit_json_raw(w, "\n", 1);
  char werr[256];
  int wrc = npkit_json_finish(w, werr, sizeof(werr));
  if (rc == 0 && wrc != 0) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s", werr);
    rc = NPKIT_DUMP_EIO;
  }
  result->json_bytes = w->bytes;
  result->tracks = t->tracks;
  result->ranks = t->ranks;
  result->base_ns = t->base_ns;
  result->aligned = t->aligned;
  for (unsigned i = 0; i < t->n_diags; i++) free(t->diag_text[i]);
  for (int c = 0; c < N_CLASSES; c++)
    for (int id = 0; id < NPKIT_DUMP_NUM_IDS; id++) free(t->head[c][id]);
  free(t->lane_tid);
  free(t);
  return rc;
}

int npkit_dump_trace_file(const char *dump_dir, const char *json_path, const npkit_dump_trace_opts *opts,
                          npkit_dump_trace_result *result, char *err, size_t errlen) {
  npkit_dump *d;
  int rc = npkit_dump_open(dump_dir, &d, err, errlen);
  if (rc != 0) return rc;
  npkit_out_file out;
  char msg[512];
  if (npkit_out_open(&out, json_path, msg, sizeof(msg)) != 0) {
    rc = errno == ENOMEM ? NPKIT_DUMP_ENOMEM : NPKIT_DUMP_EIO;
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s", msg);
  } else {
    rc = npkit_dump_write_trace(d, opts, out.fd, result, err, errlen);
    if (npkit_out_close(&out, rc, msg, sizeof(msg)) != rc) { /* closing or renaming failed */
      rc = NPKIT_DUMP_EIO;
      if (err != NULL && errlen > 0) snprintf(err, errlen, "%s", msg);
    }
  }
  npkit_dump_close(d);
  return rc;
}
