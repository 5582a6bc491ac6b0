#include "trace_sink_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

static npkit_json *writer(npkit_sink *s) { return ((npkit_json_sink *)s)->w; }

static void begin(npkit_sink *s, const npkit_sink_head *h) {
  npkit_json *w = writer(s);
  char ph[2] = {h->ph, '\0'}, scope[2] = {h->scope, '\0'};
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  if (((npkit_json_sink *)s)->ph_first) {
    npkit_json_kv_string(w, "ph", ph);
    if (h->scope != 0 && !h->scope_last) npkit_json_kv_string(w, "s", scope);
    if (h->cat != NULL) npkit_json_kv_string(w, "cat", h->cat);
    npkit_json_kv_string(w, "name", h->name);
  } else {
    npkit_json_kv_string(w, "name", h->name);
    if (h->cat != NULL) npkit_json_kv_string(w, "cat", h->cat);
    npkit_json_kv_string(w, "ph", ph);
  }
  if (h->bind != 0) {
    char bind[2] = {h->bind, '\0'};
    npkit_json_kv_string(w, "bp", bind);
  }
  if (h->ph == NPKIT_SINK_FLOW_START || h->ph == NPKIT_SINK_FLOW_END) npkit_json_kv_uint(w, "id", h->id);
  if (h->scope != 0 && !h->scope_last && !((npkit_json_sink *)s)->ph_first) npkit_json_kv_string(w, "s", scope);
  npkit_json_kv_int(w, "pid", h->pid);
  if (h->tid >= 0) npkit_json_kv_int(w, "tid", h->tid);
  if (h->has_ts) {
    npkit_json_key(w, "ts");
    npkit_json_ts(w, h->ts);
  }
  if (h->has_dur) {
    npkit_json_key(w, "dur");
    npkit_json_ts(w, h->dur);
  }
  if (h->scope != 0 && h->scope_last) npkit_json_kv_string(w, "s", scope);
}

/* args: an object member of the event, closed with it; an event without args has one level */
static void args(npkit_sink *s) {
  npkit_json_key(writer(s), "args");
  npkit_json_begin_object(writer(s));
  ((npkit_json_sink *)s)->in_args = 1;
}

static void end(npkit_sink *s) {
  npkit_json_sink *j = (npkit_json_sink *)s;
  if (j->in_args) npkit_json_end_object(j->w);
  j->in_args = 0;
  npkit_json_end_object(j->w);
}

static void arg_str(npkit_sink *s, const char *key, const char *v) { npkit_json_kv_string(writer(s), key, v); }

static void arg_strn(npkit_sink *s, const char *key, const char *v, size_t n) {
  npkit_json_key(writer(s), key);
  npkit_json_string_n(writer(s), v, n);
}

static void arg_int(npkit_sink *s, const char *key, int64_t v) { npkit_json_kv_int(writer(s), key, v); }
static void arg_uint(npkit_sink *s, const char *key, uint64_t v) { npkit_json_kv_uint(writer(s), key, v); }
static void arg_double(npkit_sink *s, const char *key, double v) { npkit_json_kv_double(writer(s), key, v); }
static void arg_bool(npkit_sink *s, const char *key, int v) { npkit_json_kv_bool(writer(s), key, v); }

static void arg_us(npkit_sink *s, const char *key, int64_t ns) {
  npkit_json_key(writer(s), key);
  npkit_json_ts(writer(s), ns);
}

static void arg_hex(npkit_sink *s, const char *key, uint64_t v, int width) {
  npkit_json_key(writer(s), key);
  npkit_json_hex(writer(s), v, width);
}

/* printf's %.Nf, with a point whatever the host program's locale (as npkit_json_double) */
static void arg_fixed(npkit_sink *s, const char *key, double v, int decimals) {
  char buf[48];
  if (v != v || v - v != 0.0) { /* NaN or infinite: JSON has no spelling for them */
    npkit_json_key(writer(s), key);
    npkit_json_null(writer(s));
    return;
  }
  int n = snprintf(buf, sizeof buf, "%.*f", decimals, v);
  if (n <= 0 || (size_t)n >= sizeof buf) return;
  for (char *c = buf; *c != '\0'; c++)
    if (*c == ',') *c = '.';
  npkit_json_key(writer(s), key);
  npkit_json_raw_value(writer(s), buf, (size_t)n);
}

static void arg_uints(npkit_sink *s, const char *key, const uint64_t *v, size_t n) {
  npkit_json_key(writer(s), key);
  npkit_json_begin_array(writer(s));
  for (size_t i = 0; i < n; i++) npkit_json_uint(writer(s), v[i]);
  npkit_json_end_array(writer(s));
}

static void arg_strs(npkit_sink *s, const char *key, const char *const *v, size_t n) {
  npkit_json_key(writer(s), key);
  npkit_json_begin_array(writer(s));
  for (size_t i = 0; i < n; i++) npkit_json_string(writer(s), v[i]);
  npkit_json_end_array(writer(s));
}

/* thousandths as a number with three decimals: the writer's time format (ns as µs) */
static void arg_milli(npkit_sink *s, const char *key, int64_t thousandths) { arg_us(s, key, thousandths); }

/* ---- interned strings and whole slices ---- */

/* Bytes kept free after the interned text and after each argument's room: see copy(). */
#define SLACK 64

/* Room for `n` more bytes of interned text; NULL when memory is short.  Every interned string is
 * kept as ,"text": with the comma and the colon outside it, so that as the key of an argument
 * after the first it is one copy (put_key). */
static char *text_room(npkit_json_sink *j, size_t n) {
  if (j->text_len + n + 2 + SLACK < j->text_len ||
      NPKIT_GROW(j->text, j->text_cap, j->text_len + n + 2 + SLACK, 4096) != 0)
    return NULL;
  j->text[j->text_len] = ',';
  return j->text + j->text_len + 1;
}

/* Keeps text_room's bytes up to `end` as the next interned string. */
static npkit_sink_str keep(npkit_json_sink *j, char *end) {
  size_t off = j->text_len + 1, len = (size_t)(end - (j->text + off));
  if (NPKIT_GROW(j->strs, j->cap_strs, j->n_strs + 1, 64) != 0 || len > UINT32_MAX - 1) return 0;
  *end = ':';
  j->strs[j->n_strs++] = (npkit_json_interned){off, (uint32_t)len};
  j->text_len = off + len + 1;
  return (npkit_sink_str)j->n_strs;
}

static npkit_sink_str intern(npkit_sink *s, const char *v, size_t n) {
  npkit_json_sink *j = (npkit_json_sink *)s;
  size_t len = strnlen(v, n);
  char *p = len <= SIZE_MAX / 8 ? text_room(j, 6 * len + 3) : NULL;
  if (p == NULL) return 0;
  *p++ = '"';
  p = npkit_fmt_escaped(p, v, len);
  *p++ = '"';
  npkit_sink_str id = keep(j, p);
  if (id != 0 && j->strs[id - 1].len > j->max_intern) j->max_intern = j->strs[id - 1].len;
  return id;
}

/* The frames joined by newlines; cut before the member ("stack":"...") would pass
 * NPKIT_JSON_STACK_MAX bytes, so that one event still fits the writer's reserve. */
static npkit_sink_str intern_stack(npkit_sink *s, const char *const *frames, size_t depth) {
  static const size_t key = sizeof ",\"stack\":" - 1;
  npkit_json_sink *j = (npkit_json_sink *)s;
  char *start = text_room(j, NPKIT_JSON_STACK_MAX + 64), *p = start;
  if (p == NULL) return 0;
  *p++ = '"';
  for (size_t k = 0; k < depth; k++) {
    size_t n = strlen(frames[k]);
    if (key + (size_t)(p - start) + 6 * n + 16 > NPKIT_JSON_STACK_MAX) {
      NPKIT_PUT(p, "...");
      break;
    }
    if (k > 0) NPKIT_PUT(p, "\\n");
    p = npkit_fmt_escaped(p, frames[k], n);
  }
  *p++ = '"';
  return keep(j, p);
}

/* A copy of an interned string without a call and with one predictable branch: a whole 16, 32 or
 * 64 bytes are moved, more than the string, from the text (which keeps SLACK bytes after its end)
 * into the output (whose room counts SLACK for each argument); what lies past the string is
 * written over by what follows. */
static inline char *copy(char *p, const char *src, size_t n) {
  if (n <= 16) memcpy(p, src, 16);
  else if (n <= 32) memcpy(p, src, 32);
  else if (n <= 64) memcpy(p, src, 64);
  else memcpy(p, src, n);
  return p + n;
}

static const npkit_json_interned *str_of(const npkit_json_sink *j, npkit_sink_str id) {
  static const npkit_json_interned none = {0, 0};
  return id != 0 && id <= j->n_strs ? &j->strs[id - 1] : &none;
}

/* An interned string as a value; one that names nothing (not interned, or forgotten) is "". */
static char *put_str(const npkit_json_sink *j, char *p, npkit_sink_str id) {
  const npkit_json_interned *e = str_of(j, id);
  if (__builtin_expect(e->len == 0, 0)) {
    NPKIT_PUT(p, "\"\"");
    return p;
  }
  return copy(p, j->text + e->off, e->len);
}

/* ,"key": (a key that could not be interned is "", so that the JSON stays whole).  Every argument
 * is written after a comma; the slice turns the first one into the brace that opens its args. */
static inline __attribute__((always_inline)) char *put_key(const npkit_json_sink *j, char *p, npkit_sink_str id) {
  const npkit_json_interned *e = str_of(j, id);
  if (__builtin_expect(e->len == 0 || e->len > j->max_intern, 0)) { /* not interned, or not by intern() */
    NPKIT_PUT(p, ",\"\":");
    return p;
  }
  return copy(p, j->text + e->off - 1, e->len + 2);
}

/* Bytes an argument can take, its key included. */
static inline __attribute__((always_inline)) size_t arg_room(const npkit_json_sink *j, const npkit_sink_arg *a) {
  size_t n = j->max_intern + 8 + 2 * SLACK; /* keys come from intern(): no longer than its longest */
  switch (a->type) {
  case NPKIT_SINK_ARG_STR: return n + str_of(j, a->v.str)->len;
  case NPKIT_SINK_ARG_SET: return str_of(j, a->v.str)->len + 2 + SLACK;
  case NPKIT_SINK_ARG_TEXT: return n + 6 * (a->len < NPKIT_JSON_TEXT_MAX ? a->len : NPKIT_JSON_TEXT_MAX) + 2;
  default: return n + 32;
  }
}

/* ,"key":value (a set: its members, each after a comma) */
static inline __attribute__((always_inline)) char *put_arg(const npkit_json_sink *j, char *p, const npkit_sink_arg *a) {
  if (a->type == NPKIT_SINK_ARG_SET) { /* members, rendered at intern_args */
    const npkit_json_interned *e = str_of(j, a->v.str);
    return e->len == 0 ? p : copy(p, j->text + e->off - 1, e->len + 1);
  }
  p = put_key(j, p, a->key);
  switch (a->type) {
  case NPKIT_SINK_ARG_INT: return npkit_fmt_i64(p, a->v.i);
  case NPKIT_SINK_ARG_UINT: return npkit_fmt_u64(p, a->v.u);
  case NPKIT_SINK_ARG_BOOL:
    if (a->v.i) NPKIT_PUT(p, "true");
    else NPKIT_PUT(p, "false");
    return p;
  case NPKIT_SINK_ARG_STR: {
    const npkit_json_interned *e = str_of(j, a->v.str);
    if (e->len == 0) NPKIT_PUT(p, "\"\"");
    else p = copy(p, j->text + e->off, e->len);
    return p;
  }
  case NPKIT_SINK_ARG_TEXT:
    *p++ = '"';
    p = npkit_fmt_escaped(p, a->v.text, a->len < NPKIT_JSON_TEXT_MAX ? a->len : NPKIT_JSON_TEXT_MAX);
    *p++ = '"';
    return p;
  case NPKIT_SINK_ARG_HEX:
    NPKIT_PUT(p, "\"0x");
    p = npkit_fmt_hex(p, a->v.u, a->width);
    *p++ = '"';
    return p;
  case NPKIT_SINK_ARG_MILLI: return npkit_fmt_ts(p, a->v.i);
  default: NPKIT_PUT(p, "null"); return p;
  }
}

/* The members of a fixed set of arguments, rendered once: "k":v,"k":v */
static npkit_sink_str intern_args(npkit_sink *s, const npkit_sink_arg *args, size_t n) {
  npkit_json_sink *j = (npkit_json_sink *)s;
  size_t room = 1;
  for (size_t i = 0; i < n; i++) {
    if (args[i].type == NPKIT_SINK_ARG_SET) return 0; /* one level */
    room += arg_room(j, &args[i]) + 1;
  }
  /* rendered aside first: put_arg's copies move more than a string (copy()), which must not land
   * on the interned text they read */
  char *tmp = malloc(room), *p = tmp;
  if (tmp == NULL) return 0;
  for (size_t i = 0; i < n; i++) p = put_arg(j, p, &args[i]);
  size_t len = p > tmp ? (size_t)(p - tmp) - 1 : 0; /* without the first comma */
  char *dst = text_room(j, len);
  npkit_sink_str id = 0;
  if (dst != NULL) {
    memcpy(dst, tmp + 1, len);
    id = keep(j, dst + len);
  }
  free(tmp);
  return id;
}

/* The start of a slice up to its ts's value, "{...,"pid":P,"tid":T,"ts":", into out (room for at
 * least 128 + SLACK + the name's and category's lengths); returns its end. */
static char *render_head(const npkit_json_sink *j, const npkit_sink_slice *e, char ph, char *p) {
  const char *ph_text = ph == NPKIT_SINK_INSTANT ? "\"ph\":\"i\",\"s\":\"t\"" : "\"ph\":\"X\"";
  *p++ = '{';
  if (j->ph_first) {
    p = npkit_fmt_lit(p, ph_text, strlen(ph_text));
    if (e->cat != 0) {
      NPKIT_PUT(p, ",\"cat\":");
      p = put_str(j, p, e->cat);
    }
    NPKIT_PUT(p, ",\"name\":");
  } else {
    NPKIT_PUT(p, "\"name\":");
  }
  p = put_str(j, p, e->name);
  if (!j->ph_first) {
    if (e->cat != 0) {
      NPKIT_PUT(p, ",\"cat\":");
      p = put_str(j, p, e->cat);
    }
    *p++ = ',';
    p = npkit_fmt_lit(p, ph_text, strlen(ph_text));
  }
  NPKIT_PUT(p, ",\"pid\":");
  p = npkit_fmt_i64(p, e->pid);
  NPKIT_PUT(p, ",\"tid\":");
  p = npkit_fmt_i64(p, e->tid);
  NPKIT_PUT(p, ",\"ts\":");
  return p;
}

/* The head of a slice, rendered once per (name, category, pid, tid, phase) into its slot (by name
 * and tid); NULL when it
 * has no slot (memory is short, or it is too long for one): then render_head writes it. */
static const npkit_json_head *head_of(npkit_json_sink *j, const npkit_sink_slice *e, char ph) {
  if (j->heads == NULL && (j->heads = calloc(NPKIT_JSON_HEADS, sizeof *j->heads)) == NULL) return NULL;
  /* by name and track, so that the tracks of one name (lanes, threads) keep their own slots */
  uint64_t k = (uint64_t)e->name * 0x9e3779b97f4a7c15ull + (uint64_t)e->tid * 0xff51afd7ed558ccdull + (ph == NPKIT_SINK_INSTANT);
  npkit_json_head *h = &j->heads[(k >> 40) % NPKIT_JSON_HEADS];
  if (h->len != 0 && h->name == e->name && h->tid == e->tid && h->pid == e->pid && h->cat == e->cat && h->ph == ph)
    return h;
  if (128 + (size_t)str_of(j, e->name)->len + str_of(j, e->cat)->len + SLACK > NPKIT_JSON_HEAD_TEXT) return NULL;
  h->len = (uint32_t)(render_head(j, e, ph, h->text) - h->text);
  h->ph = ph;
  h->name = e->name;
  h->cat = e->cat;
  h->pid = e->pid;
  h->tid = e->tid;
  return h;
}

/* One element: the head, the times, the args, "sf".  One reserve for all of it, except for a
 * slice longer than the writer reserves at once (a long stack with long strings): then one per
 * argument. */
static void slice(npkit_sink *s, const npkit_sink_slice *e) {
  npkit_json_sink *j = (npkit_json_sink *)s;
  npkit_json *w = j->w;
  char ph = e->ph == NPKIT_SINK_INSTANT ? NPKIT_SINK_INSTANT : NPKIT_SINK_SLICE;
  const npkit_json_head *head = head_of(j, e, ph);
  size_t head_len = head != NULL ? head->len : 128 + (size_t)str_of(j, e->name)->len + str_of(j, e->cat)->len;
  /* a number's argument at most: its key (no longer than the longest interned string), the
   * comma, colon and quotes, 24 digits, and what copy() moves beyond */
  const size_t number_room = j->max_intern + 40 + 2 * SLACK;
  npkit_json_element(w);
  char *p = npkit_json_reserve(w, 112 + SLACK + head_len + number_room);
  char *end = w->buf + w->cap;
  *p++ = '\n';
  p = head != NULL ? copy(p, head->text, head->len) : render_head(j, e, ph, p);
  p = npkit_fmt_ts(p, e->ts);
  if (e->ph != NPKIT_SINK_INSTANT) {
    NPKIT_PUT(p, ",\"dur\":");
    p = npkit_fmt_ts(p, e->dur);
  }
  if (e->nargs > 0) NPKIT_PUT(p, ",\"args\":");
  int opened = 0; /* the comma before the first argument written became the opening brace */
  for (size_t i = 0; i < e->nargs; i++) {
    const npkit_sink_arg *a = &e->args[i];
    /* room for this argument, checked as it comes: one pass over the arguments */
    size_t need = a->type >= NPKIT_SINK_ARG_STR && a->type != NPKIT_SINK_ARG_HEX && a->type != NPKIT_SINK_ARG_MILLI
                      ? arg_room(j, a)
                      : number_room;
    if ((size_t)(end - p) < need + 2) {
      npkit_json_commit(w, p);
      p = npkit_json_reserve(w, need + 2);
      end = w->buf + w->cap;
    }
    char *at = p;
    p = put_arg(j, p, a);
    if (!opened && p != at) {
      *at = '{';
      opened = 1;
    }
  }
  size_t tail = 16 + SLACK + str_of(j, e->frame)->len;
  if ((size_t)(end - p) < tail) {
    npkit_json_commit(w, p);
    p = npkit_json_reserve(w, tail);
  }
  if (e->nargs > 0 && !opened) *p++ = '{'; /* only empty sets */
  if (e->nargs > 0) *p++ = '}';
  if (e->frame != 0) {
    NPKIT_PUT(p, ",\"sf\":");
    p = put_str(j, p, e->frame);
  }
  *p++ = '}';
  npkit_json_commit(w, p);
}

static void sink_free(npkit_sink *s) {
  npkit_json_sink *j = (npkit_json_sink *)s;
  free(j->text);
  free(j->strs);
  j->text = NULL;
  j->strs = NULL;
  j->text_len = j->text_cap = j->n_strs = j->cap_strs = j->max_intern = 0;
  free(j->heads);
  j->heads = NULL;
}

/* The interned strings go, their memory stays for the next log's. */
static void forget(npkit_sink *s) {
  npkit_json_sink *j = (npkit_json_sink *)s;
  j->text_len = j->n_strs = j->max_intern = 0;
  if (j->heads != NULL) memset(j->heads, 0, NPKIT_JSON_HEADS * sizeof *j->heads);
}

/* ---- the document: {"displayTimeUnit":"ns","otherData":{...},"traceEvents":[...],"stackFrames":{...}} ---- */

static void open_doc(npkit_sink *s) {
  npkit_json_begin_object(writer(s));
  npkit_json_kv_string(writer(s), "displayTimeUnit", "ns");
}

static npkit_tree *meta_begin(npkit_sink *s) {
  npkit_json_key(writer(s), "otherData");
  return &((npkit_json_sink *)s)->meta.base;
}

static void meta_end(npkit_sink *s) { (void)s; }

static void events_begin(npkit_sink *s) {
  npkit_json_key(writer(s), "traceEvents");
  npkit_json_begin_array(writer(s));
}

static void events_end(npkit_sink *s) {
  npkit_json_raw(writer(s), "\n", 1);
  npkit_json_end_array(writer(s));
}

static void frames_begin(npkit_sink *s) {
  npkit_json_key(writer(s), "stackFrames");
  npkit_json_begin_object(writer(s));
}

/* "<pid>.<node>":{"name":...,"category":"npkit","parent":"<pid>.<parent>"}, one per line */
static void frame(npkit_sink *s, int64_t pid, uint32_t node, const char *name, uint32_t parent1) {
  npkit_json *w = writer(s);
  char id[48];
  snprintf(id, sizeof id, "%" PRId64 ".%" PRIu32, pid, node);
  npkit_json_raw(w, "\n", 1);
  npkit_json_key(w, id);
  npkit_json_begin_object(w);
  npkit_json_kv_string(w, "name", name);
  npkit_json_kv_string(w, "category", "npkit");
  if (parent1 != 0) {
    snprintf(id, sizeof id, "%" PRId64 ".%" PRIu32, pid, parent1 - 1);
    npkit_json_kv_string(w, "parent", id);
  }
  npkit_json_end_object(w);
}

static void frames_end(npkit_sink *s) { npkit_json_end_object(writer(s)); }

static void close_doc(npkit_sink *s) {
  npkit_json_end_object(writer(s));
  npkit_json_raw(writer(s), "\n", 1);
}

static int failed(npkit_sink *s) { return writer(s)->err != 0; }

static const npkit_sink_ops json_ops = {
    .begin = begin,
    .args = args,
    .end = end,
    .arg_str = arg_str,
    .arg_strn = arg_strn,
    .arg_int = arg_int,
    .arg_uint = arg_uint,
    .arg_double = arg_double,
    .arg_bool = arg_bool,
    .arg_us = arg_us,
    .arg_hex = arg_hex,
    .arg_fixed = arg_fixed,
    .arg_uints = arg_uints,
    .arg_strs = arg_strs,
    .arg_milli = arg_milli,
    .intern = intern,
    .intern_stack = intern_stack,
    .intern_args = intern_args,
    .slice = slice,
    .free = sink_free,
    .open = open_doc,
    .meta_begin = meta_begin,
    .meta_end = meta_end,
    .events_begin = events_begin,
    .events_end = events_end,
    .frames_begin = frames_begin,
    .frame = frame,
    .frames_end = frames_end,
    .close = close_doc,
    .forget = forget,
    .failed = failed,
};

void npkit_json_sink_init(npkit_json_sink *s, npkit_json *w) {
  memset(s, 0, sizeof *s);
  s->base.ops = &json_ops;
  s->w = w;
  npkit_json_tree_init(&s->meta, w);
}

void npkit_json_sink_ph_first(npkit_json_sink *s) { s->ph_first = 1; }

int npkit_json_sink_open_fd(npkit_json_sink *s, int fd) {
  npkit_json_sink_init(s, NULL);
  s->w = &s->own;
  npkit_json_tree_init(&s->meta, s->w);
  return npkit_json_init(&s->own, fd);
}

int npkit_json_sink_finish(npkit_json_sink *s, uint64_t *bytes, char *err, size_t errlen) {
  if (bytes != NULL) *bytes = s->own.bytes + s->own.len;
  sink_free(&s->base);
  return npkit_json_finish(&s->own, err, errlen);
}
