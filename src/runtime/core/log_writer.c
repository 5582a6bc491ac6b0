#include "log_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "block_frame.h"
#include "log_ring.h"
#include "event_pack.h"

/* Events packed per block: the recorder's chunk, so that one chunk is one block. */
#define PACK_BLOCK_EVENTS NPKIT_LOGW_BLOCK_EVENTS

struct npkit_log_writer {
  pthread_mutex_t lock;
  int fd;
  npkit_log_ring *ring;  /* the flight recorder's: blocks are kept in memory, written at dumps */
  npkit_log_header header; /* as written at the head of the file (a ring: of every dump) */
  int checksums;       /* version 2 and later: a CHECK block after every block */
  _Atomic int error;   /* first errno; sticky */
  uint64_t blocks;
  uint64_t offset;     /* of the next block in the file (under the lock) */
  /* Version 5 and later: events go out packed (npkit_logw_events); not into the flight
   * recorder's ring, whose blocks are its unit of overwriting.  One packer and its buffer, behind
   * their own lock, so that a thread appending another block never waits for a packing. */
  pthread_mutex_t pack_lock;
  npkit_packer *packer;
  unsigned char *pack_buf; /* PACK_BLOCK_EVENTS * NPKIT_PACK_EVENT_MAX bytes */
  _Atomic(npkit_logw_tap_fn) tap; /* npkit_logw_set_tap */
  void *_Atomic tap_ctx;
};

void npkit_logw_set_tap(npkit_log_writer *w, npkit_logw_tap_fn fn, void *ctx) {
  if (w == NULL) return;
  atomic_store(&w->tap_ctx, ctx);
  atomic_store(&w->tap, fn);
}

static void tap(npkit_log_writer *w, npkit_block_type type, const void *payload, uint32_t count) {
  npkit_logw_tap_fn fn = atomic_load_explicit(&w->tap, memory_order_acquire);
  if (fn != NULL) fn(atomic_load(&w->tap_ctx), type, payload, count);
}

int npkit_mkdirs(const char *path) {
  char buf[1024];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return ENAMETOOLONG;
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char saved = *p;
      *p = '\0';
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) return errno;
      *p = saved;
      if (saved == '\0') break;
    }
  }
  struct stat st;
  if (stat(buf, &st) != 0) return errno;
  return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* Writes all of iov or fails; retries on EINTR and short writes. */
static int write_all(int fd, struct iovec *iov, int n) {
  while (n > 0) {
    ssize_t w = writev(fd, iov, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    size_t left = (size_t)w;
    while (n > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + left;
      iov->iov_len -= left;
    }
  }
  return 0;
}

void npkit_log_header_init(npkit_log_header *h) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, NPKIT_LOG_MAGIC, 8);
  h->version = NPKIT_LOG_VERSION;
  h->header_size = sizeof *h;
  h->record_size = sizeof(npkit_event);
  h->endian = NPKIT_LOG_ENDIAN_TAG;
}

npkit_log_writer *npkit_logw_open(const char *path, const npkit_log_header *header, char *err,
                                  size_t errlen) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash != NULL && slash != dir) {
    *slash = '\0';
    int e = npkit_mkdirs(dir);
    if (e != 0) {
      snprintf(err, errlen, "cannot create folder %s: %s", dir, strerror(e));
      return NULL;
    }
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
    return NULL;
  }
  npkit_log_writer *w = calloc(1, sizeof *w);
  if (w == NULL) {
    close(fd);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&w->lock, NULL);
  pthread_mutex_init(&w->pack_lock, NULL);
  w->fd = fd;
  w->header = *header;
  w->checksums = header->version >= 2;
  if (header->version >= NPKIT_LOG_VERSION_PACKED && header->record_size == sizeof(npkit_event)) {
    /* Without the memory, events go out as EVENTS blocks, which every version reads. */
    w->packer = malloc(sizeof *w->packer);
    w->pack_buf = malloc((size_t)PACK_BLOCK_EVENTS * NPKIT_PACK_EVENT_MAX);
    if (w->packer == NULL || w->pack_buf == NULL) {
      free(w->packer);
      free(w->pack_buf);
      w->packer = NULL;
      w->pack_buf = NULL;
    }
  }
  struct iovec iov = {(void *)header, sizeof *header};
  w->offset = sizeof *header;
  int e = write_all(fd, &iov, 1);
  if (e != 0) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
    npkit_logw_free(w); /* closes fd */
    return NULL;
  }
  return w;
}

npkit_log_writer *npkit_logw_open_ring(const char *path, const npkit_log_header *header, uint64_t ring_bytes,
                                       char *err, size_t errlen) {
  npkit_log_writer *w = calloc(1, sizeof *w);
  if (w == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  w->ring = npkit_ring_create(ring_bytes, path, err, errlen);
  if (w->ring == NULL) {
    free(w);
    return NULL;
  }
  pthread_mutex_init(&w->lock, NULL);
  pthread_mutex_init(&w->pack_lock, NULL);
  w->fd = -1;
  w->checksums = 1;
  w->header = *header;
  return w;
}

/* A block kept by the ring (under the lock: one producer at a time). */
static int ring_append(npkit_log_writer *w, npkit_block_type type, uint32_t count, const void *payload, size_t size) {
  if (size > UINT32_MAX - 8) return -1;
  pthread_mutex_lock(&w->lock);
  int closed = atomic_load(&w->error) != 0;
  if (!closed) {
    npkit_ring_put(w->ring, (uint16_t)type, count, payload, size);
    w->blocks++;
  }
  pthread_mutex_unlock(&w->lock);
  return closed ? -1 : 0;
}

/* The ring written as a complete log (with `end`: the last one); 0 or an errno. */
static int ring_dump(npkit_log_writer *w, const npkit_end_rec *end) {
  npkit_ring_out o;
  int e = npkit_ring_out_begin(w->ring, &o, &w->header);
  return e != 0 ? e : npkit_ring_out_finish(w->ring, &o, end);
}

int npkit_logw_dump(npkit_log_writer *w) {
  if (w == NULL || w->ring == NULL) return 0; /* a streamed log is on disk already */
  pthread_mutex_lock(&w->lock);
  int e = atomic_load(&w->error) != 0 ? EBADF : ring_dump(w, NULL);
  pthread_mutex_unlock(&w->lock);
  return e;
}

npkit_log_ring *npkit_logw_ring(npkit_log_writer *w) { return w != NULL ? w->ring : NULL; }

const npkit_log_header *npkit_logw_header(const npkit_log_writer *w) { return &w->header; }

/* A block; with `at`, where it starts in the file is stored there before it is written. */
static int append_at(npkit_log_writer *w, npkit_block_type type, uint32_t count, const void *payload, size_t size,
                     _Atomic uint64_t *at) {
  if (w == NULL || atomic_load_explicit(&w->error, memory_order_relaxed) != 0) return -1;
  if (w->ring != NULL) return ring_append(w, type, count, payload, size);
  static const uint8_t zeros[8];
  size_t pad = npkit_block_pad(size);
  if (size + pad > UINT32_MAX) return -1;
  /* The block and its checksum go out in one writev, so that they stay next to each other; the
   * checksum is computed outside the lock: blocks of several threads are checksummed in parallel. */
  npkit_block_header bh;
  npkit_block_check check;
  npkit_block_frame((uint16_t)type, count, payload, size, &bh, &check);
  struct iovec iov[4];
  int n = 0;
  iov[n++] = (struct iovec){&bh, sizeof bh};
  if (size > 0) iov[n++] = (struct iovec){(void *)payload, size};
  if (pad > 0) iov[n++] = (struct iovec){(void *)zeros, pad};
  if (w->checksums) iov[n++] = (struct iovec){&check, sizeof check};
  size_t bytes = 0;
  for (int i = 0; i < n; i++) bytes += iov[i].iov_len;
  pthread_mutex_lock(&w->lock);
  if (at != NULL) atomic_store_explicit(at, w->offset, memory_order_relaxed);
  int e = atomic_load(&w->error) != 0 ? -1 : write_all(w->fd, iov, n);
  if (e > 0) atomic_store(&w->error, e);
  if (e == 0) {
    w->blocks++;
    w->offset += bytes;
  }
  pthread_mutex_unlock(&w->lock);
  return e == 0 ? 0 : -1;
}

int npkit_logw_append(npkit_log_writer *w, npkit_block_type type, uint32_t count, const void *payload, size_t size) {
  int rc = append_at(w, type, count, payload, size, NULL);
  if (rc == 0) tap(w, type, payload, count);
  return rc;
}

int npkit_logw_events_at(npkit_log_writer *w, const npkit_event *ev, size_t n, _Atomic uint64_t *at) {
  if (w == NULL) return -1;
  if (w->packer == NULL) {
    if (n == 0) return 0;
    if (n > UINT32_MAX / sizeof *ev) return -1;
    int rc = append_at(w, NPKIT_BLOCK_EVENTS, (uint32_t)n, ev, n * sizeof *ev, at);
    if (rc == 0) tap(w, NPKIT_BLOCK_EVENTS, ev, (uint32_t)n);
    return rc;
  }
  int rc = 0;
  pthread_mutex_lock(&w->pack_lock);
  while (n > 0 && rc == 0) {
    size_t k = n < PACK_BLOCK_EVENTS ? n : PACK_BLOCK_EVENTS;
    size_t size = npkit_pack_events(w->packer, ev, k, w->pack_buf);
    rc = append_at(w, NPKIT_BLOCK_EVENTS_PACKED, (uint32_t)k, w->pack_buf, size, at);
    if (rc == 0) tap(w, NPKIT_BLOCK_EVENTS, ev, (uint32_t)k);
    at = NULL; /* only the first block's: callers with `at` give at most PACK_BLOCK_EVENTS */
    ev += k;
    n -= k;
  }
  pthread_mutex_unlock(&w->pack_lock);
  return rc;
}

int npkit_logw_events(npkit_log_writer *w, const npkit_event *ev, size_t n) {
  return npkit_logw_events_at(w, ev, n, NULL);
}

int npkit_logw_error(const npkit_log_writer *w) { return w ? atomic_load(&w->error) : EBADF; }

uint64_t npkit_logw_blocks(const npkit_log_writer *w) { return w ? w->blocks : 0; }

int npkit_logw_close(npkit_log_writer *w, const npkit_end_rec *end) {
  if (w == NULL) return EBADF;
  if (end != NULL && w->ring == NULL) npkit_logw_append(w, NPKIT_BLOCK_END, 1, end, sizeof *end);
  pthread_mutex_lock(&w->lock);
  if (w->ring != NULL && atomic_load(&w->error) == 0) { /* the last dump: the log on disk */
    npkit_end_rec e2 = {0};
    if (end != NULL) e2 = *end;
    int de = ring_dump(w, end != NULL ? &e2 : NULL);
    if (de != 0) atomic_store(&w->error, de);
  }
  int e = atomic_load(&w->error);
  if (w->fd >= 0 && close(w->fd) != 0 && e == 0) e = errno;
  w->fd = -1;
  if (atomic_load(&w->error) == 0) atomic_store(&w->error, EBADF); /* later appends fail at once */
  pthread_mutex_unlock(&w->lock);
  /* Not freed: the sources keep the pointer, and threads of a job stopped by a signal go on
   * running while the trace is finished; an append after the close must find a closed writer,
   * not freed memory. */
  return e;
}

void npkit_logw_free(npkit_log_writer *w) {
  if (w == NULL) return;
  if (w->fd >= 0) npkit_logw_close(w, NULL);
  npkit_ring_free(w->ring);
  pthread_mutex_destroy(&w->lock);
  pthread_mutex_destroy(&w->pack_lock);
  free(w->packer);
  free(w->pack_buf);
  free(w);
}
