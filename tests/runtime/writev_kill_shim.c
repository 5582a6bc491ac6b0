/* Test-only interposer: kills the process with SIGKILL in the middle of the log writer's work, the
 * way the OOM killer or `scancel --signal=KILL` can meet it.  Once the file KILL_SHIM_ARMED exists,
 * the next writev of an events block (EVENTS or EVENTS_PACKED) to a file ending in ".npkit" is
 *   KILL_SHIM_MODE=torn   cut: only the first half of its bytes reach the file, then SIGKILL;
 *   KILL_SHIM_MODE=after  written whole, then SIGKILL before the writer learns it succeeded.
 * The library's own writev of the log is the only one it touches. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../shim_next.h"

static int is_log(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 6) return 0;
  path[n] = '\0';
  return strcmp(path + n - 6, ".npkit") == 0;
}

/* The block header the writer puts first: magic "NPKB", type 1 (EVENTS) or 10 (EVENTS_PACKED). */
static int is_events_block(const struct iovec *iov, int n) {
  if (n < 1 || iov[0].iov_len < 8) return 0;
  uint32_t magic;
  uint16_t type;
  memcpy(&magic, iov[0].iov_base, 4);
  memcpy(&type, (const char *)iov[0].iov_base + 4, 2);
  return magic == 0x424b504eu && (type == 1 || type == 10);
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
  static void *real;
  ssize_t (*f)(int, const struct iovec *, int) =
      (ssize_t(*)(int, const struct iovec *, int))npkit_shim_next(&real, "writev");
  const char *armed = getenv("KILL_SHIM_ARMED");
  if (armed == NULL || access(armed, F_OK) != 0 || !is_events_block(iov, n) || !is_log(fd)) return f(fd, iov, n);
  const char *mode = getenv("KILL_SHIM_MODE");
  if (mode != NULL && strcmp(mode, "torn") == 0) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += iov[i].iov_len;
    size_t half = total / 2, done = 0;
    for (int i = 0; i < n && done < half; i++) {
      size_t k = iov[i].iov_len < half - done ? iov[i].iov_len : half - done;
      if (write(fd, iov[i].iov_base, k) != (ssize_t)k) break;
      done += k;
    }
  } else {
    f(fd, iov, n);
  }
  kill(getpid(), SIGKILL);
  for (;;) pause();
}
