#include "plugin_emit.h"

#include <string.h>

#include "recorder.h"
#include "state.h"

npkit_plugin_counts npkit_plugin_counts_now;

void npkit_plugin_event_init(npkit_event *ev, uint16_t kind, uint64_t start_ns, uint64_t end_ns) {
  memset(ev, 0, sizeof *ev);
  ev->kind = kind;
  ev->start_ns = start_ns;
  ev->end_ns = end_ns;
}

void npkit_plugin_emit(npkit_event *ev) {
  if (atomic_load_explicit(&npkit_state, memory_order_acquire) != NPKIT_STATE_ON) return;
  npkit_thread *t = npkit_thread_self();
  if (t == NULL) {
    atomic_fetch_add_explicit(&npkit_plugin_counts_now.lost, 1, memory_order_relaxed);
    return;
  }
  ev->thread = t->index;
  npkit_record(t, ev);
}

void npkit_plugin_copy_name(char *dst, size_t len, const char *src) {
  if (src == NULL) return;
  size_t n = strnlen(src, len - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}
