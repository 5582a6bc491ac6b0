/* A source of events as the life cycle (lifecycle.h) sees it: the NCCL API wrappers, CUPTI, the
 * profiler plugin, the NPKit dump reader, call stacks.  Each folder of the runtime above core/
 * describes its source with one npkit_source_ops, and the library's list of them (sources.c, in the
 * order they are attached and finished) is handed to the life cycle, which calls them through
 * this table and knows none of them by name.
 *
 * The life cycle does not start a source: each is started by its owner at the right moment (the
 * CUDA driver calls InitializeInjection, NCCL calls the plugin's init, a wrapped call runs); the
 * life cycle only hands it the settings and the log, and finishes it at the end.  Any entry may
 * be NULL. */
#ifndef NPKIT_SOURCE_H
#define NPKIT_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "inflight.h"
#include "log_writer.h"

/* What a source gets when recording starts. */
typedef struct npkit_source_log {
  npkit_log_writer *log;
  const npkit_config *cfg;
  uint64_t clock_base_ns; /* the log header's */
} npkit_source_log;

/* Events a source wrote to the log itself (not through the recorder, which counts its own), for
 * the END block and the exit line. */
typedef struct npkit_source_totals {
  uint64_t recorded;
  uint64_t dropped;
} npkit_source_totals;

typedef struct npkit_source_ops {
  const char *name;
  /* The settings are read; also when recording is disabled (NPKIT_DISABLE=1). */
  void (*configure)(const npkit_config *cfg);
  /* The log is open and the recorder runs; recording is switched on right after. */
  void (*attach)(const npkit_source_log *at);
  /* The finish, while the log and the recorder still take events: what the source still holds,
   * its last notes and counters; adds what it wrote itself to *totals. */
  void (*finish)(npkit_source_totals *totals);
  /* The recorder has written its last events; the log closes after this. */
  void (*detach)(npkit_log_writer *log);
  /* Its part of the exit line ("; GPU: 12 kernels, ..."), "" for none. */
  void (*summary)(char *buf, size_t len);
  /* Its work in flight, from any thread at any time (inflight.h): for the hang watchdog and the
   * snapshot of a dump. */
  void (*inflight)(npkit_inflight_sink *sink);
} npkit_source_ops;

#endif
