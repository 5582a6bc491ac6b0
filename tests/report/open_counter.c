/*
 * LD_PRELOAD shim for the tests: every open of a file whose name ends in ".npkit" appends the
 * name and a newline to the file named by NPKIT_OPEN_COUNT_FILE, so that a test can count how
 * many times a command opened each log.  The calls go on to glibc's own functions (dlsym
 * RTLD_NEXT); nothing else changes.  open, open64, openat, openat64, fopen and fopen64 are the
 * entry points through which glibc opens a file by name.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void note(const char *path) {
  size_t n = path != NULL ? strlen(path) : 0;
  if (n < 6 || strcmp(path + n - 6, ".npkit") != 0) return;
  const char *to = getenv("NPKIT_OPEN_COUNT_FILE");
  if (to == NULL) return;
  /* raw system calls: the note must not recurse into the wrappers below */
  int fd = (int)syscall(SYS_openat, AT_FDCWD, to, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[4096];
  if (n > sizeof(line) - 1) n = sizeof(line) - 1;
  memcpy(line, path, n);
  line[n] = '\n';
  (void)syscall(SYS_write, fd, line, n + 1);
  (void)syscall(SYS_close, fd);
}

static mode_t mode_of(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define NEXT(type, name) ((type)dlsym(RTLD_NEXT, name))

int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_of(flags, ap);
  va_end(ap);
  note(path);
  return NEXT(int (*)(const char *, int, ...), "open")(path, flags, m);
}

int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_of(flags, ap);
  va_end(ap);
  note(path);
  return NEXT(int (*)(const char *, int, ...), "open64")(path, flags, m);
}

int openat(int dir, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_of(flags, ap);
  va_end(ap);
  note(path);
  return NEXT(int (*)(int, const char *, int, ...), "openat")(dir, path, flags, m);
}

int openat64(int dir, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_of(flags, ap);
  va_end(ap);
  note(path);
  return NEXT(int (*)(int, const char *, int, ...), "openat64")(dir, path, flags, m);
}

FILE *fopen(const char *path, const char *mode) {
  note(path);
  return NEXT(FILE * (*)(const char *, const char *), "fopen")(path, mode);
}

FILE *fopen64(const char *path, const char *mode) {
  note(path);
  return NEXT(FILE * (*)(const char *, const char *), "fopen64")(path, mode);
}
