/* Test-only interposer that simulates a disk filling up: once ENOSPC_AFTER_BYTES bytes have been
 * written to files whose name ends in ENOSPC_SUFFIX (default ".npkit"), further write/writev calls on
 * such files fail with ENOSPC.  Other files (and the job's own I/O) are untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../shim_next.h"

static _Atomic long long written;

static int is_target(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  const char *suffix = getenv("ENOSPC_SUFFIX") ? getenv("ENOSPC_SUFFIX") : ".npkit";
  size_t ls = strlen(suffix), lp = (size_t)n;
  return lp >= ls && strcmp(path + lp - ls, suffix) == 0;
}

static int over_limit(size_t more) {
  const char *limit = getenv("ENOSPC_AFTER_BYTES");
  long long max = limit ? atoll(limit) : 0;
  return atomic_load(&written) + (long long)more > max;
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
  static void *real; /* the library's writer and machine threads both write */
  ssize_t (*f)(int, const struct iovec *, int) =
      (ssize_t(*)(int, const struct iovec *, int))npkit_shim_next(&real, "writev");
  if (is_target(fd)) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += iov[i].iov_len;
    if (over_limit(total)) {
      errno = ENOSPC;
      return -1;
    }
    atomic_fetch_add(&written, (long long)total);
  }
  return f(fd, iov, n);
}

ssize_t write(int fd, const void *buf, size_t len) {
  static void *real;
  ssize_t (*f)(int, const void *, size_t) = (ssize_t(*)(int, const void *, size_t))npkit_shim_next(&real, "write");
  if (is_target(fd)) {
    if (over_limit(len)) {
      errno = ENOSPC;
      return -1;
    }
    atomic_fetch_add(&written, (long long)len);
  }
  return f(fd, buf, len);
}
