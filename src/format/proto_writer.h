/*
 * A streaming protobuf encoder without generated code: tags, varints, fixed64, length-delimited
 * bytes and nested messages (the wire format of https://protobuf.dev/programming-guides/encoding/,
 * which Perfetto's traces use: `Trace { repeated TracePacket packet = 1 }` written packet by
 * packet).  Memory is one buffer that holds at least the packet being written: it is flushed to
 * the file between top-level messages, never in the middle of one.
 *
 * A nested message's length is not known when it begins: four bytes are kept for it, and at its
 * end the length is written as the shortest varint and the body moved back against it (by at most
 * three bytes; the messages inside it are closed, so no position kept in the buffer moves).  A
 * trace of small packets with small nested messages thus costs what generated code would write.
 * A nested message is at most 2^28 - 1 bytes; a longer one marks the writer failed.
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
} npkit_pb;

/* Starts writing to fd (not closed by the writer).  0, or -1 when memory is short (then only
 * npkit_pb_finish may be called). */
int npkit_pb_init(npkit_pb *w, int fd);
/* Flushes and frees.  0, or -1 with a message. */
int npkit_pb_finish(npkit_pb *w, char *err, size_t errlen);
/* Bytes written so far, those still in the buffer included. */
static inline uint64_t npkit_pb_size(const npkit_pb *w) { return w->bytes + w->len; }

void npkit_pb_uint(npkit_pb *w, uint32_t field, uint64_t v);  /* uint32, uint64, enum */
void npkit_pb_int(npkit_pb *w, uint32_t field, int64_t v);    /* int32, int64: a negative one takes 10 bytes */
void npkit_pb_bool(npkit_pb *w, uint32_t field, int v);
void npkit_pb_fixed64(npkit_pb *w, uint32_t field, uint64_t v);
void npkit_pb_double(npkit_pb *w, uint32_t field, double v);
void npkit_pb_bytes(npkit_pb *w, uint32_t field, const void *p, size_t n); /* bytes, string */
void npkit_pb_string(npkit_pb *w, uint32_t field, const char *s);
/* A nested message: its fields follow, then npkit_pb_end. */
void npkit_pb_begin(npkit_pb *w, uint32_t field);
void npkit_pb_end(npkit_pb *w);

/* The varint of v into p (at least 10 bytes of room); returns the end. */
unsigned char *npkit_pb_put_varint(unsigned char *p, uint64_t v);

#endif /* NPKIT_PROTO_WRITER_H */
