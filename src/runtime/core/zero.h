/* Zeroing the small records of the hot paths (an event, a plugin descriptor) in plain vector stores.
 * gcc compiles a memset of 88 or 128 bytes, and a loop of zero stores it recognises as one, to
 * `rep stos`, whose start-up cost was the largest single item of a wrapped call and of a plugin
 * event (perf, AMD EPYC).  The stored value passes through an empty asm, so the compiler cannot
 * tell it is zero and keeps the stores. */
#ifndef NPKIT_ZERO_H
#define NPKIT_ZERO_H

#include <stddef.h>
#include <stdint.h>

/* Zeroes n bytes at p; n a multiple of 8 known at compile time (the loop then unrolls). */
static inline void npkit_zero_small(void *p, size_t n) {
  typedef long long v2di __attribute__((vector_size(16), may_alias, aligned(1)));
  typedef uint64_t u64a __attribute__((may_alias, aligned(1)));
  v2di z = {0, 0};
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+x"(z));
#elif defined(__aarch64__)
  __asm__("" : "+w"(z));
#endif
  v2di *v = (v2di *)p;
  for (size_t i = 0; i < n / 16; i++) v[i] = z;
  if (n % 16 != 0) *(u64a *)(void *)((char *)p + n - 8) = (uint64_t)z[0];
}

#endif
