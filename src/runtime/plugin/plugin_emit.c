#include "plugin_emit.h"

#include <string.h>

#include "emit.h"

npkit_plugin_counts npkit_plugin_counts_now;

void npkit_plugin_emit(npkit_event *ev) {
  if (npkit_emit(ev) < 0) atomic_fetch_add_explicit(&npkit_plugin_counts_now.lost, 1, memory_order_relaxed);
}

void npkit_plugin_copy_name(char *dst, size_t len, const char *src) {
  if (src == NULL) return;
  size_t n = strnlen(src, len - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}
