/* Unit tests of the NPKit dump reader: event table and header parser, clock values, exact time
 * conversion, pairing structures, and conversion of hand-built buffers. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "npkit_dump.h"
#include "npkit_dump_pair.h"


/* ---- event table ---- */

static void test_builtin_table(void) {
  npkit_dump_event_table t;
  npkit_dump_table_builtin(&t);
  CHECKF(t.n_defined == 79, "n_defined %u", t.n_defined);
  CHECKF(strcmp(t.name[0x1], "ALL_REDUCE_RING_ENTRY") == 0, "%s", t.name[1]);
  CHECKF(t.role[0x1] == NPKIT_ROLE_ENTRY && t.role[0x2] == NPKIT_ROLE_EXIT, "roles of 1/2");
  CHECKF(t.kind[0x2] == 0x1 && t.kind_len[0x2] == strlen("ALL_REDUCE_RING"), "kind of 2: %u/%u", t.kind[2],
        t.kind_len[2]);
  CHECKF(t.role[0x33] == NPKIT_ROLE_TIME_SYNC_GPU && t.role[0x34] == NPKIT_ROLE_TIME_SYNC_CPU, "sync roles");
  CHECKF(t.role[0x0] == NPKIT_ROLE_INVALID, "INVALID role");
  CHECKF(t.role[0x4F] == NPKIT_ROLE_UNKNOWN && t.name[0x4F][0] == '\0', "0x4F is not an event");
  CHECKF(strcmp(t.name[0x4E], "SEND_RECV_RECV_EXIT") == 0 && t.kind[0x4E] == 0x4D, "last pair");
  CHECKF(strcmp(t.name[0x3A], "ALL_REDUCE_RING_DIRECT_RECV_REDUCE_COPY_SEND_EXIT") == 0, "%s", t.name[0x3A]);
  CHECKF(npkit_dump_table_find(&t, "NET_RECV_EXIT") == 0x32, "find");
  CHECKF(npkit_dump_table_find(&t, "NOPE") == -1, "find missing");
  /* every _EXIT of the patch has its _ENTRY one id below */
  for (int id = 1; id < 0x4F; id++)
    if (t.role[id] == NPKIT_ROLE_EXIT) CHECKF(t.kind[id] == id - 1, "kind of 0x%x is 0x%x", id, t.kind[id]);
}

static int parse(npkit_dump_event_table *t, const char *text, npkit_dump_header_mode mode, char *err, size_t n) {
  return npkit_dump_table_parse_header(t, text, strlen(text), mode, "h.h", err, n);
}

static void expect_header_error(const char *text, const char *msg) {
  npkit_dump_event_table t, before;
  char err[512] = "";
  npkit_dump_table_builtin(&t);
  before = t;
  int rc = parse(&t, text, NPKIT_HEADER_REPLACE, err, sizeof(err));
  CHECKF(rc == NPKIT_DUMP_EFORMAT, "header %s: rc %d", text, rc);
  CHECKF(strstr(err, msg) != NULL, "header %s: '%s' not in '%s'", text, msg, err);
  CHECKF(memcmp(&t, &before, sizeof(t)) == 0, "table changed by a failed parse of %s", text);
}

static void test_header_parser(void) {
  npkit_dump_event_table t;
  char err[512];
  const char *fork = "#ifndef NPKIT_EVENT_H_\n"
                     "#define NPKIT_EVENT_H_\n"
                     "// #define NPKIT_EVENT_IN_COMMENT 0x5\n"
                     "/* #define NPKIT_EVENT_IN_BLOCK 0x6\n"
                     "   #define NPKIT_EVENT_STILL_IN_BLOCK 0x7 */\n"
                     "const char *s = \"/* not a comment\";\n"
                     "#define NPKIT_EVENT_A_ENTRY 0x10\n"
                     "#define NPKIT_EVENT_A_EXIT  17   /* trailing comment */\n"
                     "#define NPKIT_EVENT_B_ENTRY ((0X20))\n"
                     "\t#  define   NPKIT_EVENT_B_EXIT 0x1FUL\n"
                     "#define NPKIT_EVENT_C 010\n"
                     "#define NPKIT_EVENT_D \\\n   255\n"
                     "#define NPKIT_EVENT_A_ENTRY 0x10\n"
                     "#define NPKIT_EVENT_FN(x) (x)\n"
                     "#define NPKIT_PRIM_OTHER 0x4F\n"
                     "#define OTHER_THING 3\n"
                     "#define NPKIT_EVENT_TIME_SYNC_CPU 1\n"
                     "#endif\n";
  npkit_dump_table_builtin(&t);
  int rc = parse(&t, fork, NPKIT_HEADER_REPLACE, err, sizeof(err));
  CHECKF(rc == 0, "fork header: %s", err);
  CHECKF(t.n_defined == 7, "n_defined %u", t.n_defined);
  CHECKF(strcmp(t.name[0x10], "A_ENTRY") == 0 && strcmp(t.name[17], "A_EXIT") == 0, "A");
  CHECKF(t.kind[17] == 0x10, "A_EXIT pairs with A_ENTRY: %u", t.kind[17]);
  CHECKF(strcmp(t.name[0x20], "B_ENTRY") == 0 && strcmp(t.name[0x1F], "B_EXIT") == 0 && t.kind[0x1F] == 0x20,
        "B (exit id below entry id)");
  CHECKF(strcmp(t.name[8], "C") == 0 && t.role[8] == NPKIT_ROLE_POINT, "C is octal 010 = 8 and a point event");
  CHECKF(strcmp(t.name[255], "D") == 0, "D continued on the next line");
  CHECKF(t.role[1] == NPKIT_ROLE_TIME_SYNC_CPU, "TIME_SYNC_CPU moved to 1");
  CHECKF(t.name[5][0] == '\0' && t.name[6][0] == '\0' && t.name[7][0] == '\0', "commented-out defines used");
  CHECKF(t.name[0x2][0] == '\0', "replace mode kept built-in ids");

  /* extend: the built-in ids stay, a name moves to its new id, a new name takes an id over */
  npkit_dump_table_builtin(&t);
  rc = parse(&t, "#define NPKIT_EVENT_NET_SEND_ENTRY 0x60\n#define NPKIT_EVENT_X_EXIT 0x2\n", NPKIT_HEADER_EXTEND, err,
             sizeof(err));
  CHECKF(rc == 0, "extend: %s", err);
  CHECKF(strcmp(t.name[0x60], "NET_SEND_ENTRY") == 0 && t.name[0x2F][0] == '\0', "NET_SEND_ENTRY moved");
  CHECKF(t.kind[0x30] == 0x60, "NET_SEND_EXIT pairs with the moved entry: 0x%x", t.kind[0x30]);
  CHECKF(strcmp(t.name[0x2], "X_EXIT") == 0 && t.kind[0x2] == 0x2, "X_EXIT has no entry");
  CHECKF(strcmp(t.name[0x1], "ALL_REDUCE_RING_ENTRY") == 0, "other built-in ids kept");

  expect_header_error("#define NPKIT_EVENT_BIG 256\n", "h.h:1: NPKIT_EVENT_BIG = 256 does not fit the 8-bit");
  expect_header_error("#define NPKIT_EVENT_HUGE 0xffffffffffffffffff\n", "does not fit the 8-bit");
  expect_header_error("#define NPKIT_EVENT_A 1\n#define NPKIT_EVENT_A 2\n",
                      "h.h:2: NPKIT_EVENT_A defined twice: 2 here, 1 on line 1");
  expect_header_error("#define NPKIT_EVENT_A 3\n\n#define NPKIT_EVENT_B 3\n",
                      "h.h:3: id 3 given to both NPKIT_EVENT_A (line 1) and NPKIT_EVENT_B");
  expect_header_error("#define NPKIT_EVENT_A NPKIT_EVENT_B\n",
                      "h.h:1: the value of NPKIT_EVENT_A is not an integer: 'NPKIT_EVENT_B'");
  expect_header_error("#define NPKIT_EVENT_A 0x\n", "not an integer: '0x'");
  expect_header_error("#define NPKIT_EVENT_A 12abc\n", "not an integer: '12abc'");
  expect_header_error("#define NPKIT_EVENT_A (3\n", "not an integer: '(3'");
  expect_header_error("#define NPKIT_EVENT_A -3\n", "h.h:1: NPKIT_EVENT_A has a negative id");
  expect_header_error("#define NPKIT_EVENT_ 3\n", "'NPKIT_EVENT_' alone is not an event name");
  expect_header_error("", "no '#define NPKIT_EVENT_<NAME> <id>' line found");
  expect_header_error("garbage\n\x01\x02\xff\n#define\n#define NPKIT_EVENT_H_\n", "no '#define NPKIT_EVENT_<NAME>");
  expect_header_error("/* #define NPKIT_EVENT_A 1 */", "no '#define NPKIT_EVENT_<NAME>");
  {
    char longname[300];
    snprintf(longname, sizeof(longname), "#define NPKIT_EVENT_%0200d 1\n", 0);
    for (char *p = longname + 20; *p == '0'; p++) *p = 'N';
    expect_header_error(longname, "is longer than 95 characters");
  }
  {
    const char text[] = "#define NPKIT_EVENT_A 1\n\0\n";
    npkit_dump_table_builtin(&t);
    rc = npkit_dump_table_parse_header(&t, text, sizeof(text) - 1, NPKIT_HEADER_REPLACE, "n.h", err, sizeof(err));
    CHECKF(rc == NPKIT_DUMP_EFORMAT && strstr(err, "n.h: contains NUL bytes") != NULL, "NUL: %s", err);
  }
  /* "unterminated" above must still parse the define before the comment */
  npkit_dump_table_builtin(&t);
  rc = parse(&t, "#define NPKIT_EVENT_A 1\n/* unterminated", NPKIT_HEADER_REPLACE, err, sizeof(err));
  CHECKF(rc == 0 && strcmp(t.name[1], "A") == 0, "unterminated comment: %s", err);
  rc = npkit_dump_table_load_header(&t, "/nonexistent/npkit_event.h", NPKIT_HEADER_REPLACE, err, sizeof(err));
  CHECKF(rc == NPKIT_DUMP_EIO && strstr(err, "No such file") != NULL, "missing file: %s", err);
  rc = npkit_dump_table_load_header(&t, "/", NPKIT_HEADER_REPLACE, err, sizeof(err));
  CHECKF(rc == NPKIT_DUMP_EIO && strstr(err, "not a regular file") != NULL, "directory: %s", err);
}

/* ---- clocks and times ---- */

static void test_parse_uint(void) {
  struct {
    const char *text;
    int ok;
    uint64_t value;
    const char *msg;
  } cases[] = {
      {"1410000", 1, 1410000, NULL},
      {" 1410000\n", 1, 1410000, NULL},
      {"+7", 1, 7, NULL},
      {"18446744073709551615", 1, UINT64_MAX, NULL},
      {"18446744073709551616", 0, 0, "too large"},
      {"", 0, 0, "empty"},
      {" \n\t", 0, 0, "empty"},
      {"-5", 0, 0, "negative value '-5'"},
      {"1.5", 0, 0, "not an integer: '1.5'"},
      {"0x10", 0, 0, "not an integer"},
      {"12 34", 0, 0, "not an integer"},
      {"+", 0, 0, "not an integer"},
      {"abc\x01", 0, 0, "not an integer: 'abc?'"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    uint64_t v = 0;
    char err[128] = "";
    int rc = npkit_dump_parse_uint(cases[i].text, strlen(cases[i].text), &v, err, sizeof(err));
    if (cases[i].ok)
      CHECKF(rc == 0 && v == cases[i].value, "'%s': rc %d v %llu", cases[i].text, rc, (unsigned long long)v);
    else
      CHECKF(rc != 0 && strstr(err, cases[i].msg) != NULL, "'%s': rc %d err '%s'", cases[i].text, rc, err);
  }
}

static void test_check_clock(void) {
  char err[256];
  struct {
    uint64_t khz, num, den;
    int ok;
  } cases[] = {
      {1410000, 1, 1000000000, 1},
      {1000, 1, 1, 1},
      {10000000, 1, 10000000000ull, 1},
      {999, 1, 1000000000, 0},
      {10000001, 1, 1000000000, 0},
      {0, 1, 1000000000, 0},
      {1410000, 0, 1000000000, 0},
      {1410000, 1, 0, 0},
      {1410000, 2, 1, 0},
      {1410000, 1, 10000000001ull, 0},
      {1410000, 1000000000001ull, 1000000000001ull, 0},
      {1410000, 5, 12000000000ull, 1},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    npkit_dump_clock c = {cases[i].khz, cases[i].num, cases[i].den};
    int rc = npkit_dump_check_clock(&c, err, sizeof(err));
    CHECKF((rc == 0) == cases[i].ok, "clock %llu kHz %llu/%llu: rc %d (%s)", (unsigned long long)c.gpu_khz,
          (unsigned long long)c.cpu_num, (unsigned long long)c.cpu_den, rc, err);
  }
}

static void test_times(void) {
  npkit_dump_clock c = {1410000, 1, 1000000000};
  int64_t ns = 0;
  /* GPU: base + (ticks - base_ticks) * 1e6 / kHz, rounded to nearest, halves away from zero */
  CHECKF(npkit_dump_gpu_ns(&c, 1000, 100, 100 + 1410, &ns) == 0 && ns == 2000, "1410 ticks = 1 us: %lld", (long long)ns);
  CHECKF(npkit_dump_gpu_ns(&c, 0, 0, 1, &ns) == 0 && ns == 1, "1 tick = 0.709 ns -> 1: %lld", (long long)ns);
  CHECKF(npkit_dump_gpu_ns(&c, 0, 1, 0, &ns) == 0 && ns == -1, "-1 tick -> -1: %lld", (long long)ns);
  c.gpu_khz = 2000000; /* 0.5 ns per tick */
  CHECKF(npkit_dump_gpu_ns(&c, 0, 0, 1, &ns) == 0 && ns == 1, "0.5 -> 1: %lld", (long long)ns);
  CHECKF(npkit_dump_gpu_ns(&c, 0, 0, 3, &ns) == 0 && ns == 2, "1.5 -> 2: %lld", (long long)ns);
  CHECKF(npkit_dump_gpu_ns(&c, 0, 3, 0, &ns) == 0 && ns == -2, "-1.5 -> -2: %lld", (long long)ns);
  c.gpu_khz = 3000000;
  CHECKF(npkit_dump_gpu_ns(&c, 10, 0, 1, &ns) == 0 && ns == 10, "0.333 -> 0: %lld", (long long)ns);
  CHECKF(npkit_dump_gpu_ns(&c, 10, 0, 2, &ns) == 0 && ns == 11, "0.667 -> 1: %lld", (long long)ns);
  /* sub-microsecond digits survive at epoch magnitudes */
  c.gpu_khz = 1755000;
  CHECKF(npkit_dump_gpu_ns(&c, 1764671234567890123ll, 1000000000000ull, 1000000000000ull + 1755 * 7 + 1, &ns) == 0 &&
            ns == 1764671234567890123ll + 7000 + 1,
        "epoch + 7 us + 1 tick: %lld", (long long)ns);
  /* range */
  c.gpu_khz = 1000;
  CHECKF(npkit_dump_gpu_ns(&c, 0, 0, UINT64_MAX, &ns) == -1, "2^64 ticks at 1 MHz overflows");
  CHECKF(npkit_dump_gpu_ns(&c, INT64_MAX, 0, 1, &ns) == -1, "INT64_MAX + 1000 overflows");
  CHECKF(npkit_dump_gpu_ns(&c, INT64_MIN, 1, 0, &ns) == -1, "INT64_MIN - 1000 overflows");
  CHECKF(npkit_dump_gpu_ns(&c, INT64_MAX - 1000, 0, 1, &ns) == 0 && ns == INT64_MAX, "INT64_MAX reachable");
  c.gpu_khz = 0;
  CHECKF(npkit_dump_gpu_ns(&c, 0, 0, 1, &ns) == -1, "0 kHz refused");

  /* host: ticks * num / den seconds */
  npkit_dump_clock h = {1410000, 1, 1000000000};
  CHECKF(npkit_dump_cpu_ns(&h, 1764671234567890123ull, &ns) == 0 && ns == 1764671234567890123ll, "ns clock");
  CHECKF(npkit_dump_cpu_ns(&h, (uint64_t)INT64_MAX, &ns) == 0 && ns == INT64_MAX, "INT64_MAX ns");
  CHECKF(npkit_dump_cpu_ns(&h, (uint64_t)INT64_MAX + 1, &ns) == -1, "beyond INT64_MAX");
  h.cpu_num = 5;
  h.cpu_den = 12000000000ull; /* 2.4 GHz */
  CHECKF(npkit_dump_cpu_ns(&h, 12, &ns) == 0 && ns == 5, "12 ticks = 5 ns: %lld", (long long)ns);
  CHECKF(npkit_dump_cpu_ns(&h, 1, &ns) == 0 && ns == 0, "0.42 -> 0: %lld", (long long)ns);
  CHECKF(npkit_dump_cpu_ns(&h, 2, &ns) == 0 && ns == 1, "0.83 -> 1: %lld", (long long)ns);
  CHECKF(npkit_dump_cpu_ns(&h, 6, &ns) == 0 && ns == 3, "2.5 -> 3: %lld", (long long)ns);
  CHECKF(npkit_dump_cpu_ns(&h, UINT64_MAX, &ns) == 0 && ns == 7686143364045646506ll, "2^64-1 ticks at 2.4 GHz: %lld",
        (long long)ns);
  h.cpu_num = h.cpu_den = 1;
  CHECKF(npkit_dump_cpu_ns(&h, 9000000000ull, &ns) == 0 && ns == 9000000000000000000ll, "1 s ticks");
  CHECKF(npkit_dump_cpu_ns(&h, 10000000000ull, &ns) == -1, "1e19 ns overflows");
  h.cpu_den = 0;
  CHECKF(npkit_dump_cpu_ns(&h, 1, &ns) == -1, "den 0 refused");
}

/* ---- pairing structures ---- */

static void test_kind_stack(void) {
  npkit_kind_stack s;
  memset(&s, 0, sizeof(s));
  npkit_open_entry e, out, ev;
  for (int i = 0; i < NPKIT_DUMP_MAX_OPEN; i++) {
    e.ns = i;
    CHECKF(npkit_kind_push(&s, &e, &ev) == 0, "push %d", i);
  }
  e.ns = 5000;
  CHECKF(npkit_kind_push(&s, &e, &ev) == 1 && ev.ns == 0, "full stack evicts the oldest: %lld", (long long)ev.ns);
  e.ns = 5001;
  CHECKF(npkit_kind_push(&s, &e, &ev) == 1 && ev.ns == 1, "then the next oldest: %lld", (long long)ev.ns);
  CHECKF(npkit_kind_pop(&s, &out) == 1 && out.ns == 5001, "LIFO: %lld", (long long)out.ns);
  CHECKF(npkit_kind_pop(&s, &out) == 1 && out.ns == 5000, "LIFO: %lld", (long long)out.ns);
  CHECKF(npkit_kind_pop_oldest(&s, &out) == 1 && out.ns == 2, "oldest: %lld", (long long)out.ns);
  int n = 0;
  while (npkit_kind_pop(&s, &out)) n++;
  CHECKF(n == NPKIT_DUMP_MAX_OPEN - 3, "left %d", n);
  npkit_kind_free(&s);
}

static void test_slot_table(void) {
  /* random operations against a plain array model */
  enum { KEYS = 3000 };
  static int open_lane[KEYS];
  static unsigned char lane_used[KEYS + 1];
  npkit_slot_table t;
  memset(&t, 0, sizeof(t));
  for (int k = 0; k < KEYS; k++) open_lane[k] = -1;
  uint32_t rnd = 12345;
  for (int step = 0; step < 200000; step++) {
    rnd = rnd * 1103515245u + 12345u;
    uint32_t k = (rnd >> 8) % KEYS;
    npkit_slot_entry *e = npkit_slot_find(&t, k * 2654435761u);
    CHECKF((e != NULL) == (open_lane[k] >= 0), "step %d key %u: found %d, model %d", step, k, e != NULL, open_lane[k]);
    if (e != NULL) {
      CHECKF((int)e->lane == open_lane[k], "lane %u vs %d", e->lane, open_lane[k]);
      npkit_slot_remove(&t, e);
      lane_used[open_lane[k]] = 0;
      open_lane[k] = -1;
    } else {
      int full;
      e = npkit_slot_insert(&t, k * 2654435761u, &full);
      CHECKF(e != NULL, "insert failed");
      if (e == NULL) break;
      /* the lowest lane not in use */
      int lowest = 0;
      while (lane_used[lowest]) lowest++;
      CHECKF((int)e->lane == lowest, "step %d: lane %u, lowest free %d", step, e->lane, lowest);
      if (e->lane > KEYS) break;
      open_lane[k] = (int)e->lane;
      lane_used[e->lane] = 1;
    }
    if (step % 50000 == 0) {
      uint32_t n = 0;
      for (int j = 0; j < KEYS; j++) n += open_lane[j] >= 0;
      CHECKF(t.count == n, "count %u vs %u", t.count, n);
    }
  }
  npkit_slot_clear(&t);
  CHECKF(t.count == 0 && npkit_slot_find(&t, 0) == NULL, "clear");
  /* the ceiling */
  int full = 0;
  for (uint32_t k = 0; k < NPKIT_DUMP_MAX_OPEN_SLOTS; k++) CHECKF(npkit_slot_insert(&t, k, &full) != NULL, "%u", k);
  CHECKF(npkit_slot_insert(&t, NPKIT_DUMP_MAX_OPEN_SLOTS, &full) == NULL && full == 1, "no more than the ceiling");
  npkit_slot_free(&t);
}

static void test_gpu_lanes(void) {
  npkit_dump_lanes l;
  memset(&l, 0, sizeof(l));
  uint32_t lane;
  /* in order of their ends: children first */
  CHECKF(npkit_dump_lanes_place(&l, 10, 20, &lane) == 0 && lane == 0, "a");
  CHECKF(npkit_dump_lanes_place(&l, 25, 45, &lane) == 0 && lane == 0, "b after a");
  CHECKF(npkit_dump_lanes_place(&l, 30, 50, &lane) == 0 && lane == 1, "c overlaps b: lane %u", lane);
  CHECKF(npkit_dump_lanes_place(&l, 5, 60, &lane) == 0 && lane == 0, "d encloses a and b: lane %u", lane);
  CHECKF(npkit_dump_lanes_place(&l, 55, 70, &lane) == 0 && lane == 1, "e overlaps d, not c: lane %u", lane);
  CHECKF(npkit_dump_lanes_place(&l, 60, 80, &lane) == 0 && lane == 0, "f starts where d ends: lane %u", lane);
  CHECKF(npkit_dump_lanes_place(&l, 0, 100, &lane) == 0 && lane == 0, "g encloses all of lane 0: lane %u", lane);
  CHECKF(l.n == 2, "lanes used %u", l.n);
  npkit_dump_lanes_reset(&l);
  for (int i = 0; i < 40; i++) {
    CHECKF(npkit_dump_lanes_place(&l, i, 1000 + i, &lane) == 0, "staircase %d", i);
    CHECKF(lane == (i < NPKIT_DUMP_MAX_GPU_LANES ? (uint32_t)i : NPKIT_DUMP_MAX_GPU_LANES - 1), "staircase lane %u",
          lane);
  }
  npkit_dump_lanes_reset(&l);
  for (int i = 0; i < 100000; i++) CHECKF(npkit_dump_lanes_place(&l, i * 10, i * 10 + 5, &lane) == 0 && lane == 0, "seq");
  npkit_dump_lanes_free(&l);
}

/* ---- conversion of hand-built buffers ---- */

typedef struct collected {
  npkit_dump_slice s[64];
  char names[64][NPKIT_DUMP_NAME_MAX];
  int n;
  int stop_after;
  char diags[8][1024];
  int n_diags;
} collected;

static int on_slice(void *user, const npkit_dump_slice *s) {
  collected *c = user;
  if (c->n < 64) {
    c->s[c->n] = *s;
    snprintf(c->names[c->n], NPKIT_DUMP_NAME_MAX, "%.*s", (int)s->name_len, s->name);
  }
  c->n++;
  return c->stop_after > 0 && c->n >= c->stop_after;
}

static void on_diag(void *user, npkit_dump_severity sev, const char *msg) {
  collected *c = user;
  if (c->n_diags < 8)
    snprintf(c->diags[c->n_diags++], sizeof(c->diags[0]), "%s%s", sev == NPKIT_DIAG_ERROR ? "E " : "W ", msg);
}

static unsigned char *put(unsigned char *p, uint8_t id, uint32_t size, uint32_t rsvd, uint64_t ts) {
  uint64_t lo = (uint64_t)id | (uint64_t)size << 8 | (uint64_t)rsvd << 40;
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(lo >> (8 * i));
  for (int i = 0; i < 8; i++) p[8 + i] = (unsigned char)(ts >> (8 * i));
  return p + 16;
}

static const npkit_dump_slice *get(const collected *c, const char *name, int type, int nth) {
  for (int i = 0; i < c->n && i < 64; i++)
    if (strcmp(c->names[i], name) == 0 && c->s[i].type == type && nth-- == 0) return &c->s[i];
  return NULL;
}

/* Converts buf as the file of (rank, source, index) with npkit_dump_convert_memory into a fresh
 * c (whose callback stops after stop_after slices, 0: never) and k; returns its status. */
static int convert(const npkit_dump_event_table *t, const npkit_dump_clock *clk, uint32_t rank,
                   npkit_dump_source source, uint32_t index, uint64_t anchor, const unsigned char *buf, size_t len,
                   int stop_after, collected *c, npkit_dump_counters *k, char *err, size_t errlen) {
  memset(c, 0, sizeof(*c));
  c->stop_after = stop_after;
  memset(k, 0, sizeof(*k));
  npkit_dump_callbacks cb = {NULL, on_slice, on_diag, c};
  return npkit_dump_convert_memory(t, clk, rank, source, index, anchor, buf, len, &cb, k, err, errlen);
}

static void test_convert_gpu(void) {
  npkit_dump_event_table t;
  npkit_dump_table_builtin(&t);
  npkit_dump_clock clk = {1000000, 1, 1000000000}; /* 1 GHz: 1 tick = 1 ns */
  unsigned char buf[64 * 16], *p = buf;
  p = put(p, 0x34, 0, 0, 1000000); /* TIME_SYNC_CPU: 1 ms */
  p = put(p, 0x33, 0, 0, 500);     /* TIME_SYNC_GPU */
  p = put(p, 0x1, 100, 0, 510);    /* RING entry */
  p = put(p, 0x35, 10, 0, 520);    /* RING_SEND entry */
  p = put(p, 0x35, 11, 0, 530);    /* RING_SEND entry (nested in itself) */
  p = put(p, 0x36, 12, 7, 540);    /* exit -> pairs with 530 */
  p = put(p, 0x23, 0, 0, 545);     /* WAIT_PEER entry: overlaps the next exit */
  p = put(p, 0x36, 13, 8, 550);    /* exit -> pairs with 520 */
  p = put(p, 0x24, 0, 0, 560);     /* WAIT_PEER exit */
  p = put(p, 0x8, 5, 6, 570);      /* COPY_SEND exit without entry */
  p = put(p, 0x99, 0, 0, 575);     /* unknown */
  p = put(p, 0x0, 0, 0, 0);        /* INVALID */
  p = put(p, 0xB, 9, 0, 580);      /* DIRECT_RECV entry, never closed in this kernel */
  p = put(p, 0x34, 0, 0, 2000000); /* next kernel: 2 ms */
  p = put(p, 0xC, 9, 0, 100);      /* DIRECT_RECV exit: other kernel, must not pair; and
                                      the GPU base (no TIME_SYNC_GPU in this kernel) */
  p = put(p, 0x1, 100, 0, 200);    /* RING entry */
  p = put(p, 0x2, 100, 3, 150);    /* RING exit before its entry: both unpaired */
  p = put(p, 0x2, 101, 4, 900);    /* RING exit with nothing open (510 was another kernel) */
  size_t len = (size_t)(p - buf);
  collected c;
  npkit_dump_counters k;
  char err[256];
  int rc = convert(&t, &clk, 3, NPKIT_SOURCE_GPU, 7, 0, buf, len, 0, &c, &k, err, sizeof(err));
  CHECKF(rc == 0, "rc %d %s", rc, err);
  CHECKF(k.events == len / 16 && k.time_sync_cpu == 2 && k.time_sync_gpu == 1, "counts %llu",
        (unsigned long long)k.events);
  CHECKF(k.unknown_ids == 1 && k.invalid_events == 1, "unknown %llu invalid %llu", (unsigned long long)k.unknown_ids,
        (unsigned long long)k.invalid_events);
  const npkit_dump_slice *s = get(&c, "ALL_REDUCE_RING_SEND", NPKIT_SLICE_COMPLETE, 0);
  CHECKF(s && s->start_ns == 1000000 + 30 && s->end_ns == 1000000 + 40 && s->entry_size == 11 && s->size == 12 &&
            s->rsvd == 7 && s->seq == 0 && s->rank == 3 && s->buffer == 7 && s->lane == 0,
        "inner RING_SEND");
  s = get(&c, "ALL_REDUCE_RING_SEND", NPKIT_SLICE_COMPLETE, 1);
  CHECKF(s && s->start_ns == 1000000 + 20 && s->end_ns == 1000000 + 50 && s->entry_size == 10 && s->seq == 1 &&
            s->lane == 0,
        "outer RING_SEND");
  s = get(&c, "PRIM_SIMPLE_WAIT_PEER", NPKIT_SLICE_COMPLETE, 0);
  CHECKF(s && s->start_ns == 1000000 + 45 && s->end_ns == 1000000 + 60 && s->lane == 1, "WAIT_PEER on lane 1");
  CHECKF(get(&c, "COPY_SEND_EXIT", NPKIT_SLICE_UNPAIRED_EXIT, 0) != NULL, "COPY_SEND_EXIT unpaired");
  s = get(&c, "DIRECT_RECV_ENTRY", NPKIT_SLICE_UNPAIRED_ENTRY, 0);
  CHECKF(s && s->start_ns == 1000000 + 80, "DIRECT_RECV_ENTRY unpaired at the next TIME_SYNC_CPU");
  CHECKF(get(&c, "DIRECT_RECV_EXIT", NPKIT_SLICE_UNPAIRED_EXIT, 0) != NULL,
        "DIRECT_RECV_EXIT not paired across kernels");
  CHECKF(get(&c, "ALL_REDUCE_RING", NPKIT_SLICE_COMPLETE, 0) == NULL, "RING paired across kernels or backwards");
  s = get(&c, "ALL_REDUCE_RING_ENTRY", NPKIT_SLICE_UNPAIRED_ENTRY, 1);
  CHECKF(s && s->start_ns == 2000000 + 100, "second kernel's RING entry: %lld", s ? (long long)s->start_ns : -1);
  s = get(&c, "ALL_REDUCE_RING_EXIT", NPKIT_SLICE_UNPAIRED_EXIT, 0);
  CHECKF(s && s->start_ns == 2000000 + 50, "RING exit before entry: %lld", s ? (long long)s->start_ns : -1);
  s = get(&c, "ALL_REDUCE_RING_EXIT", NPKIT_SLICE_UNPAIRED_EXIT, 1);
  CHECKF(s && s->start_ns == 2000000 + 800, "RING exit with nothing open: %lld", s ? (long long)s->start_ns : -1);
  CHECKF(k.slices == 3 && k.unpaired_entries == 3 && k.unpaired_exits == 4, "slices %llu entries %llu exits %llu",
        (unsigned long long)k.slices, (unsigned long long)k.unpaired_entries, (unsigned long long)k.unpaired_exits);
  CHECKF(k.out_of_order == 1, "out of order %llu", (unsigned long long)k.out_of_order);

  /* a callback that stops */
  rc = convert(&t, &clk, 0, NPKIT_SOURCE_GPU, 0, 0, buf, len, 1, &c, &k, err, sizeof(err));
  CHECKF(rc == NPKIT_DUMP_ESTOPPED && c.n == 1, "stop: rc %d n %d", rc, c.n);

  /* no TIME_SYNC at all: times from the anchor, flagged, and a clear diagnostic */
  p = buf;
  p = put(p, 0x1, 1, 0, 5000);
  p = put(p, 0x2, 1, 0, 6000);
  rc = convert(&t, &clk, 0, NPKIT_SOURCE_GPU, 0, 4000, buf, (size_t)(p - buf), 0, &c, &k, err, sizeof(err));
  s = get(&c, "ALL_REDUCE_RING", NPKIT_SLICE_COMPLETE, 0);
  CHECKF(rc == 0 && s && s->start_ns == 1000 && s->end_ns == 2000 && (s->flags & NPKIT_SLICE_UNALIGNED),
        "unaligned slice");
  CHECKF(c.n_diags >= 1 && strstr(c.diags[0], "-DENABLE_NPKIT_EVENT_TIME_SYNC_CPU") != NULL &&
            strstr(c.diags[0], "unaligned") != NULL,
        "diag: %s", c.diags[0]);

  /* more open ENTRYs of one kind than the ceiling: the oldest are given up, memory stays bounded */
  size_t n = NPKIT_DUMP_MAX_OPEN + 10;
  unsigned char *big = malloc((n + 1) * 16);
  p = put(big, 0x34, 0, 0, 1);
  for (size_t i = 0; i < n; i++) p = put(p, 0x1, 0, 0, 10 + i);
  rc = convert(&t, &clk, 0, NPKIT_SOURCE_GPU, 0, 0, big, (n + 1) * 16, 0, &c, &k, err, sizeof(err));
  CHECKF(rc == 0 && k.stack_overflows == 10 && k.unpaired_entries == n, "overflow %llu unpaired %llu",
        (unsigned long long)k.stack_overflows, (unsigned long long)k.unpaired_entries);
  free(big);

  /* a truncated buffer and a bad clock */
  rc = convert(&t, &clk, 0, NPKIT_SOURCE_GPU, 0, 0, buf, 20, 0, &c, &k, err, sizeof(err));
  CHECKF(rc == 0 && k.truncated_files == 1 && k.errors == 1, "truncated %llu", (unsigned long long)k.truncated_files);
  npkit_dump_clock bad = {0, 1, 1000000000};
  rc = convert(&t, &bad, 0, NPKIT_SOURCE_GPU, 0, 0, buf, 32, 0, &c, &k, err, sizeof(err));
  CHECKF(rc == NPKIT_DUMP_EFORMAT && strstr(err, "0 kHz") != NULL, "bad clock: %s", err);
}

static void test_convert_cpu(void) {
  npkit_dump_event_table t;
  npkit_dump_table_builtin(&t);
  npkit_dump_clock clk = {1410000, 1, 1000000000};
  unsigned char buf[32 * 16], *p = buf;
  p = put(p, 0x2F, 100, 1, 1000); /* NET_SEND slot 1: lane 0 */
  p = put(p, 0x2F, 200, 2, 1100); /* slot 2: lane 1 */
  p = put(p, 0x31, 300, 1, 1200); /* NET_RECV slot 1 (same slot, other kind): lane 2 */
  p = put(p, 0x30, 101, 1, 1300); /* NET_SEND_EXIT slot 1 -> lane 0 free */
  p = put(p, 0x2F, 400, 3, 1400); /* slot 3: lane 0 again */
  p = put(p, 0x32, 301, 1, 1500); /* NET_RECV_EXIT slot 1 */
  p = put(p, 0x30, 201, 2, 1600);
  p = put(p, 0x30, 401, 3, 1700);
  p = put(p, 0x32, 9, 77, 1800); /* exit of a slot never opened */
  p = put(p, 0x2F, 1, 5, 1900);  /* opened twice: the first one is unpaired */
  p = put(p, 0x2F, 2, 5, 2000);
  p = put(p, 0x30, 3, 5, 2100);
  p = put(p, 0x34, 0, 0, 2200); /* a TIME_SYNC on the host side is ignored */
  collected c;
  npkit_dump_counters k;
  char err[256];
  int rc = convert(&t, &clk, 1, NPKIT_SOURCE_CPU, 2, 0, buf, (size_t)(p - buf), 0, &c, &k, err, sizeof(err));
  CHECKF(rc == 0, "rc %d", rc);
  const npkit_dump_slice *s = get(&c, "NET_SEND", NPKIT_SLICE_COMPLETE, 0);
  CHECKF(s && s->start_ns == 1000 && s->end_ns == 1300 && s->lane == 0 && s->rsvd == 1 && s->entry_size == 100 &&
            s->size == 101,
        "send slot 1");
  s = get(&c, "NET_SEND", NPKIT_SLICE_COMPLETE, 1);
  CHECKF(s && s->start_ns == 1100 && s->lane == 1 && s->rsvd == 2, "send slot 2");
  s = get(&c, "NET_SEND", NPKIT_SLICE_COMPLETE, 2);
  CHECKF(s && s->start_ns == 1400 && s->lane == 0 && s->rsvd == 3, "send slot 3 reuses lane 0");
  s = get(&c, "NET_RECV", NPKIT_SLICE_COMPLETE, 0);
  CHECKF(s && s->start_ns == 1200 && s->end_ns == 1500 && s->lane == 2 && s->size == 301, "recv slot 1");
  s = get(&c, "NET_SEND", NPKIT_SLICE_COMPLETE, 3);
  CHECKF(s && s->start_ns == 2000 && s->end_ns == 2100 && s->entry_size == 2, "reopened slot pairs with the latest");
  s = get(&c, "NET_SEND_ENTRY", NPKIT_SLICE_UNPAIRED_ENTRY, 0);
  CHECKF(s && s->start_ns == 1900 && s->size == 1, "first open of slot 5 unpaired");
  s = get(&c, "NET_RECV_EXIT", NPKIT_SLICE_UNPAIRED_EXIT, 0);
  CHECKF(s && s->rsvd == 77, "exit of an unknown slot");
  CHECKF(k.slices == 5 && k.unpaired_entries == 1 && k.unpaired_exits == 1 && k.time_sync_cpu == 1,
        "counters %llu/%llu/%llu", (unsigned long long)k.slices, (unsigned long long)k.unpaired_entries,
        (unsigned long long)k.unpaired_exits);
}

/* ---- the dump folder ---- */

static void write_text(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CHECKF(f != NULL, "create %s", path);
  if (f == NULL) return;
  fputs(text, f);
  fclose(f);
}

/* A clock file that is a FIFO (nobody writes it) is refused as "not a regular file" at once:
 * opening it for reading must not wait for a writer, in `npkit convert` nor in the runtime's
 * dump source, which reads the clocks through the same npkit_dump_read_clocks. */
static void test_clock_fifo(void) {
  char dir[] = "/tmp/npkit_test_dump_XXXXXX";
  if (mkdtemp(dir) == NULL) {
    CHECKF(0, "mkdtemp");
    return;
  }
  char fifo[512];
  snprintf(fifo, sizeof fifo, "%s/gpu_clock_rate_rank_1", dir);
  write_text(dir, "gpu_events_rank_0_buf_0", "0123456789abcdef");
  write_text(dir, "gpu_events_rank_1_buf_0", "0123456789abcdef");
  write_text(dir, "gpu_clock_rate_rank_0", "1410000\n");
  write_text(dir, "cpu_clock_period_num_rank_0", "1\n");
  write_text(dir, "cpu_clock_period_den_rank_0", "1000000000\n");
  write_text(dir, "cpu_clock_period_num_rank_1", "1\n");
  write_text(dir, "cpu_clock_period_den_rank_1", "1000000000\n");
  CHECKF(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
  alarm(60); /* a blocking open would hang here: let the alarm end the test instead */
  npkit_dump *d = NULL;
  char err[256] = "";
  int rc = npkit_dump_open(dir, &d, err, sizeof err);
  CHECKF(rc == 0 && d != NULL, "npkit_dump_open: %d %s", rc, err);
  if (d != NULL) {
    const npkit_dump_rank *r0 = npkit_dump_find_rank(d, 0), *r1 = npkit_dump_find_rank(d, 1);
    CHECKF(r0 != NULL && r0->clock_ok && r0->clock.gpu_khz == 1410000, "rank 0's clocks");
    CHECKF(r1 != NULL && !r1->clock_ok, "rank 1's FIFO clock taken");
    if (r1 != NULL) CHECK_CONTAINS(r1->clock_error, "gpu_clock_rate_rank_1: not a regular file");
    npkit_dump_close(d);
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  npkit_dump_rank r = {.rank = 1};
  npkit_dump_read_clocks(dfd, &r);
  CHECKF(!r.clock_ok, "rank 1's clocks read through a FIFO");
  CHECK_CONTAINS(r.clock_error, "not a regular file");
  r = (npkit_dump_rank){.rank = 0};
  npkit_dump_read_clocks(dfd, &r);
  CHECKF(r.clock_ok && r.clock.cpu_den == 1000000000, "rank 0's clocks: %s", r.clock_error);
  r = (npkit_dump_rank){.rank = 2};
  npkit_dump_read_clocks(dfd, &r);
  CHECK_CONTAINS(r.clock_error, "gpu_clock_rate_rank_2: missing");
  close(dfd);
  alarm(0);
  static const char *names[] = {"gpu_events_rank_0_buf_0", "gpu_events_rank_1_buf_0", "gpu_clock_rate_rank_0",
                                "cpu_clock_period_num_rank_0", "cpu_clock_period_den_rank_0",
                                "cpu_clock_period_num_rank_1", "cpu_clock_period_den_rank_1",
                                "gpu_clock_rate_rank_1"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

static void test_names_and_selection(void) {
  static const struct { const char *name; int rc; uint32_t rank, index; npkit_dump_source source; } cases[] = {
      {"gpu_events_rank_3_buf_7", 0, 3, 7, NPKIT_SOURCE_GPU},
      {"cpu_events_rank_0_channel_12", 0, 0, 12, NPKIT_SOURCE_CPU},
      {"gpu_events_rank_03_buf_7", -2, 0, 0, NPKIT_SOURCE_GPU},       /* leading zero */
      {"cpu_events_rank_1_channel_16777216", -2, 0, 0, NPKIT_SOURCE_CPU}, /* NPKIT_DUMP_MAX_INDEX */
      {"gpu_events_rank_3_buf_", -1, 0, 0, NPKIT_SOURCE_GPU},
      {"gpu_events_rank_x_buf_1", -1, 0, 0, NPKIT_SOURCE_GPU},
      {"gpu_clock_rate_rank_0", -1, 0, 0, NPKIT_SOURCE_GPU},
      {"npkit_event_trace.json", -1, 0, 0, NPKIT_SOURCE_GPU},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uint32_t rank = 0, index = 0;
    npkit_dump_source source = NPKIT_SOURCE_GPU;
    int rc = npkit_dump_parse_event_name(cases[i].name, &rank, &source, &index);
    CHECKF(rc == cases[i].rc, "%s: %d", cases[i].name, rc);
    if (rc == 0)
      CHECKF(rank == cases[i].rank && index == cases[i].index && source == cases[i].source, "%s: %u %u %d",
             cases[i].name, rank, index, (int)source);
  }
  static const uint32_t sel[] = {0, 2, 5, 9};
  CHECK(npkit_dump_rank_listed(sel, 4, 0) && npkit_dump_rank_listed(sel, 4, 5) && npkit_dump_rank_listed(sel, 4, 9));
  CHECK(!npkit_dump_rank_listed(sel, 4, 1) && !npkit_dump_rank_listed(sel, 4, 10) && !npkit_dump_rank_listed(sel, 0, 0));
}

int main(void) {
  test_builtin_table();
  test_header_parser();
  test_parse_uint();
  test_check_clock();
  test_times();
  test_kind_stack();
  test_slot_table();
  test_gpu_lanes();
  test_convert_gpu();
  test_convert_cpu();
  test_names_and_selection();
  test_clock_fifo();
  return check_exit_code("test_npkit_dump");
}
