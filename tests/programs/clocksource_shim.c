/* Test-only interposer: opening the kernel's current_clocksource file opens the file named by
 * CLOCKSOURCE_FILE instead, so a test can choose what the library finds there and change it while
 * the job runs.  Every other fopen goes through untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *redirect(const char *path) {
  const char *to = getenv("CLOCKSOURCE_FILE");
  if (to != NULL && path != NULL && strstr(path, "/clocksource0/current_clocksource") != NULL) return to;
  return path;
}

FILE *fopen(const char *path, const char *mode) {
  static FILE *(*real)(const char *, const char *);
  if (real == NULL) real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
  return real(redirect(path), mode);
}

FILE *fopen64(const char *path, const char *mode) {
  static FILE *(*real)(const char *, const char *);
  if (real == NULL) real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen64");
  return real(redirect(path), mode);
}
