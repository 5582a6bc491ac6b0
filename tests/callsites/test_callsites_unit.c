/* Unit tests of the call-stack, mark and window code that needs no running job:
 *  - the settings NPKIT_STACK_DEPTH, NPKIT_START_AFTER/STOP_AFTER, NPKIT_TOGGLE_SIGNAL;
 *  - the stack table of a log built here (STACK and STRING blocks, a damaged record), the trace
 *    fragments and stackFrames nodes made from it;
 *  - the call-site table and the marks overlap of that log, against values computed here;
 *  - the pairing of mark ranges.
 * Usage: test_callsites_unit WORKDIR */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "env_table.h"
#include "log_builder.h"
#include "log_reader.h"
#include "nccl_names.h"
#include "report_callsites.h"
#include "report_extras.h"
#include "report_marks.h"
#include "stack_table.h"
#include "trace_marks.h"
#include "trace_stacks.h"
#include "trace_sink_json.h"

/* ---- settings ---- */

/* npkit_config_load with stderr sent to /dev/null: the warnings are config.c's business. */
static void load(npkit_config *cfg, const char *const *env) {
  fflush(stderr);
  int saved = dup(2), null = open("/dev/null", O_WRONLY);
  dup2(null, 2);
  fake_env = env;
  npkit_config_load(cfg, table_getenv);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(null);
}

static void test_settings(void) {
  npkit_window_point p;
  CHECK(npkit_config_parse_window("100", &p) == 0 && p.collectives == 100 && p.ns == 0);
  CHECK(npkit_config_parse_window(" 7 ", &p) == 0 && p.collectives == 7);
  CHECK(npkit_config_parse_window("30s", &p) == 0 && p.ns == 30000000000ull && p.collectives == 0);
  CHECK(npkit_config_parse_window("2.5s", &p) == 0 && p.ns == 2500000000ull);
  CHECK(npkit_config_parse_window("500ms", &p) == 0 && p.ns == 500000000ull);
  CHECK(npkit_config_parse_window(".5s", &p) == 0 && p.ns == 500000000ull);
  CHECK(npkit_config_parse_window("0", &p) == 0 && p.ns == 0 && p.collectives == 0);
  const char *bad[] = {"", "abc", "10x", "-5", "1e3s", "s", "0x10", "5 s", "1.2.3s", "5m", "ms", "99999999999s"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = npkit_config_parse_window(bad[i], &p);
    if (rc != -1) fprintf(stderr, "window '%s' accepted\n", bad[i]);
    CHECK(rc == -1);
  }
  int sig = 0;
  CHECK(npkit_config_parse_signal("SIGUSR2", &sig) == 0 && sig == SIGUSR2);
  CHECK(npkit_config_parse_signal("usr1", &sig) == 0 && sig == SIGUSR1);
  CHECK(npkit_config_parse_signal("SIGhup", &sig) == 0 && sig == SIGHUP);
  CHECK(npkit_config_parse_signal("12", &sig) == 0 && sig == 12);
  char rt[16];
  snprintf(rt, sizeof rt, "%d", SIGRTMIN + 1);
  CHECK(npkit_config_parse_signal(rt, &sig) == 0 && sig == SIGRTMIN + 1);
  const char *bad_sig[] = {"SIGKILL", "9", "SIGTERM", "SIGINT", "SIGSEGV", "0", "", "USR3", "SIGUSR2x"};
  for (size_t i = 0; i < sizeof bad_sig / sizeof bad_sig[0]; i++) CHECK(npkit_config_parse_signal(bad_sig[i], &sig) == -1);

  npkit_config cfg;
  const char *none[] = {NULL};
  load(&cfg, none);
  CHECK(cfg.stack_depth == 0 && cfg.stack_lines == 0 && cfg.toggle_signal == 0);
  CHECK(cfg.start_after.collectives == 0 && cfg.start_after.ns == 0 && cfg.stop_after.ns == 0);
  const char *good[] = {"NPKIT_STACK_DEPTH=8", "NPKIT_STACK_LINES=yes", "NPKIT_START_AFTER=100",
                        "NPKIT_STOP_AFTER=1.5s", "NPKIT_TOGGLE_SIGNAL=SIGUSR2", NULL};
  load(&cfg, good);
  CHECK(cfg.stack_depth == 8 && cfg.stack_lines == 1 && cfg.toggle_signal == SIGUSR2);
  CHECK(cfg.start_after.collectives == 100 && cfg.stop_after.ns == 1500000000ull);
  const char *wrong[] = {"NPKIT_STACK_DEPTH=65", "NPKIT_START_AFTER=soon", "NPKIT_TOGGLE_SIGNAL=SIGKILL", NULL};
  load(&cfg, wrong);
  CHECK(cfg.stack_depth == 0 && cfg.toggle_signal == 0 && cfg.start_after.collectives == 0 && cfg.start_after.ns == 0);
}

/* ---- a log with stacks and marks ---- */

#define BASE 1764671234567890123ull
enum { F_LEAF_A = 101, F_LEAF_B = 102, F_MAIN = 103, F_START = 104, NAME_GEMM = 1, NAME_STEP = 2 };

static const char *const frame_text[] = {"issue_allreduce+0x1f (prog+0x1322) prog.c:38",
                                         "issue_broadcast+0x1f (prog+0x135c)",
                                         "main+0x5eb (prog+0x1962) prog.c:101",
                                         "_start+0x21 (prog+0x1121)"};

static void put_stack(unsigned char *buf, size_t *off, uint32_t id, const uint32_t *frames, uint32_t depth) {
  npkit_stack_rec rec = {id, depth};
  memcpy(buf + *off, &rec, sizeof rec);
  *off += sizeof rec;
  memcpy(buf + *off, frames, depth * sizeof(uint32_t));
  *off += (depth * sizeof(uint32_t) + 7) & ~(size_t)7;
}

static npkit_event mark(uint16_t kind, uint32_t thread, uint64_t t, uint32_t name) {
  npkit_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = kind;
  ev.thread = thread;
  ev.start_ns = ev.end_ns = BASE + t;
  ev.u.mark.name = name;
  return ev;
}

/* AllReduce from stack 1 (5 calls of 10..50 us, 1 MiB each), Broadcast from stack 2 (2 calls,
 * 7 us), one AllReduce without a stack, and on thread 1 a GEMM range [100, 200) us with its own
 * non-communication call [120, 130) inside; thread 2 has an AllReduce [150, 300) us. */
static void build_log(const char *path) {
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  o.clock_base_ns = BASE;
  npkit_lb *b = npkit_lb_create(path, &o);
  CHECK(b != NULL);
  if (b == NULL) return;
  npkit_thread_rec th[2] = {{1, 100, "main"}, {2, 101, "comm"}};
  npkit_lb_threads(b, th, 2);
  uint32_t ids[] = {F_LEAF_A, F_LEAF_B, F_MAIN, F_START, NAME_GEMM, NAME_STEP};
  const char *texts[] = {frame_text[0], frame_text[1], frame_text[2], frame_text[3], "GEMM", "step"};
  size_t lens[6];
  for (int i = 0; i < 6; i++) lens[i] = strlen(texts[i]);
  npkit_lb_strings(b, ids, texts, lens, 6);

  npkit_event ev[16];
  size_t n = 0;
  for (int i = 0; i < 5; i++) {
    ev[n] = npkit_lb_api_event(NPKIT_FN_AllReduce, 1, BASE + 1000000 + i * 100000, BASE + 1000000 + i * 100000 + (i + 1) * 10000);
    ev[n].u.api.bytes = 1 << 20;
    ev[n++].u.api.stack_id = 1;
  }
  for (int i = 0; i < 2; i++) {
    ev[n] = npkit_lb_api_event(NPKIT_FN_Broadcast, 1, BASE + 2000000 + i * 100000, BASE + 2000000 + i * 100000 + 7000);
    ev[n].u.api.bytes = 4096;
    ev[n++].u.api.stack_id = 2;
  }
  ev[n] = npkit_lb_api_event(NPKIT_FN_AllReduce, 1, BASE + 3000000, BASE + 3001000); /* no stack */
  ev[n++].u.api.bytes = 8;
  ev[n++] = mark(NPKIT_EV_MARK_BEGIN, 1, 100000, NAME_GEMM);
  ev[n++] = npkit_lb_api_event(NPKIT_FN_CommCount, 1, BASE + 120000, BASE + 130000);
  ev[n++] = mark(NPKIT_EV_MARK_END, 1, 200000, NAME_GEMM);
  ev[n++] = npkit_lb_api_event(NPKIT_FN_AllReduce, 2, BASE + 150000, BASE + 300000);
  npkit_lb_events(b, ev, n);

  /* stacks 1 = leaf A, main, start; 2 = leaf B, main, start; then a record claiming more frames
   * than its block holds: the table ends there */
  unsigned char buf[256];
  memset(buf, 0, sizeof buf);
  size_t off = 0;
  uint32_t s1[] = {F_LEAF_A, F_MAIN, F_START}, s2[] = {F_LEAF_B, F_MAIN, F_START};
  put_stack(buf, &off, 1, s1, 3);
  put_stack(buf, &off, 2, s2, 3);
  npkit_stack_rec damaged = {3, 1000};
  memcpy(buf + off, &damaged, sizeof damaged);
  off += sizeof damaged;
  npkit_lb_raw_block(b, NPKIT_BLOCK_STACK, 3, buf, (uint32_t)off);
  npkit_end_rec end = {.end_ns = BASE + 4000000, .events_recorded = n};
  npkit_lb_end(b, &end);
  CHECK(npkit_lb_close(b) == 0);
}

static void test_stack_table(npkit_log_reader *r) {
  npkit_stack_table t;
  char err[256];
  CHECK(npkit_stack_table_load(r, &t, err, sizeof err) == 0);
  CHECK_EQ_U64(t.n, 2);
  const npkit_stack *s1 = npkit_stack_find(&t, 1), *s2 = npkit_stack_find(&t, 2);
  CHECK(s1 != NULL && s2 != NULL && npkit_stack_find(&t, 3) == NULL && npkit_stack_find(&t, 0) == NULL);
  if (s1 != NULL && s2 != NULL) {
    CHECK_EQ_U64(s1->depth, 3);
    CHECK_STR(s1->frames[0], frame_text[0]);
    CHECK_STR(s1->frames[1], frame_text[2]);
    CHECK_STR(s1->frames[2], frame_text[3]);
    CHECK_STR(s2->frames[0], frame_text[1]);
  }
  npkit_stack_table_free(&t);

  char fn[128];
  npkit_stack_frame_function(frame_text[0], fn, sizeof fn);
  CHECK_STR(fn, "issue_allreduce");
  npkit_stack_frame_function("ns::f(std::vector<int, std::allocator<int> > const&) (x)+0x10 (libx.so+0x20)", fn, sizeof fn);
  CHECK_STR(fn, "ns::f(std::vector<int, std::allocator<int> > const&) (x)");
  npkit_stack_frame_function("?? (libc.so.6+0x2724a)", fn, sizeof fn);
  CHECK_STR(fn, "?? (libc.so.6+0x2724a)");
  npkit_stack_frame_function("0x7f0012345678", fn, sizeof fn);
  CHECK_STR(fn, "0x7f0012345678");
}

/* An interned string of a JSON sink as it will be written (quoted, escaped). */
static const char *interned(const npkit_json_sink *j, npkit_sink_str id) {
  static char buf[4096];
  if (id == 0 || id > j->n_strs || j->strs[id - 1].len >= sizeof buf) return "";
  memcpy(buf, j->text + j->strs[id - 1].off, j->strs[id - 1].len);
  buf[j->strs[id - 1].len] = '\0';
  return buf;
}

static void test_stack_fmt(npkit_log_reader *r) {
  npkit_stack_fmt f;
  char err[256];
  npkit_json_sink sink; /* interning only: no writer under it */
  npkit_json_sink_init(&sink, NULL);
  CHECK(npkit_stack_fmt_init(&f, r, 4, &sink.base, err, sizeof err) == 0);
  /* nodes: start (root), main (its child), leaf A and leaf B (children of main) */
  CHECK_EQ_U64(f.n_nodes, 4);
  const npkit_stack_frag *a = npkit_stack_fmt_find(&f, 1), *b = npkit_stack_fmt_find(&f, 2);
  CHECK(a != NULL && b != NULL && npkit_stack_fmt_find(&f, 9) == NULL && npkit_stack_fmt_find(NULL, 1) == NULL);
  if (a != NULL && b != NULL) {
    CHECK_STR(interned(&sink, a->text), "\"issue_allreduce+0x1f (prog+0x1322) prog.c:38\\nmain+0x5eb (prog+0x1962) "
                                          "prog.c:101\\n_start+0x21 (prog+0x1121)\"");
    CHECK_STR(interned(&sink, a->frame), "\"4.2\"");
    CHECK_STR(interned(&sink, b->frame), "\"4.3\"");
  }
  if (f.n_nodes == 4) {
    CHECK_STR(f.nodes[0].name, frame_text[3]);
    CHECK(f.nodes[0].parent == 0);
    CHECK_STR(f.nodes[1].name, frame_text[2]);
    CHECK(f.nodes[1].parent == 1);
    CHECK(f.nodes[2].parent == 2 && f.nodes[3].parent == 2);
  }
  npkit_stack_fmt_free(&f);
  npkit_sink_free(&sink.base);
}

/* p99 of 10, 20, 30, 40, 50 us with linear interpolation: rank 0.99 × 4 = 3.96 → 40 + 0.96 × 10. */
static void test_callsites(npkit_log_reader *r) {
  npkit_callsites cs;
  char err[256];
  npkit_callsites_init(&cs);
  CHECK(npkit_callsites_add_log(&cs, r, err, sizeof err) == 0);
  npkit_callsites_finish(&cs);
  CHECK_EQ_U64(cs.n_sites, 2);
  CHECK_EQ_U64(cs.n_rows, 2);
  CHECK_EQ_U64(cs.logs_with_stacks, 1);
  CHECK_EQ_U64(cs.calls_without_stack, 3); /* the AllReduce without stack, CommCount, thread 2 */
  if (cs.n_rows == 2) {
    npkit_callsite_row *ar = &cs.rows[0], *bc = &cs.rows[1];
    CHECK_EQ_U64(ar->fn, NPKIT_FN_AllReduce);
    CHECK_EQ_U64(ar->calls, 5);
    CHECK_EQ_U64(ar->total_ns, 150000);
    CHECK_EQ_U64(ar->bytes, 5u << 20);
    CHECK_EQ_U64(cs.sites[ar->site].number, 1);
    CHECK(fabs(npkit_quantile_get(&ar->time, 0.99) - 49600.0) < 1e-6);
    CHECK_EQ_U64(ar->time.max, 50000);
    CHECK_STR(cs.sites[ar->site].text, "issue_allreduce+0x1f (prog+0x1322) prog.c:38\nmain+0x5eb (prog+0x1962) prog.c:101\n"
                                       "_start+0x21 (prog+0x1121)");
    CHECK_EQ_U64(bc->fn, NPKIT_FN_Broadcast);
    CHECK_EQ_U64(bc->calls, 2);
    CHECK_EQ_U64(bc->total_ns, 14000);
    CHECK_EQ_U64(cs.sites[bc->site].number, 2);
  }
  /* text: the row of site 1 and its frames */
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  CHECK(npkit_callsites_text(&cs, out) == 0);
  fclose(out);
  CHECK_CONTAINS(text, "   1  ncclAllReduce                   5     1     150 us    30.0 us    49.6 us    50.0 us      5 MiB");
  CHECK_CONTAINS(text, "site 1: issue_allreduce+0x1f (prog+0x1322) prog.c:38\n          main+0x5eb");
  free(text);
  npkit_callsites_free(&cs);
}

static void test_overlap(npkit_log_reader *r) {
  npkit_mark_overlap o;
  npkit_mark_overlap_init(&o);
  npkit_reader_rewind(r);
  const npkit_event *ev;
  char err[256];
  while (npkit_reader_next(r, &ev, err, sizeof err) > 0) CHECK(npkit_mark_overlap_event(&o, ev) == 0);
  CHECK(npkit_mark_overlap_finish(&o, r) == 0);
  /* communication: the AllReduces [1000,1010) [1100,1120) [1200,1230) [1300,1340) [1400,1450),
   * the Broadcasts [2000,2007) [2100,2107), the unstacked AllReduce [3000,3001) and thread 2's
   * [150,300) us: 10+20+30+40+50+7+7+1+150 = 315 us.  Computation: GEMM [100,200) minus the
   * thread's own call [120,130) = 90 us.  Overlap: [150,200) = 50 us. */
  CHECK_EQ_U64(o.ranges, 1);
  CHECK_EQ_U64(o.comm_ns, 315000);
  CHECK_EQ_U64(o.compute_ns, 90000);
  CHECK_EQ_U64(o.overlap_ns, 50000);
  CHECK_EQ_U64(o.exposed_ns, 265000);
  CHECK(fabs(o.overlap_ratio - 50.0 / 315.0) < 1e-12);
  CHECK_EQ_U64(o.n_totals, 1);
  if (o.n_totals == 1) {
    CHECK_STR(o.totals[0].text, "GEMM");
    CHECK_EQ_U64(o.totals[0].total_ns, 100000);
  }
  npkit_mark_overlap_free(&o);
}

static void test_pairer(void) {
  npkit_mark_pairer p;
  npkit_mark_range rg;
  npkit_mark_pairer_init(&p);
  /* A [0, ...) on thread 1, A nested [1, 2), B [3, 5), A closes at 6; B's end on thread 2 does not
   * close thread 1's B; a second end of B on thread 1 has nothing to close. */
  npkit_event e[] = {mark(NPKIT_EV_MARK_BEGIN, 1, 0, 1), mark(NPKIT_EV_MARK_BEGIN, 1, 1, 1), mark(NPKIT_EV_MARK_END, 1, 2, 1),
                     mark(NPKIT_EV_MARK_BEGIN, 1, 3, 2), mark(NPKIT_EV_MARK_END, 2, 4, 2), mark(NPKIT_EV_MARK_END, 1, 5, 2),
                     mark(NPKIT_EV_MARK_END, 1, 6, 1), mark(NPKIT_EV_MARK_END, 1, 7, 2), mark(NPKIT_EV_MARK_BEGIN, 1, 8, 3)};
  uint64_t want[][2] = {{1, 2}, {3, 5}, {0, 6}};
  int k = 0;
  for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
    if (npkit_mark_pair(&p, &e[i], &rg)) {
      CHECK(k < 3);
      if (k < 3) {
        CHECK_EQ_U64(rg.start_ns - BASE, want[k][0]);
        CHECK_EQ_U64(rg.end_ns - BASE, want[k][1]);
        CHECK(rg.cut == 0 && rg.thread == 1);
      }
      k++;
    }
  CHECK_EQ_U64(k, 3);
  CHECK_EQ_U64(p.unmatched_ends, 2);
  CHECK(npkit_mark_pair_flush(&p, BASE + 20, NPKIT_MARK_OPEN_AT_END, &rg) == 1);
  CHECK(rg.name == 3 && rg.end_ns == BASE + 20 && rg.cut == NPKIT_MARK_OPEN_AT_END);
  CHECK(npkit_mark_pair_flush(&p, BASE + 20, NPKIT_MARK_OPEN_AT_END, &rg) == 0);
  npkit_mark_pairer_free(&p);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_callsites_unit WORKDIR\n");
    return 2;
  }
  if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
    perror(argv[1]);
    return 2;
  }
  test_settings();
  test_pairer();
  char path[1024];
  snprintf(path, sizeof path, "%s/stacks.npkit", argv[1]);
  build_log(path);
  npkit_log_reader *r = NULL;
  char err[256];
  CHECK(npkit_reader_open(path, &r, err, sizeof err) == 0);
  if (r != NULL) {
    test_stack_table(r);
    test_stack_fmt(r);
    test_callsites(r);
    test_overlap(r);
    npkit_reader_close(r);
  }
  return check_exit_code("test_callsites_unit");
}
