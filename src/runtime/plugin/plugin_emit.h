/* Inside the profiler plugin: storing its records, and the counters of what it could not record.
 * Shared by the core (profiler_plugin.c) and the API-level events (profiler_plugin_api.c). */
#ifndef NPKIT_PROFILER_PLUGIN_EMIT_H
#define NPKIT_PROFILER_PLUGIN_EMIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"

typedef struct npkit_plugin_counts {
  _Atomic uint64_t lost, late, foreign, ignored;
} npkit_plugin_counts;
extern npkit_plugin_counts npkit_plugin_counts_now;

/* A zeroed event of `kind`. */
void npkit_plugin_event_init(npkit_event *ev, uint16_t kind, uint64_t start_ns, uint64_t end_ns);
/* Stores it on the calling thread's recorder (counted as lost without one). */
void npkit_plugin_emit(npkit_event *ev);
/* Copies a NUL-terminated name into a fixed field (truncated, NUL-terminated). */
void npkit_plugin_copy_name(char *dst, size_t len, const char *src);

#endif
