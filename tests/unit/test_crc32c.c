/* CRC32C: the check values of RFC 3720 (iSCSI, appendix B.4) and the usual "123456789"; the
 * instruction and table versions agree on every length and alignment; a checksum can be continued
 * over pieces. */
#include <stdlib.h>

#include "check.h"
#include "crc32c.h"

static uint32_t bit_by_bit(const unsigned char *p, size_t n) {
  /* the definition, one bit at a time, independent of both implementations */
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return ~c;
}

int main(void) {
  unsigned char zeros[32] = {0}, ones[32], inc[32], dec[32];
  for (int i = 0; i < 32; i++) {
    ones[i] = 0xff;
    inc[i] = (unsigned char)i;
    dec[i] = (unsigned char)(31 - i);
  }
  const struct {
    const void *p;
    size_t n;
    uint32_t want;
  } vectors[] = {{"123456789", 9, 0xe3069283u}, {zeros, 32, 0x8a9136aau}, {ones, 32, 0x62a8ab43u},
                 {inc, 32, 0x46dd794eu},        {dec, 32, 0x113fdb5cu},   {"", 0, 0}};
  for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
    CHECK_EQ_U64(npkit_crc32c(0, vectors[i].p, vectors[i].n), vectors[i].want);
    CHECK_EQ_U64(npkit_crc32c_table(0, vectors[i].p, vectors[i].n), vectors[i].want);
    CHECK_EQ_U64(bit_by_bit(vectors[i].p, vectors[i].n), vectors[i].want);
    if (npkit_crc32c_hw_available()) CHECK_EQ_U64(npkit_crc32c_hw(0, vectors[i].p, vectors[i].n), vectors[i].want);
  }
  fprintf(stderr, "crc32c: the CPU's crc32 instruction is %s\n", npkit_crc32c_hw_available() ? "used" : "absent");

  unsigned char buf[1100];
  srand(7);
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)rand();
  int bad = 0;
  for (size_t off = 0; off < 8; off++)
    for (size_t n = 0; n + off <= sizeof buf && n < 1024; n += n < 40 ? 1 : 37) {
      uint32_t want = bit_by_bit(buf + off, n);
      bad += npkit_crc32c_table(0, buf + off, n) != want;
      bad += npkit_crc32c(0, buf + off, n) != want;
      if (npkit_crc32c_hw_available()) bad += npkit_crc32c_hw(0, buf + off, n) != want;
      size_t half = n / 3;
      bad += npkit_crc32c(npkit_crc32c(0, buf + off, half), buf + off + half, n - half) != want;
    }
  /* lengths that take the instruction's three-lane paths (3 x 256 and 3 x 8192 bytes), with
   * every kind of remainder */
  static unsigned char big[100000 + 8];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (unsigned char)rand();
  const size_t lens[] = {767, 768, 769, 775, 776, 1536, 2000, 24575, 24576, 24577, 24583, 49152, 50000, 99999};
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
    for (size_t off = 0; off < 3; off++) {
      uint32_t want = bit_by_bit(big + off, lens[k]);
      bad += npkit_crc32c(0, big + off, lens[k]) != want;
      bad += npkit_crc32c_table(0, big + off, lens[k]) != want;
      if (npkit_crc32c_hw_available()) bad += npkit_crc32c_hw(0, big + off, lens[k]) != want;
      bad += npkit_crc32c(npkit_crc32c(0, big + off, 100), big + off + 100, lens[k] - 100) != want;
    }
  CHECK_EQ_U64(bad, 0);
  return check_exit_code("test_crc32c");
}
