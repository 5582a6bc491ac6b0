/* 64-bit FNV-1a: the hash all ranks apply to the same bytes to agree on a communicator id, and the
 * one the library's tables of names key their entries with. */
#ifndef NPKIT_HASH_H
#define NPKIT_HASH_H

#include <stdint.h>

#define NPKIT_HASH_SEED 0xcbf29ce484222325ull

static inline uint64_t npkit_hash64(uint64_t h, const void *data, uint64_t len) {
  const unsigned char *p = data;
  for (uint64_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

#endif
