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
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t c = ~crc;
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
