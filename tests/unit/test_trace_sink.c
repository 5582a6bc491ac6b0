/* The trace sink's JSON implementation (src/trace/trace_sink_json.c) event by event: the members of
 * a head in their order and only those a phase has, each kind of typed argument (strings from a
 * log with a quote, a control character and a NUL; numbers; fixed decimals, NaN included; lists),
 * flows, scope before or after the times, and the commas between events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "trace_sink_json.h"

/* Runs `emit` on a JSON sink over an array and returns what was written (caller frees). */
static char *render(void (*emit)(npkit_sink *s)) {
  FILE *fp = tmpfile();
  npkit_json w;
  if (fp == NULL || npkit_json_init(&w, fileno(fp)) != 0) {
    perror("tmpfile");
    exit(1);
  }
  npkit_json_begin_array(&w);
  npkit_json_sink sink;
  npkit_json_sink_init(&sink, &w);
  emit(&sink.base);
  npkit_json_end_array(&w);
  char err[128];
  CHECK(npkit_json_finish(&w, err, sizeof err) == 0);
  long n = (long)lseek(fileno(fp), 0, SEEK_END);
  char *buf = malloc((size_t)n + 1);
  if (pread(fileno(fp), buf, (size_t)n, 0) != n) perror("pread");
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

static void slice_with_every_arg(npkit_sink *s) {
  static const char from_log[] = {'a', '"', 'b', '\x01', '\\', '\0', 'z'};
  const uint64_t grid[3] = {4, 2, 1};
  const char *const names[2] = {"Coll", "P2p"};
  npkit_sink_head h = {.name = "k\"1", .cat = "kernel", .ph = NPKIT_SINK_SLICE, .pid = 3, .tid = 3401, .has_ts = 1,
                       .ts = 1500, .has_dur = 1, .dur = 2000};
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
  npkit_sink_arg_str(s, "s", "x");
  npkit_sink_arg_strn(s, "log", from_log, sizeof from_log);
  npkit_sink_arg_int(s, "i", -7);
  npkit_sink_arg_uint(s, "u", 18446744073709551615ull);
  npkit_sink_arg_double(s, "d", 0.5);
  npkit_sink_arg_bool(s, "b", 1);
  npkit_sink_arg_us(s, "us", 1234567);
  npkit_sink_arg_hex(s, "h", 0x1f, 4);
  npkit_sink_arg_fixed(s, "f", 2.0 / 3.0, 3);
  npkit_sink_arg_fixed(s, "nan", NAN, 3);
  npkit_sink_arg_milli(s, "m", -1500);
  npkit_sink_arg_uints(s, "grid", grid, 3);
  npkit_sink_arg_strs(s, "events", names, 2);
  npkit_sink_end(s);
}

static void heads(npkit_sink *s) {
  /* a counter of the process: no tid, no dur */
  npkit_sink_counter(s, "c", NULL, 2, 10);
  npkit_sink_args(s);
  npkit_sink_arg_uint(s, "v", 1);
  npkit_sink_end(s);
  /* metadata: no ts */
  npkit_sink_track(s, 2, 2005, "GPU 0 \xc2\xb7 stream 7", 405);
  /* instants: scope after ph, or after ts */
  npkit_sink_head a = {.name = "a", .cat = "npkit", .ph = NPKIT_SINK_INSTANT, .scope = 'p', .pid = 2, .tid = -1,
                       .has_ts = 1, .ts = 1};
  npkit_sink_begin(s, &a);
  npkit_sink_end(s);
  npkit_sink_head b = {.name = "b", .cat = "npkit_mark", .ph = NPKIT_SINK_INSTANT, .scope = 't', .scope_last = 1,
                       .pid = 2, .tid = 2001, .has_ts = 1, .ts = 2};
  npkit_sink_begin(s, &b);
  npkit_sink_end(s);
  /* a flow's two ends */
  npkit_sink_head f0 = {.name = "ac2g", .cat = "ac2g", .ph = NPKIT_SINK_FLOW_START, .id = 2000000001, .pid = 2,
                        .tid = 2000, .has_ts = 1, .ts = 3};
  npkit_sink_begin(s, &f0);
  npkit_sink_end(s);
  npkit_sink_head f1 = {.name = "ac2g", .cat = "ac2g", .ph = NPKIT_SINK_FLOW_END, .bind = 'e', .id = 2000000001,
                        .pid = 2, .tid = 2400, .has_ts = 1, .ts = 4};
  npkit_sink_begin(s, &f1);
  npkit_sink_end(s);
}

int main(void) {
  char *out = render(slice_with_every_arg);
  CHECK_STR(out, "[\n{\"name\":\"k\\\"1\",\"cat\":\"kernel\",\"ph\":\"X\",\"pid\":3,\"tid\":3401,\"ts\":1.500,"
                 "\"dur\":2.000,\"args\":{\"s\":\"x\",\"log\":\"a\\\"b\\u0001\\\\\",\"i\":-7,"
                 "\"u\":18446744073709551615,\"d\":0.5,\"b\":true,\"us\":1234.567,\"h\":\"0x001f\","
                 "\"f\":0.667,\"nan\":null,\"m\":-1.500,\"grid\":[4,2,1],\"events\":[\"Coll\",\"P2p\"]}}]");
  free(out);

  out = render(heads);
  CHECK_STR(out, "[\n{\"name\":\"c\",\"ph\":\"C\",\"pid\":2,\"ts\":0.010,\"args\":{\"v\":1}},"
                 "\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":2,\"tid\":2005,\"args\":{\"name\":\"GPU 0 \xc2\xb7 stream 7\"}},"
                 "\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":2,\"tid\":2005,\"args\":{\"sort_index\":405}},"
                 "\n{\"name\":\"a\",\"cat\":\"npkit\",\"ph\":\"i\",\"s\":\"p\",\"pid\":2,\"ts\":0.001},"
                 "\n{\"name\":\"b\",\"cat\":\"npkit_mark\",\"ph\":\"i\",\"pid\":2,\"tid\":2001,\"ts\":0.002,\"s\":\"t\"},"
                 "\n{\"name\":\"ac2g\",\"cat\":\"ac2g\",\"ph\":\"s\",\"id\":2000000001,\"pid\":2,\"tid\":2000,\"ts\":0.003},"
                 "\n{\"name\":\"ac2g\",\"cat\":\"ac2g\",\"ph\":\"f\",\"bp\":\"e\",\"id\":2000000001,\"pid\":2,\"tid\":2400,"
                 "\"ts\":0.004}]");
  free(out);

  /* the bridge: the writer under a JSON sink, nothing under another */
  npkit_json w;
  npkit_json_sink j;
  npkit_json_sink_init(&j, &w);
  CHECK(npkit_sink_json(&j.base) == &w);
  static const npkit_sink_ops other_ops;
  npkit_sink other = {&other_ops};
  CHECK(npkit_sink_json(&other) == NULL);
  CHECK(npkit_sink_json(NULL) == NULL);
  return check_exit_code("test_trace_sink");
}
