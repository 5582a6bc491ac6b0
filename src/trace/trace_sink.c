#include "trace_sink.h"

#include <string.h>

npkit_sink_str npkit_sink_intern_name(npkit_sink *s, const char *v) { return npkit_sink_intern(s, v, strlen(v)); }

void npkit_sink_counter(npkit_sink *s, const char *name, const char *cat, int64_t pid, int64_t ts) {
  npkit_sink_head h = {.name = name, .cat = cat, .ph = NPKIT_SINK_COUNTER, .pid = pid, .tid = -1, .has_ts = 1, .ts = ts};
  npkit_sink_begin(s, &h);
}

static void meta(npkit_sink *s, const char *name, int64_t pid, int64_t tid) {
  npkit_sink_head h = {.name = name, .ph = NPKIT_SINK_META, .pid = pid, .tid = tid};
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
}

void npkit_sink_meta_str(npkit_sink *s, const char *name, int64_t pid, int64_t tid, const char *key, const char *v) {
  meta(s, name, pid, tid);
  npkit_sink_arg_str(s, key, v);
  npkit_sink_end(s);
}

void npkit_sink_meta_int(npkit_sink *s, const char *name, int64_t pid, int64_t tid, const char *key, int64_t v) {
  meta(s, name, pid, tid);
  npkit_sink_arg_int(s, key, v);
  npkit_sink_end(s);
}

void npkit_sink_track(npkit_sink *s, int64_t pid, int64_t tid, const char *name, int64_t sort_index) {
  npkit_sink_meta_str(s, "thread_name", pid, tid, "name", name);
  npkit_sink_meta_int(s, "thread_sort_index", pid, tid, "sort_index", sort_index);
}
