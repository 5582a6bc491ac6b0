/* Fuzz target of the settings parser: the input is split at newlines into values given, in turn,
 * to every NPKIT_* variable the library reads (a missing line leaves the variable unset).  Whatever
 * the values, npkit_config_load must return a configuration within its documented ranges. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const char *const names[] = {
    "NPKIT_DISABLE",      "NPKIT_TRACE_DIR",     "NPKIT_EVENT_BUF_SIZE", "NPKIT_OPS",
    "NPKIT_QUIET",        "NPKIT_LOG_LEVEL",     "NPKIT_NCCL_LIBRARY",   "NPKIT_FLUSH_MS",
    "NPKIT_JSON",         "NPKIT_SIGNALS",       "NPKIT_CUPTI",          "NPKIT_CUPTI_LIBRARY",
    "NPKIT_CUPTI_BUFFERS", "NPKIT_CUPTI_BUFFER_KB", "NPKIT_PLUGIN",       "NPKIT_PLUGIN_EVENTS",
    "NPKIT_STACK_DEPTH",  "NPKIT_STACK_LINES",   "NPKIT_START_AFTER",    "NPKIT_STOP_AFTER",
    "NPKIT_TOGGLE_SIGNAL", "NPKIT_DUMP_DIR",     "NPKIT_DUMP_HEADER",    "NPKIT_DUMP_MAX_MB",
    "NPKIT_RING_MB",      "NPKIT_DUMP_SIGNAL",   "NPKIT_HANG_TIMEOUT",   "NPKIT_POOL_DIR"};
#define N_NAMES (sizeof names / sizeof names[0])
static char *values[N_NAMES];

static const char *table_getenv(const char *name) {
  for (size_t i = 0; i < N_NAMES; i++)
    if (strcmp(name, names[i]) == 0) return values[i];
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t start = 0, k = 0;
  for (size_t i = 0; i <= size && k < N_NAMES; i++) {
    if (i == size || data[i] == '\n') {
      values[k] = malloc(i - start + 1);
      if (values[k] == NULL) abort();
      memcpy(values[k], data + start, i - start);
      values[k][i - start] = '\0';
      k++;
      start = i + 1;
    }
  }
  npkit_config cfg;
  npkit_config_load(&cfg, table_getenv);
  /* The documented ranges hold whatever the input. */
  if (cfg.event_buf_mb < 1 || cfg.event_buf_mb > 65536) abort();
  if (cfg.flush_ms < 1 || cfg.flush_ms > 3600000) abort();
  if (cfg.trace_dir[0] == '\0' || memchr(cfg.trace_dir, '\0', sizeof cfg.trace_dir) == NULL) abort();
  if (cfg.log_level < NPKIT_LEVEL_ERROR || cfg.log_level > NPKIT_LEVEL_DEBUG) abort();
  if ((cfg.disable | cfg.quiet | cfg.write_json | cfg.signals) & ~1) abort();
  if (cfg.ring_mb > NPKIT_MAX_RING_MB) abort();
  if (cfg.hang_timeout_ns != 0 &&
      (cfg.hang_timeout_ns < NPKIT_MIN_HANG_TIMEOUT_NS || cfg.hang_timeout_ns > NPKIT_MAX_HANG_TIMEOUT_NS))
    abort();
  if (cfg.dump_signal != 0 && (cfg.dump_signal == cfg.toggle_signal || cfg.dump_signal == SIGTERM ||
                               cfg.dump_signal == SIGINT || cfg.dump_signal == SIGKILL || cfg.dump_signal == SIGSEGV))
    abort();
  for (size_t i = 0; i < k; i++) {
    free(values[i]);
    values[i] = NULL;
  }
  return 0;
}
