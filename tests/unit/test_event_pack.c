/* Packed events (src/format/event_pack.h): every event comes back exactly, whatever its words hold
 * (extremes, differences of any sign, kinds of every lane and lanes shared by two kinds); a block
 * decodes on its own; no event takes more than NPKIT_PACK_EVENT_MAX bytes; a stream of calls
 * like the library's takes a few bytes per event; and a payload cut anywhere does not decode. */
#include <stdlib.h>

#include "check.h"
#include "event_pack.h"
#include "log_builder.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) { /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 2685821657736338717ull;
}

/* Decodes payload (n events) and compares with ev; returns the number of mismatches. */
static int roundtrip(const npkit_event *ev, size_t n, const unsigned char *payload, size_t size) {
  static uint64_t lanes[NPKIT_PACK_LANES * NPKIT_PACK_WORDS];
  uint64_t out[NPKIT_PACK_WORDS];
  npkit_unpacker u;
  npkit_unpack_begin(&u, payload, size, (uint32_t)n, NPKIT_PACK_WORDS, lanes);
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (npkit_unpack_next(&u, out) != 1) return bad + (int)(n - i);
    bad += memcmp(out, &ev[i], sizeof out) != 0;
  }
  bad += npkit_unpack_next(&u, out) != 0;
  bad += u.p != payload + size;
  return bad;
}

static void test_random(void) {
  enum { N = 4096 };
  npkit_event *ev = calloc(N, sizeof *ev);
  unsigned char *buf = malloc((size_t)N * NPKIT_PACK_EVENT_MAX);
  npkit_packer *pk = malloc(sizeof *pk);
  CHECK(ev != NULL && buf != NULL && pk != NULL);
  static const uint64_t extremes[] = {0, 1, UINT64_MAX, INT64_MAX, (uint64_t)INT64_MIN, 0x80, 0x7f, 1ull << 63};
  for (int round = 0; round < 20; round++) {
    for (size_t i = 0; i < N; i++) {
      uint64_t w[NPKIT_PACK_WORDS];
      if (i > 0 && next_rand() % 4 != 0) { /* mostly a small change of an earlier event */
        memcpy(w, &ev[next_rand() % i], sizeof w);
        w[next_rand() % NPKIT_PACK_WORDS] += next_rand() % 300 - 150;
      } else {
        for (unsigned k = 0; k < NPKIT_PACK_WORDS; k++)
          w[k] = next_rand() % 3 == 0 ? extremes[next_rand() % 8] : next_rand() >> (next_rand() % 64);
      }
      memcpy(&ev[i], w, sizeof w);
      /* any kind: lanes of one kind, and two kinds in one lane (k and k + 64) */
      ev[i].kind = (uint16_t)(round % 2 ? next_rand() % 200 : next_rand());
    }
    size_t size = npkit_pack_events(pk, ev, N, buf);
    CHECK(size <= (size_t)N * NPKIT_PACK_EVENT_MAX);
    CHECK(roundtrip(ev, N, buf, size) == 0);
    /* a block decodes on its own: the second half packed alone decodes alone */
    size_t half = npkit_pack_events(pk, ev + N / 2, N / 2, buf);
    CHECK(roundtrip(ev + N / 2, N / 2, buf, half) == 0);
  }
  /* the worst case: every word, the duration included, changes by 2^63 (a 10-byte varint) */
  for (size_t i = 0; i < 64; i++) {
    uint64_t w[NPKIT_PACK_WORDS], top = (uint64_t)(i % 2) << 63;
    for (unsigned k = 0; k < NPKIT_PACK_WORDS; k++) w[k] = top;
    w[1] = w[0] + top;
    w[2] |= 0xffff;
    memcpy(&ev[i], w, sizeof w);
  }
  size_t size = npkit_pack_events(pk, ev, 64, buf);
  CHECK(size <= 64 * NPKIT_PACK_EVENT_MAX);
  CHECK(size >= 63 * NPKIT_PACK_EVENT_MAX);
  CHECK(roundtrip(ev, 64, buf, size) == 0);
  free(ev);
  free(buf);
  free(pk);
}

/* What the library's recorder packs: calls of one thread, a few hundred ns apart, each the next
 * of its communicator's collectives, with NCCL's profiler events of the call in between. */
static void test_api_stream(void) {
  enum { N = 1024 };
  npkit_event ev[N];
  static unsigned char buf[N * NPKIT_PACK_EVENT_MAX];
  static npkit_packer pk;
  uint64_t t = 1764671234567890123ull;
  for (int mixed = 0; mixed < 2; mixed++) {
    for (size_t i = 0; i < N; i++) {
      t += 300 + next_rand() % 200;
      if (mixed && i % 4 != 0) { /* three plugin API events (GroupApi, CollApi, KernelLaunch) per call */
        memset(&ev[i], 0, sizeof ev[i]);
        ev[i].kind = NPKIT_EV_PLUGIN_API;
        ev[i].start_ns = t;
        ev[i].end_ns = t + 40 + next_rand() % 10;
        ev[i].thread = 1;
        ev[i].u.plugin_api.api = i;
        ev[i].u.plugin_api.type = (uint8_t)(i % 4);
        ev[i].u.plugin_api.call_no = i / 4 + 1;
        ev[i].u.plugin_api.ctx = 1;
        continue;
      }
      ev[i] = npkit_lb_api_event(2 /* AllReduce */, 1, t, t + 80 + next_rand() % 30);
      ev[i].u.api.count = 1024;
      ev[i].u.api.bytes = 4096;
      ev[i].u.api.comm = 1;
      ev[i].u.api.seq = i;
      ev[i].u.api.call_no = i + 1;
      ev[i].u.api.stream = 0x7f0012345678ull;
    }
    size_t size = npkit_pack_events(&pk, ev, N, buf);
    fprintf(stderr, "  %s: %.1f bytes per event (%zu for %d)\n", mixed ? "calls and NCCL's API events" : "calls",
            (double)size / N, size, N);
    CHECK(size < N * 16); /* against 128 unpacked */
    CHECK(roundtrip(ev, N, buf, size) == 0);
  }
}

/* Every cut of a payload, and every flipped byte: never decodes past its end, and a cut one does
 * not pass the check. */
static void test_cuts(void) {
  enum { N = 40 };
  npkit_event ev[N];
  static unsigned char buf[N * NPKIT_PACK_EVENT_MAX];
  static npkit_packer pk;
  static uint64_t lanes[NPKIT_PACK_LANES * NPKIT_PACK_WORDS];
  uint64_t rec[NPKIT_PACK_WORDS];
  for (size_t i = 0; i < N; i++) {
    ev[i] = npkit_lb_api_event(1 + i % 7, 1, 1000 + 10 * i, 1005 + 10 * i);
    ev[i].u.api.seq = i;
  }
  size_t size = npkit_pack_events(&pk, ev, N, buf);
  CHECK(npkit_unpack_check(buf, size, N, NPKIT_PACK_WORDS, lanes, rec) == NULL);
  int bad = 0;
  for (size_t cut = 0; cut < size; cut++)
    bad += npkit_unpack_check(buf, cut, N, NPKIT_PACK_WORDS, lanes, rec) == NULL;
  CHECK(bad == 0);
  /* one more event than there is */
  CHECK(npkit_unpack_check(buf, size, N + 1, NPKIT_PACK_WORDS, lanes, rec) != NULL);
  for (size_t i = 0; i < size; i++) { /* flips: decoding stays inside the payload */
    unsigned char save = buf[i];
    buf[i] ^= 0xa5;
    (void)npkit_unpack_check(buf, size, N, NPKIT_PACK_WORDS, lanes, rec);
    buf[i] = save;
  }
}

int main(void) {
  test_random();
  test_api_stream();
  test_cuts();
  return check_exit_code("test_event_pack");
}
