#include "duration.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double unit_ns(const char *u) {
  if (strcmp(u, "ns") == 0) return 1;
  if (strcmp(u, "us") == 0) return 1e3;
  if (strcmp(u, "ms") == 0) return 1e6;
  if (strcmp(u, "s") == 0) return 1e9;
  return -1;
}

int npkit_parse_duration(const char *s, const char *default_unit, double *ns) {
  char *end;
  if (s == NULL || *s == '\0') return -1;
  double v = strtod(s, &end);
  if (end == s || !isfinite(v)) return -1;
  double k = unit_ns(*end ? end : default_unit);
  if (k < 0) return -1;
  *ns = v * k;
  return 0;
}
