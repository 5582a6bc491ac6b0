#include "json_check.h"

#include <string.h>

#define MAX_DEPTH 64

typedef struct cur {
  const unsigned char *s;
  size_t n, i;
  int bad;
} cur;

static void fail(cur *c) {
  if (!c->bad) c->bad = 1;
}

static int peek(cur *c) { return c->i < c->n ? c->s[c->i] : -1; }

static void ws(cur *c) {
  while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\n' || c->s[c->i] == '\r' || c->s[c->i] == '\t')) c->i++;
}

static int is_digit(int ch) { return ch >= '0' && ch <= '9'; }
static int is_hex(int ch) { return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'); }

static void utf8(cur *c) {
  unsigned ch = c->s[c->i];
  size_t need;
  unsigned lo = 0x80, hi = 0xbf;
  if (ch >= 0xc2 && ch <= 0xdf) need = 2;
  else if (ch >= 0xe0 && ch <= 0xef) { need = 3; if (ch == 0xe0) lo = 0xa0; if (ch == 0xed) hi = 0x9f; }
  else if (ch >= 0xf0 && ch <= 0xf4) { need = 4; if (ch == 0xf0) lo = 0x90; if (ch == 0xf4) hi = 0x8f; }
  else { fail(c); return; }
  if (c->n - c->i < need || c->s[c->i + 1] < lo || c->s[c->i + 1] > hi) { fail(c); return; }
  for (size_t k = 2; k < need; k++)
    if ((c->s[c->i + k] & 0xc0) != 0x80) { fail(c); return; }
  c->i += need;
}

static void string(cur *c) {
  c->i++; /* opening quote */
  while (!c->bad) {
    int ch = peek(c);
    if (ch < 0 || ch < 0x20) { fail(c); return; }
    if (ch == '"') { c->i++; return; }
    if (ch == '\\') {
      c->i++;
      ch = peek(c);
      if (ch == 'u') {
        for (int k = 1; k <= 4; k++)
          if (c->i + k >= c->n || !is_hex(c->s[c->i + k])) { fail(c); return; }
        c->i += 5;
      } else if (ch > 0 && strchr("\"\\/bfnrt", ch) != NULL) {
        c->i++;
      } else {
        fail(c);
      }
    } else if (ch < 0x80) {
      c->i++;
    } else {
      utf8(c);
    }
  }
}

static void number(cur *c) {
  if (peek(c) == '-') c->i++;
  if (peek(c) == '0') c->i++;
  else if (is_digit(peek(c))) while (is_digit(peek(c))) c->i++;
  else { fail(c); return; }
  if (peek(c) == '.') {
    c->i++;
    if (!is_digit(peek(c))) { fail(c); return; }
    while (is_digit(peek(c))) c->i++;
  }
  if (peek(c) == 'e' || peek(c) == 'E') {
    c->i++;
    if (peek(c) == '+' || peek(c) == '-') c->i++;
    if (!is_digit(peek(c))) { fail(c); return; }
    while (is_digit(peek(c))) c->i++;
  }
}

static void literal(cur *c, const char *word) {
  for (const char *w = word; *w; w++, c->i++)
    if (peek(c) != *w) { fail(c); return; }
}

static void value(cur *c, int depth) {
  ws(c);
  if (depth > MAX_DEPTH) { fail(c); return; }
  int ch = peek(c);
  if (ch == '{' || ch == '[') {
    int close = ch == '{' ? '}' : ']';
    c->i++;
    ws(c);
    if (peek(c) == close) { c->i++; return; }
    while (!c->bad) {
      if (close == '}') {
        ws(c);
        if (peek(c) != '"') { fail(c); return; }
        string(c);
        ws(c);
        if (peek(c) != ':') { fail(c); return; }
        c->i++;
      }
      value(c, depth + 1);
      ws(c);
      if (peek(c) == ',') { c->i++; continue; }
      if (peek(c) == close) { c->i++; return; }
      fail(c);
    }
  } else if (ch == '"') {
    string(c);
  } else if (ch == '-' || is_digit(ch)) {
    number(c);
  } else if (ch == 't') {
    literal(c, "true");
  } else if (ch == 'f') {
    literal(c, "false");
  } else if (ch == 'n') {
    literal(c, "null");
  } else {
    fail(c);
  }
}

size_t npkit_json_check(const char *text, size_t n) {
  cur c = {(const unsigned char *)text, n, 0, 0};
  value(&c, 0);
  ws(&c);
  if (!c.bad && c.i != n) fail(&c);
  return c.bad ? c.i + 1 : 0;
}
