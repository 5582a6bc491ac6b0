#include "proto_check.h"

#include <stdint.h>

/* The messages, and their fields as tests/integration/perfetto_subset.proto declares them
 * (google/perfetto protos/perfetto/trace/perfetto_trace.proto numbers). */
enum { TRACE, PACKET, EVENT, INTERNED, ENTRY, DESCRIPTOR, PROCESS, THREAD, COUNTER, ANNOTATION, NONE };
enum { VARINT = 0, FIXED64 = 1, LEN = 2 };
enum { BYTES = 1, STRING = 2 }; /* what a LEN field without a message holds */

static const struct rule {
  int msg;
  unsigned field;
  int wire;
  int child; /* the message a LEN field holds, NONE: bytes or a string */
  int text;
} rules[] = {
    {TRACE, 1, LEN, PACKET, 0},
    {PACKET, 8, VARINT, NONE, 0},      {PACKET, 10, VARINT, NONE, 0},  {PACKET, 11, LEN, EVENT, 0},
    {PACKET, 12, LEN, INTERNED, 0},    {PACKET, 13, VARINT, NONE, 0},  {PACKET, 60, LEN, DESCRIPTOR, 0},
    {DESCRIPTOR, 1, VARINT, NONE, 0},  {DESCRIPTOR, 2, LEN, NONE, STRING}, {DESCRIPTOR, 3, LEN, PROCESS, 0},
    {DESCRIPTOR, 4, LEN, THREAD, 0},   {DESCRIPTOR, 5, VARINT, NONE, 0}, {DESCRIPTOR, 8, LEN, COUNTER, 0},
    {DESCRIPTOR, 11, VARINT, NONE, 0}, {DESCRIPTOR, 12, VARINT, NONE, 0},
    {PROCESS, 1, VARINT, NONE, 0},     {PROCESS, 3, VARINT, NONE, 0},  {PROCESS, 6, LEN, NONE, STRING},
    {PROCESS, 8, LEN, NONE, STRING},
    {THREAD, 1, VARINT, NONE, 0},      {THREAD, 2, VARINT, NONE, 0},   {THREAD, 3, VARINT, NONE, 0},
    {THREAD, 5, LEN, NONE, STRING},
    {EVENT, 3, VARINT, NONE, 0},       {EVENT, 4, LEN, ANNOTATION, 0}, {EVENT, 9, VARINT, NONE, 0},
    {EVENT, 10, VARINT, NONE, 0},      {EVENT, 11, VARINT, NONE, 0},   {EVENT, 30, VARINT, NONE, 0},
    {EVENT, 44, FIXED64, NONE, 0},     {EVENT, 47, FIXED64, NONE, 0},  {EVENT, 48, FIXED64, NONE, 0},
    {ANNOTATION, 1, VARINT, NONE, 0},  {ANNOTATION, 2, VARINT, NONE, 0}, {ANNOTATION, 3, VARINT, NONE, 0},
    {ANNOTATION, 4, VARINT, NONE, 0},  {ANNOTATION, 5, FIXED64, NONE, 0}, {ANNOTATION, 6, LEN, NONE, STRING},
    {ANNOTATION, 12, LEN, ANNOTATION, 0}, {ANNOTATION, 17, VARINT, NONE, 0},
    {INTERNED, 1, LEN, ENTRY, 0},      {INTERNED, 2, LEN, ENTRY, 0},   {INTERNED, 3, LEN, ENTRY, 0},
    {INTERNED, 29, LEN, ENTRY, 0},
    {ENTRY, 1, VARINT, NONE, 0},       {ENTRY, 2, LEN, NONE, STRING}, /* InternedString.str is bytes: npkit writes UTF-8 */
};

static int utf8_ok(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
      if ((s[i + k] & 0xC0) != 0x80) return 0;
    i += len;
  }
  return 1;
}

static int varint(const unsigned char *p, size_t n, size_t *at, uint64_t *v) {
  *v = 0;
  for (int s = 0; s < 64; s += 7) {
    if (*at >= n) return -1;
    unsigned char c = p[(*at)++];
    *v |= (uint64_t)(c & 0x7f) << s;
    if (!(c & 0x80)) return 0;
  }
  return -1;
}

/* The offset + 1 of the first error in message `msg` at p[0..n) (base: its offset in the file). */
static size_t check(int msg, const unsigned char *p, size_t n, size_t base, int depth) {
  size_t at = 0;
  if (depth > 8) return base + 1;
  while (at < n) {
    size_t start = at;
    uint64_t key, v;
    if (varint(p, n, &at, &key) != 0) return base + start + 1;
    unsigned field = (unsigned)(key >> 3);
    int wire = (int)(key & 7);
    const struct rule *r = NULL;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
      if (rules[i].msg == msg && rules[i].field == field) r = &rules[i];
    if (r == NULL || r->wire != wire) return base + start + 1;
    if (wire == VARINT) {
      if (varint(p, n, &at, &v) != 0) return base + start + 1;
    } else if (wire == FIXED64) {
      if (n - at < 8) return base + start + 1;
      at += 8;
    } else {
      if (varint(p, n, &at, &v) != 0 || v > n - at) return base + start + 1;
      size_t len = (size_t)v;
      if (r->child != NONE) {
        size_t bad = check(r->child, p + at, len, base + at, depth + 1);
        if (bad != 0) return bad;
      } else if (r->text == STRING && !utf8_ok(p + at, len)) {
        return base + at + 1;
      }
      at += len;
    }
  }
  return 0;
}

size_t npkit_perfetto_check(const unsigned char *data, size_t n) { return check(TRACE, data, n, 0, 0); }
