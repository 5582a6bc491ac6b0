#include "trace_tracks.h"

int64_t npkit_trace_tid(int64_t pid, uint32_t thread_index) {
  uint32_t track = thread_index < NPKIT_TRACE_SHARED_TRACK ? thread_index : NPKIT_TRACE_SHARED_TRACK;
  return pid * 1000 + track;
}

int64_t npkit_trace_pid(const npkit_log_reader *r) {
  if (r->rank >= 0 && r->rank < 2000000) return (int64_t)r->rank + 1;
  return 1 + (int64_t)((uint32_t)r->header.pid % 2000000u);
}

void npkit_trace_meta_begin(npkit_json *w, const char *name, int64_t pid, int64_t tid) {
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_kv_string(w, "name", name);
  npkit_json_kv_string(w, "ph", "M");
  npkit_json_kv_int(w, "pid", pid);
  if (tid >= 0) {
    npkit_json_kv_int(w, "tid", tid);
  }
  npkit_trace_args_begin(w);
}

void npkit_trace_counter_begin(npkit_json *w, int64_t pid, int64_t ts, const char *name) {
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_kv_string(w, "name", name);
  npkit_json_kv_string(w, "ph", "C");
  npkit_json_kv_int(w, "pid", pid);
  npkit_json_key(w, "ts");
  npkit_json_ts(w, ts);
  npkit_trace_args_begin(w);
}

void npkit_trace_args_begin(npkit_json *w) {
  npkit_json_key(w, "args");
  npkit_json_begin_object(w);
}

void npkit_trace_args_end(npkit_json *w) {
  npkit_json_end_object(w);
  npkit_json_end_object(w);
}

void npkit_trace_meta_string(npkit_json *w, const char *name, int64_t pid, int64_t tid,
                             const char *key, const char *value) {
  npkit_trace_meta_begin(w, name, pid, tid);
  npkit_json_key(w, key);
  npkit_json_string(w, value);
  npkit_trace_args_end(w);
}

void npkit_trace_meta_int(npkit_json *w, const char *name, int64_t pid, int64_t tid, const char *key,
                          int64_t value) {
  npkit_trace_meta_begin(w, name, pid, tid);
  npkit_json_key(w, key);
  npkit_json_int(w, value);
  npkit_trace_args_end(w);
}

void npkit_trace_track_meta(npkit_json *w, int64_t pid, int64_t tid, const char *name, int64_t sort_index) {
  npkit_trace_meta_string(w, "thread_name", pid, tid, "name", name);
  npkit_trace_meta_int(w, "thread_sort_index", pid, tid, "sort_index", sort_index);
}

void npkit_trace_event_head(npkit_json *w, const npkit_trace_ctx *c, const char *name, const char *cat,
                            const char *ph, int64_t tid, uint64_t ts_ns) {
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_kv_string(w, "name", name);
  npkit_json_kv_string(w, "cat", cat);
  npkit_json_kv_string(w, "ph", ph);
  npkit_json_kv_int(w, "pid", c->pid);
  if (tid >= 0) {
    npkit_json_kv_int(w, "tid", tid);
  }
  npkit_json_key(w, "ts");
  npkit_json_ts(w, npkit_trace_rel(c, ts_ns));
}

void npkit_trace_process_instant(npkit_json *w, int64_t pid, int64_t ts, const char *name) {
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_kv_string(w, "name", name);
  npkit_json_kv_string(w, "cat", "npkit");
  npkit_json_kv_string(w, "ph", "i");
  npkit_json_kv_string(w, "s", "p");
  npkit_json_kv_int(w, "pid", pid);
  npkit_json_key(w, "ts");
  npkit_json_ts(w, ts);
}
