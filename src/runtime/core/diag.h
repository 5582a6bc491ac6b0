/* The library's only voice: one `npkit:` line on stderr per message, filtered by NPKIT_LOG_LEVEL
 * and NPKIT_QUIET.  Nothing is ever written to stdout. */
#ifndef NPKIT_DIAG_H
#define NPKIT_DIAG_H

#include <stddef.h>

typedef enum npkit_level {
  NPKIT_LEVEL_ERROR = 1,
  NPKIT_LEVEL_WARN = 2,
  NPKIT_LEVEL_INFO = 3,
  NPKIT_LEVEL_DEBUG = 4,
} npkit_level;

void npkit_diag_set_level(npkit_level level, int quiet);
int npkit_diag_enabled(npkit_level level);
/* Formats into a stack buffer and emits with a single write(2), so lines from several ranks or
 * threads never interleave mid-line. */
void npkit_diag(npkit_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes len bytes to stderr with one write(2), without SIGPIPE: where stderr is a pipe nobody
 * reads any more (mpirun has exited, the `| tee` of the job was stopped) a message is lost, the
 * process is not killed.  Async-signal-safe. */
void npkit_diag_write(const char *buf, size_t len);

/* A line of `level` that names its own kind ("npkit: hang: ...") instead of the level's word. */
void npkit_diag_as(npkit_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define npkit_warn(...) npkit_diag(NPKIT_LEVEL_WARN, __VA_ARGS__)
#define npkit_info(...) npkit_diag(NPKIT_LEVEL_INFO, __VA_ARGS__)
#define npkit_debug(...) npkit_diag(NPKIT_LEVEL_DEBUG, __VA_ARGS__)

#endif
