/* The rendering of NPKit dump events (src/trace/trace_npkit_dump.c) from built logs, for what the jobs
 * of test_npkit_merge.py do not reach: the exact JSON of pairs and single events, bandwidth rounding,
 * names missing from the string table, readings at exit and on a thread, the rank prefix of track
 * names, the unaligned suffix, and more tracks than the band holds. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log_builder.h"
#include "trace_render.h"

static char work[512];

static size_t count_of(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle)) n++;
  return n;
}

static npkit_event slice(uint64_t start, uint64_t end, uint32_t rank, uint32_t buffer, uint32_t lane, uint8_t type,
                         uint32_t name) {
  npkit_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = NPKIT_EV_NPKIT_DUMP_SLICE;
  ev.start_ns = start;
  ev.end_ns = end;
  ev.u.npkit.rank = rank;
  ev.u.npkit.buffer = buffer;
  ev.u.npkit.lane = lane;
  ev.u.npkit.type = type;
  ev.u.npkit.name = name;
  ev.u.npkit.read = 1;
  return ev;
}

/* The trace of the log being built in b (at log) with the events ev[0..n) appended, rendered to
 * json and read back; NULL (a check failed) when it cannot be. */
static char *render(npkit_lb *b, const npkit_event *ev, size_t n, const char *log, const char *json) {
  char err[256] = "";
  npkit_lb_events(b, ev, n);
  CHECK(npkit_lb_close(b) == 0);
  CHECKF(npkit_render_trace(log, json, NULL, err, sizeof err) == 0, "%s", err);
  char *s = npkit_lb_read_file(json, NULL);
  CHECK(s != NULL);
  return s;
}

/* Own rank only, a few tracks: exact events and names without the rank. */
static void test_events(void) {
  char log[600], json[600];
  snprintf(log, sizeof log, "%s/events.npkit", work);
  snprintf(json, sizeof json, "%s/events.json", work);
  npkit_lb_options o;
  npkit_lb_defaults(&o); /* rank 3: pid 4 */
  npkit_lb *b = npkit_lb_create(log, &o);
  uint64_t t = o.clock_base_ns;
  static const uint32_t ids[] = {1, 2, 3, 4};
  static const char *const texts[] = {"ALL_REDUCE_RING", "NET_SEND_EXIT", "MY \"MARK\"", "/dumps/job 1"};
  size_t lens[4];
  for (int i = 0; i < 4; i++) lens[i] = strlen(texts[i]);
  npkit_lb_strings(b, ids, texts, lens, 4);
  npkit_event ev[8];
  ev[0] = slice(t + 1000, t + 3000, 3, 0, 0, NPKIT_DUMP_SLICE_PAIR, 1);
  ev[0].u.npkit.size = 4000;
  ev[0].u.npkit.rsvd = 7;
  ev[0].u.npkit.entry_size = 100;
  ev[0].u.npkit.entry_rsvd = 9;
  ev[1] = slice(t + 5000, t + 5003, 3, 2, 1, NPKIT_DUMP_SLICE_PAIR, 1); /* 2 bytes in 3 ns: 0.667 */
  ev[1].u.npkit.size = ev[1].u.npkit.entry_size = 2;
  ev[1].u.npkit.seq = 4;
  ev[1].u.npkit.source = NPKIT_DUMP_SLICE_CPU;
  ev[1].u.npkit.rsvd = 11;
  ev[2] = slice(t + 6000, t + 8000, 3, 0, 0, NPKIT_DUMP_SLICE_PAIR, 1); /* 1 byte in 2000 ns: 0.0005 -> 0.001 */
  ev[2].u.npkit.size = ev[2].u.npkit.entry_size = 1;
  ev[2].u.npkit.seq = 1;
  ev[3] = slice(t + 9000, t + 9000, 3, 0, 0, NPKIT_DUMP_SLICE_PAIR, 1); /* no duration: no bandwidth */
  ev[3].u.npkit.seq = 2;
  ev[4] = slice(t + 9500, t + 9500, 3, 1, 0, NPKIT_DUMP_SLICE_UNPAIRED_EXIT, 2);
  ev[4].u.npkit.source = NPKIT_DUMP_SLICE_CPU;
  ev[4].u.npkit.size = 64;
  ev[4].u.npkit.rsvd = 5;
  ev[5] = slice(t + 9600, t + 9600, 3, 0, 0, NPKIT_DUMP_SLICE_POINT, 3);
  ev[5].u.npkit.flags = NPKIT_DUMP_SLICE_UNALIGNED;
  ev[6] = slice(t + 9700, t + 9700, 3, 0, 0, NPKIT_DUMP_SLICE_UNPAIRED_ENTRY, 77); /* no such string */
  ev[6].u.npkit.id = 0x05;
  memset(&ev[7], 0, sizeof ev[7]);
  ev[7].kind = NPKIT_EV_NPKIT_DUMP_READ;
  ev[7].start_ns = t + 20000;
  ev[7].end_ns = t + 25000;
  ev[7].u.npkit_read.trigger = NPKIT_DUMP_READ_AT_EXIT;
  ev[7].u.npkit_read.read = 2;
  ev[7].u.npkit_read.files = 5;
  ev[7].u.npkit_read.pairs = 4;
  ev[7].u.npkit_read.unpaired_exits = 1;
  ev[7].u.npkit_read.dir = 4;
  char *s = render(b, ev, 8, log, json);
  if (s == NULL) return;
  CHECK_CONTAINS(s, "{\"name\":\"ALL_REDUCE_RING\",\"cat\":\"npkit_gpu\",\"ph\":\"X\",\"pid\":4,\"tid\":4950,"
                    "\"ts\":1.000,\"dur\":2.000,\"args\":{\"rank\":3,\"buffer\":0,\"size\":4000,\"rsvd\":7,"
                    "\"entry_size\":100,\"entry_rsvd\":9,\"bandwidth_gbps\":2.000,\"seq\":0}}");
  CHECK_CONTAINS(s, "{\"name\":\"ALL_REDUCE_RING\",\"cat\":\"npkit_cpu\",\"ph\":\"X\",\"pid\":4,\"tid\":4951,"
                    "\"ts\":5.000,\"dur\":0.003,\"args\":{\"rank\":3,\"channel\":2,\"size\":2,\"slot\":11,"
                    "\"bandwidth_gbps\":0.667,\"seq\":4}}");
  CHECK_CONTAINS(s, "\"ts\":6.000,\"dur\":2.000,\"args\":{\"rank\":3,\"buffer\":0,\"size\":1,\"rsvd\":0,"
                    "\"bandwidth_gbps\":0.001,\"seq\":1}}");
  CHECK_CONTAINS(s, "\"ts\":9.000,\"dur\":0.000,\"args\":{\"rank\":3,\"buffer\":0,\"size\":0,\"rsvd\":0,\"seq\":2}}");
  CHECK_CONTAINS(s, "{\"name\":\"NET_SEND_EXIT\",\"cat\":\"npkit_unpaired\",\"ph\":\"i\",\"pid\":4,\"tid\":4952,"
                    "\"ts\":9.500,\"s\":\"t\",\"args\":{\"rank\":3,\"channel\":1,\"size\":64,\"slot\":5,"
                    "\"unpaired\":\"exit\"}}");
  CHECK_CONTAINS(s, "{\"name\":\"MY \\\"MARK\\\"\",\"cat\":\"npkit_gpu\",\"ph\":\"i\",\"pid\":4,\"tid\":4953,"
                    "\"ts\":9.600,\"s\":\"t\",\"args\":{\"rank\":3,\"buffer\":0,\"size\":0,\"rsvd\":0,"
                    "\"unaligned\":true}}");
  CHECK_CONTAINS(s, "{\"name\":\"NPKit event 0x05\",\"cat\":\"npkit_unpaired\",\"ph\":\"i\",\"pid\":4,"
                    "\"tid\":4950,\"ts\":9.700,\"s\":\"t\",\"args\":{\"rank\":3,\"buffer\":0,\"size\":0,"
                    "\"rsvd\":0,\"unpaired\":\"entry\"}}");
  CHECK_CONTAINS(s, "{\"name\":\"NPKit dump read\",\"cat\":\"npkit\",\"ph\":\"i\",\"pid\":4,\"ts\":20.000,"
                    "\"s\":\"p\",\"args\":{\"trigger\":\"exit\",\"dump_dir\":\"/dumps/job 1\",\"read\":2,"
                    "\"files\":5,\"bytes\":0,\"events\":0,\"pairs\":4,\"unpaired_entries\":0,"
                    "\"unpaired_exits\":1,");
  CHECK_CONTAINS(s, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":4,\"tid\":4950,\"args\":{\"name\":\"NPKit GPU "
                    "buf 0\"}}");
  CHECK_CONTAINS(s, "\"tid\":4951,\"args\":{\"name\":\"NPKit net channel 2 \xc2\xb7 lane 1\"}}");
  CHECK_CONTAINS(s, "\"tid\":4953,\"args\":{\"name\":\"NPKit GPU buf 0 \xc2\xb7 unaligned\"}}");
  /* 3,000,000 + (rank 3 × 2 + GPU 0) << 18 */
  CHECK_CONTAINS(s, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":4,\"tid\":4950,\"args\":{\"sort_index\":"
                    "4572864}}");
  /* 3,000,000 + (rank 3 × 2 + network 1) << 18 + channel 2 × 64 + lane 1 × 2 */
  CHECK_CONTAINS(s, "\"tid\":4951,\"args\":{\"sort_index\":4835138}}");
  CHECK_EQ_U64(count_of(s, "\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":4,\"tid\":495"), 4);
  free(s);
}

/* Another rank in the process, a reading on a thread, and more tracks than the band holds. */
static void test_many_tracks(void) {
  char log[600], json[600];
  snprintf(log, sizeof log, "%s/many.npkit", work);
  snprintf(json, sizeof json, "%s/many.json", work);
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  npkit_lb *b = npkit_lb_create(log, &o);
  uint64_t t = o.clock_base_ns;
  npkit_event ev[62];
  for (uint32_t i = 0; i < 60; i++) ev[i] = slice(t + 1000 * i, t + 1000 * i + 500, i < 30 ? 3 : 5, i % 30, 0,
                                                  NPKIT_DUMP_SLICE_PAIR, 0);
  memset(&ev[60], 0, sizeof ev[60]);
  ev[60].kind = NPKIT_EV_NPKIT_DUMP_READ;
  ev[60].thread = 2;
  ev[60].start_ns = t + 100000;
  ev[60].end_ns = t + 130000;
  ev[60].u.npkit_read.trigger = NPKIT_DUMP_READ_AFTER_DESTROY;
  ev[60].u.npkit_read.comm = 9; /* no COMM record */
  ev[60].u.npkit_read.dir = 12345; /* no such string */
  ev[61] = ev[60];
  ev[61].start_ns = t + 200000;
  ev[61].end_ns = t + 200000;
  ev[61].u.npkit_read.trigger = NPKIT_DUMP_READ_AFTER_ABORT;
  ev[61].u.npkit_read.flags = NPKIT_DUMP_READ_SHARED;
  ev[61].u.npkit_read.read = 1;
  char *s = render(b, ev, 62, log, json);
  if (s == NULL) return;
  CHECK_CONTAINS(s, "\"tid\":4950,\"args\":{\"name\":\"NPKit rank 3 \xc2\xb7 GPU buf 0\"}}");
  /* 48 tracks of their own (950..997), the 60 - 48 others on the shared 998; 999 is the flight
   * recorder's, unused here */
  CHECK_CONTAINS(s, "\"tid\":4997,\"args\":{\"name\":\"NPKit rank 5 \xc2\xb7 GPU buf 17\"}}");
  CHECK_CONTAINS(s, "\"tid\":4998,\"args\":{\"name\":\"NPKit \xc2\xb7 more tracks\"}}");
  CHECK_EQ_U64(count_of(s, "\"cat\":\"npkit_gpu\",\"ph\":\"X\",\"pid\":4,\"tid\":4998,"), 12);
  CHECK_EQ_U64(count_of(s, "\"pid\":4,\"tid\":4999,"), 0);
  CHECK_EQ_U64(count_of(s, "\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":4,\"tid\":49"), 49);
  CHECK_CONTAINS(s, "{\"name\":\"NPKit event 0x00\",\"cat\":\"npkit_gpu\",\"ph\":\"X\"");
  CHECK_CONTAINS(s, "{\"name\":\"NPKit dump read\",\"cat\":\"npkit\",\"ph\":\"X\",\"pid\":4,\"tid\":4002,"
                    "\"ts\":100.000,\"dur\":30.000,\"args\":{\"trigger\":\"ncclCommDestroy\",\"comm\":\"comm local 9\","
                    "\"read\":0,");
  CHECK_CONTAINS(s, "\"ts\":200.000,\"dur\":0.000,\"args\":{\"trigger\":\"ncclCommAbort\",\"shared_state\":true,"
                    "\"comm\":\"comm local 9\",\"read\":1,");
  CHECK_EQ_U64(count_of(s, "shared_state"), 1);
  CHECK(strstr(s, "dump_dir") == NULL);
  free(s);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_trace_npkit WORK_DIR\n");
    return 2;
  }
  snprintf(work, sizeof work, "%s", argv[1]);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", work);
  if (system(cmd) != 0) return 2;
  test_events();
  test_many_tracks();
  return check_exit_code("test_trace_npkit");
}
