#include "crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NPKIT_CRC32C_X86 1
#include <nmmintrin.h>
#endif

#define POLY 0x82F63B78u /* 0x1EDC6F41 bit-reversed */

/* table[k][b]: the register after byte b followed by k zero bytes (slicing by 8). */
static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void) {
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t c = b;
    for (int i = 0; i < 8; i++) c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
    table[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; b++)
    for (int k = 1; k < 8; k++) table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

uint32_t npkit_crc32c_table(uint32_t crc, const void *p, size_t n) {
  pthread_once(&table_once, table_init);
  const unsigned char *s = p;
  uint32_t c = ~crc;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8); /* little endian: the event log is read in place only there (log_reader.c) */
    uint32_t lo = (uint32_t)w ^ c, hi = (uint32_t)(w >> 32);
    c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
        table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^ table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
    s += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ table[0][(c ^ *s++) & 0xff];
  return ~c;
}

#ifdef NPKIT_CRC32C_X86
/* The instruction takes 3 cycles and starts one per cycle: three interleaved streams keep it busy.
 * A block is cut in three parts checksummed at once, the first from the running register, the
 * others from 0; the register after all three is shift(shift(a) ^ b) ^ c, where shift is what
 * LANE zero bytes do to a register (linear over GF(2): a table lookup per register byte). */
#define LANE_LONG 8192u
#define LANE_SHORT 256u
static uint32_t shift_long[4][256], shift_short[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

/* A linear map of 32-bit registers as the images of its 32 unit vectors. */
static uint32_t map_apply(const uint32_t m[32], uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; v != 0; i++, v >>= 1)
    if (v & 1u) r ^= m[i];
  return r;
}

static void map_compose(uint32_t out[32], const uint32_t a[32], const uint32_t b[32]) {
  uint32_t t[32];
  for (int i = 0; i < 32; i++) t[i] = map_apply(a, b[i]);
  memcpy(out, t, sizeof t);
}

/* The table of the map that `bytes` zero bytes apply to a register. */
static void shift_table(uint32_t tab[4][256], size_t bytes) {
  uint32_t p[32], op[32];
  p[0] = POLY; /* one zero bit: shift right, folding the polynomial in when the low bit was set */
  for (int i = 1; i < 32; i++) p[i] = 1u << (i - 1);
  for (int k = 0; k < 3; k++) map_compose(p, p, p); /* one zero byte */
  for (int i = 0; i < 32; i++) op[i] = 1u << i;
  for (size_t n = bytes; n != 0; n >>= 1) {
    if (n & 1) map_compose(op, p, op);
    if (n > 1) map_compose(p, p, p);
  }
  for (int k = 0; k < 4; k++)
    for (uint32_t b = 0; b < 256; b++) tab[k][b] = map_apply(op, b << (8 * k));
}

static void shift_init(void) {
  shift_table(shift_long, LANE_LONG);
  shift_table(shift_short, LANE_SHORT);
}

static uint32_t shift(const uint32_t tab[4][256], uint32_t c) {
  return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^ tab[2][(c >> 16) & 0xff] ^ tab[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint64_t lanes3(uint64_t c0, const unsigned char *s, size_t lane,
                                                           const uint32_t tab[4][256]) {
  uint64_t c1 = 0, c2 = 0;
  for (const unsigned char *end = s + lane; s < end; s += 8) {
    uint64_t w0, w1, w2;
    memcpy(&w0, s, 8);
    memcpy(&w1, s + lane, 8);
    memcpy(&w2, s + 2 * lane, 8);
    c0 = _mm_crc32_u64(c0, w0);
    c1 = _mm_crc32_u64(c1, w1);
    c2 = _mm_crc32_u64(c2, w2);
  }
  uint32_t c = shift(tab, (uint32_t)c0) ^ (uint32_t)c1;
  return shift(tab, c) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t c = ~crc;
  if (n >= 3 * LANE_SHORT) pthread_once(&shift_once, shift_init);
  for (; n >= 3 * LANE_LONG; s += 3 * LANE_LONG, n -= 3 * LANE_LONG) c = lanes3(c, s, LANE_LONG, shift_long);
  for (; n >= 3 * LANE_SHORT; s += 3 * LANE_SHORT, n -= 3 * LANE_SHORT) c = lanes3(c, s, LANE_SHORT, shift_short);
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    c = _mm_crc32_u64(c, w);
    s += 8;
    n -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *s++);
  return ~c32;
}
#endif

int npkit_crc32c_hw_available(void) {
#ifdef NPKIT_CRC32C_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
#else
  return 0;
#endif
}

uint32_t npkit_crc32c_hw(uint32_t crc, const void *p, size_t n) {
#ifdef NPKIT_CRC32C_X86
  if (npkit_crc32c_hw_available()) return crc_sse42(crc, p, n);
#endif
  (void)p;
  (void)n;
  return crc;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);
static _Atomic(crc_fn) chosen;

uint32_t npkit_crc32c(uint32_t crc, const void *p, size_t n) {
  crc_fn f = atomic_load_explicit(&chosen, memory_order_relaxed);
  if (f == NULL) {
    /* Decided once; threads that race here decide the same. */
    f = npkit_crc32c_table;
#ifdef NPKIT_CRC32C_X86
    if (npkit_crc32c_hw_available()) f = crc_sse42;
#endif
    atomic_store_explicit(&chosen, f, memory_order_relaxed);
  }
  return f(crc, p, n);
}
