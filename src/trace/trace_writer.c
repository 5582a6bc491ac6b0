#include "trace_writer.h"

#include <stdio.h>
#include <string.h>

int npkit_trace_format_parse(const char *name, npkit_trace_format *f) {
  if (name == NULL) return -1;
  if (strcmp(name, "json") == 0) *f = NPKIT_TRACE_JSON;
  else if (strcmp(name, "perfetto") == 0) *f = NPKIT_TRACE_PERFETTO;
  else return -1;
  return 0;
}

const char *npkit_trace_format_name(npkit_trace_format f) { return f == NPKIT_TRACE_PERFETTO ? "perfetto" : "json"; }

const char *npkit_trace_format_suffix(npkit_trace_format f) { return f == NPKIT_TRACE_PERFETTO ? ".pftrace" : ".json"; }

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* the two names Perfetto's own tools give their traces */
int npkit_trace_path_is_perfetto(const char *path) {
  return path != NULL && (ends_with(path, ".pftrace") || ends_with(path, ".perfetto-trace"));
}

int npkit_trace_writer_open(npkit_trace_writer *w, npkit_trace_format f, int fd, uint64_t base_ns) {
  memset(w, 0, sizeof *w);
  w->format = f;
  if (f == NPKIT_TRACE_PERFETTO) return (w->perfetto = npkit_perfetto_sink_open(fd, base_ns)) != NULL ? 0 : -1;
  return npkit_json_sink_open_fd(&w->json, fd);
}

npkit_sink *npkit_trace_writer_sink(npkit_trace_writer *w) {
  return w->format == NPKIT_TRACE_PERFETTO ? npkit_perfetto_sink_base(w->perfetto) : &w->json.base;
}

void npkit_trace_writer_set_base(npkit_trace_writer *w, uint64_t base_ns) {
  if (w->format == NPKIT_TRACE_PERFETTO && w->perfetto != NULL) npkit_perfetto_sink_set_base(w->perfetto, base_ns);
}

int npkit_trace_writer_finish(npkit_trace_writer *w, uint64_t *bytes, char *err, size_t errlen) {
  if (w->format != NPKIT_TRACE_PERFETTO) return npkit_json_sink_finish(&w->json, bytes, err, errlen);
  if (w->perfetto == NULL) {
    if (bytes != NULL) *bytes = 0;
    snprintf(err, errlen, "out of memory for the Perfetto writer");
    return -1;
  }
  int rc = npkit_perfetto_sink_finish(w->perfetto, bytes, err, errlen);
  w->perfetto = NULL;
  return rc;
}
