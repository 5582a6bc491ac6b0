/*
 * Chrome trace of an NPKit dump (the output of `npkit convert`, described in docs/npkit-convert.md).
 *
 * One process per rank ("rank R (NPKit)", pid = rank + 1), one track per GPU buffer lane
 * ("GPU buf 5", "GPU buf 5 · lane 1") and per CPU channel lane ("net channel 2 · lane 3"), `X`
 * slices for ENTRY/EXIT pairs, `i` instants for unpaired and single events, and otherData with the
 * counters and every diagnostic.  ts/dur are microseconds with exactly three decimals relative to
 * otherData.base_ns, so nanoseconds are exact.  Written in one streaming pass: memory does not depend
 * on the size of the dump.
 */
#ifndef NPKIT_TRACE_NPKIT_CONVERT_H
#define NPKIT_TRACE_NPKIT_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "npkit_dump.h"
#include "trace_writer.h"

/* Track tids start above every possible pid (rank + 1 <= 2^24), so that a tid never equals a pid. */
#define NPKIT_DUMP_TID_BASE 20000000u
/* Diagnostics kept verbatim in otherData; later ones are only counted. */
#define NPKIT_DUMP_TRACE_MAX_DIAGS 64

typedef struct npkit_dump_trace_opts {
  const npkit_dump_event_table *table; /* NULL: built-in */
  const char *table_source;            /* shown in otherData.event_table; NULL: "built-in ..." */
  const uint32_t *ranks;               /* sorted; NULL: all */
  size_t n_ranks;
  size_t block_bytes; /* 0: default */
  /* Every diagnostic is also passed here as it happens (e.g. to print it). */
  void (*diag)(void *user, npkit_dump_severity severity, const char *message);
  void *user;
  npkit_trace_format format; /* json (0, the default) or perfetto */
} npkit_dump_trace_opts;

typedef struct npkit_dump_trace_result {
  npkit_dump_counters counters;
  uint64_t json_bytes; /* bytes written, in either format */
  uint64_t tracks;
  uint64_t ranks; /* ranks with at least one event in the trace */
  int64_t base_ns;
  int aligned; /* base_ns is a CLOCK_REALTIME time */
} npkit_dump_trace_result;

/* Writes the trace of an opened dump to fd.  Returns 0 (check result->counters.errors for parts
 * that could not be converted), or a status < 0 with a message. */
int npkit_dump_write_trace(const npkit_dump *d, const npkit_dump_trace_opts *opts, int fd,
                           npkit_dump_trace_result *result, char *err, size_t errlen);

/* Opens dump_dir and writes its trace to json_path ("-": standard output).  The file appears
 * complete or not at all: it is written as json_path.partial and renamed at the end. */
int npkit_dump_trace_file(const char *dump_dir, const char *json_path, const npkit_dump_trace_opts *opts,
                          npkit_dump_trace_result *result, char *err, size_t errlen);

#endif /* NPKIT_TRACE_NPKIT_CONVERT_H */
