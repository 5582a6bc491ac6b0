/* Minimal assertions for the C unit tests: a failed check prints where and what, the test goes on,
 * and check_exit_code() turns the count of failures into the exit status. */
#ifndef NPKIT_TEST_CHECK_H
#define NPKIT_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                            \
  do {                                                                         \
    check_count++;                                                             \
    if (!(cond)) {                                                             \
      check_failures++;                                                        \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* CHECK with a printf-style message that says what was found: CHECKF(err < 50, "error %d ns", err). */
#define CHECKF(cond, ...)                                                         \
  do {                                                                            \
    check_count++;                                                                \
    if (!(cond)) {                                                                \
      check_failures++;                                                           \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                               \
      fprintf(stderr, "\n");                                                      \
    }                                                                             \
  } while (0)

#define CHECK_EQ_U64(a, b)                                                                      \
  do {                                                                                          \
    uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                            \
    check_count++;                                                                              \
    if (a_ != b_) {                                                                             \
      check_failures++;                                                                         \
      fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", __FILE__, __LINE__, \
              #a, #b, a_, b_);                                                                  \
    }                                                                                           \
  } while (0)

#define CHECK_STR(a, b)                                                                                 \
  do {                                                                                                  \
    const char *a_ = (a), *b_ = (b);                                                                    \
    check_count++;                                                                                      \
    if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {                                              \
      check_failures++;                                                                                 \
      fprintf(stderr, "%s:%d: %s == %s failed:\n  got  '%s'\n  want '%s'\n", __FILE__, __LINE__, #a, #b, \
              a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                                  \
    }                                                                                                   \
  } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                        \
  do {                                                                                                     \
    const char *h_ = (hay), *n_ = (needle);                                                                \
    check_count++;                                                                                         \
    if (h_ == NULL || strstr(h_, n_) == NULL) {                                                            \
      check_failures++;                                                                                    \
      fprintf(stderr, "%s:%d: '%s' does not contain '%s'\n", __FILE__, __LINE__, h_ ? h_ : "(null)", n_); \
    }                                                                                                      \
  } while (0)

static int check_exit_code(const char *name) {
  if (check_failures) {
    fprintf(stderr, "%s: %d of %d checks failed\n", name, check_failures, check_count);
    return 1;
  }
  printf("%s: all %d checks passed\n", name, check_count);
  return 0;
}

#endif
