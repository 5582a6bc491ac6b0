#include "proto_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* As the JSON writer's: write(2) costs nothing next to encoding. */
#define PB_BUF_SIZE (1u << 20)
/* A nested message: at most 2^28 - 1 bytes (a length of at most four bytes). */
#define LEN_MAX ((1u << 28) - 1)

int npkit_pb_init(npkit_pb *w, int fd) {
  memset(w, 0, sizeof *w);
  w->fd = fd;
  w->buf = malloc(PB_BUF_SIZE);
  if (w->buf == NULL) {
    w->err = ENOMEM;
    return -1;
  }
  w->cap = PB_BUF_SIZE;
  return 0;
}

static void flush(npkit_pb *w) {
  size_t off = 0;
  while (w->err == 0 && off < w->len) {
    ssize_t n = write(w->fd, w->buf + off, w->len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      w->err = n < 0 ? errno : EIO;
      break;
    }
    off += (size_t)n;
    w->bytes += (uint64_t)n;
  }
  w->len = 0;
}

int npkit_pb_finish(npkit_pb *w, char *err, size_t errlen) {
  if (w->buf != NULL && w->depth == 0) flush(w);
  if (w->err == 0 && w->depth != 0) w->err = EINVAL; /* a message left open */
  int rc = w->err != 0 ? -1 : 0;
  if (rc != 0 && err != NULL && errlen > 0)
    snprintf(err, errlen, "writing protobuf: %s",
             w->err == EOVERFLOW ? "a message nested too deep or too long" : strerror(w->err));
  free(w->buf);
  w->buf = NULL;
  w->len = w->cap = 0;
  return rc;
}

/* Room for n more bytes when the inline path (npkit_pb_room) has none, or the writer failed: the
 * buffer is flushed between top-level messages only (a reader of a cut file loses only the last,
 * partial one), and grows while a message is open. */
unsigned char *npkit_pb_room_slow(npkit_pb *w, size_t n) {
  if (w->err != 0 && w->depth == 0) w->len = 0; /* the output is lost: keep memory flat */
  if (w->cap - w->len >= n) return w->buf + w->len;
  if (w->depth == 0 && w->len > 0) {
    flush(w);
    if (w->cap >= n) return w->buf;
  }
  size_t cap = w->cap;
  while (cap - w->len < n) {
    if (cap > SIZE_MAX / 2) return NULL;
    cap *= 2;
  }
  unsigned char *b = realloc(w->buf, cap);
  if (b == NULL) {
    if (w->err == 0) w->err = ENOMEM;
    return NULL;
  }
  w->buf = b;
  w->cap = cap;
  return w->buf + w->len;
}

unsigned char *npkit_pb_put_varint(unsigned char *p, uint64_t v) { return npkit_pb_varint(p, v); }

static unsigned char *room(npkit_pb *w, size_t n) { return npkit_pb_room(w, n); }

static unsigned char *put_tag(unsigned char *p, uint32_t field, unsigned wire) {
  return npkit_pb_varint(p, ((uint64_t)field << 3) | wire);
}

void npkit_pb_fixed64(npkit_pb *w, uint32_t field, uint64_t v) {
  unsigned char *p = room(w, 18);
  if (p == NULL) return;
  p = put_tag(p, field, NPKIT_PB_FIXED64);
  for (int i = 0; i < 8; i++) *p++ = (unsigned char)(v >> (8 * i)); /* little endian */
  w->len = (size_t)(p - w->buf);
}

void npkit_pb_double(npkit_pb *w, uint32_t field, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  npkit_pb_fixed64(w, field, bits);
}

void npkit_pb_bytes(npkit_pb *w, uint32_t field, const void *data, size_t n) {
  unsigned char *p = room(w, 20 + n);
  if (p == NULL) return;
  p = npkit_pb_put_varint(put_tag(p, field, NPKIT_PB_LEN), n);
  if (n > 0) memcpy(p, data, n);
  w->len = (size_t)(p + n - w->buf);
}

void npkit_pb_string(npkit_pb *w, uint32_t field, const char *s) { npkit_pb_bytes(w, field, s, strlen(s)); }

void npkit_pb_begin_slow(npkit_pb *w, uint32_t field, unsigned kept) {
  unsigned char *p = room(w, 12);
  if (w->depth >= NPKIT_PB_MAX_DEPTH) w->err = EOVERFLOW;
  if (p == NULL || w->depth >= NPKIT_PB_MAX_DEPTH) {
    w->depth++; /* kept in step with npkit_pb_end */
    return;
  }
  p = put_tag(p, field, NPKIT_PB_LEN);
  w->kept[w->depth] = (unsigned char)kept;
  w->open[w->depth++] = (size_t)(p - w->buf);
  w->len = (size_t)(p - w->buf) + kept;
}

void npkit_pb_end(npkit_pb *w) {
  if (w->depth == 0) {
    w->err = EINVAL;
    return;
  }
  unsigned d = w->depth - 1;
  if (d >= NPKIT_PB_MAX_DEPTH || w->err == ENOMEM) {
    w->depth--;
    return;
  }
  size_t kept = w->kept[d], at = w->open[d], n = w->len - at - kept;
  if (n > LEN_MAX) {
    w->err = EOVERFLOW;
    w->depth--;
    return;
  }
  unsigned char v[5];
  size_t k = (size_t)(npkit_pb_varint(v, n) - v);
  /* room while the message is still open: at depth 0 the buffer would be flushed (or, after an
   * error, emptied) with the message unfinished in it */
  if (k > kept && room(w, k - kept) == NULL) {
    w->depth--;
    return;
  }
  w->depth--;
  if (k != kept) {
    /* the body moves to fit the varint (forward for a longer one, back for a shorter one); the
     * messages inside it are closed and the open ones begin before `at`, so nothing that points
     * into the buffer moves */
    memmove(w->buf + at + k, w->buf + at + kept, n);
    w->len = w->len + k - kept;
  }
  memcpy(w->buf + at, v, k);
  /* between top-level messages: write out a buffer half full, so that memory stays flat */
  if (d == 0 && w->len >= w->cap / 2) flush(w);
}
