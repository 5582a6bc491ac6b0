/*
 * A streaming protobuf encoder without generated code: tags, varints, fixed64, length-delimited
 * bytes and nested messages (the wire format of https://protobuf.dev/programming-guides/encoding/,
 * which Perfetto's traces use: `Trace { repeated TracePacket packet = 1 }` written packet by
 * packet).  Memory is one buffer that holds at least the packet being written: it is flushed to
 * the file between top-level messages, never in the middle of one.
 *
 * A nested message's length is not known when it begins: one byte is kept for it, enough for a
 * message under 128 bytes (an argument, a small event); at its end a longer one's body moves
 * forward to make room for its varint (the messages inside it are closed, so no position kept in
 * the buffer moves).  The output is what generated code would write.  A nested message is at most
 * 2^28 - 1 bytes; a longer one marks the writer failed.  The common writes are inline.
 */
#ifndef NPKIT_PROTO_WRITER_H
#define NPKIT_PROTO_WRITER_H

#include <stddef.h>
#include <stdint.h>

#define NPKIT_PB_MAX_DEPTH 16

/* Wire types */
enum { NPKIT_PB_VARINT = 0, NPKIT_PB_FIXED64 = 1, NPKIT_PB_LEN = 2, NPKIT_PB_FIXED32 = 5 };

typedef struct npkit_pb {
  unsigned char *buf;
  size_t len, cap;
  int fd;
  int err;        /* first errno of a failed write, ENOMEM, or EOVERFLOW (nesting), 0 if none */
  uint64_t bytes; /* handed to write(2) so far */
  unsigned depth;
  size_t open[NPKIT_PB_MAX_DEPTH]; /* where each open message's length goes */
  unsigned char kept[NPKIT_PB_MAX_DEPTH]; /* the bytes kept for it: 1, or 2 (npkit_pb_begin_long) */
} npkit_pb;

/* Starts writing to fd (not closed by the writer).  0, or -1 when memory is short (then only
 * npkit_pb_finish may be called). */
int npkit_pb_init(npkit_pb *w, int fd);
/* Flushes and frees.  0, or -1 with a message. */
int npkit_pb_finish(npkit_pb *w, char *err, size_t errlen);
/* Bytes written so far, those still in the buffer included. */
static inline uint64_t npkit_pb_size(const npkit_pb *w) { return w->bytes + w->len; }

/* The varint of v into p (at least 10 bytes of room); returns the end. */
static inline unsigned char *npkit_pb_varint(unsigned char *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  return p;
}
unsigned char *npkit_pb_put_varint(unsigned char *p, uint64_t v);

unsigned char *npkit_pb_room_slow(npkit_pb *w, size_t n);
/* Where n more bytes go, NULL when the writer failed for good (no memory). */
static inline unsigned char *npkit_pb_room(npkit_pb *w, size_t n) {
  if (w->err == 0 && w->cap - w->len >= n) return w->buf + w->len;
  return npkit_pb_room_slow(w, n);
}

/* uint32, uint64, enum */
static inline void npkit_pb_uint(npkit_pb *w, uint32_t field, uint64_t v) {
  unsigned char *p = npkit_pb_room(w, 20);
  if (p == NULL) return;
  p = npkit_pb_varint(npkit_pb_varint(p, (uint64_t)field << 3 /* NPKIT_PB_VARINT */), v);
  w->len = (size_t)(p - w->buf);
}
/* int32 and int64 are the two's complement as a uint64: a negative value takes ten bytes. */
static inline void npkit_pb_int(npkit_pb *w, uint32_t field, int64_t v) { npkit_pb_uint(w, field, (uint64_t)v); }
static inline void npkit_pb_bool(npkit_pb *w, uint32_t field, int v) { npkit_pb_uint(w, field, v ? 1 : 0); }
void npkit_pb_fixed64(npkit_pb *w, uint32_t field, uint64_t v);
void npkit_pb_double(npkit_pb *w, uint32_t field, double v);
void npkit_pb_bytes(npkit_pb *w, uint32_t field, const void *p, size_t n); /* bytes, string */
void npkit_pb_string(npkit_pb *w, uint32_t field, const char *s);

/* A nested message: its fields follow, then npkit_pb_end. */
void npkit_pb_begin_slow(npkit_pb *w, uint32_t field, unsigned kept);
static inline void npkit_pb_begin_kept(npkit_pb *w, uint32_t field, unsigned kept) {
  if (w->err != 0 || w->depth >= NPKIT_PB_MAX_DEPTH || w->cap - w->len < 12) {
    npkit_pb_begin_slow(w, field, kept);
    return;
  }
  unsigned char *p = npkit_pb_varint(w->buf + w->len, ((uint64_t)field << 3) | NPKIT_PB_LEN);
  w->kept[w->depth] = (unsigned char)kept;
  w->open[w->depth++] = (size_t)(p - w->buf);
  w->len = (size_t)(p - w->buf) + kept;
}
static inline void npkit_pb_begin(npkit_pb *w, uint32_t field) { npkit_pb_begin_kept(w, field, 1); }
/* A message that is likely 128 bytes or more (a packet, an event with its arguments): two bytes
 * are kept for its length, so that it does not move at its end. */
static inline void npkit_pb_begin_long(npkit_pb *w, uint32_t field) { npkit_pb_begin_kept(w, field, 2); }
void npkit_pb_end(npkit_pb *w);

#endif /* NPKIT_PROTO_WRITER_H */
