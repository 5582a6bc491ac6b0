/* Log reader: every part of a complete log read back exactly, in the current format (events
 * packed, or as EVENTS blocks), in the formats before packing (version 4: the flight recorder;
 * version 2) and in the format of
 * npkit-preload 0.1/0.2 (version 1, no checksums); later writers' longer headers and
 * records; unknown blocks skipped; a cut at every byte offset; corrupt headers; corrupt blocks
 * skipped and the rest read (bad headers, bad checksums, garbage, hostile counts and sizes). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <time.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "log_builder.h"
#include "log_reader.h"
#include "nccl_names.h"

static char work[512];

static void path_of(char *out, size_t len, const char *name) { snprintf(out, len, "%s/%s", work, name); }

/* Opens the first n bytes of data as a log, through an anonymous in-memory file. */
static int open_bytes(const void *data, size_t n, npkit_log_reader **r, char *err, size_t errlen) {
  int fd = memfd_create("npkit-test", MFD_CLOEXEC);
  if (fd < 0 || (n > 0 && write(fd, data, n) != (ssize_t)n)) {
    perror("memfd");
    exit(1);
  }
  int rc = npkit_reader_open_fd(fd, "mem.npkit", r, err, errlen);
  if (rc == 0) (*r)->own_fd = 1; /* let close() release it */
  else close(fd);
  return rc;
}

/* A log builder for WORK/name with the default options but the format version (0: the current
 * one); path gets the file's path. */
static npkit_lb *new_log(const char *name, uint32_t version, char *path, size_t len) {
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  if (version != 0) o.version = version;
  path_of(path, len, name);
  return npkit_lb_create(path, &o);
}

/* ---- the reference log ---- */

#define N_EV 23
static npkit_event events[N_EV];
static npkit_comm_rec comm1, comm2, comm1_late;

static void fill_events(void) {
  for (int i = 0; i < N_EV; i++) {
    npkit_event e = npkit_lb_api_event(1 + i % 40, 1 + i % 3, 1764671234567890123ull + 1000ull * i,
                                       1764671234567890123ull + 1000ull * i + 500 + i);
    e.u.api.count = 100 + i;
    e.u.api.bytes = 400 + 4 * i;
    e.u.api.seq = i % 5 == 0 ? NPKIT_NO_SEQ : (uint64_t)i;
    e.u.api.comm = 1 + i % 2;
    e.u.api.result = i % 7 == 0 ? 5 : 0;
    events[i] = e;
  }
  comm1 = (npkit_comm_rec){1, 0, 0x1f2e3d4c5b6a7988ull, 0x1000, 3, 4, -1, NPKIT_FN_CommInitRank, 0, 11, "world"};
  comm2 = (npkit_comm_rec){2, 1, 0xaaaabbbbccccddddull, 0x2000, 1, 2, 3, NPKIT_FN_CommSplit, 0, 12, "half"};
  comm1_late = comm1;
  comm1_late.device = 3; /* learnt later: the latest record wins */
}

/* Writes the reference log; returns its blocks' count of events before each block end through
 * the builder's block list. */
static npkit_lb *write_reference(const char *path, const npkit_lb_options *o) {
  npkit_lb *b = npkit_lb_create(path, o);
  CHECK(b != NULL);
  npkit_lb_comms(b, &comm1, 1);
  npkit_thread_rec th[2] = {{1, 101, "main"}, {2, 102, "worker"}};
  npkit_lb_threads(b, th, 2);
  npkit_lb_events(b, events, 10);
  npkit_comm_rec two[2] = {comm2, comm1_late};
  npkit_lb_comms(b, two, 2);
  npkit_process_rec p = {5, 8, 1, 3, "comm"};
  npkit_lb_process(b, &p);
  npkit_counter_rec c1[2] = {{1, NPKIT_SRC_API, 10, 0}, {2, NPKIT_SRC_API, 0, 0}};
  npkit_lb_counters(b, c1, 2);
  unsigned char junk[40];
  memset(junk, 0xab, sizeof(junk));
  npkit_lb_raw_block(b, 42, 7, junk, sizeof(junk)); /* a type from the future */
  npkit_lb_events(b, events + 10, 0);
  npkit_lb_events(b, events + 10, 12);
  uint32_t ids[2] = {7, 3};
  const char *texts[2] = {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "x"};
  size_t lens[2] = {strlen(texts[0]), 1};
  npkit_lb_strings(b, ids, texts, lens, 2);
  npkit_lb_note(b, 1764671234567990123ull, 2, "pool exhausted", 14);
  npkit_counter_rec c2[2] = {{1, NPKIT_SRC_API, 20, 3}, {2, NPKIT_SRC_API, 2, 1}};
  npkit_lb_counters(b, c2, 2);
  npkit_lb_events(b, events + 22, 1);
  npkit_end_rec end = {.end_ns = 1764671234599999999ull, .events_recorded = 23, .events_dropped = 4, .blocks_written = 12};
  npkit_lb_end(b, &end);
  return b;
}

static void check_reference(npkit_log_reader *r, const char *what) {
  fprintf(stderr, "  checking %s\n", what);
  CHECK_EQ_U64(r->n_events, N_EV);
  CHECK_EQ_U64(r->n_event_blocks, 4);
  CHECK_EQ_U64(r->n_unknown_blocks, 1);
  CHECK_EQ_U64(r->n_blocks, 14);
  CHECK(!r->truncated);
  CHECK_EQ_U64(r->skipped_blocks, 0);
  CHECK_EQ_U64(r->checksums, r->header.version >= 2);
  CHECK(r->has_end);
  CHECK_EQ_U64(r->end.end_ns, 1764671234599999999ull);
  CHECK_EQ_U64(r->n_comms, 2);
  if (r->n_comms == 2) {
    CHECK(memcmp(&r->comms[0], &comm1_late, sizeof(comm1_late)) == 0);
    CHECK(memcmp(&r->comms[1], &comm2, sizeof(comm2)) == 0);
  }
  CHECK(npkit_reader_comm(r, 2) == &r->comms[1]);
  CHECK(npkit_reader_comm(r, 9) == NULL);
  CHECK_EQ_U64(r->n_threads, 2);
  CHECK(npkit_reader_thread(r, 2) != NULL && strcmp(npkit_reader_thread(r, 2)->name, "worker") == 0);
  CHECK_EQ_U64(r->n_counters, 2);
  if (r->n_counters == 2) {
    CHECK_EQ_U64(r->counters[0].recorded, 20);
    CHECK_EQ_U64(r->counters[1].dropped, 1);
  }
  CHECK_EQ_U64(r->dropped, 4);   /* END says 4, counters say 3 + 1 */
  CHECK_EQ_U64(r->recorded, 23); /* END */
  CHECK(r->has_process);
  CHECK_EQ_U64(r->rank, 5);
  CHECK_EQ_U64(r->world_size, 8);
  CHECK_EQ_U64(r->local_rank, 1);
  CHECK_EQ_U64(r->device, 3);
  CHECK_STR(r->rank_source, "comm");
  CHECK_STR(r->header.host, "node1");
  CHECK_EQ_U64(r->header.pid, 4242);
  CHECK_EQ_U64(r->n_notes, 1);
  if (r->n_notes == 1) {
    CHECK_STR(r->notes[0].text, "pool exhausted");
    CHECK_EQ_U64(r->notes[0].level, 2);
    CHECK_EQ_U64(r->notes[0].time_ns, 1764671234567990123ull);
  }
  CHECK_EQ_U64(r->n_strings, 2);
  CHECK(npkit_reader_string(r, 7) != NULL && strcmp(npkit_reader_string(r, 7)->text, "ncclDevKernel_AllReduce_Sum_f32_RING_LL") == 0);
  CHECK(npkit_reader_string(r, 3) != NULL && strcmp(npkit_reader_string(r, 3)->text, "x") == 0);

  /* events, twice (rewind) */
  for (int pass = 0; pass < 2; pass++) {
    const npkit_event *ev;
    char err[256];
    int i = 0, k;
    npkit_reader_rewind(r);
    while ((k = npkit_reader_next(r, &ev, err, sizeof(err))) == 1) {
      if (i < N_EV) CHECK(memcmp(ev, &events[i], sizeof(*ev)) == 0);
      i++;
    }
    CHECK(k == 0);
    CHECK_EQ_U64(i, N_EV);
  }
}

static int never_same(void *ctx, const npkit_log_reader *lazy, const npkit_log_reader *full) {
  (void)ctx;
  return lazy->n_comms == full->n_comms && 0;
}

static void test_reference(void) {
  char path[600], err[256];
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  path_of(path, sizeof(path), "reference.npkit");
  npkit_lb_close(write_reference(path, &o));
  npkit_log_reader *r;
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r) {
    CHECK(r->checksums && !r->newer_version);
    check_reference(r, "reference log");
    npkit_reader_close(r);
  }

  /* events packed (EVENTS_PACKED, version 5): the same content */
  o.packed = 1;
  path_of(path, sizeof(path), "packed.npkit");
  npkit_lb_close(write_reference(path, &o));
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r) {
    npkit_block_header bh;
    uint64_t pos = 0, payload;
    int packed = 0, plain = 0;
    while (npkit_reader_next_block(r, &pos, &bh, &payload) == 1) {
      packed += bh.type == NPKIT_BLOCK_EVENTS_PACKED;
      plain += bh.type == NPKIT_BLOCK_EVENTS;
    }
    CHECK(packed == 4 && plain == 0);
    CHECK_EQ_U64(r->n_packed_blocks, 4);
    CHECK_EQ_U64(r->n_event_blocks, 4);
    check_reference(r, "log with packed events");
    npkit_reader_close(r);
  }
  o.packed = 0;

  /* opened for its identity only: the same tables, events counted and not readable until the
   * full scan, which gives the whole reference */
  for (int packed = 0; packed < 2; packed++) {
    path_of(path, sizeof(path), packed ? "packed.npkit" : "reference.npkit");
    CHECK(npkit_reader_open_lazy(path, &r, err, sizeof(err)) == 0);
    if (r == NULL) continue;
    CHECK(r->lazy);
    CHECK_EQ_U64(r->n_events, N_EV);
    CHECK_EQ_U64(r->n_event_blocks, 4);
    CHECK_EQ_U64(r->n_comms, 2);
    CHECK_EQ_U64(r->rank, 5);
    CHECK_EQ_U64(r->n_notes, 1);
    CHECK_EQ_U64(r->recorded, 23);
    const npkit_event *ev;
    CHECK(npkit_reader_next(r, &ev, err, sizeof(err)) == NPKIT_READER_EIO);
    CHECK_CONTAINS(err, "identity only");
    /* a caller that finds the full scan's tables different keeps the lazy reader */
    CHECK(npkit_reader_complete(r, never_same, NULL, err, sizeof(err)) == NPKIT_READER_EFORMAT);
    CHECK_CONTAINS(err, "differ");
    CHECK(r->lazy && r->n_comms == 2);
    CHECK(npkit_reader_complete(r, NULL, NULL, err, sizeof(err)) == 0);
    CHECK(!r->lazy);
    check_reference(r, packed ? "packed log opened lazily, then completed" : "log opened lazily, then completed");
    CHECK(npkit_reader_complete(r, NULL, NULL, err, sizeof(err)) == 0); /* once is enough */
    npkit_reader_done(r);
    CHECK(npkit_reader_next(r, &ev, err, sizeof(err)) == NPKIT_READER_EIO);
    CHECK_CONTAINS(err, "closed");
    npkit_reader_close(r);
  }

  /* the format just before packing, with the machine snapshot and the flight recorder: version 4,
   * EVENTS blocks */
  uint64_t unknown_v4 = 0;
  o.version = NPKIT_LOG_VERSION_PACKED - 1;
  path_of(path, sizeof(path), "version4.npkit");
  npkit_lb_close(write_reference(path, &o));
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r) {
    CHECK(r->checksums && !r->newer_version);
    check_reference(r, "log of version 4");
    unknown_v4 = r->n_unknown_blocks;
    npkit_reader_close(r);
  }
  /* ... where packed blocks did not exist yet: a block of their type is one the reader does not
   * know, skipped by its size, and its events are not decoded */
  o.packed = 1;
  path_of(path, sizeof(path), "version4_packed.npkit");
  npkit_lb_close(write_reference(path, &o));
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r) {
    CHECK_EQ_U64(r->n_events, 0);
    CHECK_EQ_U64(r->n_event_blocks, 0);
    CHECK_EQ_U64(r->n_unknown_blocks, unknown_v4 + 4);
    CHECK_EQ_U64(r->n_packed_blocks, 0);
    CHECK(!r->truncated && r->skipped_blocks == 0);
    const npkit_event *ev;
    CHECK(npkit_reader_next(r, &ev, err, sizeof(err)) == 0);
    npkit_reader_close(r);
  }
  o.packed = 0;

  /* the format before packing (npkit-preload 0.3): version 2, EVENTS blocks only */
  o.version = 2;
  path_of(path, sizeof(path), "version2.npkit");
  npkit_lb_close(write_reference(path, &o));
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r) {
    CHECK(r->checksums && !r->newer_version);
    check_reference(r, "log of version 2");
    npkit_reader_close(r);
  }

  /* the format of npkit-preload 0.1 and 0.2: version 1, no CHECK blocks */
  o.version = 1;
  path_of(path, sizeof(path), "old_format.npkit");
  npkit_lb_close(write_reference(path, &o));
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r) {
    CHECK(!r->checksums && !r->newer_version);
    check_reference(r, "log of version 1");
    npkit_reader_close(r);
  }

  /* a later writer: longer header and longer records, and a newer version number */
  o.header_size = 320;
  o.record_size = sizeof(npkit_event) + 24;
  o.version = NPKIT_LOG_VERSION + 1;
  path_of(path, sizeof(path), "longer.npkit");
  npkit_lb_close(write_reference(path, &o));
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r) {
    CHECK(r->newer_version);
    CHECK_EQ_U64(r->record_size, sizeof(npkit_event) + 24);
    CHECK_EQ_U64(r->header_size, 320);
    check_reference(r, "log with longer header and records");
    npkit_reader_close(r);
  }
  o.packed = 1; /* ... packed: the words past this build's event decode and are left out */
  path_of(path, sizeof(path), "longer_packed.npkit");
  npkit_lb_close(write_reference(path, &o));
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r) {
    check_reference(r, "log with longer header and packed records");
    npkit_reader_close(r);
  }
}

/* Cuts the reference log at every byte offset: the reader must keep exactly the complete blocks
 * (from version 2 on, a block is complete with its CHECK block). */
static void test_every_cut(uint32_t version, int packed) {
  char path[600], err[256];
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  o.version = version;
  o.packed = packed;
  fprintf(stderr, "  every cut of a log of version %u%s\n", version, packed ? ", packed" : "");
  path_of(path, sizeof(path), "cut.npkit");
  npkit_lb *b = write_reference(path, &o);
  size_t nb;
  const npkit_lb_block *blk = npkit_lb_blocks(b, &nb);
  npkit_lb_block blocks[64];
  memcpy(blocks, blk, nb * sizeof(*blk));
  npkit_lb_close(b);
  size_t len;
  char *data = npkit_lb_read_file(path, &len);
  int bad = 0;
  for (size_t cut = 0; cut <= len; cut++) {
    npkit_log_reader *r;
    int rc = open_bytes(data, cut, &r, err, sizeof(err));
    if (cut < sizeof(npkit_log_header)) {
      bad += rc != NPKIT_READER_EFORMAT;
      bad += strstr(err, cut == 0 ? "empty" : cut < 8 ? "bad magic" : "truncated header") == NULL;
      continue;
    }
    if (rc != 0) {
      bad++;
      fprintf(stderr, "cut %zu: %s\n", cut, err);
      continue;
    }
    /* what the complete blocks hold */
    uint64_t want_events = 0, want_end = sizeof(npkit_log_header);
    int at_boundary = cut == sizeof(npkit_log_header), has_end = 0;
    size_t ev_seen = 0;
    for (size_t i = 0; i < nb; i++) {
      if (blocks[i].end > cut) break;
      want_end = blocks[i].end;
      if (blocks[i].end == cut) at_boundary = 1;
      if (blocks[i].type == NPKIT_BLOCK_EVENTS || blocks[i].type == NPKIT_BLOCK_EVENTS_PACKED) {
        uint32_t count;
        memcpy(&count, data + blocks[i].offset + 8, sizeof count); /* npkit_block_header.count */
        want_events += count;
      }
      if (blocks[i].type == NPKIT_BLOCK_END) has_end = 1;
    }
    if (r->n_events != want_events || r->data_end != want_end || r->truncated == at_boundary ||
        r->has_end != has_end || (r->truncated && r->truncated_at != want_end) || r->skipped_blocks != 0) {
      bad++;
      fprintf(stderr, "cut %zu: events %" PRIu64 "/%" PRIu64 " end %" PRIu64 "/%" PRIu64 " truncated %d (%s)\n", cut,
              r->n_events, want_events, r->data_end, want_end, r->truncated, r->truncation);
    }
    const npkit_event *ev;
    int k;
    while ((k = npkit_reader_next(r, &ev, err, sizeof(err))) == 1) {
      if (ev_seen >= N_EV || memcmp(ev, &events[ev_seen], sizeof(*ev)) != 0) bad++;
      ev_seen++;
    }
    bad += k != 0 || ev_seen != want_events;
    npkit_reader_close(r);
  }
  CHECK(bad == 0);
  free(data);
}

/* ---- corrupt headers ---- */

static void header_case(const char *what, void (*mutate)(npkit_log_header *), const char *want) {
  npkit_log_header h;
  memset(&h, 0, sizeof(h));
  memcpy(h.magic, NPKIT_LOG_MAGIC, 8);
  h.version = 1;
  h.header_size = 256;
  h.record_size = sizeof(npkit_event);
  h.endian = NPKIT_LOG_ENDIAN_TAG;
  mutate(&h);
  npkit_log_reader *r;
  char err[256] = "";
  int rc = open_bytes(&h, sizeof(h), &r, err, sizeof(err));
  fprintf(stderr, "  %s: %s\n", what, err);
  CHECK(rc == NPKIT_READER_EFORMAT);
  CHECK(r == NULL);
  CHECK_CONTAINS(err, want);
  CHECK_CONTAINS(err, "mem.npkit");
}

static void m_magic(npkit_log_header *h) { h->magic[3] = 'X'; }
static void m_version0(npkit_log_header *h) { h->version = 0; }
static void m_big_endian(npkit_log_header *h) { h->endian = 0x04030201u; }
static void m_endian(npkit_log_header *h) { h->endian = 7; }
static void m_hsize_small(npkit_log_header *h) { h->header_size = 128; }
static void m_hsize_odd(npkit_log_header *h) { h->header_size = 260; }
static void m_hsize_huge(npkit_log_header *h) { h->header_size = 0xfffffff8u; }
static void m_hsize_past_end(npkit_log_header *h) { h->header_size = 512; }
static void m_rsize_small(npkit_log_header *h) { h->record_size = 64; }
static void m_rsize_v0(npkit_log_header *h) { h->record_size = 96; } /* shorter than this build's */
static void m_rsize_odd(npkit_log_header *h) { h->record_size = 100; }
static void m_rsize_huge(npkit_log_header *h) { h->record_size = 0x7ffffff8u; }

static void test_bad_headers(void) {
  header_case("bad magic", m_magic, "not an npkit log");
  header_case("version 0", m_version0, "version 0");
  header_case("big endian", m_big_endian, "big-endian");
  header_case("bad endian tag", m_endian, "endian tag");
  header_case("header_size 128", m_hsize_small, "header_size 128");
  header_case("header_size 260", m_hsize_odd, "header_size 260");
  header_case("header_size huge", m_hsize_huge, "header_size 4294967288");
  header_case("header_size past the end", m_hsize_past_end, "truncated header");
  header_case("record_size 64", m_rsize_small, "record_size 64");
  header_case("record_size 96", m_rsize_v0, "record_size 96");
  header_case("record_size 100", m_rsize_odd, "record_size 100");
  header_case("record_size huge", m_rsize_huge, "record_size 2147483640");

  npkit_log_reader *r;
  char err[256];
  CHECK(npkit_reader_open("/nonexistent/dir/x.npkit", &r, err, sizeof(err)) == NPKIT_READER_EIO);
  CHECK_CONTAINS(err, "/nonexistent/dir/x.npkit: No such file or directory");
  CHECK(npkit_reader_open(work, &r, err, sizeof(err)) == NPKIT_READER_EIO);
  CHECK_CONTAINS(err, "not a regular file");
}

/* ---- corrupt blocks: skipped, what comes before and after stays readable ---- */

typedef void (*writer_fn)(npkit_lb *b);

/* Reads the log at path (n events of `events` expected, in order, but for those of the block at
 * `gap_from` of `gap_n` events). */
static npkit_log_reader *open_checked(const char *path, uint64_t n, size_t gap_from, size_t gap_n) {
  char err[256];
  npkit_log_reader *r;
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r == NULL) return NULL;
  CHECK_EQ_U64(r->n_events, n);
  const npkit_event *ev;
  size_t i = 0, want = 0;
  int k;
  while ((k = npkit_reader_next(r, &ev, err, sizeof(err))) == 1) {
    if (want == gap_from) want += gap_n;
    if (want >= N_EV || memcmp(ev, &events[want], sizeof(*ev)) != 0) {
      fprintf(stderr, "event %zu is not events[%zu]\n", i, want);
      CHECK(0);
    }
    i++;
    want++;
  }
  CHECK(k == 0);
  CHECK_EQ_U64(i, n);
  return r;
}

/* 5 events, a bad block, then events_after events: the bad block is skipped, the rest read.  In
 * logs before `since`, the version that introduced the block's type, the block is one of a type
 * the reader does not know: passed over by its size, not judged, and the rest read. */
static void block_case_since(uint32_t since, const char *what, writer_fn bad_block, const char *want,
                             int events_after) {
  for (uint32_t version = 1; version <= NPKIT_LOG_VERSION; version++) {
    char path[600];
    npkit_lb *b = new_log("corrupt.npkit", version, path, sizeof(path));
    npkit_lb_events(b, events, 5);
    uint64_t bad_at = npkit_lb_offset(b);
    bad_block(b);
    uint64_t good_at = npkit_lb_offset(b);
    npkit_lb_events(b, events + 5, (size_t)events_after);
    npkit_lb_close(b);
    npkit_log_reader *r = open_checked(path, 5 + (uint64_t)events_after, SIZE_MAX, 0);
    if (r == NULL) return;
    fprintf(stderr, "  %s (version %u): %s at %" PRIu64 "\n", what, version, r->skip_reason, r->first_skip_at);
    CHECK(!r->truncated);
    if (version < since) {
      CHECK_EQ_U64(r->skipped_blocks, 0);
      CHECK_EQ_U64(r->n_unknown_blocks, 1);
      npkit_reader_close(r);
      continue;
    }
    CHECK_EQ_U64(r->skipped_blocks, 1);
    CHECK_EQ_U64(r->first_skip_at, bad_at);
    CHECK_EQ_U64(r->skipped_bytes, good_at - bad_at);
    CHECK_CONTAINS(r->skip_reason, want);
    npkit_reader_close(r);
  }
}

static void block_case(const char *what, writer_fn bad_block, const char *want, int events_after) {
  block_case_since(1, what, bad_block, want, events_after);
}

static void b_size_odd(npkit_lb *b) { npkit_lb_raw_block(b, 99, 0, NULL, 12); }
static void b_events_mismatch(npkit_lb *b) { npkit_lb_raw_block(b, NPKIT_BLOCK_EVENTS, 2, NULL, sizeof(npkit_event)); }
static void b_events_huge_count(npkit_lb *b) {
  npkit_lb_raw_block(b, NPKIT_BLOCK_EVENTS, 0xffffffffu, NULL, sizeof(npkit_event));
}
static void b_comm_huge_count(npkit_lb *b) { npkit_lb_raw_block(b, NPKIT_BLOCK_COMM, 1000000000u, NULL, 80); }
static void b_comm_short(npkit_lb *b) { npkit_lb_raw_block(b, NPKIT_BLOCK_COMM, 2, NULL, 64); }
static void b_process_empty(npkit_lb *b) { npkit_lb_raw_block(b, NPKIT_BLOCK_PROCESS, 0, NULL, 0); }
static void b_note_long(npkit_lb *b) {
  npkit_note_rec n = {1, 2, 1000};
  npkit_lb_raw_block(b, NPKIT_BLOCK_NOTE, 1, &n, sizeof(n));
}
static void b_string_long(npkit_lb *b) {
  npkit_string_rec s[2] = {{1, 0}, {2, 0x7fffffff}};
  npkit_lb_raw_block(b, NPKIT_BLOCK_STRING, 2, s, sizeof(s));
}
static void b_string_count(npkit_lb *b) {
  npkit_string_rec s = {1, 0};
  npkit_lb_raw_block(b, NPKIT_BLOCK_STRING, 0x10000000u, &s, sizeof(s));
}
static void b_end_short(npkit_lb *b) { npkit_lb_raw_block(b, NPKIT_BLOCK_END, 1, NULL, 8); }
/* packed events (src/format/event_pack.h): one API event is kind 1, a 2-byte mask, varints */
static void b_packed_count(npkit_lb *b) { npkit_lb_raw_block(b, NPKIT_BLOCK_EVENTS_PACKED, 100, NULL, 8); }
static void b_packed_cut(npkit_lb *b) { /* the mask asks for 16 words, 5 bytes follow */
  const unsigned char p[8] = {1, 0xff, 0xff, 2, 2, 2, 2, 2};
  npkit_lb_raw_block(b, NPKIT_BLOCK_EVENTS_PACKED, 1, p, sizeof p);
}
static void b_packed_kind(npkit_lb *b) { /* kind 5 announced, all words 0: the event says kind 0 */
  const unsigned char p[8] = {5, 0, 0, 0, 0, 0, 0, 0};
  npkit_lb_raw_block(b, NPKIT_BLOCK_EVENTS_PACKED, 1, p, sizeof p);
}
static void b_packed_overflow(npkit_lb *b) { /* a varint of 11 bytes */
  unsigned char p[16] = {1, 0x04, 0};
  memset(p + 3, 0xff, 11);
  npkit_lb_raw_block(b, NPKIT_BLOCK_EVENTS_PACKED, 1, p, sizeof p);
}
static void b_packed_trailing(npkit_lb *b) { /* one valid event, then 8 more bytes */
  const unsigned char p[16] = {1, 0x04, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  npkit_lb_raw_block(b, NPKIT_BLOCK_EVENTS_PACKED, 1, p, sizeof p);
}
static void b_packed_garbage(npkit_lb *b) { /* one valid event, then a non-zero pad byte */
  const unsigned char p[8] = {1, 0x04, 0, 2, 0, 0, 7, 0};
  npkit_lb_raw_block(b, NPKIT_BLOCK_EVENTS_PACKED, 1, p, sizeof p);
}

static char want_buf[200];

static void test_bad_blocks(void) {
  block_case("size not a multiple of 8", b_size_odd, "not a multiple of 8", 2);
  char want2[96];
  snprintf(want2, sizeof(want2), "2 records of %zu bytes in %zu bytes", sizeof(npkit_event), sizeof(npkit_event));
  block_case("EVENTS count and size disagree", b_events_mismatch, want2, 2);
  block_case("EVENTS count 2^32-1", b_events_huge_count, "4294967295 records", 2);
  block_case("COMM count 10^9", b_comm_huge_count, "not a whole number of records", 2);
  block_case("COMM records too short", b_comm_short, "shorter than this reader's", 2);
  block_case("PROCESS without record", b_process_empty, "without a record", 2);
  block_case("NOTE text past its block", b_note_long, "NOTE text longer", 2);
  block_case("STRING text past its block", b_string_long, "STRING text beyond", 2);
  block_case("STRING count too large", b_string_count, "more strings", 2);
  block_case("END too short", b_end_short, "END block shorter", 2);
  block_case_since(NPKIT_LOG_VERSION_PACKED, "EVENTS_PACKED count past its size", b_packed_count, "100 events cannot fit in 8 bytes", 2);
  block_case_since(NPKIT_LOG_VERSION_PACKED, "EVENTS_PACKED event cut short", b_packed_cut, "an event does not decode", 2);
  block_case_since(NPKIT_LOG_VERSION_PACKED, "EVENTS_PACKED kind that disagrees", b_packed_kind, "an event does not decode", 2);
  block_case_since(NPKIT_LOG_VERSION_PACKED, "EVENTS_PACKED varint of 11 bytes", b_packed_overflow, "an event does not decode", 2);
  block_case_since(NPKIT_LOG_VERSION_PACKED, "EVENTS_PACKED bytes after the last event", b_packed_trailing, "bytes after the last event", 2);
  block_case_since(NPKIT_LOG_VERSION_PACKED, "EVENTS_PACKED padding not zero", b_packed_garbage, "bytes after the last event", 2);
  char want[120];

  /* bad block magic, and a block running past the end of the file: patched bytes; nothing intact
   * follows, so the log ends there */
  for (uint32_t version = 1; version <= NPKIT_LOG_VERSION; version++) {
    char path[600], err[256];
    npkit_lb *b = new_log("magic.npkit", version, path, sizeof(path));
    npkit_lb_events(b, events, 3);
    uint64_t at = npkit_lb_offset(b);
    npkit_lb_events(b, events + 3, 3);
    npkit_lb_close(b);
    size_t len;
    char *data = npkit_lb_read_file(path, &len);
    data[at] ^= 0x55;
    npkit_log_reader *r;
    CHECK(open_bytes(data, len, &r, err, sizeof(err)) == 0);
    if (r) {
      CHECK(r->truncated);
      CHECK_EQ_U64(r->truncated_at, at);
      CHECK_CONTAINS(r->truncation, "bad magic");
      CHECK_EQ_U64(r->n_events, 3);
      CHECK_EQ_U64(r->skipped_blocks, 0);
      npkit_reader_close(r);
    }
    data[at] ^= 0x55;
    uint32_t huge = 0xfffffff0u;
    memcpy(data + at + 12, &huge, 4); /* the payload size */
    CHECK(open_bytes(data, len, &r, err, sizeof(err)) == 0);
    if (r) {
      CHECK(r->truncated);
      snprintf(want, sizeof(want), "incomplete EVENTS block: %zu of 4294967280 payload bytes",
               3 * sizeof(npkit_event) + (version >= 2 ? 24 : 0));
      CHECK_CONTAINS(r->truncation, want);
      CHECK_EQ_U64(r->n_events, 3);
      npkit_reader_close(r);
    }
    free(data);
  }
}

/* Writes `blocks` EVENTS blocks of 2 events each (events[0..2*blocks)) and returns the offsets of
 * their headers in at[]. */
static void write_event_blocks(const char *path, uint32_t version, size_t blocks, uint64_t *at) {
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  o.version = version;
  npkit_lb *b = npkit_lb_create(path, &o);
  for (size_t i = 0; i < blocks; i++) {
    at[i] = npkit_lb_offset(b);
    npkit_lb_events(b, events + 2 * i, 2);
  }
  at[blocks] = npkit_lb_offset(b);
  npkit_lb_close(b);
}

typedef struct window {
  uint64_t lo, hi;
} window;

static int in_window(void *ctx, const npkit_event *ev) {
  const window *w = ctx;
  return !(ev->end_ns < w->lo || ev->start_ns > w->hi);
}

/* A filter with a window: the events in it and nothing else, and only the block that holds them
 * is read when the blocks' spans are known (checksummed plain blocks, packed blocks). */
static void test_filter_window(void) {
  char path[600], err[256];
  path_of(path, sizeof(path), "window.npkit");
  window w = {events[6].start_ns, events[7].end_ns + 50}; /* block 3: events 6 and 7 */
  for (int packed = 0; packed < 2; packed++)
    for (uint32_t version = 1; version <= NPKIT_LOG_VERSION; version += NPKIT_LOG_VERSION - 1) {
      if (packed && version < NPKIT_LOG_VERSION_PACKED) continue;
      npkit_lb_options o;
      npkit_lb_defaults(&o);
      o.version = version;
      o.packed = packed;
      npkit_lb *b = npkit_lb_create(path, &o);
      for (size_t i = 0; i < 10; i++) npkit_lb_events(b, events + 2 * i, 2);
      npkit_lb_close(b);
      npkit_log_reader *r;
      CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
      if (r == NULL) continue;
      CHECK_EQ_U64(r->n_spans, version >= 2 || packed ? 10 : 0);
      for (int pass = 0; pass < 2; pass++) {
        npkit_reader_filter(r, in_window, &w, w.lo, w.hi);
        npkit_reader_rewind(r);
        uint64_t before = r->event_blocks_read, n = 0;
        const npkit_event *ev;
        int k;
        while ((k = npkit_reader_next(r, &ev, err, sizeof(err))) == 1) {
          CHECK(n < 2 && memcmp(ev, &events[6 + n], sizeof(*ev)) == 0);
          n++;
        }
        CHECK(k == 0);
        CHECK_EQ_U64(n, 2);
        CHECK_EQ_U64(r->filter_kept, 2);
        CHECK_EQ_U64(r->event_blocks_read - before, r->n_spans > 0 ? 1 : 10);
      }
      npkit_reader_filter(r, NULL, NULL, 0, UINT64_MAX); /* cleared: every event again */
      npkit_reader_rewind(r);
      const npkit_event *ev;
      uint64_t n = 0;
      while (npkit_reader_next(r, &ev, err, sizeof(err)) == 1) n++;
      CHECK_EQ_U64(n, 20);
      npkit_reader_close(r);
    }
}

static void write_bytes(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL && fwrite(data, 1, len, f) == len);
  if (f) fclose(f);
}

/* Damage in the middle of a log: the reader skips what is damaged and reads everything else. */
static void test_skip_damage(void) {
  char path[600];
  uint64_t at[12];
  path_of(path, sizeof(path), "damaged.npkit");
  for (uint32_t version = 1; version <= NPKIT_LOG_VERSION; version++) {
    fprintf(stderr, "  damage in a log of version %u\n", version);
    write_event_blocks(path, version, 10, at);
    size_t len;
    char *data = npkit_lb_read_file(path, &len);

    /* the size of the 4th block's header overwritten (what a flipped bit in the right place does) */
    uint32_t size = 0x7ffffff0u;
    memcpy(data + at[3] + 12, &size, 4);
    write_bytes(path, data, len);
    npkit_log_reader *r = open_checked(path, 18, 6, 2);
    if (r) {
      CHECK(!r->truncated);
      CHECK_EQ_U64(r->skipped_blocks, 1);
      CHECK_EQ_U64(r->skipped_bytes, at[4] - at[3]);
      CHECK_EQ_U64(r->first_skip_at, at[3]);
      CHECK_CONTAINS(r->skip_reason, "incomplete EVENTS block");
      char msg[400];
      npkit_reader_damage(r, msg, sizeof msg);
      snprintf(want_buf, sizeof want_buf, "1 corrupt block (%" PRIu64 " bytes) skipped, the first at offset %" PRIu64,
               at[4] - at[3], at[3]);
      CHECK_CONTAINS(msg, want_buf);
      npkit_reader_close(r);
    }
    free(data);

    /* one flipped bit in an event's payload: a checksum finds it (version 1 cannot tell) */
    data = npkit_lb_read_file(path, &len);
    size = 2 * sizeof(npkit_event);
    memcpy(data + at[3] + 12, &size, 4);
    data[at[5] + 16 + 40] ^= 0x04;
    write_bytes(path, data, len);
    if (version >= 2) {
      r = open_checked(path, 18, 10, 2);
      if (r) {
        CHECK_EQ_U64(r->skipped_blocks, 1);
        CHECK_EQ_U64(r->first_skip_at, at[5]);
        CHECK_CONTAINS(r->skip_reason, "corrupt EVENTS block: bad checksum");
        npkit_reader_close(r);
      }
      /* a lazy open does not read event payloads: the damage shows once it is completed */
      char err[256];
      CHECK(npkit_reader_open_lazy(path, &r, err, sizeof(err)) == 0);
      if (r) {
        CHECK_EQ_U64(r->skipped_blocks, 0);
        CHECK(npkit_reader_complete(r, NULL, NULL, err, sizeof(err)) == 0);
        CHECK_EQ_U64(r->skipped_blocks, 1);
        CHECK_EQ_U64(r->n_events, 18);
        npkit_reader_close(r);
      }
    } else {
      char err[256];
      CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
      if (r) {
        CHECK_EQ_U64(r->n_events, 20);
        CHECK_EQ_U64(r->skipped_blocks, 0);
        npkit_reader_close(r);
      }
    }
    data[at[5] + 16 + 40] ^= 0x04;

    /* garbage inserted between two blocks, with two fake block magics in it */
    static const uint32_t magic = NPKIT_BLOCK_MAGIC;
    unsigned char junk[44];
    memset(junk, 0x5a, sizeof junk);
    memcpy(junk, &magic, 4);
    memcpy(junk + 21, &magic, 4);
    char *spliced = malloc(len + sizeof junk);
    memcpy(spliced, data, at[7]);
    memcpy(spliced + at[7], junk, sizeof junk);
    memcpy(spliced + at[7] + sizeof junk, data + at[7], len - at[7]);
    write_bytes(path, spliced, len + sizeof junk);
    r = open_checked(path, 20, SIZE_MAX, 0);
    if (r) {
      CHECK(!r->truncated);
      CHECK_EQ_U64(r->skipped_blocks, 2); /* the two fake headers */
      CHECK_EQ_U64(r->skipped_bytes, sizeof junk);
      CHECK_EQ_U64(r->first_skip_at, at[7]);
      npkit_reader_close(r);
    }
    free(spliced);

    if (version >= 2) {
      /* a CHECK block that disagrees: its block is skipped */
      data[at[2] - 8] ^= 0x80; /* the crc32c of block 1, the last 8 bytes before block 2 */
      write_bytes(path, data, len);
      r = open_checked(path, 18, 2, 2);
      if (r) {
        CHECK_EQ_U64(r->skipped_blocks, 1);
        CHECK_EQ_U64(r->first_skip_at, at[1]);
        CHECK_CONTAINS(r->skip_reason, "bad checksum");
        npkit_reader_close(r);
      }
      data[at[2] - 8] ^= 0x80;
      /* a block without its CHECK block */
      npkit_lb_options o;
      npkit_lb_defaults(&o);
      npkit_lb *b = npkit_lb_create(path, &o);
      npkit_lb_events(b, events, 2);
      uint64_t bad = npkit_lb_offset(b);
      npkit_lb_set_checksums(b, 0);
      npkit_lb_events(b, events + 2, 2);
      npkit_lb_set_checksums(b, 1);
      npkit_lb_events(b, events + 4, 2);
      npkit_lb_close(b);
      r = open_checked(path, 4, 2, 2);
      if (r) {
        CHECK_EQ_U64(r->skipped_blocks, 1);
        CHECK_EQ_U64(r->first_skip_at, bad);
        CHECK_CONTAINS(r->skip_reason, "no checksum after it");
        npkit_reader_close(r);
      }
    }
    free(data);
  }
}

/* A file full of fake block headers, each with a valid CHECK header at the end it claims: the
 * search for an intact block has a budget, so this takes no longer than reading a few copies of
 * the file. */
static void test_resync_budget(void) {
  char path[600];
  npkit_lb *b = new_log("fakes.npkit", 0, path, sizeof(path));
  npkit_lb_events(b, events, 2);
  uint64_t start = npkit_lb_offset(b);
  npkit_lb_close(b);
  size_t len;
  char *head = npkit_lb_read_file(path, &len);
  const size_t region = 4u << 20;
  unsigned char *data = calloc(1, len + region + 64);
  memcpy(data, head, len);
  uint64_t target = len + region; /* where every fake block claims to end */
  for (uint64_t p = start; p + 16 <= target; p += 16) {
    npkit_block_header bh = {NPKIT_BLOCK_MAGIC, NPKIT_BLOCK_EVENTS, 0, 0, 0};
    bh.size = (uint32_t)(target - p - 16);
    bh.size -= bh.size % 128;
    bh.count = bh.size / 128;
    bh.size = bh.count * 128;
    if (p + 16 + bh.size != target) continue;
    memcpy(data + p, &bh, sizeof bh);
  }
  npkit_block_header ch = {NPKIT_BLOCK_MAGIC, NPKIT_BLOCK_CHECK, 0, 1, 8};
  memcpy(data + target, &ch, sizeof ch);
  write_bytes(path, data, target + 24);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char err[256];
  npkit_log_reader *r;
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  fprintf(stderr, "  %zu MB of fake blocks: read in %.2f s\n", region >> 20, s);
  CHECK(s < 20);
  if (r) {
    CHECK_EQ_U64(r->n_events, 2);
    CHECK(r->truncated);
    npkit_reader_close(r);
  }
  free(head);
  free(data);
  unlink(path);
}

/* A long log repeats COUNTERS and COMM snapshots: memory follows the distinct keys, and the latest
 * values win. */
static void test_snapshots(void) {
  char path[600], err[256];
  npkit_lb *b = new_log("snapshots.npkit", 0, path, sizeof(path));
  for (uint64_t s = 1; s <= 20000; s++) {
    npkit_counter_rec c[4];
    for (uint32_t t = 0; t < 4; t++) c[t] = (npkit_counter_rec){t, NPKIT_SRC_API, s * (t + 1), s / 100};
    npkit_lb_counters(b, c, 4);
    if (s % 100 == 0) {
      npkit_comm_rec cm = comm2;
      cm.local_id = (uint32_t)(s / 1000) + 1; /* 21 distinct ids, each repeated */
      cm.create_ns = s;
      npkit_lb_comms(b, &cm, 1);
    }
  }
  npkit_lb_close(b);
  npkit_log_reader *r;
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r == NULL) return;
  CHECK_EQ_U64(r->n_counters, 4);
  for (size_t i = 0; i < r->n_counters && i < 4; i++) {
    CHECK_EQ_U64(r->counters[i].thread, i);
    CHECK_EQ_U64(r->counters[i].recorded, 20000 * (i + 1));
  }
  CHECK_EQ_U64(r->dropped, 4 * 200);
  CHECK_EQ_U64(r->n_comms, 21);
  for (size_t i = 0; i < r->n_comms; i++) {
    uint64_t last = (i + 1) * 1000 - 100; /* the latest snapshot of id i+1 */
    if (i == 20) last = 20000;
    CHECK_EQ_U64(r->comms[i].local_id, i + 1);
    CHECK_EQ_U64(r->comms[i].create_ns, last);
  }
  CHECK(!r->has_end);
  CHECK(!r->truncated);
  npkit_reader_close(r);
}

/* A log that names more distinct threads than the reader keeps loses the block that exceeds the
 * limit, instead of growing memory with the file; the events after it are read. */
static void test_key_limit(void) {
  char path[600], err[256];
  npkit_lb *b = new_log("many_threads.npkit", 0, path, sizeof(path));
  static npkit_thread_rec t[4096];
  uint64_t limit_block = 0;
  for (uint32_t blk = 0; blk <= NPKIT_READER_MAX_KEYS / 4096; blk++) {
    for (uint32_t i = 0; i < 4096; i++) t[i] = (npkit_thread_rec){blk * 4096 + i + 1, 1, "t"};
    if (blk == NPKIT_READER_MAX_KEYS / 4096) limit_block = npkit_lb_offset(b);
    npkit_lb_threads(b, t, 4096);
  }
  npkit_lb_events(b, events, 2);
  npkit_lb_close(b);
  npkit_log_reader *r;
  CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
  if (r == NULL) return;
  CHECK(!r->truncated);
  CHECK_EQ_U64(r->skipped_blocks, 1);
  CHECK_EQ_U64(r->first_skip_at, limit_block);
  CHECK_CONTAINS(r->skip_reason, "more distinct records than this reader keeps");
  CHECK_EQ_U64(r->n_threads, NPKIT_READER_MAX_KEYS);
  CHECK_EQ_U64(r->n_events, 2);
  npkit_reader_close(r);
  unlink(path);
}

/* END records of every writer: 0.1 wrote 32 bytes (no clock fields), 0.2 writes the clock fields,
 * a later writer may append more; shorter than 32 bytes is damage. */
static void test_end_versions(void) {
  struct {
    uint32_t size;
    int ok;
  } cases[] = {{NPKIT_END_REC_V1_SIZE, 1}, {sizeof(npkit_end_rec), 1}, {sizeof(npkit_end_rec) + 16, 1}, {24, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char path[600], err[256];
    npkit_lb_options o;
    npkit_lb_defaults(&o);
    snprintf(path, sizeof path, "%s/end_%u.npkit", work, cases[k].size);
    npkit_lb *b = npkit_lb_create(path, &o);
    npkit_lb_events(b, events, 3);
    unsigned char payload[sizeof(npkit_end_rec) + 16];
    memset(payload, 0xee, sizeof payload); /* what a later writer appends: must be ignored */
    npkit_end_rec e = {.end_ns = 1764671234599999999ull, .events_recorded = 3, .events_dropped = 1,
                       .blocks_written = 2, .clock_checks = 17, .clock_steps = 1, .clock_max_error_ns = 42};
    memcpy(payload, &e, cases[k].size < sizeof e ? cases[k].size : sizeof e);
    npkit_lb_raw_block(b, NPKIT_BLOCK_END, 1, payload, cases[k].size);
    npkit_lb_close(b);
    npkit_log_reader *r;
    CHECK(npkit_reader_open(path, &r, err, sizeof(err)) == 0);
    if (r == NULL) continue;
    CHECK_EQ_U64(r->n_events, 3);
    if (!cases[k].ok) { /* the last block: nothing intact follows it */
      CHECK(!r->has_end && r->truncated);
      CHECK_CONTAINS(r->truncation, "END block shorter than its record");
    } else {
      CHECK(r->has_end && !r->truncated);
      CHECK_EQ_U64(r->end.end_ns, 1764671234599999999ull);
      CHECK_EQ_U64(r->end.events_dropped, 1);
      int v1 = cases[k].size == NPKIT_END_REC_V1_SIZE;
      CHECK_EQ_U64(r->end.clock_checks, v1 ? 0 : 17);
      CHECK_EQ_U64(r->end.clock_steps, v1 ? 0 : 1);
      CHECK_EQ_U64(r->end.clock_max_error_ns, v1 ? 0 : 42);
    }
    npkit_reader_close(r);
    unlink(path);
  }
}

int main(int argc, char **argv) {
  snprintf(work, sizeof(work), "%s", argc > 1 ? argv[1] : "test_log_reader.work");
  mkdir(work, 0755);
  fill_events();
  test_reference();
  test_every_cut(1, 0);
  test_every_cut(2, 0);
  test_every_cut(3, 0);
  test_every_cut(NPKIT_LOG_VERSION, 0);
  test_every_cut(NPKIT_LOG_VERSION, 1);
  test_bad_headers();
  test_bad_blocks();
  test_skip_damage();
  test_resync_budget();
  test_filter_window();
  test_snapshots();
  test_key_limit();
  test_end_versions();
  return check_exit_code("test_log_reader");
}
