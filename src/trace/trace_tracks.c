#include "trace_tracks.h"

int64_t npkit_trace_tid(int64_t pid, uint32_t thread_index) {
  uint32_t track = thread_index < NPKIT_TRACE_SHARED_TRACK ? thread_index : NPKIT_TRACE_SHARED_TRACK;
  return pid * 1000 + track;
}

int64_t npkit_trace_pid(const npkit_log_reader *r) {
  if (r->rank >= 0 && r->rank < 2000000) return (int64_t)r->rank + 1;
  return 1 + (int64_t)((uint32_t)r->header.pid % 2000000u);
}
