/* Test-only interposer: opening the kernel's current_clocksource file opens the file named by
 * CLOCKSOURCE_FILE instead, so a test can choose what the library finds there and change it while
 * the job runs.  Every other fopen goes through untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../shim_next.h"

static const char *redirect(const char *path) {
  const char *to = getenv("CLOCKSOURCE_FILE");
  if (to != NULL && path != NULL && strstr(path, "/clocksource0/current_clocksource") != NULL) return to;
  return path;
}

typedef FILE *(*fopen_fn)(const char *, const char *);

/* The next definition of `name`, looked up once.  Atomic: the library's machine thread opens files
 * beside the job's threads. */
static FILE *open_next(void **real, const char *name, const char *path, const char *mode) {
  fopen_fn f = (fopen_fn)npkit_shim_next(real, name);
  return f(redirect(path), mode);
}

FILE *fopen(const char *path, const char *mode) {
  static void *real;
  return open_next(&real, "fopen", path, mode);
}

FILE *fopen64(const char *path, const char *mode) {
  static void *real;
  return open_next(&real, "fopen64", path, mode);
}
