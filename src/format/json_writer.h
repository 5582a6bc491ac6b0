/*
 * Streaming JSON writer: appends to a private buffer that is flushed to a file descriptor, so a
 * trace of any size is written with a fixed amount of memory.
 *
 * Structure calls (begin/end object or array, key, values) insert commas themselves.  The hot path
 * of a renderer instead reserves room with npkit_json_reserve() and writes pre-built fragments and
 * numbers straight into the buffer; npkit_json_element() makes such hand-written text a proper
 * element of the enclosing array.
 *
 * Errors are sticky: after the first failed write(2) everything is discarded, and the error is
 * reported once by npkit_json_finish().
 */
#ifndef NPKIT_JSON_WRITER_H
#define NPKIT_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NPKIT_JSON_MAX_DEPTH 32
/* npkit_json_reserve() never asks for more than this. */
#define NPKIT_JSON_MAX_RESERVE 16384

typedef struct npkit_json {
  char *buf;
  size_t len;
  size_t cap;
  int fd;
  int err;                /* first errno of a failed write, 0 if none */
  int overflow;           /* structure misuse (depth) detected */
  uint64_t bytes;         /* bytes handed to write(2) so far */
  unsigned depth;
  unsigned char first[NPKIT_JSON_MAX_DEPTH]; /* 1 until the container at that depth has an item */
  unsigned char after_key;                   /* the next value follows a key: no comma */
} npkit_json;

/* Starts writing to fd (not closed by the writer).  Returns 0, or -1 if memory is short; after a
 * failed init only npkit_json_finish() may be called. */
int npkit_json_init(npkit_json *w, int fd);
/* Flushes and frees the buffer.  Returns 0, or -1 with a message ("writing trace: No space left on
 * device") if any write failed since init.  Safe to call once after a failed init. */
int npkit_json_finish(npkit_json *w, char *err, size_t errlen);
/* Writes out what is buffered; errors are kept for npkit_json_finish(). */
void npkit_json_flush(npkit_json *w);

/* Structure.  A value (begin_*, string, int, ...) written inside an array or at top level is
 * preceded by a comma when needed; inside an object it must follow npkit_json_key(). */
void npkit_json_begin_object(npkit_json *w);
void npkit_json_end_object(npkit_json *w);
void npkit_json_begin_array(npkit_json *w);
void npkit_json_end_array(npkit_json *w);
void npkit_json_key(npkit_json *w, const char *key);

void npkit_json_string(npkit_json *w, const char *s);
/* At most n bytes of s; stops early at a NUL (fixed-size fields of the log). */
void npkit_json_string_n(npkit_json *w, const char *s, size_t n);
void npkit_json_int(npkit_json *w, int64_t v);
void npkit_json_uint(npkit_json *w, uint64_t v);
/* Shortest text that reads back as the same double; NaN and infinities become null. */
void npkit_json_double(npkit_json *w, double v);
void npkit_json_bool(npkit_json *w, int v);
void npkit_json_null(npkit_json *w);
/* A member of an object in one call: its key, then its value (as the calls above write them). */
void npkit_json_kv_string(npkit_json *w, const char *key, const char *v);
void npkit_json_kv_int(npkit_json *w, const char *key, int64_t v);
void npkit_json_kv_uint(npkit_json *w, const char *key, uint64_t v);
void npkit_json_kv_double(npkit_json *w, const char *key, double v);
void npkit_json_kv_bool(npkit_json *w, const char *key, int v);
/* Relative time: signed nanoseconds written as microseconds with exactly three decimals. */
void npkit_json_ts(npkit_json *w, int64_t ns);
/* "0x1f" (a JSON string; no leading zeros unless width > 0 pads to that many digits). */
void npkit_json_hex(npkit_json *w, uint64_t v, int width);
/* Text that is already valid JSON for one value (a pre-built fragment). */
void npkit_json_raw_value(npkit_json *w, const char *json, size_t n);

/* Hand-written element: emits the separating comma if the enclosing array already has an item. */
void npkit_json_element(npkit_json *w);

/* The same for a structured value that follows: the comma if needed and a newline, so that large
 * arrays have one element per line. */
void npkit_json_next_line(npkit_json *w);

/* Appends bytes verbatim, without any structure bookkeeping. */
void npkit_json_raw(npkit_json *w, const char *s, size_t n);

/* Returns a pointer with room for n (<= NPKIT_JSON_MAX_RESERVE) bytes; finish with
 * npkit_json_commit(w, end_of_what_was_written). */
static inline char *npkit_json_reserve(npkit_json *w, size_t n) {
  if (w->cap - w->len < n) npkit_json_flush(w);
  return w->buf + w->len;
}
static inline void npkit_json_commit(npkit_json *w, char *end) { w->len = (size_t)(end - w->buf); }

/* Formatting helpers that write into a caller's buffer and return the end pointer.  They need 24
 * bytes of room whatever the number (npkit_fmt_i64 and npkit_fmt_ts: 25; bytes past the end
 * pointer may be written) and never use printf. */
char *npkit_fmt_u64(char *p, uint64_t v);
char *npkit_fmt_i64(char *p, int64_t v);
char *npkit_fmt_ts(char *p, int64_t ns);
/* Lower-case hex digits, at least `width` of them (0 = no padding), without prefix. */
char *npkit_fmt_hex(char *p, uint64_t v, int width);
/* Escaped contents of a JSON string (without the quotes) for at most n bytes of s, stopping at a
 * NUL.  Needs up to 6 × n bytes of room; invalid UTF-8 becomes U+FFFD (3 bytes for 1). */
char *npkit_fmt_escaped(char *p, const char *s, size_t n);

static inline char *npkit_fmt_lit(char *p, const char *s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}
/* Appends a string literal. */
#define NPKIT_PUT(p, lit) ((p) = npkit_fmt_lit((p), (lit), sizeof(lit) - 1))
/* Appends a NUL-terminated string that needs no escaping (names of this build's own tables). */
static inline char *npkit_fmt_str(char *p, const char *s) { return npkit_fmt_lit(p, s, strlen(s)); }
/* Appends `key` (a fragment such as ,"bytes":) and the number. */
static inline char *npkit_fmt_key_u64(char *p, const char *key, uint64_t v) {
  return npkit_fmt_u64(npkit_fmt_str(p, key), v);
}

/* A piece of JSON formatted once and copied into every event that carries it. */
typedef struct npkit_frag {
  char *text;
  uint32_t len;
} npkit_frag;

#endif /* NPKIT_JSON_WRITER_H */
