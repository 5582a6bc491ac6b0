/* libFuzzer target: any bytes as an event log.  Opening, iterating, rendering, the report (text,
 * JSON, HTML, call sites and marks) and the merge must never crash, leak, hang or meet undefined
 * behaviour; a log that opens must yield exactly the events its scan counted, its skipped
 * stretches must add up, and the rendered trace, the report's JSON and the merged trace must be
 * valid JSON; the Perfetto trace of the log and of the merge valid protobuf of Perfetto's schema
 * with UTF-8 strings, whatever names (quotes, newlines, bytes that are not UTF-8, nothing) the log
 * holds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json_check.h"
#include "json_writer.h"
#include "proto_check.h"
#include "log_reader.h"
#include "merge_trace.h"
#include "report_extras.h"
#include "report_model.h"
#include "report_render.h"
#include "trace_render.h"
#include "trace_sink_json.h"
#include "trace_sink_perfetto.h"
#include "trace_stacks.h"

static int mem_fd(const void *data, size_t size) {
  int fd = memfd_create("npkit-fuzz", MFD_CLOEXEC);
  if (fd < 0) abort();
  const char *p = data;
  while (size > 0) {
    ssize_t k = write(fd, p, size);
    if (k <= 0) abort();
    p += k;
    size -= (size_t)k;
  }
  return fd;
}

/* The whole content of fd, which must be a valid Perfetto trace. */
static void check_perfetto_fd(int fd) {
  off_t len = lseek(fd, 0, SEEK_END);
  unsigned char *bytes = malloc((size_t)len + 1);
  if (bytes == NULL || pread(fd, bytes, (size_t)len, 0) != len) abort();
  if (npkit_perfetto_check(bytes, (size_t)len) != 0) abort();
  free(bytes);
}

/* The whole content of fd, which must be valid JSON. */
static void check_json_fd(int fd) {
  off_t len = lseek(fd, 0, SEEK_END);
  char *text = malloc((size_t)len + 1);
  if (text == NULL || pread(fd, text, (size_t)len, 0) != len) abort();
  if (npkit_json_check(text, (size_t)len) != 0) abort();
  free(text);
}

/* The log as the commands that take paths see it: npkit report in every form, and npkit merge. */
static void report_and_merge(int in) {
  char path[64], err[512];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", in);
  char *paths[1] = {path};
  npkit_report rep;
  npkit_report_options o;
  npkit_report_defaults(&o);
  o.timeline = 1; /* every view, the HTML timeline included */
  if (npkit_report_run(&rep, paths, 1, &o, err, sizeof(err)) == 0) {
    FILE *sink = fopen("/dev/null", "w");
    int out = memfd_create("npkit-fuzz-report", MFD_CLOEXEC);
    if (sink == NULL || out < 0) abort();
    npkit_report_text(&rep, sink);
    npkit_report_html(&rep, sink);
    npkit_report_extras_text(&rep, sink);
    if (npkit_report_json(&rep, out, err, sizeof(err)) == 0) check_json_fd(out);
    fclose(sink);
    close(out);
  }
  npkit_report_free(&rep);
  npkit_merge_options mo;
  npkit_merge_defaults(&mo);
  npkit_merge_stats st = {0};
  int out = memfd_create("npkit-fuzz-merge", MFD_CLOEXEC);
  if (out < 0) abort();
  if (npkit_merge_write(paths, 1, &mo, out, &st, err, sizeof(err)) == 0) check_json_fd(out);
  npkit_merge_stats_free(&st);
  close(out);
  mo.format = NPKIT_TRACE_PERFETTO;
  memset(&st, 0, sizeof st);
  out = memfd_create("npkit-fuzz-merge-pf", MFD_CLOEXEC);
  if (out < 0) abort();
  if (npkit_merge_write(paths, 1, &mo, out, &st, err, sizeof(err)) == 0) check_perfetto_fd(out);
  npkit_merge_stats_free(&st);
  close(out);
}

/* The log as Perfetto's trace, as npkit_render_trace_as frames it. */
static void perfetto_trace(npkit_log_reader *r) {
  char err[512];
  int out = memfd_create("npkit-fuzz-pf", MFD_CLOEXEC);
  npkit_perfetto_sink *p = out >= 0 ? npkit_perfetto_sink_open(out, r->header.clock_base_ns) : NULL;
  if (p == NULL) abort();
  npkit_sink *s = npkit_perfetto_sink_base(p);
  npkit_render_stats st;
  if (npkit_render_log(r, s, NULL, &st, err, sizeof(err)) != 0) abort();
  if (npkit_perfetto_sink_finish(p, NULL, err, sizeof(err)) != 0) abort();
  check_perfetto_fd(out);
  close(out);
}

/* The skipped stretches lie inside the data, in order, and add up to what the reader says. */
static void check_skips(const npkit_log_reader *r) {
  uint64_t bytes = 0, last = r->header_size;
  if (r->data_end > r->file_size) abort();
  for (size_t i = 0; i < r->n_skips; i++) {
    const npkit_reader_skip *k = &r->skips[i];
    if (k->from < last || k->to <= k->from || k->to > r->data_end) abort();
    bytes += k->to - k->from;
    last = k->to;
  }
  if (bytes != r->skipped_bytes || (r->n_skips == 0) != (r->skipped_blocks == 0)) abort();
}

/* Opened for its identity only (event blocks counted from their headers), then completed: the
 * completed reader is the full one. */
static void lazy_open(int in, const npkit_log_reader *full) {
  char path[64], err[512];
  npkit_log_reader *r;
  snprintf(path, sizeof path, "/proc/self/fd/%d", in);
  if (npkit_reader_open_lazy(path, &r, err, sizeof(err)) != 0) abort(); /* its full open worked */
  if (!r->lazy || r->rank != full->rank || r->header.pid != full->header.pid) abort();
  if (npkit_reader_complete(r, NULL, NULL, err, sizeof(err)) != 0) abort();
  if (r->lazy || r->n_events != full->n_events || r->n_comms != full->n_comms ||
      r->skipped_bytes != full->skipped_bytes || r->truncated != full->truncated)
    abort();
  npkit_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* the libFuzzer entry point */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[512];
  npkit_log_reader *r;
  int in = mem_fd(data, size);
  if (npkit_reader_open_fd(in, "fuzz.npkit", &r, err, sizeof(err)) != 0) {
    close(in);
    return 0;
  }

  check_skips(r);
  /* the iterator agrees with the scan */
  const npkit_event *ev;
  uint64_t n = 0;
  int k;
  while ((k = npkit_reader_next(r, &ev, err, sizeof(err))) == 1) n++;
  if (k != 0 || n != r->n_events) abort();

  /* the trace, exactly as npkit_render_trace() frames it, is valid JSON */
  int out = memfd_create("npkit-fuzz-out", MFD_CLOEXEC);
  npkit_json_sink js;
  if (out < 0 || npkit_json_sink_open_fd(&js, out) != 0) abort();
  npkit_sink *s = &js.base;
  npkit_sink_open(s);
  npkit_render_summary(r, npkit_sink_meta_begin(s), r->header.clock_base_ns);
  npkit_sink_meta_end(s);
  npkit_sink_events_begin(s);
  npkit_render_stats st;
  if (npkit_render_log(r, s, NULL, &st, err, sizeof(err)) != 0) abort();
  npkit_sink_events_end(s);
  (void)npkit_trace_stack_frames(r, s, npkit_trace_pid(r), err, sizeof(err)); /* a damaged stack table: a message, the JSON whole */
  npkit_sink_close(s);
  if (npkit_json_sink_finish(&js, NULL, err, sizeof(err)) != 0) abort();
  /* every event is accounted for by exactly one renderer module, or as skipped */
  if (st.events + st.skipped + st.plugin + st.gpu + st.marks + st.npkit + st.machine + st.flight != r->n_events) abort();

  check_json_fd(out);
  close(out);
  perfetto_trace(r);
  lazy_open(in, r);
  npkit_reader_close(r);
  report_and_merge(in);
  close(in);
  return 0;
}
