#include "json_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Large enough that write(2) calls cost nothing next to formatting, small enough for the
 * preloaded library to allocate at exit without a second thought. */
#define JSON_BUF_SIZE (1u << 20)

int npkit_json_init(npkit_json *w, int fd) {
  memset(w, 0, sizeof(*w));
  w->fd = fd;
  w->first[0] = 1;
  w->buf = malloc(JSON_BUF_SIZE);
  if (w->buf == NULL) {
    w->err = ENOMEM;
    return -1;
  }
  w->cap = JSON_BUF_SIZE;
  return 0;
}

void npkit_json_flush(npkit_json *w) {
  size_t off = 0;
  if (w->err != 0) {
    w->len = 0; /* discard: the output is lost anyway, and the error is reported once */
    return;
  }
  while (off < w->len) {
    ssize_t n = write(w->fd, w->buf + off, w->len - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      w->err = errno;
      break;
    }
    if (n == 0) { /* should not happen for regular files and pipes; do not spin */
      w->err = EIO;
      break;
    }
    off += (size_t)n;
    w->bytes += (uint64_t)n;
  }
  w->len = 0;
}

int npkit_json_finish(npkit_json *w, char *err, size_t errlen) {
  int rc = 0;
  if (w->buf != NULL) npkit_json_flush(w);
  if (w->err != 0) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "writing JSON: %s", strerror(w->err));
    rc = -1;
  } else if (w->overflow) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen, "writing JSON: nesting deeper than %d levels", NPKIT_JSON_MAX_DEPTH);
    rc = -1;
  }
  free(w->buf);
  w->buf = NULL;
  w->len = w->cap = 0;
  return rc;
}

void npkit_json_raw(npkit_json *w, const char *s, size_t n) {
  while (n > 0) {
    size_t room = w->cap - w->len;
    if (room == 0) {
      npkit_json_flush(w);
      room = w->cap;
    }
    size_t k = n < room ? n : room;
    memcpy(w->buf + w->len, s, k);
    w->len += k;
    s += k;
    n -= k;
  }
}

/* ---- numbers ---- */

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static const uint64_t powers_of_10[20] = {1ull,
                                          10ull,
                                          100ull,
                                          1000ull,
                                          10000ull,
                                          100000ull,
                                          1000000ull,
                                          10000000ull,
                                          100000000ull,
                                          1000000000ull,
                                          10000000000ull,
                                          100000000000ull,
                                          1000000000000ull,
                                          10000000000000ull,
                                          100000000000000ull,
                                          1000000000000000ull,
                                          10000000000000000ull,
                                          100000000000000000ull,
                                          1000000000000000000ull,
                                          10000000000000000000ull};

/* Decimal digits of v: from its bit width (log10(2) ~ 1233/4096), corrected by one comparison. */
static inline unsigned decimal_digits(uint64_t v) {
  unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233u >> 12;
  return t + ((v | 1) >= powers_of_10[t]); /* 0 has one digit */
}

/* Written in place from the last digit back, two at a time: no copy of a length known only at run
 * time (a call) and no wide read of narrow stores. */
char *npkit_fmt_u64(char *p, uint64_t v) {
  unsigned n = decimal_digits(v);
  char *t = p + n;
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    t -= 2;
    memcpy(t, digit_pairs + 2 * r, 2);
  }
  if (v >= 10) {
    t -= 2;
    memcpy(t, digit_pairs + 2 * v, 2);
  } else {
    *--t = (char)('0' + v);
  }
  return p + n;
}

/* Magnitude without the undefined negation of INT64_MIN. */
static uint64_t magnitude(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

char *npkit_fmt_i64(char *p, int64_t v) {
  if (v < 0) *p++ = '-';
  return npkit_fmt_u64(p, magnitude(v));
}

char *npkit_fmt_ts(char *p, int64_t ns) {
  uint64_t m = magnitude(ns);
  unsigned frac = (unsigned)(m % 1000);
  if (ns < 0) *p++ = '-';
  p = npkit_fmt_u64(p, m / 1000);
  *p++ = '.';
  *p++ = (char)('0' + frac / 100);
  memcpy(p, digit_pairs + 2 * (frac % 100), 2);
  return p + 2;
}

char *npkit_fmt_hex(char *p, uint64_t v, int width) {
  static const char hex[] = "0123456789abcdef";
  int n = (67 - __builtin_clzll(v | 1)) / 4; /* digits of v, one for 0 */
  if (width > 16) width = 16;
  if (n < width) n = width;
  for (int i = n - 1; i >= 0; i--, v >>= 4) p[i] = hex[v & 0xf];
  return p + n;
}

/* ---- strings ---- */

/* Length of the valid UTF-8 sequence at s (lead byte c >= 0x80), or 0 if invalid.  Only the
 * first `avail` bytes may be read. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail) {
  unsigned c = s[0];
  size_t need;
  unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
  if (c >= 0xc2 && c <= 0xdf) {
    need = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    need = 3;
    if (c == 0xe0) lo = 0xa0;      /* overlong */
    if (c == 0xed) hi = 0x9f;      /* UTF-16 surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    need = 4;
    if (c == 0xf0) lo = 0x90;      /* overlong */
    if (c == 0xf4) hi = 0x8f;      /* above U+10FFFF */
  } else {
    return 0;
  }
  if (avail < need) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < need; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  return need;
}

/* Escapes the sequences that start before `limit`, reading at most `avail` bytes; stops at a NUL.
 * *used gets the input consumed, *nul whether a NUL ended it. */
static char *escape_chunk(char *p, const unsigned char *s, size_t limit, size_t avail, size_t *used,
                          int *nul) {
  static const char hex[] = "0123456789abcdef";
  size_t i = 0;
  *nul = 0;
  while (i < limit) {
    unsigned c = s[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      *p++ = (char)c;
      i++;
      continue;
    }
    if (c == 0) {
      *nul = 1;
      break;
    }
    if (c < 0x80) {
      *p++ = '\\';
      switch (c) {
      case '"': *p++ = '"'; break;
      case '\\': *p++ = '\\'; break;
      case '\n': *p++ = 'n'; break;
      case '\r': *p++ = 'r'; break;
      case '\t': *p++ = 't'; break;
      case '\b': *p++ = 'b'; break;
      case '\f': *p++ = 'f'; break;
      default:
        NPKIT_PUT(p, "u00");
        *p++ = hex[c >> 4];
        *p++ = hex[c & 0xf];
      }
      i++;
      continue;
    }
    size_t k = utf8_seq_len(s + i, avail - i);
    if (k == 0) {
      NPKIT_PUT(p, "\xef\xbf\xbd"); /* U+FFFD REPLACEMENT CHARACTER */
      i++;
    } else {
      memcpy(p, s + i, k);
      p += k;
      i += k;
    }
  }
  *used = i;
  return p;
}

char *npkit_fmt_escaped(char *p, const char *s, size_t n) {
  size_t used;
  int nul;
  return escape_chunk(p, (const unsigned char *)s, n, n, &used, &nul);
}

#define ESCAPE_CHUNK 1024

static void write_string_body(npkit_json *w, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  while (n > 0) {
    size_t limit = n < ESCAPE_CHUNK ? n : ESCAPE_CHUNK;
    size_t used;
    int nul;
    /* a sequence starting before `limit` may end up to 3 bytes after it */
    char *p = npkit_json_reserve(w, 6 * (ESCAPE_CHUNK + 3));
    p = escape_chunk(p, u, limit, n, &used, &nul);
    npkit_json_commit(w, p);
    if (nul) break;
    u += used;
    n -= used;
  }
}

/* ---- structure ---- */

static void before_value(npkit_json *w) {
  if (w->after_key) {
    w->after_key = 0;
    return;
  }
  if (!w->first[w->depth]) npkit_json_raw(w, ",", 1);
  w->first[w->depth] = 0;
}

void npkit_json_element(npkit_json *w) { before_value(w); }

void npkit_json_next_line(npkit_json *w) {
  before_value(w);
  npkit_json_raw(w, "\n", 1);
  w->after_key = 1; /* the value that follows is this element: no second comma */
}

static void push(npkit_json *w, char c) {
  before_value(w);
  npkit_json_raw(w, &c, 1);
  if (w->depth + 1 >= NPKIT_JSON_MAX_DEPTH) {
    w->overflow = 1;
    return;
  }
  w->depth++;
  w->first[w->depth] = 1;
}

static void pop(npkit_json *w, char c) {
  if (w->depth == 0) {
    w->overflow = 1;
    return;
  }
  w->depth--;
  w->after_key = 0;
  npkit_json_raw(w, &c, 1);
}

void npkit_json_begin_object(npkit_json *w) { push(w, '{'); }
void npkit_json_end_object(npkit_json *w) { pop(w, '}'); }
void npkit_json_begin_array(npkit_json *w) { push(w, '['); }
void npkit_json_end_array(npkit_json *w) { pop(w, ']'); }

void npkit_json_key(npkit_json *w, const char *key) {
  if (!w->first[w->depth]) npkit_json_raw(w, ",", 1);
  w->first[w->depth] = 0;
  npkit_json_raw(w, "\"", 1);
  write_string_body(w, key, strlen(key));
  npkit_json_raw(w, "\":", 2);
  w->after_key = 1;
}

void npkit_json_string_n(npkit_json *w, const char *s, size_t n) {
  before_value(w);
  npkit_json_raw(w, "\"", 1);
  write_string_body(w, s, n);
  npkit_json_raw(w, "\"", 1);
}

void npkit_json_string(npkit_json *w, const char *s) {
  if (s == NULL) {
    npkit_json_null(w);
    return;
  }
  npkit_json_string_n(w, s, strlen(s));
}

void npkit_json_int(npkit_json *w, int64_t v) {
  before_value(w);
  char *p = npkit_json_reserve(w, 25);
  npkit_json_commit(w, npkit_fmt_i64(p, v));
}

void npkit_json_uint(npkit_json *w, uint64_t v) {
  before_value(w);
  char *p = npkit_json_reserve(w, 24);
  npkit_json_commit(w, npkit_fmt_u64(p, v));
}

void npkit_json_ts(npkit_json *w, int64_t ns) {
  before_value(w);
  char *p = npkit_json_reserve(w, 28);
  npkit_json_commit(w, npkit_fmt_ts(p, ns));
}

void npkit_json_hex(npkit_json *w, uint64_t v, int width) {
  before_value(w);
  char *p = npkit_json_reserve(w, 24);
  NPKIT_PUT(p, "\"0x");
  p = npkit_fmt_hex(p, v, width);
  *p++ = '"';
  npkit_json_commit(w, p);
}

void npkit_json_double(npkit_json *w, double v) {
  char tmp[40];
  if (v != v || v - v != 0.0) { /* NaN or infinite: JSON has no spelling for them */
    npkit_json_null(w);
    return;
  }
  /* shortest precision that reads back exactly */
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
    if (strtod(tmp, NULL) == v) break;
  }
  /* a host program may have set a locale with a decimal comma */
  for (char *c = tmp; *c != '\0'; c++)
    if (*c == ',') *c = '.';
  before_value(w);
  npkit_json_raw(w, tmp, strlen(tmp));
}

void npkit_json_bool(npkit_json *w, int v) {
  before_value(w);
  if (v)
    npkit_json_raw(w, "true", 4);
  else
    npkit_json_raw(w, "false", 5);
}

void npkit_json_null(npkit_json *w) {
  before_value(w);
  npkit_json_raw(w, "null", 4);
}

/* npkit_json_kv_<name>: the key, then the value as npkit_json_<name> writes it. */
#define KV(name, type)                                           \
  void npkit_json_kv_##name(npkit_json *w, const char *key, type v) { \
    npkit_json_key(w, key);                                      \
    npkit_json_##name(w, v);                                     \
  }
KV(string, const char *)
KV(int, int64_t)
KV(uint, uint64_t)
KV(double, double)
KV(bool, int)
#undef KV

void npkit_json_raw_value(npkit_json *w, const char *json, size_t n) {
  before_value(w);
  npkit_json_raw(w, json, n);
}
