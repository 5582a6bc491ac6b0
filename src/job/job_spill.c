#include "job_spill.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"

void npkit_spill_init(npkit_spill *s, size_t memory_max, const char *dir) {
  memset(s, 0, sizeof(*s));
  s->fd = -1;
  s->memory_max = memory_max;
  s->dir = dir;
}

void npkit_spill_free(npkit_spill *s) {
  if (s->fd >= 0) close(s->fd);
  free(s->mem);
  memset(s, 0, sizeof(*s));
  s->fd = -1;
}

unsigned char *npkit_spill_reserve(npkit_spill *s, size_t n) {
  if (s->len + n < s->len || NPKIT_GROW(s->mem, s->cap, s->len + n, 4096) != 0) return NULL;
  return s->mem + s->len;
}

/* Unlinked at once: the file lives as long as the descriptor, however the process ends. */
static int open_file(const npkit_spill *s) {
  const char *dir = s->dir;
  if (dir == NULL || dir[0] == '\0') dir = getenv("TMPDIR");
  if (dir == NULL || dir[0] == '\0') dir = "/tmp";
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/npkit-instances.XXXXXX", dir) >= (int)sizeof path) return -1;
  int fd = mkstemp(path);
  if (fd >= 0) unlink(path);
  return fd;
}

static int write_all(int fd, const unsigned char *p, size_t n, uint64_t off) {
  while (n > 0) {
    ssize_t k = pwrite(fd, p, n, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k, n -= (size_t)k, off += (uint64_t)k;
  }
  return 0;
}

void npkit_spill_commit(npkit_spill *s, size_t n) {
  s->len += n;
  if (s->len < s->memory_max || s->fd == -2) return;
  if (s->fd == -1 && (s->fd = open_file(s)) < 0) {
    s->fd = -2; /* no file to be had: memory it is */
    return;
  }
  if (write_all(s->fd, s->mem, s->len, s->file_len) != 0) {
    s->memory_max = SIZE_MAX; /* the file keeps what it has; the rest stays here */
    return;
  }
  s->file_len += s->len;
  s->len = 0;
}

int npkit_spill_read(const npkit_spill *s, uint64_t off, void *dst, size_t n) {
  unsigned char *d = dst;
  if (off > npkit_spill_size(s) || n > npkit_spill_size(s) - off) return -1;
  while (n > 0 && off < s->file_len) {
    size_t want = (uint64_t)n < s->file_len - off ? n : (size_t)(s->file_len - off);
    ssize_t k = pread(s->fd, d, want, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    d += k, n -= (size_t)k, off += (uint64_t)k;
  }
  if (n > 0) memcpy(d, s->mem + (off - s->file_len), n);
  return 0;
}
