/* Event table of NPKit dumps: the built-in table of the NCCL 2.17.1 patch, and the parser of a
 * fork's npkit_event.h that replaces or extends it. */
#include "npkit_dump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "NPKIT_EVENT_"
#define PREFIX_LEN (sizeof(PREFIX) - 1)

typedef struct builtin_event {
  uint8_t id;
  const char *name;
} builtin_event;

/* npkit-for-nccl-2.17.1-1.diff, src/include/npkit/npkit_event.h.  (Its NPKIT_PRIM_COLLECT_DATA_
 * PROCESS_TIME 0x4F is a compile switch, not an event.) */
/* clang-format off */
static const builtin_event builtin_events[] = {
  {0x00, "INVALID"},
  {0x01, "ALL_REDUCE_RING_ENTRY"}, {0x02, "ALL_REDUCE_RING_EXIT"},
  {0x03, "ALL_REDUCE_TREE_UPDOWN_ENTRY"}, {0x04, "ALL_REDUCE_TREE_UPDOWN_EXIT"},
  {0x05, "ALL_REDUCE_TREE_SPLIT_ENTRY"}, {0x06, "ALL_REDUCE_TREE_SPLIT_EXIT"},
  {0x07, "COPY_SEND_ENTRY"}, {0x08, "COPY_SEND_EXIT"},
  {0x09, "DIRECT_COPY_SEND_ENTRY"}, {0x0A, "DIRECT_COPY_SEND_EXIT"},
  {0x0B, "DIRECT_RECV_ENTRY"}, {0x0C, "DIRECT_RECV_EXIT"},
  {0x0D, "DIRECT_RECV_COPY_SEND_ENTRY"}, {0x0E, "DIRECT_RECV_COPY_SEND_EXIT"},
  {0x0F, "DIRECT_RECV_REDUCE_COPY_SEND_ENTRY"}, {0x10, "DIRECT_RECV_REDUCE_COPY_SEND_EXIT"},
  {0x11, "DIRECT_SEND_ENTRY"}, {0x12, "DIRECT_SEND_EXIT"},
  {0x13, "DIRECT_SEND_FROM_OUTPUT_ENTRY"}, {0x14, "DIRECT_SEND_FROM_OUTPUT_EXIT"},
  {0x15, "RECV_ENTRY"}, {0x16, "RECV_EXIT"},
  {0x17, "RECV_COPY_SEND_ENTRY"}, {0x18, "RECV_COPY_SEND_EXIT"},
  {0x19, "RECV_REDUCE_COPY_ENTRY"}, {0x1A, "RECV_REDUCE_COPY_EXIT"},
  {0x1B, "RECV_REDUCE_COPY_SEND_ENTRY"}, {0x1C, "RECV_REDUCE_COPY_SEND_EXIT"},
  {0x1D, "RECV_REDUCE_SEND_ENTRY"}, {0x1E, "RECV_REDUCE_SEND_EXIT"},
  {0x1F, "SEND_ENTRY"}, {0x20, "SEND_EXIT"},
  {0x21, "SEND_FROM_OUTPUT_ENTRY"}, {0x22, "SEND_FROM_OUTPUT_EXIT"},
  {0x23, "PRIM_SIMPLE_WAIT_PEER_ENTRY"}, {0x24, "PRIM_SIMPLE_WAIT_PEER_EXIT"},
  {0x25, "PRIM_SIMPLE_REDUCE_OR_COPY_MULTI_ENTRY"}, {0x26, "PRIM_SIMPLE_REDUCE_OR_COPY_MULTI_EXIT"},
  {0x27, "PRIM_LL_WAIT_SEND_ENTRY"}, {0x28, "PRIM_LL_WAIT_SEND_EXIT"},
  {0x29, "PRIM_LL_DATA_PROCESS_ENTRY"}, {0x2A, "PRIM_LL_DATA_PROCESS_EXIT"},
  {0x2B, "PRIM_LL128_WAIT_SEND_ENTRY"}, {0x2C, "PRIM_LL128_WAIT_SEND_EXIT"},
  {0x2D, "PRIM_LL128_DATA_PROCESS_ENTRY"}, {0x2E, "PRIM_LL128_DATA_PROCESS_EXIT"},
  {0x2F, "NET_SEND_ENTRY"}, {0x30, "NET_SEND_EXIT"},
  {0x31, "NET_RECV_ENTRY"}, {0x32, "NET_RECV_EXIT"},
  {0x33, "TIME_SYNC_GPU"}, {0x34, "TIME_SYNC_CPU"},
  {0x35, "ALL_REDUCE_RING_SEND_ENTRY"}, {0x36, "ALL_REDUCE_RING_SEND_EXIT"},
  {0x37, "ALL_REDUCE_RING_RECV_REDUCE_SEND_ENTRY"}, {0x38, "ALL_REDUCE_RING_RECV_REDUCE_SEND_EXIT"},
  {0x39, "ALL_REDUCE_RING_DIRECT_RECV_REDUCE_COPY_SEND_ENTRY"},
  {0x3A, "ALL_REDUCE_RING_DIRECT_RECV_REDUCE_COPY_SEND_EXIT"},
  {0x3B, "ALL_REDUCE_RING_DIRECT_RECV_COPY_SEND_ENTRY"}, {0x3C, "ALL_REDUCE_RING_DIRECT_RECV_COPY_SEND_EXIT"},
  {0x3D, "ALL_REDUCE_RING_DIRECT_RECV_ENTRY"}, {0x3E, "ALL_REDUCE_RING_DIRECT_RECV_EXIT"},
  {0x3F, "ALL_REDUCE_TREE_UPDOWN_REDUCE_ENTRY"}, {0x40, "ALL_REDUCE_TREE_UPDOWN_REDUCE_EXIT"},
  {0x41, "ALL_REDUCE_TREE_UPDOWN_BROADCAST_ENTRY"}, {0x42, "ALL_REDUCE_TREE_UPDOWN_BROADCAST_EXIT"},
  {0x43, "ALL_REDUCE_TREE_SPLIT_REDUCE_BROADCAST_ENTRY"}, {0x44, "ALL_REDUCE_TREE_SPLIT_REDUCE_BROADCAST_EXIT"},
  {0x45, "ALL_REDUCE_TREE_SPLIT_REDUCE_ENTRY"}, {0x46, "ALL_REDUCE_TREE_SPLIT_REDUCE_EXIT"},
  {0x47, "ALL_REDUCE_TREE_SPLIT_BROADCAST_ENTRY"}, {0x48, "ALL_REDUCE_TREE_SPLIT_BROADCAST_EXIT"},
  {0x49, "SEND_RECV_LOCAL_COPY_ENTRY"}, {0x4A, "SEND_RECV_LOCAL_COPY_EXIT"},
  {0x4B, "SEND_RECV_SEND_ENTRY"}, {0x4C, "SEND_RECV_SEND_EXIT"},
  {0x4D, "SEND_RECV_RECV_ENTRY"}, {0x4E, "SEND_RECV_RECV_EXIT"},
};
/* clang-format on */

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n > k && memcmp(s + n - k, suffix, k) == 0;
}

void npkit_dump_table_finish(npkit_dump_event_table *t) {
  t->n_defined = 0;
  for (int id = 0; id < NPKIT_DUMP_NUM_IDS; id++) {
    const char *n = t->name[id];
    size_t len = strnlen(n, NPKIT_DUMP_NAME_MAX - 1);
    t->name[id][len] = '\0';
    t->kind[id] = (uint8_t)id;
    t->kind_len[id] = (uint8_t)len;
    if (len == 0) {
      t->role[id] = NPKIT_ROLE_UNKNOWN;
      continue;
    }
    t->n_defined++;
    if (strcmp(n, "INVALID") == 0) {
      t->role[id] = NPKIT_ROLE_INVALID;
    } else if (strcmp(n, "TIME_SYNC_CPU") == 0) {
      t->role[id] = NPKIT_ROLE_TIME_SYNC_CPU;
    } else if (strcmp(n, "TIME_SYNC_GPU") == 0) {
      t->role[id] = NPKIT_ROLE_TIME_SYNC_GPU;
    } else if (ends_with(n, len, "_ENTRY")) {
      t->role[id] = NPKIT_ROLE_ENTRY;
      t->kind_len[id] = (uint8_t)(len - 6);
    } else if (ends_with(n, len, "_EXIT")) {
      t->role[id] = NPKIT_ROLE_EXIT;
      t->kind_len[id] = (uint8_t)(len - 5);
    } else {
      t->role[id] = NPKIT_ROLE_POINT;
    }
  }
  /* An EXIT pairs with the ENTRY of the same kind name, whatever their ids: forks do not always
   * number them id, id + 1. */
  for (int id = 0; id < NPKIT_DUMP_NUM_IDS; id++) {
    if (t->role[id] != NPKIT_ROLE_EXIT) continue;
    for (int e = 0; e < NPKIT_DUMP_NUM_IDS; e++) {
      if (t->role[e] == NPKIT_ROLE_ENTRY && t->kind_len[e] == t->kind_len[id] &&
          memcmp(t->name[e], t->name[id], t->kind_len[id]) == 0) {
        t->kind[id] = (uint8_t)e;
        break;
      }
    }
  }
}

void npkit_dump_table_builtin(npkit_dump_event_table *t) {
  memset(t, 0, sizeof(*t));
  for (size_t i = 0; i < sizeof(builtin_events) / sizeof(builtin_events[0]); i++)
    snprintf(t->name[builtin_events[i].id], NPKIT_DUMP_NAME_MAX, "%s", builtin_events[i].name);
  npkit_dump_table_finish(t);
}

int npkit_dump_table_find(const npkit_dump_event_table *t, const char *name) {
  for (int id = 0; id < NPKIT_DUMP_NUM_IDS; id++)
    if (t->name[id][0] != '\0' && strcmp(t->name[id], name) == 0) return id;
  return -1;
}

/* ---- header parser ---- */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
static int is_ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static int is_ident(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

/* Copy of the text with comments replaced by spaces (newlines kept, so line numbers hold) and
 * backslash-newline continuations turned into "\v" so that the logical line stays one line while
 * its physical lines are still counted. */
static char *strip_comments(const char *s, size_t n) {
  char *o = malloc(n + 1);
  if (o == NULL) return NULL;
  size_t i = 0;
  enum { CODE, LINE_COMMENT, BLOCK_COMMENT, STRING, CHAR_LIT } st = CODE;
  while (i < n) {
    char c = s[i];
    if (c == '\\' && i + 1 < n && s[i + 1] == '\n') {
      o[i] = ' ';
      o[i + 1] = '\v';
      i += 2;
      continue;
    }
    switch (st) {
    case CODE:
      if (c == '/' && i + 1 < n && s[i + 1] == '/') {
        st = LINE_COMMENT;
        o[i++] = ' ';
        continue;
      }
      if (c == '/' && i + 1 < n && s[i + 1] == '*') {
        st = BLOCK_COMMENT;
        o[i] = o[i + 1] = ' ';
        i += 2;
        continue;
      }
      if (c == '"') st = STRING;
      if (c == '\'') st = CHAR_LIT;
      o[i++] = c;
      continue;
    case LINE_COMMENT:
      if (c == '\n') {
        st = CODE;
        o[i++] = c;
      } else {
        o[i++] = ' ';
      }
      continue;
    case BLOCK_COMMENT:
      if (c == '*' && i + 1 < n && s[i + 1] == '/') {
        st = CODE;
        o[i] = o[i + 1] = ' ';
        i += 2;
        continue;
      }
      o[i++] = c == '\n' ? '\n' : ' ';
      continue;
    case STRING:
    case CHAR_LIT:
      if (c == '\\' && i + 1 < n) {
        o[i] = c;
        o[i + 1] = s[i + 1] == '\n' ? '\n' : s[i + 1];
        i += 2;
        continue;
      }
      if ((st == STRING && c == '"') || (st == CHAR_LIT && c == '\'') || c == '\n') st = CODE;
      o[i++] = c;
      continue;
    }
  }
  o[n] = '\0';
  return o;
}

/* Integer literal of C (decimal, 0x hex, 0 octal, U/L suffixes) in [p, end).  Returns 0 and sets
 * *v (saturated at UINT32_MAX + 1 so that "too large" can be told), or -1. */
static int parse_int_literal(const char *p, const char *end, uint64_t *v) {
  uint64_t x = 0;
  int base = 10, digits = 0;
  if (p < end && *p == '0') {
    if (p + 1 < end && (p[1] == 'x' || p[1] == 'X')) {
      base = 16;
      p += 2;
    } else {
      base = 8;
    }
  }
  for (; p < end; p++) {
    int d;
    char c = *p;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      break;
    if (d >= base) return -1;
    x = x * (uint64_t)base + (uint64_t)d;
    if (x > 0x100000000ull) x = 0x100000000ull;
    digits++;
  }
  if (digits == 0) return -1;
  /* suffixes: u, l, ll in any order and case */
  int k = 0;
  while (p < end && k < 3 && (*p == 'u' || *p == 'U' || *p == 'l' || *p == 'L')) {
    p++;
    k++;
  }
  if (p != end) return -1;
  *v = x;
  return 0;
}

typedef struct header_parse {
  npkit_dump_event_table *tab;             /* staged result */
  unsigned line_of_id[NPKIT_DUMP_NUM_IDS]; /* line where this header defined the id; 0: not here */
  unsigned defines;
  const char *name;
  char *err;
  size_t errlen;
} header_parse;

static int hp_error(header_parse *hp, unsigned line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int hp_error(header_parse *hp, unsigned line, const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (hp->err != NULL && hp->errlen > 0) snprintf(hp->err, hp->errlen, "%s:%u: %s", hp->name, line, msg);
  return NPKIT_DUMP_EFORMAT;
}

static int hp_define(header_parse *hp, unsigned line, const char *nm, size_t nlen, uint64_t id) {
  char name[NPKIT_DUMP_NAME_MAX];
  memcpy(name, nm, nlen);
  name[nlen] = '\0';
  npkit_dump_event_table *t = hp->tab;
  for (int other = 0; other < NPKIT_DUMP_NUM_IDS; other++) {
    if (hp->line_of_id[other] == 0 || strcmp(t->name[other], name) != 0) continue;
    if ((uint64_t)other == id) return 0; /* the same definition again */
    return hp_error(hp, line, "NPKIT_EVENT_%s defined twice: %llu here, %d on line %u", name, (unsigned long long)id,
                    other, hp->line_of_id[other]);
  }
  if (hp->line_of_id[id] != 0)
    return hp_error(hp, line, "id %llu given to both NPKIT_EVENT_%s (line %u) and NPKIT_EVENT_%s",
                    (unsigned long long)id, t->name[id], hp->line_of_id[id], name);
  /* extending: the name moves to its new id */
  for (int other = 0; other < NPKIT_DUMP_NUM_IDS; other++)
    if (strcmp(t->name[other], name) == 0) t->name[other][0] = '\0';
  memcpy(t->name[id], name, nlen + 1);
  hp->line_of_id[id] = line;
  hp->defines++;
  return 0;
}

/* One logical line [p, end). */
static int hp_line(header_parse *hp, unsigned line, const char *p, const char *end) {
  while (p < end && is_space(*p)) p++;
  if (p >= end || *p != '#') return 0;
  p++;
  while (p < end && is_space(*p)) p++;
  if (end - p < 7 || memcmp(p, "define", 6) != 0 || !is_space(p[6])) return 0;
  p += 7;
  while (p < end && is_space(*p)) p++;
  const char *id0 = p;
  if (p >= end || !is_ident_start(*p)) return 0;
  while (p < end && is_ident(*p)) p++;
  size_t idlen = (size_t)(p - id0);
  if (idlen < PREFIX_LEN || memcmp(id0, PREFIX, PREFIX_LEN) != 0) return 0;
  if (p < end && *p == '(') return 0; /* a function-like macro is not an event id */
  const char *nm = id0 + PREFIX_LEN;
  size_t nlen = idlen - PREFIX_LEN;
  while (p < end && is_space(*p)) p++;
  if (p >= end) return 0; /* no value: an include guard such as NPKIT_EVENT_H_ */
  if (nlen == 0) return hp_error(hp, line, "'NPKIT_EVENT_' alone is not an event name");
  if (nlen >= NPKIT_DUMP_NAME_MAX) {
    char shown[48];
    snprintf(shown, sizeof(shown), "%.40s", nm);
    return hp_error(hp, line, "event name NPKIT_EVENT_%s... is longer than %d characters", shown,
                    NPKIT_DUMP_NAME_MAX - 1);
  }
  /* value: an integer literal, possibly in parentheses */
  const char *v0 = p, *v1 = end;
  while (v1 > v0 && is_space(v1[-1])) v1--;
  const char *a = v0, *b = v1;
  while (b - a >= 2 && *a == '(' && b[-1] == ')') {
    a++;
    b--;
    while (a < b && is_space(*a)) a++;
    while (b > a && is_space(b[-1])) b--;
  }
  uint64_t value;
  char nbuf[NPKIT_DUMP_NAME_MAX], shown[64];
  size_t vl = (size_t)(v1 - v0);
  for (size_t i = 0; i < vl; i++)
    if (v0[i] == '\v') vl = i; /* show the first physical line only */
  snprintf(shown, sizeof(shown), "%.*s%s", (int)(vl > 40 ? 40 : vl), v0, vl > 40 ? "..." : "");
  memcpy(nbuf, nm, nlen);
  nbuf[nlen] = '\0';
  if (a < b && *a == '-') return hp_error(hp, line, "NPKIT_EVENT_%s has a negative id", nbuf);
  if (parse_int_literal(a, b, &value) != 0)
    return hp_error(hp, line, "the value of NPKIT_EVENT_%s is not an integer: '%s'", nbuf, shown);
  if (value >= NPKIT_DUMP_NUM_IDS)
    return hp_error(hp, line, "NPKIT_EVENT_%s = %s does not fit the 8-bit event type (0..255)", nbuf, shown);
  return hp_define(hp, line, nm, nlen, value);
}

int npkit_dump_table_parse_header(npkit_dump_event_table *t, const char *text, size_t len, npkit_dump_header_mode mode,
                                  const char *name, char *err, size_t errlen) {
  if (name == NULL) name = "header";
  if (len > NPKIT_DUMP_MAX_HEADER_BYTES) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen, "%s: %zu bytes: too large for an NPKit event header", name, len);
    return NPKIT_DUMP_EFORMAT;
  }
  if (len > 0 && memchr(text, '\0', len) != NULL) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: contains NUL bytes: not a C header", name);
    return NPKIT_DUMP_EFORMAT;
  }
  header_parse *hp = calloc(1, sizeof(*hp));
  npkit_dump_event_table *stage = malloc(sizeof(*stage));
  char *clean = strip_comments(text, len);
  int rc = 0;
  if (hp == NULL || stage == NULL || clean == NULL) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: out of memory", name);
    rc = NPKIT_DUMP_ENOMEM;
    goto out;
  }
  if (mode == NPKIT_HEADER_EXTEND)
    memcpy(stage, t, sizeof(*stage));
  else
    memset(stage, 0, sizeof(*stage));
  hp->tab = stage;
  hp->name = name;
  hp->err = err;
  hp->errlen = errlen;
  unsigned line = 1;
  const char *p = clean, *end = clean + len;
  while (p < end && rc == 0) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl != NULL ? nl : end;
    rc = hp_line(hp, line, p, le);
    for (const char *q = p; q < le; q++)
      if (*q == '\v') line++;
    line++;
    p = nl != NULL ? nl + 1 : end;
  }
  if (rc == 0 && hp->defines == 0) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen, "%s: no '#define NPKIT_EVENT_<NAME> <id>' line found: not an NPKit event header", name);
    rc = NPKIT_DUMP_EFORMAT;
  }
  if (rc == 0) {
    npkit_dump_table_finish(stage);
    memcpy(t, stage, sizeof(*t));
  }
out:
  free(clean);
  free(stage);
  free(hp);
  return rc;
}

int npkit_dump_table_load_header(npkit_dump_event_table *t, const char *path, npkit_dump_header_mode mode, char *err,
                                 size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NPKIT_DUMP_EIO;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: not a regular file", path);
    close(fd);
    return NPKIT_DUMP_EIO;
  }
  if ((uint64_t)st.st_size > NPKIT_DUMP_MAX_HEADER_BYTES) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen, "%s: %lld bytes: too large for an NPKit event header", path, (long long)st.st_size);
    close(fd);
    return NPKIT_DUMP_EFORMAT;
  }
  size_t cap = (size_t)st.st_size, len = 0;
  char *buf = malloc(cap + 1);
  if (buf == NULL) {
    close(fd);
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: out of memory", path);
    return NPKIT_DUMP_ENOMEM;
  }
  while (len < cap) {
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: %s", path, strerror(errno));
      free(buf);
      close(fd);
      return NPKIT_DUMP_EIO;
    }
    if (n == 0) break;
    len += (size_t)n;
  }
  close(fd);
  int rc = npkit_dump_table_parse_header(t, buf, len, mode, path, err, errlen);
  free(buf);
  return rc;
}
