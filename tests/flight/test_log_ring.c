/* The flight recorder's ring (src/runtime/core/log_ring.h) behind the log writer: nothing on disk
 * before a dump; a dump is a whole log the reader takes, with the naming blocks, the newest events
 * in order and the latest counters; events beyond the ring's room are counted as overwritten, to
 * the event; naming blocks beyond their area are counted as lost; a later dump replaces the file;
 * a dump that cannot be written says why and leaves the ring as it was; the close writes the END. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "log_reader.h"
#include "log_ring.h"
#include "log_writer.h"

#define MB (1u << 20)
/* Records of a ring of `bytes`: seven eighths of it (an eighth names things). */
#define RING_EVENTS(bytes) (((bytes) - (bytes) / 8) / sizeof(npkit_event))

static void event(npkit_event *ev, uint64_t i) {
  memset(ev, 0, sizeof *ev);
  ev->kind = NPKIT_EV_MARK_INSTANT;
  ev->thread = 1;
  ev->start_ns = ev->end_ns = 1000000 + i;
}

/* Puts events first..first+n-1 as EVENTS blocks of `per` events. */
static void put_events(npkit_log_writer *w, uint64_t first, uint64_t n, uint64_t per) {
  static npkit_event buf[4096];
  for (uint64_t done = 0; done < n;) {
    uint64_t k = n - done < per ? n - done : per;
    for (uint64_t i = 0; i < k; i++) event(&buf[i], first + done + i);
    CHECK(npkit_logw_append(w, NPKIT_BLOCK_EVENTS, (uint32_t)k, buf, k * sizeof *buf) == 0);
    done += k;
  }
}

static npkit_log_writer *open_ring(const char *path, uint64_t bytes) {
  npkit_log_header h;
  npkit_log_header_init(&h);
  h.rank = 7;
  char err[256];
  npkit_log_writer *w = npkit_logw_open_ring(path, &h, bytes, err, sizeof err);
  if (w == NULL) fprintf(stderr, "test_log_ring: %s\n", err);
  return w;
}

/* Every event of the log at path, in order: their start times in *starts (count returned). */
static size_t read_all(const char *path, uint64_t *starts, size_t cap, npkit_log_reader **out) {
  char err[256];
  npkit_log_reader *r;
  if (npkit_reader_open(path, &r, err, sizeof err) != 0) {
    fprintf(stderr, "test_log_ring: %s\n", err);
    *out = NULL;
    return 0;
  }
  size_t n = 0;
  const npkit_event *ev;
  while (npkit_reader_next(r, &ev, err, sizeof err) == 1) {
    if (n < cap) starts[n] = ev->start_ns;
    n++;
  }
  *out = r;
  return n;
}

static void test_dump_holds_the_newest(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/ring/one.npkit", dir);
  npkit_log_writer *w = open_ring(path, MB);
  CHECK(w != NULL);
  if (w == NULL) return;
  const uint64_t cap = RING_EVENTS(MB), total = 3 * cap + 123;
  npkit_thread_rec th = {1, 4242, "main"};
  npkit_comm_rec comm = {.local_id = 1, .comm_id = 0x3f2a0b1c00000001ull, .nranks = 3};
  CHECK(npkit_logw_append(w, NPKIT_BLOCK_THREAD, 1, &th, sizeof th) == 0);
  CHECK(npkit_logw_append(w, NPKIT_BLOCK_COMM, 1, &comm, sizeof comm) == 0);
  put_events(w, 0, total, 1000);
  npkit_counter_rec c1 = {1, NPKIT_SRC_API, 10, 0}, c2 = {1, NPKIT_SRC_API, total, 5};
  CHECK(npkit_logw_append(w, NPKIT_BLOCK_COUNTERS, 1, &c1, sizeof c1) == 0);
  CHECK(npkit_logw_append(w, NPKIT_BLOCK_COUNTERS, 1, &c2, sizeof c2) == 0);

  struct stat st;
  CHECK(stat(path, &st) != 0 && errno == ENOENT); /* nothing on disk before a dump */
  npkit_ring_stats s;
  npkit_ring_get_stats(npkit_logw_ring(w), &s);
  CHECK_EQ_U64(s.kept, cap);
  CHECK_EQ_U64(s.overwritten, total - cap);
  CHECK_EQ_U64(s.bytes, MB);
  CHECK(npkit_logw_dump(w) == 0);

  static uint64_t starts[65536];
  npkit_log_reader *r;
  size_t n = read_all(path, starts, 65536, &r);
  CHECK(r != NULL);
  if (r == NULL) return;
  CHECK_EQ_U64(n, cap);
  int in_order = 1;
  for (size_t i = 0; i < n && i < 65536; i++) in_order &= starts[i] == 1000000 + (total - cap) + i;
  CHECKF(in_order, "the dump holds events %" PRIu64 ".. in order; first %" PRIu64, total - cap, starts[0] - 1000000);
  CHECK(r->header.flags & NPKIT_LOG_F_RING);
  CHECK(r->rank == 7);
  CHECK(!r->has_end); /* the job goes on */
  CHECK(r->n_threads == 1 && r->threads[0].os_tid == 4242);
  CHECK(npkit_reader_comm(r, 1) != NULL && npkit_reader_comm(r, 1)->comm_id == comm.comm_id);
  CHECK(r->n_counters == 1 && r->counters[0].recorded == total && r->counters[0].dropped == 5); /* the latest */
  CHECK(r->skipped_blocks == 0 && !r->truncated);
  npkit_reader_close(r);

  /* More events, a second dump: it replaces the first; then the close adds the END. */
  put_events(w, total, 10, 10);
  CHECK(npkit_logw_dump(w) == 0);
  n = read_all(path, starts, 65536, &r);
  CHECK_EQ_U64(n, cap);
  if (r != NULL) {
    CHECK_EQ_U64(starts[n - 1], 1000000 + total + 9);
    npkit_reader_close(r);
  }
  npkit_end_rec end = {.end_ns = 99, .events_recorded = total + 10};
  CHECK(npkit_logw_close(w, &end) == 0);
  n = read_all(path, starts, 65536, &r);
  CHECK_EQ_U64(n, cap);
  if (r != NULL) {
    CHECK(r->has_end && r->end.events_recorded == total + 10);
    npkit_reader_close(r);
  }
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  CHECK(access(tmp, F_OK) != 0); /* no temporary file left behind */
  npkit_logw_free(w);
}

/* A block larger than the ring keeps its newest records; names beyond their area are counted. */
static void test_big_block_and_full_names(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/ring/two.npkit", dir);
  npkit_log_writer *w = open_ring(path, MB);
  if (w == NULL) return;
  const uint64_t cap = RING_EVENTS(MB);
  put_events(w, 0, 4096, 4096); /* fits */
  npkit_event *big = calloc(cap + 500, sizeof *big);
  for (uint64_t i = 0; i < cap + 500; i++) event(&big[i], 10000 + i);
  CHECK(npkit_logw_append(w, NPKIT_BLOCK_EVENTS, (uint32_t)(cap + 500), big, (cap + 500) * sizeof *big) == 0);
  free(big);
  npkit_ring_stats s;
  npkit_ring_get_stats(npkit_logw_ring(w), &s);
  CHECK_EQ_U64(s.kept, cap);
  CHECK_EQ_U64(s.overwritten, 4096 + 500);
  /* a NOTE of 100 KB twice does not fit in the eighth (128 KB) for names: the second is lost */
  static char text[100000 + sizeof(npkit_note_rec)];
  memset(text, 'x', sizeof text);
  CHECK(npkit_logw_append(w, NPKIT_BLOCK_NOTE, 1, text, sizeof text) == 0);
  CHECK(npkit_logw_append(w, NPKIT_BLOCK_NOTE, 1, text, sizeof text) == 0);
  npkit_ring_get_stats(npkit_logw_ring(w), &s);
  CHECK_EQ_U64(s.meta_lost, 1);
  CHECK(npkit_logw_dump(w) == 0);
  static uint64_t starts[65536];
  npkit_log_reader *r;
  size_t n = read_all(path, starts, 65536, &r);
  CHECK_EQ_U64(n, cap);
  if (r != NULL) {
    CHECK_EQ_U64(starts[0], 1000000 + 10000 + 500); /* the block's newest cap records */
    npkit_reader_close(r);
  }
  npkit_logw_close(w, NULL);
  npkit_logw_free(w);
}

/* A dump that cannot be written (the folder is a file) returns why; the ring goes on. */
static void test_unwritable(const char *dir) {
  char file[512], path[600];
  snprintf(file, sizeof file, "%s/not_a_folder", dir);
  FILE *f = fopen(file, "w");
  if (f != NULL) fclose(f);
  snprintf(path, sizeof path, "%s/log.npkit", file);
  npkit_log_writer *w = open_ring(path, MB);
  if (w == NULL) return;
  put_events(w, 0, 10, 10);
  int e = npkit_logw_dump(w);
  CHECKF(e == ENOTDIR || e == EEXIST, "errno %d", e);
  put_events(w, 10, 10, 10); /* still takes events */
  npkit_ring_stats s;
  npkit_ring_get_stats(npkit_logw_ring(w), &s);
  CHECK_EQ_U64(s.kept, 20);
  npkit_logw_close(w, NULL);
  npkit_logw_free(w);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/tmp/npkit_test_log_ring";
  npkit_mkdirs(dir);
  for (int i = 0; i < 2; i++) { /* a run before may have left its dumps */
    char old[600];
    snprintf(old, sizeof old, "%s/ring/%s.npkit", dir, i == 0 ? "one" : "two");
    unlink(old);
  }
  test_dump_holds_the_newest(dir);
  test_big_block_and_full_names(dir);
  test_unwritable(dir);
  return check_exit_code("test_log_ring");
}
