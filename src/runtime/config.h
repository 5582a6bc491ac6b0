/* Settings, all from NPKIT_* environment variables (table in README.md).  Parsing never fails:
 * a bad value produces one warning naming the variable and the value, and the default is used. */
#ifndef NPKIT_CONFIG_H
#define NPKIT_CONFIG_H

#include <stdint.h>

#include "diag.h"

typedef struct npkit_config {
  int disable;                 /* NPKIT_DISABLE */
  char trace_dir[512];         /* NPKIT_TRACE_DIR */
  uint64_t event_buf_mb;       /* NPKIT_EVENT_BUF_SIZE */
  uint64_t ops_mask;           /* NPKIT_OPS: bit (1 << npkit_fn) set when the function is recorded */
  int quiet;                   /* NPKIT_QUIET */
  npkit_level log_level;       /* NPKIT_LOG_LEVEL */
  char nccl_library[512];      /* NPKIT_NCCL_LIBRARY, "" if unset */
  uint64_t flush_ms;           /* NPKIT_FLUSH_MS */
  int write_json;              /* NPKIT_JSON */
  int signals;                 /* NPKIT_SIGNALS: finish the trace on SIGTERM/SIGINT */
} npkit_config;

#define NPKIT_DEFAULT_TRACE_DIR "./npkit_trace"
#define NPKIT_DEFAULT_BUF_MB 64
#define NPKIT_DEFAULT_FLUSH_MS 200
#define NPKIT_DEFAULT_OPS "all,-query"

/* Reads the environment through `getenv_fn` (getenv in the library, a table in tests) and emits
 * warnings for bad values through npkit_diag. */
void npkit_config_load(npkit_config *cfg, const char *(*getenv_fn)(const char *name));

/* Parses an NPKIT_OPS list into a mask; returns 0, or -1 with the offending item in `bad`. */
int npkit_config_parse_ops(const char *text, uint64_t *mask, char *bad, int badlen);

#endif
