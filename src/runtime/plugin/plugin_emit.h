/* Inside the profiler plugin: storing its records, and the counters of what it could not record.
 * Shared by the core (plugin_core.c) and the API-level events (plugin_api.c). */
#ifndef NPKIT_PROFILER_PLUGIN_EMIT_H
#define NPKIT_PROFILER_PLUGIN_EMIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "emit.h"
#include "npkit/event_log.h"

typedef struct npkit_plugin_counts {
  _Atomic uint64_t lost, late, foreign, ignored;
} npkit_plugin_counts;
extern npkit_plugin_counts npkit_plugin_counts_now;

/* npkit_emit (core/emit.h), counted as lost when the thread has no recorder state. */
void npkit_plugin_emit(npkit_event *ev);
/* The same made in place (npkit_emit_begin): a zeroed record of `kind` to fill and then publish
 * with npkit_emit_commit, or NULL (recording off, pool full, or counted as lost). */
static inline npkit_event *npkit_plugin_emit_begin(uint16_t kind, uint64_t start_ns, uint64_t end_ns) {
  npkit_event *ev = NULL;
  int r = npkit_emit_begin(kind, start_ns, end_ns, &ev);
  if (r < 0) atomic_fetch_add_explicit(&npkit_plugin_counts_now.lost, 1, memory_order_relaxed);
  return r > 0 ? ev : NULL;
}
/* Copies a NUL-terminated name into a fixed field (truncated, NUL-terminated). */
void npkit_plugin_copy_name(char *dst, size_t len, const char *src);

#endif
