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
  /* Atomic: the library's machine thread opens files too. */
  static FILE *(*real)(const char *, const char *);
  FILE *(*f)(const char *, const char *) = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
    __atomic_store_n(&real, f, __ATOMIC_RELEASE);
  }
  return f(redirect(path), mode);
}

FILE *fopen64(const char *path, const char *mode) {
  /* Atomic: the library's machine thread opens files too. */
  static FILE *(*real)(const char *, const char *);
  FILE *(*f)(const char *, const char *) = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen64");
    __atomic_store_n(&real, f, __ATOMIC_RELEASE);
  }
  return f(redirect(path), mode);
}
