/* Trace renderer, the parts the JSON checks in Python do not reach: statistics, error paths (bad
 * log, unwritable output, full disk), the all-or-nothing output file, and hostile logs (more
 * threads than tracked, unknown kinds, functions and communicators). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "log_builder.h"
#include "nccl_names.h"
#include "trace_render.h"
#include "trace_sink_json.h"
#include "trace_threads.h"

static char work[512];

static void path_of(char *out, size_t len, const char *name) { snprintf(out, len, "%s/%s", work, name); }

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Occurrences of needle; a plain loop, because sanitizers make repeated strstr() on a large text
 * quadratic. */
static size_t count_of(const char *hay, const char *needle) {
  size_t n = 0, hl = strlen(hay), nl = strlen(needle);
  for (size_t i = 0; i + nl <= hl; i++)
    if (hay[i] == needle[0] && memcmp(hay + i, needle, nl) == 0) {
      n++;
      i += nl - 1;
    }
  return n;
}

static void write_small_log(const char *path) {
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  npkit_lb *b = npkit_lb_create(path, &o);
  uint64_t t = o.clock_base_ns;
  npkit_event ev[6] = {
      npkit_lb_api_event(NPKIT_FN_GroupStart, 1, t + 100, t + 200),
      npkit_lb_api_event(NPKIT_FN_Send, 1, t + 300, t + 400),
      npkit_lb_api_event(NPKIT_FN_GroupEnd, 1, t + 500, t + 900),
      npkit_lb_api_event(NPKIT_FN_AllReduce, 2, t + 1000, t + 5000),
      npkit_lb_api_event(NPKIT_FN_AllReduce, 2, t + 6000, t + 7000),
      npkit_lb_api_event(NPKIT_FN_AllReduce, 2, t + 8000, t + 9000),
  };
  ev[0].u.api.group = ev[1].u.api.group = ev[2].u.api.group = 5;
  ev[4].kind = 77; /* a kind from the future */
  npkit_lb_events(b, ev, 6);
  npkit_counter_rec c = {1, NPKIT_SRC_API, 6, 2};
  npkit_lb_counters(b, &c, 1);
  npkit_end_rec e = {.end_ns = t + 10000, .events_recorded = 6, .events_dropped = 2, .blocks_written = 3};
  npkit_lb_end(b, &e);
  npkit_lb_close(b);
}

static void test_file_output(void) {
  char log[600], out[600], partial[700], err[256];
  path_of(log, sizeof(log), "small.npkit");
  path_of(out, sizeof(out), "small.json");
  snprintf(partial, sizeof(partial), "%s.partial", out);
  write_small_log(log);
  npkit_render_stats st;
  CHECK(npkit_render_trace(log, out, &st, err, sizeof(err)) == 0);
  CHECK_EQ_U64(st.events, 5);
  CHECK_EQ_U64(st.groups, 1);
  CHECK_EQ_U64(st.skipped, 1);
  CHECK_EQ_U64(st.dropped, 2);
  CHECK(!st.truncated);
  CHECK(st.closed_cleanly);
  CHECK(!exists(partial));
  size_t len;
  char *json = npkit_lb_read_file(out, &len);
  CHECK(json != NULL && len > 100);
  if (json) {
    CHECK(strncmp(json, "{\"displayTimeUnit\":\"ns\",", 24) == 0);
    CHECK(strcmp(json + len - 4, "\n]}\n") == 0);
    CHECK_EQ_U64(count_of(json, "\"cat\":\"nccl_api\""), 5);
    CHECK_EQ_U64(count_of(json, "\"name\":\"ncclGroup\""), 1);
    CHECK_EQ_U64(count_of(json, "\"name\":\"npkit dropped events\""), 1);
    /* the group slice comes before its GroupStart call (same start: viewers keep file order) */
    const char *g = strstr(json, "\"name\":\"ncclGroup\"");
    const char *s = strstr(json, "\"name\":\"ncclGroupStart\"");
    CHECK(g != NULL && s != NULL && g < s);
    free(json);
  }
  /* a NULL stats pointer is fine */
  CHECK(npkit_render_trace(log, out, NULL, err, sizeof(err)) == 0);
}

static void test_errors(void) {
  char log[600], out[600], err[256];
  npkit_render_stats st;
  path_of(log, sizeof(log), "small.npkit");
  write_small_log(log);

  /* unwritable output: an error naming it, nothing left behind */
  path_of(out, sizeof(out), "no/such/dir/x.json");
  CHECK(npkit_render_trace(log, out, &st, err, sizeof(err)) == -1);
  CHECK_CONTAINS(err, "no/such/dir/x.json.partial: No such file or directory");

  /* a log that is not one: no output file at all */
  char notlog[600];
  path_of(notlog, sizeof(notlog), "not_a_log.npkit");
  FILE *f = fopen(notlog, "w");
  fputs("hello, this is not an event log, but it is long enough to be read as a header......", f);
  fclose(f);
  path_of(out, sizeof(out), "not_a_log.json");
  unlink(out);
  CHECK(npkit_render_trace(notlog, out, &st, err, sizeof(err)) == -1);
  CHECK_CONTAINS(err, "not an npkit log");
  CHECK(!exists(out));

  /* the disk fills up: reported once, by the writer, at the end */
  int fd = open("/dev/full", O_WRONLY);
  if (fd >= 0) {
    npkit_log_reader *r;
    npkit_json w;
    char big[600];
    path_of(big, sizeof(big), "big.npkit");
    npkit_lb_options o;
    npkit_lb_defaults(&o);
    npkit_lb *b = npkit_lb_create(big, &o);
    for (int k = 0; k < 10; k++) {
      npkit_event ev[2000];
      for (int i = 0; i < 2000; i++) ev[i] = npkit_lb_api_event(NPKIT_FN_AllReduce, 1, o.clock_base_ns + 10 * i, o.clock_base_ns + 10 * i + 5);
      npkit_lb_events(b, ev, 2000);
    }
    npkit_lb_close(b);
    CHECK(npkit_reader_open(big, &r, err, sizeof(err)) == 0);
    CHECK(npkit_json_init(&w, fd) == 0);
    npkit_json_begin_array(&w);
    npkit_json_sink sink;
    npkit_json_sink_init(&sink, &w);
    CHECK(npkit_render_log(r, &sink.base, NULL, &st, err, sizeof(err)) == 0);
    npkit_sink_free(&sink.base);
    CHECK_EQ_U64(st.events, 20000);
    npkit_json_end_array(&w);
    CHECK(npkit_json_finish(&w, err, sizeof(err)) == -1);
    CHECK_CONTAINS(err, "No space left on device");
    npkit_reader_close(r);
    close(fd);
  }
}

/* More distinct threads than the renderer tracks, calls of unknown functions and communicators:
 * every call is still rendered. */
static void test_hostile(void) {
  char log[600], out[600], err[256];
  path_of(log, sizeof(log), "threads.npkit");
  path_of(out, sizeof(out), "threads.json");
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  o.rank = -1;
  npkit_lb *b = npkit_lb_create(log, &o);
  const uint32_t n_threads = NPKIT_TRACE_MAX_THREADS + 1000;
  npkit_event *ev = malloc(2 * n_threads * sizeof(*ev));
  for (uint32_t i = 0; i < n_threads; i++) {
    uint64_t t = o.clock_base_ns + 100ull * i;
    ev[2 * i] = npkit_lb_api_event(NPKIT_FN_GroupStart, 1000 + i, t, t + 10);
    ev[2 * i + 1] = npkit_lb_api_event(NPKIT_FN_AllReduce, 1000 + i, t + 20, t + 30);
    ev[2 * i].u.api.group = i + 1;
    ev[2 * i + 1].u.api.comm = 12345; /* never described by a COMM block */
  }
  ev[1].func = 9999; /* a function id from the future */
  npkit_lb_events(b, ev, 2 * n_threads);
  npkit_lb_close(b);
  free(ev);
  npkit_render_stats st;
  CHECK(npkit_render_trace(log, out, &st, err, sizeof(err)) == 0);
  CHECK_EQ_U64(st.events, 2 * n_threads);
  CHECK_EQ_U64(st.groups, NPKIT_TRACE_MAX_THREADS); /* unmatched starts closed at their last call */
  CHECK(!st.closed_cleanly);
  size_t len;
  char *json = npkit_lb_read_file(out, &len);
  if (json) {
    CHECK_EQ_U64(count_of(json, "\"comm\":\"comm local 12345\""), n_threads);
    CHECK_EQ_U64(count_of(json, "\"name\":\"ncclUnknown\""), 1);
    CHECK_EQ_U64(count_of(json, "\"func\":9999"), 1);
    /* rank unknown: pid from the OS pid, and every thread index >= 399 shares one named track */
    CHECK_EQ_U64(count_of(json, "\"tid\":4243399"), 2 * n_threads + NPKIT_TRACE_MAX_THREADS + 2);
    CHECK_EQ_U64(count_of(json, "\"name\":\"NCCL API \xc2\xb7 threads 399+\""), 1);
    free(json);
  }
}

int main(int argc, char **argv) {
  snprintf(work, sizeof(work), "%s", argc > 1 ? argv[1] : "test_trace_render.work");
  mkdir(work, 0755);
  test_file_output();
  test_errors();
  test_hostile();
  return check_exit_code("test_trace_render");
}
