/* A set of NCCL functions (npkit_fn ids), as NPKIT_OPS selects them: one bit per function of
 * nccl_api.def, more than one word of them. */
#ifndef NPKIT_FN_SET_H
#define NPKIT_FN_SET_H

#include <stdint.h>

#include "nccl_names.h"

#define NPKIT_FN_SET_WORDS 2
_Static_assert(NPKIT_FN_COUNT <= 64 * NPKIT_FN_SET_WORDS, "npkit_fn_set holds every function");

typedef struct npkit_fn_set {
  uint64_t w[NPKIT_FN_SET_WORDS];
} npkit_fn_set;

static inline int npkit_fn_set_has(const npkit_fn_set *s, unsigned fn) {
  return fn < 64 * NPKIT_FN_SET_WORDS && ((s->w[fn >> 6] >> (fn & 63)) & 1u);
}

static inline void npkit_fn_set_add(npkit_fn_set *s, unsigned fn) {
  if (fn < 64 * NPKIT_FN_SET_WORDS) s->w[fn >> 6] |= (uint64_t)1 << (fn & 63);
}

#endif
