/* JSON writer: number and timestamp formatting against printf, string escaping (control characters,
 * quotes, invalid UTF-8), structure and commas, long strings across buffer chunks, write errors. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "json_writer.h"

typedef struct capture {
  FILE *fp;
  npkit_json w;
} capture;

static void cap_begin(capture *c) {
  c->fp = tmpfile();
  if (c->fp == NULL || npkit_json_init(&c->w, fileno(c->fp)) != 0) {
    perror("capture");
    exit(1);
  }
}

/* Finishes the writer and returns what it wrote (caller frees). */
static char *cap_end(capture *c, size_t *len) {
  char err[128];
  CHECK(npkit_json_finish(&c->w, err, sizeof(err)) == 0);
  long n = ftell(c->fp) >= 0 ? (long)lseek(fileno(c->fp), 0, SEEK_END) : 0;
  char *buf = malloc((size_t)n + 1);
  if (pread(fileno(c->fp), buf, (size_t)n, 0) != n) perror("pread");
  buf[n] = '\0';
  fclose(c->fp);
  if (len) *len = (size_t)n;
  return buf;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { /* xorshift64*: deterministic */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

static void fmt_ts_str(char *out, int64_t ns) { *npkit_fmt_ts(out, ns) = '\0'; }

/* The reference: printf on the split value, computed differently from the formatter. */
static void ref_ts(char *out, int64_t ns) {
  if (ns == INT64_MIN) {
    strcpy(out, "-9223372036854775.808");
    return;
  }
  long long a = ns < 0 ? -(long long)ns : (long long)ns;
  sprintf(out, "%s%lld.%03lld", ns < 0 ? "-" : "", a / 1000, a % 1000);
}

static void test_timestamps(void) {
  static const struct {
    int64_t ns;
    const char *want;
  } cases[] = {
      {0, "0.000"},
      {1, "0.001"},
      {10, "0.010"},
      {999, "0.999"},
      {1000, "1.000"},
      {1001, "1.001"},
      {1234567, "1234.567"},
      {-1, "-0.001"},
      {-999, "-0.999"},
      {-1000, "-1.000"},
      {-1234567, "-1234.567"},
      {86400000000000ll, "86400000000.000"},            /* a day */
      {1764671234567890123ll, "1764671234567890.123"}, /* an absolute epoch time */
      {INT64_MAX, "9223372036854775.807"},
      {INT64_MIN, "-9223372036854775.808"},
  };
  char got[40], want[40];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    fmt_ts_str(got, cases[i].ns);
    CHECK_STR(got, cases[i].want);
  }
  int bad = 0;
  for (int i = 0; i < 200000; i++) {
    int64_t ns = (int64_t)(rnd() >> (rnd() % 64));
    if (i & 1) ns = -ns;
    fmt_ts_str(got, ns);
    ref_ts(want, ns);
    if (strcmp(got, want) != 0 && bad++ < 5) fprintf(stderr, "ts %" PRId64 ": got %s want %s\n", ns, got, want);
  }
  CHECK(bad == 0);
}

static void test_integers(void) {
  char got[40], want[40];
  static const uint64_t u[] = {0, 9, 10, 99, 100, 101, 999, 1000, 4294967295u, 4294967296u, UINT64_MAX};
  for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
    *npkit_fmt_u64(got, u[i]) = '\0';
    sprintf(want, "%" PRIu64, u[i]);
    CHECK_STR(got, want);
  }
  /* each side of every power of ten (the digit count comes from the bit width) and of 16 */
  int edges_bad = 0;
  for (uint64_t p10 = 1, k = 0; k < 20; k++, p10 *= 10) {
    for (uint64_t v = p10 - 1; v <= p10 + 1; v++) {
      *npkit_fmt_u64(got, v) = '\0';
      sprintf(want, "%" PRIu64, v);
      edges_bad += strcmp(got, want) != 0;
    }
  }
  for (int k = 0; k < 64; k++) {
    uint64_t v = 1ull << k;
    *npkit_fmt_hex(got, v - 1, 0) = '\0';
    sprintf(want, "%" PRIx64, v - 1);
    edges_bad += strcmp(got, want) != 0;
    *npkit_fmt_hex(got, v, 3) = '\0';
    sprintf(want, "%03" PRIx64, v);
    edges_bad += strcmp(got, want) != 0;
  }
  CHECK(edges_bad == 0);
  *npkit_fmt_i64(got, INT64_MIN) = '\0';
  CHECK_STR(got, "-9223372036854775808");
  *npkit_fmt_i64(got, -1) = '\0';
  CHECK_STR(got, "-1");
  *npkit_fmt_hex(got, 0, 0) = '\0';
  CHECK_STR(got, "0");
  *npkit_fmt_hex(got, 0x1f2e, 16) = '\0';
  CHECK_STR(got, "0000000000001f2e");
  *npkit_fmt_hex(got, UINT64_MAX, 0) = '\0';
  CHECK_STR(got, "ffffffffffffffff");
  int bad = 0;
  for (int i = 0; i < 200000; i++) {
    uint64_t v = rnd() >> (rnd() % 64);
    *npkit_fmt_u64(got, v) = '\0';
    sprintf(want, "%" PRIu64, v);
    bad += strcmp(got, want) != 0;
    *npkit_fmt_i64(got, -(int64_t)(v >> 1)) = '\0';
    sprintf(want, "%" PRId64, -(int64_t)(v >> 1));
    bad += strcmp(got, want) != 0;
    *npkit_fmt_hex(got, v, 0) = '\0';
    sprintf(want, "%" PRIx64, v);
    bad += strcmp(got, want) != 0;
  }
  CHECK(bad == 0);
}

static char *escaped(const char *s, size_t n) {
  char *out = malloc(6 * n + 8);
  *npkit_fmt_escaped(out, s, n) = '\0';
  return out;
}

static void test_escaping(void) {
  static const struct {
    const char *in;
    size_t len;
    const char *want;
  } cases[] = {
      {"plain", 5, "plain"},
      {"q\"b\\s/", 6, "q\\\"b\\\\s/"},
      {"\n\r\t\b\f", 5, "\\n\\r\\t\\b\\f"},
      {"\x01\x1f\x7f", 3, "\\u0001\\u001f\x7f"},
      {"stop\0here", 9, "stop"},
      {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
      {"\xff", 1, "\xef\xbf\xbd"},
      {"a\x80z", 3, "a\xef\xbf\xbdz"},
      {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"},                       /* overlong '/' */
      {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},       /* a UTF-16 surrogate */
      {"\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
      {"x\xe2\x82", 3, "x\xef\xbf\xbd\xef\xbf\xbd"},                     /* cut short at the end */
      {"\xe2\x82(", 3, "\xef\xbf\xbd\xef\xbf\xbd("},                     /* cut short before ASCII */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *got = escaped(cases[i].in, cases[i].len);
    CHECK_STR(got, cases[i].want);
    free(got);
  }
}

static void test_structure(void) {
  capture c;
  cap_begin(&c);
  npkit_json *w = &c.w;
  npkit_json_begin_object(w);
  npkit_json_key(w, "a");
  npkit_json_int(w, -5);
  npkit_json_key(w, "b\"");
  npkit_json_begin_array(w);
  npkit_json_uint(w, UINT64_MAX);
  npkit_json_string(w, "x\ty");
  npkit_json_bool(w, 1);
  npkit_json_bool(w, 0);
  npkit_json_null(w);
  npkit_json_double(w, 0.1);
  npkit_json_double(w, 1e300);
  npkit_json_double(w, 0.0 / 0.0);
  npkit_json_double(w, -2.5);
  npkit_json_ts(w, -1500);
  npkit_json_hex(w, 255, 0);
  npkit_json_begin_object(w);
  npkit_json_end_object(w);
  npkit_json_begin_array(w);
  npkit_json_end_array(w);
  npkit_json_element(w);
  npkit_json_raw(w, "{\"hand\":1}", 10);
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_key(w, "k");
  npkit_json_raw_value(w, "[1,2]", 5);
  npkit_json_end_object(w);
  npkit_json_end_array(w);
  npkit_json_key(w, "s");
  npkit_json_string_n(w, "abcdef", 3);
  npkit_json_key(w, "n");
  npkit_json_string(w, NULL);
  npkit_json_end_object(w);
  char *out = cap_end(&c, NULL);
  CHECK_STR(out, "{\"a\":-5,\"b\\\"\":[18446744073709551615,\"x\\ty\",true,false,null,0.1,1e+300,null,-2.5,"
                 "-1.500,\"0xff\",{},[],{\"hand\":1},\n{\"k\":[1,2]}],\"s\":\"abc\",\"n\":null}");
  free(out);
}

/* A long string crosses the writer's chunks and buffer: multi-byte characters straddle every
 * boundary, and nothing may be replaced or lost. */
static void test_long_string(void) {
  size_t n = 3u << 20;
  char *s = malloc(n + 1);
  size_t i = 0;
  while (i + 4 <= n) {
    switch (rnd() % 4) {
    case 0: s[i++] = 'a'; break;
    case 1: memcpy(s + i, "\xc3\xa9", 2); i += 2; break;
    case 2: memcpy(s + i, "\xe2\x82\xac", 3); i += 3; break;
    default: memcpy(s + i, "\xf0\x9f\x98\x80", 4); i += 4; break;
    }
  }
  s[i] = '\0';
  capture c;
  cap_begin(&c);
  npkit_json_string(&c.w, s);
  size_t len;
  char *out = cap_end(&c, &len);
  CHECK_EQ_U64(len, i + 2);
  CHECK(out[0] == '"' && out[len - 1] == '"' && memcmp(out + 1, s, i) == 0);
  free(out);
  free(s);
}

static void test_write_error(void) {
  int fd = open("/dev/full", O_WRONLY);
  if (fd < 0) {
    printf("no /dev/full: write error test skipped\n");
    return;
  }
  npkit_json w;
  char err[128] = "";
  CHECK(npkit_json_init(&w, fd) == 0);
  npkit_json_begin_array(&w);
  for (int i = 0; i < 500000; i++) npkit_json_string(&w, "some text to fill the buffer more than once");
  npkit_json_end_array(&w);
  CHECK(w.err == ENOSPC);
  CHECK(npkit_json_finish(&w, err, sizeof(err)) == -1);
  CHECK_STR(err, "writing JSON: No space left on device");
  close(fd);

  /* closing more than was opened is reported as well */
  capture c;
  cap_begin(&c);
  npkit_json_end_array(&c.w);
  CHECK(npkit_json_finish(&c.w, err, sizeof(err)) == -1);
  CHECK_CONTAINS(err, "nesting");
  fclose(c.fp);
}

int main(void) {
  test_timestamps();
  test_integers();
  test_escaping();
  test_structure();
  test_long_string();
  test_write_error();
  return check_exit_code("test_json_writer");
}
