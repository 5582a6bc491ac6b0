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
  npkit_sink_free(&sink.base);
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

/* Whole slices with interned strings: every type of argument, a set, a stack and its frame, the
 * head rendered once and again for another pid under the same name, no args, a set that is empty
 * in the first place, strings from a log with a quote and a control character. */
static void interned_slices(npkit_sink *s) {
  static const char from_log[] = {'r', '"', 'i', '\x02', 'g'};
  const char *frames[2] = {"f(\"x\")", "main"};
  npkit_sink_str name = npkit_sink_intern_name(s, "ncclAll\"Reduce"), cat = npkit_sink_intern_name(s, "nccl_api");
  npkit_sink_str k_cls = npkit_sink_intern_name(s, "class"), k_n = npkit_sink_intern_name(s, "n");
  npkit_sink_str k_neg = npkit_sink_intern_name(s, "neg"), k_b = npkit_sink_intern_name(s, "b");
  npkit_sink_str k_t = npkit_sink_intern_name(s, "algo"), k_h = npkit_sink_intern_name(s, "h");
  npkit_sink_str k_m = npkit_sink_intern_name(s, "ms"), k_stack = npkit_sink_intern_name(s, "stack");
  npkit_sink_str coll = npkit_sink_intern_name(s, "coll"), rank = npkit_sink_intern_name(s, "rank");
  npkit_sink_arg members[2] = {{.key = k_cls, .type = NPKIT_SINK_ARG_STR, .v.str = coll},
                               {.key = rank, .type = NPKIT_SINK_ARG_INT, .v.i = 3}};
  npkit_sink_str set = npkit_sink_intern_args(s, members, 2), none = npkit_sink_intern_args(s, members, 0);
  npkit_sink_str stack = npkit_sink_intern_stack(s, frames, 2), frame = npkit_sink_intern_name(s, "2.5");
  CHECK(name && cat && k_cls && k_n && k_neg && k_b && k_t && k_h && k_m && k_stack && coll && rank && set && stack && frame);
  npkit_sink_arg args[] = {
      {.key = k_cls, .type = NPKIT_SINK_ARG_STR, .v.str = coll},
      {.key = k_n, .type = NPKIT_SINK_ARG_UINT, .v.u = 18446744073709551615ull},
      {.key = k_neg, .type = NPKIT_SINK_ARG_INT, .v.i = -42},
      {.key = k_b, .type = NPKIT_SINK_ARG_BOOL, .v.i = 0},
      {.key = k_t, .type = NPKIT_SINK_ARG_TEXT, .len = sizeof from_log, .v.text = from_log},
      {.key = k_h, .type = NPKIT_SINK_ARG_HEX, .width = 16, .v.u = 0xabc},
      {.key = k_m, .type = NPKIT_SINK_ARG_MILLI, .v.i = 2500},
      {.type = NPKIT_SINK_ARG_SET, .v.str = set},
      {.key = k_stack, .type = NPKIT_SINK_ARG_STR, .v.str = stack},
  };
  npkit_sink_slice e = {.name = name, .cat = cat, .pid = 2, .tid = 2001, .ts = 1500, .dur = 20,
                        .args = args, .nargs = sizeof args / sizeof args[0], .frame = frame};
  npkit_sink_slice_write(s, &e);
  npkit_sink_slice bare = {.name = name, .pid = 7, .tid = 7001, .ts = -5, .dur = 0};
  npkit_sink_slice_write(s, &bare); /* same name, no category, another pid: its own head */
  npkit_sink_arg empty_first[2] = {{.type = NPKIT_SINK_ARG_SET, .v.str = none},
                                   {.key = k_n, .type = NPKIT_SINK_ARG_UINT, .v.u = 1}};
  npkit_sink_slice after_empty = {.name = name, .cat = cat, .pid = 2, .tid = 2002, .ts = 1, .dur = 1,
                                  .args = empty_first, .nargs = 2};
  npkit_sink_slice_write(s, &after_empty);
  npkit_sink_slice only_empty = {.name = name, .cat = cat, .pid = 2, .tid = 2002, .ts = 2, .dur = 1,
                                 .args = empty_first, .nargs = 1};
  npkit_sink_slice_write(s, &only_empty);
}

/* A slice longer than the writer reserves at once: a stack at its limit and strings from a log at
 * theirs, written argument by argument; the stack is cut at whole frames and ends with "...". */
static void long_slice(npkit_sink *s) {
  static char frame_text[1000];
  memset(frame_text, 'x', sizeof frame_text - 1);
  const char *frames[8];
  for (int i = 0; i < 8; i++) frames[i] = frame_text;
  static char text[4096];
  memset(text, '"', sizeof text);
  npkit_sink_str k = npkit_sink_intern_name(s, "stack"), t = npkit_sink_intern_name(s, "t");
  npkit_sink_arg args[4] = {{.key = k, .type = NPKIT_SINK_ARG_STR, .v.str = npkit_sink_intern_stack(s, frames, 8)},
                            {.key = t, .type = NPKIT_SINK_ARG_TEXT, .len = sizeof text, .v.text = text},
                            {.key = t, .type = NPKIT_SINK_ARG_TEXT, .len = sizeof text, .v.text = text},
                            {.key = t, .type = NPKIT_SINK_ARG_TEXT, .len = sizeof text, .v.text = text}};
  npkit_sink_slice e = {.name = k, .pid = 1, .tid = 1, .ts = 0, .dur = 0, .args = args, .nargs = 4};
  npkit_sink_slice_write(s, &e);
}

/* Ids that name nothing (never interned, or forgotten between the logs of a merge) as a name, a
 * category, a string argument, a key and a frame: written as "" so that the JSON stays whole. */
static void unknown_ids(npkit_sink *s) {
  npkit_sink_str k = npkit_sink_intern_name(s, "k");
  npkit_sink_arg args[2] = {{.key = k, .type = NPKIT_SINK_ARG_STR, .v.str = 777},
                            {.key = 778, .type = NPKIT_SINK_ARG_UINT, .v.u = 5}};
  npkit_sink_slice e = {.name = 779, .cat = 780, .pid = 1, .tid = 2, .ts = 3, .dur = 4, .args = args, .nargs = 2,
                        .frame = 781};
  npkit_sink_slice_write(s, &e);
}

int main(void) {
  char *out = render(slice_with_every_arg);
  CHECK_STR(out, "[\n{\"name\":\"k\\\"1\",\"cat\":\"kernel\",\"ph\":\"X\",\"pid\":3,\"tid\":3401,\"ts\":1.500,"
                 "\"dur\":2.000,\"args\":{\"s\":\"x\",\"log\":\"a\\\"b\\u0001\\\\\",\"i\":-7,"
                 "\"u\":18446744073709551615,\"d\":0.5,\"b\":true,\"us\":1234.567,\"h\":\"0x001f\","
                 "\"f\":0.667,\"nan\":null,\"m\":-1.500,\"grid\":[4,2,1],\"events\":[\"Coll\",\"P2p\"]}}]");
  free(out);

  out = render(interned_slices);
  CHECK_STR(out, "[\n{\"name\":\"ncclAll\\\"Reduce\",\"cat\":\"nccl_api\",\"ph\":\"X\",\"pid\":2,\"tid\":2001,"
                 "\"ts\":1.500,\"dur\":0.020,\"args\":{\"class\":\"coll\",\"n\":18446744073709551615,\"neg\":-42,"
                 "\"b\":false,\"algo\":\"r\\\"i\\u0002g\",\"h\":\"0x0000000000000abc\",\"ms\":2.500,"
                 "\"class\":\"coll\",\"rank\":3,\"stack\":\"f(\\\"x\\\")\\nmain\"},\"sf\":\"2.5\"},"
                 "\n{\"name\":\"ncclAll\\\"Reduce\",\"ph\":\"X\",\"pid\":7,\"tid\":7001,\"ts\":-0.005,\"dur\":0.000},"
                 "\n{\"name\":\"ncclAll\\\"Reduce\",\"cat\":\"nccl_api\",\"ph\":\"X\",\"pid\":2,\"tid\":2002,"
                 "\"ts\":0.001,\"dur\":0.001,\"args\":{\"n\":1}},"
                 "\n{\"name\":\"ncclAll\\\"Reduce\",\"cat\":\"nccl_api\",\"ph\":\"X\",\"pid\":2,\"tid\":2002,"
                 "\"ts\":0.002,\"dur\":0.001,\"args\":{}}]");
  free(out);

  out = render(unknown_ids);
  CHECK_STR(out, "[\n{\"name\":\"\",\"cat\":\"\",\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":0.003,\"dur\":0.004,"
                 "\"args\":{\"k\":\"\",\"\":5},\"sf\":\"\"}]");
  free(out);

  out = render(long_slice);
  {
    /* the stack: as many whole frames as keep "stack":"..." within NPKIT_JSON_STACK_MAX, then "..." */
    const char *st = strstr(out, "\"stack\":\"");
    CHECK(st != NULL);
    if (st != NULL) {
      const char *end = strstr(st + 9, "...\"");
      CHECK(end != NULL);
      size_t member = (size_t)(end + 4 - st);
      CHECK(member <= NPKIT_JSON_STACK_MAX);
      /* the next frame, escaped at worst (6 bytes a byte), would not have fit */
      CHECK(member + 6 * 999 + 16 > (size_t)NPKIT_JSON_STACK_MAX);
      size_t frames = 0;
      for (const char *c = st; c < end; c++) frames += c[0] == '\\' && c[1] == 'n';
      /* frame k is written when 9 + (1001 k - 1) + 6 x 999 + 16 <= 12000: k = 0..5 */
      CHECK_EQ_U64(frames + 1, 6);
      CHECK_EQ_U64(member, 8 + 1 + 6 * 999 + 5 * 2 + 3 + 1); /* "stack": " frames, separators, ... " */
    }
    /* each text from a log: NPKIT_JSON_TEXT_MAX quotes, escaped */
    size_t quotes = 0;
    for (const char *c = out; (c = strstr(c, "\\\"")) != NULL; c += 2) quotes++;
    CHECK_EQ_U64(quotes, 3 * NPKIT_JSON_TEXT_MAX);
    CHECK(strlen(out) > NPKIT_JSON_MAX_RESERVE);
    CHECK(strcmp(out + strlen(out) - 4, "\"}}]") == 0);
  }
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

  return check_exit_code("test_trace_sink");
}
