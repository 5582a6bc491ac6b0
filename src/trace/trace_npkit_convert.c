#include "trace_npkit_convert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event_facts.h"
#include "grow.h"
#include "npkit_dump_diag.h"
#include "out_file.h"
#include "trace_writer.h"

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "unknown"
#endif

enum { CLASS_X_GPU, CLASS_X_CPU, CLASS_UNPAIRED, CLASS_POINT_GPU, CLASS_POINT_CPU, N_CLASSES };

/* The keys of a slice's arguments, interned once. */
enum { K_SIZE, K_RSVD, K_SLOT, K_ENTRY_SIZE, K_ENTRY_RSVD, K_BW, K_SEQ, K_UNPAIRED, K_UNALIGNED, N_KEYS };

typedef struct tw {
  npkit_trace_writer w;
  npkit_sink *s;
  const npkit_dump_trace_opts *o;
  int64_t base_ns;
  int aligned;

  int have_rank;
  uint32_t rank;
  int64_t pid;      /* rank + 1 */
  uint64_t ranks;
  npkit_rank_set rank_list; /* "0-3,5" */

  int have_buf; /* the buffer whose tracks are in lane_tid */
  uint32_t buf_index;
  uint8_t buf_source;
  uint32_t *lane_tid; /* [lane * 2 + unaligned] -> tid, 0: none yet */
  size_t lane_cap;
  uint32_t tracks;
  int nomem;

  /* Interned once: per event class and id its name, per class its category, the keys and the words
   * of unpaired events. */
  npkit_sink_str name[N_CLASSES][NPKIT_DUMP_NUM_IDS];
  npkit_sink_str cat[N_CLASSES];
  npkit_sink_str key[N_KEYS];
  npkit_sink_str entry_word, exit_word;
  uint32_t since_check;

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

/* A metadata event of the rank's process (tid 0) or of one of its tracks. */
static void put_meta(tw *t, const char *what, uint32_t tid, const char *key, const char *str, int64_t num) {
  if (str != NULL) npkit_sink_meta_str(t->s, what, t->pid, tid != 0 ? (int64_t)tid : -1, key, str);
  else npkit_sink_meta_int(t->s, what, t->pid, tid != 0 ? (int64_t)tid : -1, key, num);
}

static void new_rank(tw *t, uint32_t rank) {
  char name[48];
  t->have_rank = 1;
  t->rank = rank;
  t->ranks++;
  npkit_rank_set_add(&t->rank_list, rank);
  t->pid = (int64_t)rank + 1;
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
  npkit_trace_writer_set_base(&t->w, (uint64_t)t->base_ns); /* Perfetto's times are absolute */
  return 0;
}

/* The name of a class and id, interned on first use (0: no memory). */
static npkit_sink_str event_name(tw *t, int cls, const npkit_dump_slice *s) {
  if (t->name[cls][s->id] == 0) t->name[cls][s->id] = npkit_sink_intern(t->s, s->name, s->name_len);
  return t->name[cls][s->id];
}

static void add_uint(npkit_sink_arg *a, size_t *n, npkit_sink_str key, uint64_t v) {
  a[(*n)++] = (npkit_sink_arg){.key = key, .type = NPKIT_SINK_ARG_UINT, .v.u = v};
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
  npkit_sink_str name = event_name(t, cls, s);
  if (name == 0) {
    t->nomem = 1;
    return 1;
  }
  /* size, then rsvd (GPU events) or slot (CPU events): the head of every slice's args */
  npkit_sink_arg a[8];
  size_t n = 0;
  add_uint(a, &n, t->key[K_SIZE], s->size);
  add_uint(a, &n, t->key[gpu ? K_RSVD : K_SLOT], s->rsvd);
  npkit_sink_slice e = {.name = name, .cat = t->cat[cls], .pid = t->pid, .tid = tid, .ts = ts, .args = a};
  if (s->type == NPKIT_SLICE_COMPLETE) {
    e.dur = sub_sat(s->end_ns, s->start_ns);
    if (s->entry_size != s->size) add_uint(a, &n, t->key[K_ENTRY_SIZE], s->entry_size);
    if (s->entry_rsvd != 0 && gpu) add_uint(a, &n, t->key[K_ENTRY_RSVD], s->entry_rsvd);
    if (e.dur > 0)
      a[n++] = (npkit_sink_arg){.key = t->key[K_BW], .type = NPKIT_SINK_ARG_MILLI,
                                .v.i = (int64_t)npkit_gbps_milli(s->size, (uint64_t)e.dur)};
    add_uint(a, &n, t->key[K_SEQ], s->seq);
  } else {
    e.ph = NPKIT_SINK_INSTANT;
    if (s->type == NPKIT_SLICE_UNPAIRED_ENTRY || s->type == NPKIT_SLICE_UNPAIRED_EXIT)
      a[n++] = (npkit_sink_arg){.key = t->key[K_UNPAIRED], .type = NPKIT_SINK_ARG_STR,
                                .v.str = s->type == NPKIT_SLICE_UNPAIRED_ENTRY ? t->entry_word : t->exit_word};
  }
  if (unaligned) a[n++] = (npkit_sink_arg){.key = t->key[K_UNALIGNED], .type = NPKIT_SINK_ARG_BOOL, .v.i = 1};
  e.nargs = n;
  npkit_sink_slice_write(t->s, &e);
  /* stop early when the output is lost, looked at every 4096 events */
  return (++t->since_check & 4095) == 0 && npkit_sink_failed(t->s);
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

static void put_diags(tw *t, npkit_tree *w, const char *key, npkit_dump_severity sev) {
  npkit_tree_key(w, key);
  npkit_tree_begin_array(w);
  for (unsigned i = 0; i < t->n_diags; i++)
    if (t->diag_sev[i] == sev) npkit_tree_string(w, t->diag_text[i]);
  npkit_tree_end_array(w);
}

static void put_other_data(tw *t, npkit_tree *w, const npkit_dump *d, const npkit_dump_counters *c) {
  char base[32];
  snprintf(base, sizeof(base), "%lld", (long long)t->base_ns);
  npkit_tree_begin_object(w);
  npkit_tree_kv_string(w, "tool", "npkit-preload");
  npkit_tree_kv_string(w, "version", NPKIT_VERSION_STRING);
  npkit_tree_kv_string(w, "source", "NPKit dump");
  npkit_tree_kv_string(w, "dump_dir", d->dir);
  npkit_tree_kv_string(w, "event_table",
                       t->o->table_source != NULL ? t->o->table_source : "built-in (NPKit patch for NCCL 2.17.1)");
  npkit_tree_kv_string(w, "clock", "CLOCK_REALTIME");
  npkit_tree_kv_string(w, "base_ns", base);
  npkit_tree_kv_bool(w, "aligned", t->aligned);
  npkit_tree_kv_uint(w, "ranks", t->ranks);
  npkit_tree_kv_string(w, "rank_list", npkit_rank_set_text(&t->rank_list));
  npkit_tree_kv_uint(w, "tracks", t->tracks);
  npkit_tree_kv_uint(w, "files", c->files);
  npkit_tree_kv_uint(w, "bytes", c->bytes);
  npkit_tree_kv_uint(w, "events", c->events);
  npkit_tree_kv_uint(w, "slices", c->slices);
  npkit_tree_kv_uint(w, "point_events", c->point_events);
  npkit_tree_kv_uint(w, "unpaired_entries", c->unpaired_entries);
  npkit_tree_kv_uint(w, "unpaired_exits", c->unpaired_exits);
  npkit_tree_kv_string(w, "unpaired_shown_as", "instant events (ph i, cat npkit_unpaired)");
  npkit_tree_kv_uint(w, "unknown_ids", c->unknown_ids);
  npkit_tree_kv_uint(w, "invalid_events", c->invalid_events);
  npkit_tree_kv_uint(w, "out_of_order", c->out_of_order);
  npkit_tree_kv_uint(w, "time_sync_cpu", c->time_sync_cpu);
  npkit_tree_kv_uint(w, "time_sync_gpu", c->time_sync_gpu);
  npkit_tree_kv_uint(w, "unaligned_events", c->unaligned_events);
  npkit_tree_kv_uint(w, "bad_times", c->bad_times);
  npkit_tree_kv_uint(w, "truncated_files", c->truncated_files);
  npkit_tree_kv_uint(w, "unreadable_files", c->unreadable_files);
  npkit_tree_kv_uint(w, "skipped_ranks", c->skipped_ranks);
  npkit_tree_kv_uint(w, "stack_overflows", c->stack_overflows);
  put_diags(t, w, "warnings", NPKIT_DIAG_WARNING);
  put_diags(t, w, "errors", NPKIT_DIAG_ERROR);
  npkit_tree_kv_uint(w, "diagnostics_omitted", t->diags_omitted);
  npkit_tree_end_object(w);
}

/* The words a trace repeats, interned once.  0, or -1 when memory is short. */
static int intern_words(tw *t) {
  static const char *const keys[N_KEYS] = {"size", "rsvd", "slot", "entry_size", "entry_rsvd",
                                           "bw_GBps", "seq", "unpaired", "unaligned"};
  static const char *const cats[N_CLASSES] = {"npkit_gpu", "npkit_cpu", "npkit_unpaired", "npkit_gpu", "npkit_cpu"};
  int ok = 1;
  for (int k = 0; k < N_KEYS; k++) ok &= (t->key[k] = npkit_sink_intern_name(t->s, keys[k])) != 0;
  for (int c = 0; c < N_CLASSES; c++) ok &= (t->cat[c] = npkit_sink_intern_name(t->s, cats[c])) != 0;
  ok &= (t->entry_word = npkit_sink_intern_name(t->s, "entry")) != 0;
  ok &= (t->exit_word = npkit_sink_intern_name(t->s, "exit")) != 0;
  return ok ? 0 : -1;
}

/* The events first (otherData counts them), in the member order npkit convert's traces have. */
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
  if (npkit_trace_writer_open(&t->w, t->o->format, fd, 0) != 0 ||
      (t->s = npkit_trace_writer_sink(&t->w), intern_words(t) != 0)) {
    npkit_trace_writer_finish(&t->w, NULL, NULL, 0);
    free(t);
    if (err != NULL && errlen > 0) snprintf(err, errlen, "out of memory");
    return NPKIT_DUMP_ENOMEM;
  }
  if (t->o->format == NPKIT_TRACE_JSON) npkit_json_sink_ph_first(&t->w.json);
  npkit_sink_open(t->s);
  npkit_sink_events_begin(t->s);

  npkit_dump_options dopts = {t->o->table, t->o->ranks, t->o->n_ranks, t->o->block_bytes};
  npkit_dump_callbacks cb = {on_begin, on_slice, on_diag, t};
  int rc = npkit_dump_convert(d, &dopts, &cb, &result->counters, err, errlen);
  if (rc == NPKIT_DUMP_ESTOPPED && t->nomem) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "out of memory");
    rc = NPKIT_DUMP_ENOMEM;
  }
  npkit_sink_events_end(t->s);
  put_other_data(t, npkit_sink_meta_begin(t->s), d, &result->counters);
  npkit_sink_meta_end(t->s);
  npkit_sink_close(t->s);
  char werr[256];
  int wrc = npkit_trace_writer_finish(&t->w, &result->json_bytes, werr, sizeof(werr));
  if (rc == 0 && wrc != 0) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s", werr);
    rc = NPKIT_DUMP_EIO;
  }
  result->tracks = t->tracks;
  result->ranks = t->ranks;
  result->base_ns = t->base_ns;
  result->aligned = t->aligned;
  for (unsigned i = 0; i < t->n_diags; i++) free(t->diag_text[i]);
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
