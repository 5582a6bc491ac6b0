#include "test_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int npkit_test_parse_long(const char *what, const char *text, long min, long max, long *out) {
  char *end = NULL;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (!text || end == text || *end != '\0' || errno == ERANGE || v < min || v > max) {
    fprintf(stderr, "%s needs an integer in [%ld, %ld], got '%s'\n", what, min, max,
            text ? text : "(nothing)");
    return -1;
  }
  *out = v;
  return 0;
}
