#include "machine_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* ---- writing ---- */

static void put(npkit_mtext *t, const char *s, size_t n) {
  if (t->failed) return;
  if (npkit_grow(&t->buf, &t->cap, t->len + n + 1, 1, 1024) != 0) {
    t->failed = 1;
    return;
  }
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = '\0';
}

/* Bytes a reader would split at or mistake for an escape are written as %XX. */
static int needs_escape(unsigned char c) { return c <= 0x20 || c == '%' || c == 0x7f; }

void npkit_mtext_record(npkit_mtext *t, const char *kind) {
  npkit_mtext_end(t);
  put(t, kind, strlen(kind));
  t->open = 1;
}

void npkit_mtext_strn(npkit_mtext *t, const char *key, const char *value, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  put(t, " ", 1);
  put(t, key, strlen(key));
  put(t, "=", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)value[i];
    if (needs_escape(c)) {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      put(t, e, 3);
    } else {
      put(t, (const char *)&value[i], 1);
    }
  }
}

void npkit_mtext_str(npkit_mtext *t, const char *key, const char *value) {
  npkit_mtext_strn(t, key, value != NULL ? value : "", value != NULL ? strlen(value) : 0);
}

void npkit_mtext_u64(npkit_mtext *t, const char *key, uint64_t value) {
  char b[24];
  snprintf(b, sizeof b, "%" PRIu64, value);
  npkit_mtext_str(t, key, b);
}

void npkit_mtext_i64(npkit_mtext *t, const char *key, int64_t value) {
  char b[24];
  snprintf(b, sizeof b, "%" PRId64, value);
  npkit_mtext_str(t, key, b);
}

void npkit_mtext_bool(npkit_mtext *t, const char *key, int value) { npkit_mtext_str(t, key, value ? "yes" : "no"); }

void npkit_mtext_end(npkit_mtext *t) {
  if (!t->open) return;
  put(t, "\n", 1);
  t->open = 0;
}

void npkit_mtext_append(npkit_mtext *t, npkit_mtext *lines) {
  npkit_mtext_end(t);
  npkit_mtext_end(lines);
  if (lines->failed) t->failed = 1;
  if (lines->len > 0) put(t, lines->buf, lines->len);
}

void npkit_mtext_free(npkit_mtext *t) {
  free(t->buf);
  memset(t, 0, sizeof *t);
}

/* ---- reading ---- */

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* Decodes %XX in place; a '%' not followed by two hex digits stays as it is. */
static void decode(char *s) {
  char *o = s;
  for (char *p = s; *p; p++) {
    int hi, lo;
    if (*p == '%' && (hi = hex_digit(p[1])) >= 0 && (lo = hex_digit(p[2])) >= 0) {
      *o++ = (char)(hi << 4 | lo);
      p += 2;
    } else {
      *o++ = *p;
    }
  }
  *o = '\0';
}

/* Splits the line held in line->buf into kind and fields; 0 when it has no kind. */
static int split(npkit_mtext_line *line) {
  char *p = line->buf;
  line->n = 0;
  while (*p == ' ') p++;
  if (*p == '\0') return 0;
  line->kind = p;
  while (*p != '\0' && *p != ' ') p++;
  while (*p != '\0') {
    *p++ = '\0';
    while (*p == ' ') p++;
    if (*p == '\0') break;
    char *tok = p;
    while (*p != '\0' && *p != ' ') p++;
    char save = *p;
    *p = '\0';
    char *eq = strchr(tok, '=');
    *p = save;
    if (eq == NULL || eq == tok || line->n == NPKIT_MTEXT_MAX_FIELDS) continue;
    *eq = '\0';
    line->key[line->n] = tok;
    line->value[line->n] = eq + 1;
    line->n++;
  }
  for (size_t i = 0; i < line->n; i++) decode((char *)line->value[i]);
  return 1;
}

int npkit_mtext_next(const char *text, size_t len, size_t *pos, npkit_mtext_line *line) {
  while (*pos < len && text[*pos] != '\0') {
    size_t start = *pos, end = start;
    while (end < len && text[end] != '\n' && text[end] != '\0') end++;
    *pos = end < len && text[end] == '\n' ? end + 1 : end;
    size_t n = end - start;
    if (n == 0 || n > NPKIT_MTEXT_MAX_LINE) continue;
    memcpy(line->buf, text + start, n);
    line->buf[n] = '\0';
    if (split(line)) return 1;
  }
  return 0;
}

const char *npkit_mtext_get(const npkit_mtext_line *line, const char *key) {
  for (size_t i = 0; i < line->n; i++)
    if (strcmp(line->key[i], key) == 0) return line->value[i];
  return NULL;
}
