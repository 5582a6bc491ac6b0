#include "event_pack.h"

#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "packed events are little-endian words read in place"
#endif

static inline unsigned char *put_varint(unsigned char *o, uint64_t v) {
  while (v >= 0x80) {
    *o++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *o++ = (unsigned char)v;
  return o;
}

static inline uint64_t zigzag(uint64_t d) { return (d << 1) ^ (uint64_t)((int64_t)d >> 63); }
static inline uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

/* The words of ev (the second one as the duration) minus those of prev into d, ev's words into
 * prev; returns the mask of the words that differ. */
#if defined(__SSE2__) && !defined(NPKIT_PACK_PORTABLE) /* the portable one is tested too */
#include <emmintrin.h>
static inline uint32_t diff_words(const npkit_event *ev, uint64_t *prev, uint64_t *d) {
  const __m128i *e = (const __m128i *)(const void *)ev;
  __m128i *p = (__m128i *)(void *)prev, *o = (__m128i *)(void *)d;
  uint32_t mask = 0;
  for (unsigned v = 0; v < NPKIT_PACK_WORDS / 2; v++) {
    __m128i x = _mm_loadu_si128(e + v), y = _mm_loadu_si128(p + v);
    if (v == 0) x = _mm_sub_epi64(x, _mm_slli_si128(x, 8)); /* end - start */
    __m128i eq = _mm_cmpeq_epi32(x, y);
    eq = _mm_and_si128(eq, _mm_shuffle_epi32(eq, _MM_SHUFFLE(2, 3, 0, 1))); /* both halves of a word */
    mask |= (uint32_t)(~_mm_movemask_pd(_mm_castsi128_pd(eq)) & 3) << (2 * v);
    _mm_storeu_si128(o + v, _mm_sub_epi64(x, y));
    _mm_storeu_si128(p + v, x);
  }
  return mask;
}
#else
static inline uint32_t diff_words(const npkit_event *ev, uint64_t *prev, uint64_t *d) {
  uint64_t w[NPKIT_PACK_WORDS];
  memcpy(w, ev, sizeof w);
  w[1] -= w[0];
  uint32_t mask = 0;
  for (unsigned i = 0; i < NPKIT_PACK_WORDS; i++) {
    d[i] = w[i] - prev[i];
    mask |= (uint32_t)(d[i] != 0) << i;
  }
  memcpy(prev, w, sizeof w);
  return mask;
}
#endif

size_t npkit_pack_events(npkit_packer *pk, const npkit_event *ev, size_t n, unsigned char *out) {
  unsigned char *o = out;
  pk->seen = 0;
  for (size_t k = 0; k < n; k++) {
    unsigned kind = ev[k].kind, lane = kind % NPKIT_PACK_LANES;
    uint64_t *prev = pk->prev[lane];
    if (!(pk->seen >> lane & 1)) {
      memset(prev, 0, sizeof pk->prev[lane]);
      pk->seen |= 1ull << lane;
    }
    o = put_varint(o, kind);
    unsigned char *m = o;
    o += (NPKIT_PACK_WORDS + 7) / 8;
    /* The mask first, without a branch per word (which words change follows no pattern the
     * branch predictor learns across a mix of kinds), then only the words that changed; the
     * event becomes the lane's previous one on the way. */
    uint64_t d[NPKIT_PACK_WORDS];
    uint32_t mask = diff_words(&ev[k], prev, d);
    for (uint32_t left = mask; left != 0; left &= left - 1) o = put_varint(o, zigzag(d[__builtin_ctz(left)]));
    _Static_assert(NPKIT_PACK_WORDS == 16, "the mask is written as two bytes");
    m[0] = (unsigned char)mask;
    m[1] = (unsigned char)(mask >> 8);
  }
  return (size_t)(o - out);
}

void npkit_unpack_begin(npkit_unpacker *u, const void *payload, size_t size, uint32_t count, uint32_t words,
                        uint64_t *lanes) {
  u->p = payload;
  u->end = u->p + size;
  u->left = count;
  u->words = words;
  u->seen = 0;
  u->lanes = lanes;
}

/* A varint of at most 10 bytes that fits 64 bits; 0 when it runs past end or does not fit. */
static inline int get_varint(const unsigned char **pp, const unsigned char *end, uint64_t *v) {
  const unsigned char *p = *pp;
  uint64_t x = 0;
  for (unsigned shift = 0; p < end; shift += 7) {
    unsigned char b = *p++;
    if (shift == 63 && b > 1) return 0;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      *pp = p;
      return 1;
    }
    if (shift == 63) return 0;
  }
  return 0;
}

int npkit_unpack_next(npkit_unpacker *u, uint64_t *out) {
  if (u->left == 0) return 0;
  const unsigned char *p = u->p;
  uint64_t kind;
  if (!get_varint(&p, u->end, &kind) || kind > 0xffff) return -1;
  uint32_t words = u->words, mbytes = (words + 7) / 8;
  if ((size_t)(u->end - p) < mbytes) return -1;
  const unsigned char *m = p;
  p += mbytes;
  if (words % 8 != 0 && (m[mbytes - 1] >> (words % 8)) != 0) return -1;
  unsigned lane = (unsigned)(kind % NPKIT_PACK_LANES);
  uint64_t *prev = u->lanes + (size_t)lane * words;
  if (!(u->seen >> lane & 1)) {
    memset(prev, 0, (size_t)words * sizeof *prev);
    u->seen |= 1ull << lane;
  }
  for (uint32_t i = 0; i < words; i++) {
    if (m[i / 8] >> (i % 8) & 1) {
      uint64_t z;
      if (!get_varint(&p, u->end, &z)) return -1;
      prev[i] += unzigzag(z);
    }
    out[i] = prev[i];
  }
  if (words >= 2) out[1] += out[0];
  if (words < 3 || (out[2] & 0xffff) != kind) return -1;
  u->p = p;
  u->left--;
  return 1;
}

const char *npkit_unpack_check(const void *payload, size_t size, uint32_t count, uint32_t words, uint64_t *lanes,
                               uint64_t *out) {
  uint64_t first, last;
  return npkit_unpack_check_span(payload, size, count, words, lanes, out, &first, &last);
}

const char *npkit_unpack_check_span(const void *payload, size_t size, uint32_t count, uint32_t words, uint64_t *lanes,
                                    uint64_t *out, uint64_t *first_ns, uint64_t *last_ns) {
  npkit_unpacker u;
  npkit_unpack_begin(&u, payload, size, count, words, lanes);
  int k;
  *first_ns = UINT64_MAX;
  *last_ns = 0;
  while ((k = npkit_unpack_next(&u, out)) == 1) {
    /* words 0 and 1 of an event are its start and end (npkit_event) */
    if (out[0] < *first_ns) *first_ns = out[0];
    uint64_t end = out[1] > out[0] ? out[1] : out[0];
    if (end > *last_ns) *last_ns = end;
  }
  if (k < 0) return "an event does not decode";
  size_t rest = (size_t)(u.end - u.p);
  if (rest >= 8) return "bytes after the last event";
  for (size_t i = 0; i < rest; i++)
    if (u.p[i] != 0) return "bytes after the last event";
  return NULL;
}
