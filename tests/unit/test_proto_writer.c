/* The protobuf encoder (src/format/proto_writer.c): the bytes of each field kind against the
 * examples of the protobuf encoding guide (https://protobuf.dev/programming-guides/encoding/:
 * 150 in field 1 is 08 96 01, "testing" in field 2 is 12 07 74 65 73 74 69 6e 67), nested lengths
 * as the shortest varint (the body moved back), a large stream read back by this test's own decoder (every length fits,
 * every value comes back, nothing is cut where the buffer was flushed), `protoc --decode_raw` on
 * the same stream where protoc is installed, and the errors: nesting too deep, an end without a
 * begin, a file that cannot be written. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "proto_writer.h"

/* What was written to fd (caller frees); *n its length. */
static unsigned char *slurp(int fd, size_t *n) {
  off_t len = lseek(fd, 0, SEEK_END);
  unsigned char *b = malloc((size_t)len + 1);
  if (b == NULL || pread(fd, b, (size_t)len, 0) != len) {
    perror("pread");
    exit(1);
  }
  *n = (size_t)len;
  return b;
}

static int hex_eq(const unsigned char *got, size_t n, const char *want_hex) {
  size_t k = strlen(want_hex) / 2;
  if (n != k) {
    fprintf(stderr, "  length %zu, want %zu\n", n, k);
    return 0;
  }
  for (size_t i = 0; i < k; i++) {
    unsigned v;
    sscanf(want_hex + 2 * i, "%2x", &v);
    if (got[i] != v) {
      fprintf(stderr, "  byte %zu: %02x, want %02x\n", i, got[i], v);
      return 0;
    }
  }
  return 1;
}

/* Encodes with `emit` into a temporary file and compares the bytes. */
static void expect(void (*emit)(npkit_pb *w), const char *want_hex) {
  FILE *f = tmpfile();
  npkit_pb w;
  CHECK(f != NULL && npkit_pb_init(&w, fileno(f)) == 0);
  emit(&w);
  char err[128];
  CHECK(npkit_pb_finish(&w, err, sizeof err) == 0);
  size_t n;
  unsigned char *b = slurp(fileno(f), &n);
  CHECKF(hex_eq(b, n, want_hex), "want %s", want_hex);
  free(b);
  fclose(f);
}

static void e_varint(npkit_pb *w) { npkit_pb_uint(w, 1, 150); }
static void e_string(npkit_pb *w) { npkit_pb_string(w, 2, "testing"); }
static void e_nested(npkit_pb *w) {
  npkit_pb_begin(w, 3);
  npkit_pb_uint(w, 1, 150);
  npkit_pb_end(w);
}
static void e_negative(npkit_pb *w) { npkit_pb_int(w, 1, -1); }
static void e_fixed(npkit_pb *w) { npkit_pb_fixed64(w, 47, 0x0102030405060708ull); }
static void e_double(npkit_pb *w) { npkit_pb_double(w, 5, 1.0); }
static void e_bool_empty(npkit_pb *w) {
  npkit_pb_bool(w, 2, 7);
  npkit_pb_bytes(w, 10, "", 0);
  npkit_pb_begin(w, 11);
  npkit_pb_end(w);
}

/* ---- a small decoder: the fields of a message, checked against its bounds ---- */

static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
  *v = 0;
  for (int s = 0; s < 70 && *p < end; s += 7) {
    unsigned char c = *(*p)++;
    *v |= (uint64_t)(c & 0x7f) << s;
    if (!(c & 0x80)) return 0;
  }
  return -1;
}

/* A packet of the stream test: field 1 (Trace.packet) holding {8: i, 11: {23: "name i", 4: {1: i*3,
 * 3: -i}}, 47: fixed64 i}; returns 0 when every field is where and what it should be. */
static int check_packet(const unsigned char *p, const unsigned char *end, uint64_t i) {
  int seen = 0;
  while (p < end) {
    uint64_t tag, v;
    if (get_varint(&p, end, &tag) != 0) return -1;
    unsigned field = (unsigned)(tag >> 3), wire = (unsigned)(tag & 7);
    if (wire == NPKIT_PB_VARINT) {
      if (get_varint(&p, end, &v) != 0 || field != 8 || v != i) return -1;
      seen |= 1;
    } else if (wire == NPKIT_PB_FIXED64) {
      if (end - p < 8 || field != 47) return -1;
      uint64_t x = 0;
      for (int k = 0; k < 8; k++) x |= (uint64_t)p[k] << (8 * k);
      p += 8;
      if (x != i) return -1;
      seen |= 2;
    } else if (wire == NPKIT_PB_LEN && field == 11) {
      if (get_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p)) return -1;
      const unsigned char *q = p, *qend = p + v;
      p = qend;
      char name[32];
      snprintf(name, sizeof name, "name %llu", (unsigned long long)i);
      uint64_t t2, n2, t3, n3, a, b;
      if (get_varint(&q, qend, &t2) != 0 || t2 != ((23u << 3) | 2) || get_varint(&q, qend, &n2) != 0 ||
          n2 != strlen(name) || memcmp(q, name, n2) != 0)
        return -1;
      q += n2;
      if (get_varint(&q, qend, &t3) != 0 || t3 != ((4u << 3) | 2) || get_varint(&q, qend, &n3) != 0 ||
          q + n3 != qend)
        return -1;
      if (get_varint(&q, qend, &t2) != 0 || t2 != (1u << 3) || get_varint(&q, qend, &a) != 0 || a != i * 3 ||
          get_varint(&q, qend, &t2) != 0 || t2 != (3u << 3) || get_varint(&q, qend, &b) != 0 ||
          (int64_t)b != -(int64_t)i || q != qend)
        return -1;
      seen |= 4;
    } else {
      return -1;
    }
  }
  return seen == 7 ? 0 : -1;
}

static void test_stream(void) {
  enum { PACKETS = 60000 };
  char path[] = "/tmp/npkit_pb_XXXXXX";
  int fd = mkstemp(path);
  npkit_pb w;
  CHECK(fd >= 0 && npkit_pb_init(&w, fd) == 0);
  for (uint64_t i = 0; i < PACKETS; i++) {
    char name[32];
    snprintf(name, sizeof name, "name %llu", (unsigned long long)i);
    npkit_pb_begin(&w, 1);
    npkit_pb_uint(&w, 8, i);
    npkit_pb_begin(&w, 11);
    npkit_pb_string(&w, 23, name);
    npkit_pb_begin(&w, 4);
    npkit_pb_uint(&w, 1, i * 3);
    npkit_pb_int(&w, 3, -(int64_t)i);
    npkit_pb_end(&w);
    npkit_pb_end(&w);
    npkit_pb_fixed64(&w, 47, i);
    npkit_pb_end(&w);
  }
  uint64_t size = npkit_pb_size(&w);
  char err[128];
  CHECK(npkit_pb_finish(&w, err, sizeof err) == 0);
  size_t n;
  unsigned char *b = slurp(fd, &n);
  CHECK_EQ_U64(n, size);
  CHECK(n > (2u << 20)); /* the buffer (1 MiB) was flushed on the way */
  const unsigned char *p = b, *end = b + n;
  uint64_t i = 0, bad = 0;
  while (p < end) {
    uint64_t tag, len;
    if (get_varint(&p, end, &tag) != 0 || tag != ((1u << 3) | 2) || get_varint(&p, end, &len) != 0 ||
        len > (uint64_t)(end - p)) {
      bad++;
      break;
    }
    bad += check_packet(p, p + len, i++) != 0;
    p += len;
  }
  CHECK_EQ_U64(bad, 0);
  CHECK_EQ_U64(i, PACKETS);
  free(b);
  /* an independent reader, where there is one */
  if (access("/usr/bin/protoc", X_OK) == 0) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "/usr/bin/protoc --decode_raw < %s | grep -c '^1 {' ", path);
    FILE *pp = popen(cmd, "r");
    unsigned long count = 0;
    CHECK(pp != NULL && fscanf(pp, "%lu", &count) == 1);
    CHECK(pp != NULL && pclose(pp) == 0);
    CHECK_EQ_U64(count, PACKETS);
  } else {
    fprintf(stderr, "test_proto_writer: protoc not installed: the stream was checked by this test's decoder only\n");
  }
  close(fd);
  unlink(path);
}

static void test_errors(void) {
  char err[128] = "";
  npkit_pb w;
  FILE *f = tmpfile();
  CHECK(npkit_pb_init(&w, fileno(f)) == 0);
  for (int d = 0; d <= NPKIT_PB_MAX_DEPTH; d++) npkit_pb_begin(&w, 1);
  for (int d = 0; d <= NPKIT_PB_MAX_DEPTH; d++) npkit_pb_end(&w);
  CHECK(npkit_pb_finish(&w, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "nested too deep");
  CHECK(npkit_pb_init(&w, fileno(f)) == 0);
  npkit_pb_end(&w);
  CHECK(npkit_pb_finish(&w, err, sizeof err) == -1);
  CHECK(npkit_pb_init(&w, fileno(f)) == 0);
  npkit_pb_begin(&w, 1);
  CHECK(npkit_pb_finish(&w, err, sizeof err) == -1); /* left open */
  fclose(f);
  int ro = open("/dev/null", O_RDONLY);
  CHECK(npkit_pb_init(&w, ro) == 0);
  npkit_pb_string(&w, 1, "lost");
  CHECK(npkit_pb_finish(&w, err, sizeof err) == -1);
  CHECK_CONTAINS(err, "Bad file descriptor");
  close(ro);
}

/* A top-level message whose length needs more bytes than were kept, at the very end of the buffer:
 * the room for them is made while it is still open (a flush then would write it unfinished and
 * empty the buffer under the body that moves).  The bytes are read back whole. */
static void test_long_length_at_the_buffer_end(void) {
  FILE *f = tmpfile();
  npkit_pb w;
  char err[256];
  CHECK(f != NULL && npkit_pb_init(&w, fileno(f)) == 0);
  size_t big = w.cap - 34;
  unsigned char *payload = calloc(1, big);
  CHECK(payload != NULL);
  for (int i = 0; i < 5; i++) npkit_pb_begin(&w, 1);
  npkit_pb_bytes(&w, 2, payload, big);
  npkit_pb_uint(&w, 3, UINT64_MAX);
  for (int i = 0; i < 5; i++) npkit_pb_end(&w);
  npkit_pb_uint(&w, 4, 7); /* a second top-level field after it */
  CHECK(npkit_pb_finish(&w, err, sizeof err) == 0);
  long size = ftell(f) >= 0 ? (fseek(f, 0, SEEK_END), ftell(f)) : -1;
  unsigned char *b = malloc((size_t)size);
  CHECK(b != NULL && fseek(f, 0, SEEK_SET) == 0 && fread(b, 1, (size_t)size, f) == (size_t)size);
  /* five nested messages 1, each a tag 0a and a varint length, then 12 <big> ..., 18 <10 bytes>, 20 07 */
  size_t at = 0, inner = (size_t)size - 2;
  for (int i = 0; i < 5; i++) {
    CHECK(b[at] == 0x0a);
    uint64_t len = 0;
    int sh = 0;
    at++;
    while (b[at] & 0x80) len |= (uint64_t)(b[at++] & 0x7f) << sh, sh += 7;
    len |= (uint64_t)b[at++] << sh;
    CHECK(len == inner - at);
  }
  CHECK(b[at] == 0x12);
  CHECK(b[size - 2] == 0x20 && b[size - 1] == 7);
  free(b);
  free(payload);
  fclose(f);
}

int main(void) {
  test_long_length_at_the_buffer_end();
  expect(e_varint, "089601");
  expect(e_string, "120774657374696e67");
  expect(e_nested, "1a03089601"); /* the guide's nested example: 1a 03 08 96 01 */
  expect(e_negative, "08ffffffffffffffffff01");
  expect(e_fixed, "f9020807060504030201");
  expect(e_double, "29000000000000f03f");
  expect(e_bool_empty, "100152005a00"); /* true is 1; an empty string; an empty message */
  test_stream();
  test_errors();
  return check_exit_code("test_proto_writer");
}
