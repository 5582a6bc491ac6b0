/* Known data for collectives: every element a rank contributes is a small function of (rank, call,
 * index), so any rank can compute what every other rank sent and thus the exact expected result.
 * Values are small integers: their sums and products are exact in every type (bfloat16 included),
 * so a check does not depend on the order in which NCCL reduces. */
#ifndef NPKIT_TEST_DATA_H
#define NPKIT_TEST_DATA_H

#include <stddef.h>
#include <stdint.h>

typedef enum npkit_test_pattern_kind {
  NPKIT_TEST_PAT_SMALL = 0, /* 1..5: sums, averages, copies */
  NPKIT_TEST_PAT_BINARY,    /* 1..2: products stay exact */
  NPKIT_TEST_PAT_WIDE,      /* -100..99 (0..199 for unsigned types): max / min */
} npkit_test_pattern_kind;

/* Element i of the data rank `rank` contributes to call `call`, as stored in `datatype`. */
double npkit_test_pattern(npkit_test_pattern_kind kind, int datatype, int rank, unsigned call,
                          size_t i);

/* Element access for every NCCL type except the float8 ones (float16 and bfloat16 converted with
 * round to nearest even). */
double npkit_test_load(const void *buf, int datatype, size_t i);
void npkit_test_store(void *buf, int datatype, size_t i, double value);
/* `value` rounded to what `datatype` can hold. */
double npkit_test_quantize(int datatype, double value);

/* FNV-1a 64 over n bytes, continuing from h (start with NPKIT_TEST_FNV_INIT). */
#define NPKIT_TEST_FNV_INIT 0xcbf29ce484222325ull
uint64_t npkit_test_fnv1a(const void *buf, size_t n, uint64_t h);

#endif
