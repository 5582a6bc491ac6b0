/*
 * A trace file in the format its user chose: the one place that knows the formats, so that every
 * command and the library at exit offer the same ones (`--format`, NPKIT_TRACE_FORMAT, an output
 * name's suffix).  The writer owns the sink (trace_sink.h) the renderers write to:
 *   json      Chrome's trace event format (trace_sink_json.h), the default;
 *   perfetto  Perfetto's protobuf trace (trace_sink_perfetto.h): about a tenth of the size, and
 *             what ui.perfetto.dev opens when a JSON trace is too big for the browser.
 */
#ifndef NPKIT_TRACE_WRITER_H
#define NPKIT_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "trace_sink.h"
#include "trace_sink_json.h"
#include "trace_sink_perfetto.h"

typedef enum npkit_trace_format {
  NPKIT_TRACE_JSON = 0,
  NPKIT_TRACE_PERFETTO = 1,
} npkit_trace_format;

/* "json" or "perfetto": 0 and *f set; anything else: -1. */
int npkit_trace_format_parse(const char *name, npkit_trace_format *f);
const char *npkit_trace_format_name(npkit_trace_format f);
/* The file suffix of a format: ".json", ".pftrace". */
const char *npkit_trace_format_suffix(npkit_trace_format f);
/* Whether an output name asks for Perfetto's format (it ends in .pftrace or .perfetto-trace). */
int npkit_trace_path_is_perfetto(const char *path);

typedef struct npkit_trace_writer {
  npkit_trace_format format;
  npkit_json_sink json;
  npkit_perfetto_sink *perfetto;
} npkit_trace_writer;

/* A writer of format f to fd (not closed).  base_ns: the time that trace ns count from (Perfetto
 * writes absolute times; JSON keeps them relative).  0, or -1 when memory is short (then only
 * npkit_trace_writer_finish may be called). */
int npkit_trace_writer_open(npkit_trace_writer *w, npkit_trace_format f, int fd, uint64_t base_ns);
npkit_sink *npkit_trace_writer_sink(npkit_trace_writer *w);
/* The base, when it is known only once the first events are read (npkit convert). */
void npkit_trace_writer_set_base(npkit_trace_writer *w, uint64_t base_ns);
/* Flushes and frees; the bytes written go to *bytes when not NULL.  0, or -1 with a message. */
int npkit_trace_writer_finish(npkit_trace_writer *w, uint64_t *bytes, char *err, size_t errlen);

#endif /* NPKIT_TRACE_WRITER_H */
