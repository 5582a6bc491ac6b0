/* libFuzzer target: any bytes as an event log.  Opening, iterating and rendering must never crash,
 * leak or hang; a log that opens must yield exactly the events its scan counted, and the rendered
 * trace must be valid JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json_check.h"
#include "json_writer.h"
#include "log_reader.h"
#include "trace_render.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* the libFuzzer entry point */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[512];
  npkit_log_reader *r;
  int in = mem_fd(data, size);
  if (npkit_reader_open_fd(in, "fuzz.npkit", &r, err, sizeof(err)) != 0) {
    close(in);
    return 0;
  }

  /* the iterator agrees with the scan */
  const npkit_event *ev;
  uint64_t n = 0;
  int k;
  while ((k = npkit_reader_next(r, &ev, err, sizeof(err))) == 1) n++;
  if (k != 0 || n != r->n_events) abort();

  /* the trace, exactly as npkit_render_trace() frames it, is valid JSON */
  int out = memfd_create("npkit-fuzz-out", MFD_CLOEXEC);
  npkit_json w;
  if (out < 0 || npkit_json_init(&w, out) != 0) abort();
  npkit_json_begin_object(&w);
  npkit_json_key(&w, "otherData");
  npkit_render_summary(r, &w, r->header.clock_base_ns);
  npkit_json_key(&w, "traceEvents");
  npkit_json_begin_array(&w);
  npkit_render_stats st;
  if (npkit_render_log(r, &w, NULL, &st, err, sizeof(err)) != 0) abort();
  npkit_json_end_array(&w);
  npkit_json_end_object(&w);
  if (npkit_json_finish(&w, err, sizeof(err)) != 0) abort();
  /* every event is accounted for by exactly one renderer module, or as skipped */
  if (st.events + st.skipped + st.plugin + st.gpu + st.marks + st.npkit != r->n_events) abort();

  off_t len = lseek(out, 0, SEEK_END);
  char *text = malloc((size_t)len + 1);
  if (text == NULL || pread(out, text, (size_t)len, 0) != len) abort();
  if (npkit_json_check(text, (size_t)len) != 0) abort();
  free(text);
  close(out);
  npkit_reader_close(r);
  close(in);
  return 0;
}
