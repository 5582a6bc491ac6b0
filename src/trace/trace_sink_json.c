#include "trace_sink_json.h"

static npkit_json *writer(npkit_sink *s) { return ((npkit_json_sink *)s)->w; }

static void begin(npkit_sink *s, const npkit_sink_head *h) {
  npkit_json *w = writer(s);
  char ph[2] = {h->ph, '\0'};
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_kv_string(w, "name", h->name);
  if (h->cat != NULL) npkit_json_kv_string(w, "cat", h->cat);
  char scope[2] = {h->scope, '\0'};
  npkit_json_kv_string(w, "ph", ph);
  if (h->scope != 0 && !h->scope_last) npkit_json_kv_string(w, "s", scope);
  npkit_json_kv_int(w, "pid", h->pid);
  if (h->tid >= 0) npkit_json_kv_int(w, "tid", h->tid);
  if (h->has_ts) {
    npkit_json_key(w, "ts");
    npkit_json_ts(w, h->ts);
  }
  if (h->dur >= 0) {
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

static const npkit_sink_ops json_ops = {begin, args, end, arg_str, arg_strn, arg_int, arg_uint, arg_double, arg_bool,
                                        arg_us, arg_hex};

void npkit_json_sink_init(npkit_json_sink *s, npkit_json *w) {
  s->base.ops = &json_ops;
  s->w = w;
  s->in_args = 0;
}

npkit_json *npkit_sink_json(npkit_sink *s) { return s != NULL && s->ops == &json_ops ? writer(s) : NULL; }
