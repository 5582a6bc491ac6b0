#include "trace_sink_json.h"

#include <stdio.h>

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
  if (h->bind != 0) {
    char bind[2] = {h->bind, '\0'};
    npkit_json_kv_string(w, "bp", bind);
  }
  if (h->ph == NPKIT_SINK_FLOW_START || h->ph == NPKIT_SINK_FLOW_END) npkit_json_kv_uint(w, "id", h->id);
  if (h->scope != 0 && !h->scope_last) npkit_json_kv_string(w, "s", scope);
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

static const npkit_sink_ops json_ops = {begin,     args,      end,      arg_str,  arg_strn, arg_int,
                                        arg_uint,  arg_double, arg_bool, arg_us,   arg_hex,  arg_fixed,
                                        arg_uints, arg_strs,  arg_milli};

void npkit_json_sink_init(npkit_json_sink *s, npkit_json *w) {
  s->base.ops = &json_ops;
  s->w = w;
  s->in_args = 0;
}

npkit_json *npkit_sink_json(npkit_sink *s) { return s != NULL && s->ops == &json_ops ? writer(s) : NULL; }
