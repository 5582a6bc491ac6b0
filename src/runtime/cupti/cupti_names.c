#include "cupti_names.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

/* ---- a small Itanium demangler: just the entity's name ----
 * Enough for kernel names when no C++ runtime is loaded: plain and nested names, std::,
 * anonymous namespaces, and template argument lists, which are skipped and shown as "<...>".
 * Anything it does not understand makes it give up (the raw name is then shown). */

typedef struct dm {
  const char *p, *end;
  char *out;
  size_t len, cap;
  int bad;
} dm;

/* Appends, cutting what does not fit (the caller marks a full name). */
static void put(dm *d, const char *s, size_t n) {
  size_t room = d->cap - d->len - 1;
  if (n > room) n = room;
  memcpy(d->out + d->len, s, n);
  d->len += n;
  d->out[d->len] = '\0';
}

static int peek(const dm *d) { return d->p < d->end ? (unsigned char)*d->p : 0; }

static size_t number(dm *d) {
  size_t n = 0;
  if (!isdigit(peek(d))) {
    d->bad = 1;
    return 0;
  }
  while (isdigit(peek(d))) {
    n = n * 10 + (size_t)(*d->p - '0');
    if (n > 4096) {
      d->bad = 1;
      return 0;
    }
    d->p++;
  }
  return n;
}

/* <source-name>: <length> <identifier> */
static void source_name(dm *d, int emit) {
  size_t n = number(d);
  if (d->bad || (size_t)(d->end - d->p) < n) {
    d->bad = 1;
    return;
  }
  if (emit) {
    if (n >= 10 && strncmp(d->p, "_GLOBAL__N", 10) == 0)
      put(d, "(anonymous namespace)", 21);
    else
      put(d, d->p, n);
  }
  d->p += n;
}

/* S_, S<base-36>_, St, Sa, Ss ... */
static void substitution(dm *d) {
  d->p++; /* S */
  if (islower(peek(d))) {
    d->p++;
    return;
  }
  while (isdigit(peek(d)) || isupper(peek(d))) d->p++;
  if (peek(d) != '_') d->bad = 1;
  else d->p++;
}

/* Skips a template argument list from its 'I' through the matching 'E'. */
static void skip_args(dm *d) {
  int depth = 0;
  while (!d->bad && d->p < d->end) {
    int c = peek(d);
    if (isdigit(c)) {
      source_name(d, 0);
      continue;
    }
    switch (c) {
    case 'I': case 'N': case 'F': case 'X': case 'J':
      depth++;
      d->p++;
      break;
    case 'E':
      d->p++;
      if (--depth == 0) return;
      break;
    case 'L': /* literal: L <type> <value> E, or L_Z <encoding> E */
      d->p++;
      if (peek(d) == '_' && d->p + 1 < d->end && d->p[1] == 'Z') {
        d->p += 2;
        depth++;
        break;
      }
      if (isdigit(peek(d))) source_name(d, 0);
      else if (peek(d) == 'S') substitution(d);
      else d->p++;
      if (peek(d) == 'n') d->p++;
      while (isalnum(peek(d)) && peek(d) != 'E') d->p++;
      if (peek(d) != 'E') d->bad = 1;
      else d->p++;
      break;
    case 'S':
      substitution(d);
      break;
    case 'T': /* T_, T<n>_ */
      d->p++;
      while (isdigit(peek(d))) d->p++;
      if (peek(d) != '_') d->bad = 1;
      else d->p++;
      break;
    case 'A': /* A <size> _ <type> */
      d->p++;
      while (isdigit(peek(d))) d->p++;
      if (peek(d) != '_') d->bad = 1;
      else d->p++;
      break;
    case 'D':
      d->p++;
      if (peek(d) == 'v') {
        d->p++;
        while (isdigit(peek(d))) d->p++;
        if (peek(d) == '_') d->p++;
      } else if (d->p < d->end) {
        d->p++;
      }
      break;
    default:
      d->p++;
      break;
    }
  }
  d->bad = 1; /* ran off the end */
}

static void template_args(dm *d) {
  skip_args(d);
  if (!d->bad) put(d, "<...>", 5);
}

/* One component of a name: a source name, std, an unnamed type or lambda; with its template
 * arguments if any.  Returns 0 when the next character starts no component. */
static int component(dm *d) {
  int c = peek(d);
  if (isdigit(c)) {
    source_name(d, 1);
  } else if (c == 'S' && d->p + 1 < d->end && d->p[1] == 't') {
    d->p += 2;
    put(d, "std", 3);
    return 1; /* std is always followed by "::" and a name */
  } else if (c == 'S') {
    substitution(d);
    put(d, "...", 3);
  } else if (c == 'U' && d->p + 1 < d->end && d->p[1] == 'l') {
    d->p += 2;
    int depth = 1;
    while (d->p < d->end && depth > 0) {
      if (*d->p == 'E') depth--;
      d->p++;
    }
    while (isdigit(peek(d))) d->p++;
    if (peek(d) == '_') d->p++;
    put(d, "{lambda}", 8);
  } else if (c == 'L') {
    d->p++; /* internal linkage marker */
    return component(d);
  } else {
    return 0;
  }
  if (!d->bad && peek(d) == 'I') template_args(d);
  return !d->bad;
}

int npkit_kernel_demangle_builtin(const char *raw, char *out, size_t outlen) {
  if (outlen == 0) return -1;
  out[0] = '\0';
  if (raw == NULL || strncmp(raw, "_Z", 2) != 0 || outlen < 8) return -1;
  dm d = {raw, raw + strlen(raw), out, 0, outlen, 0};
  d.p += 2;
  if (peek(&d) == 'N') {
    d.p++;
    while (peek(&d) == 'r' || peek(&d) == 'V' || peek(&d) == 'K' || peek(&d) == 'R' ||
           peek(&d) == 'O')
      d.p++;
    int first = 1;
    while (!d.bad && peek(&d) != 'E') {
      if (!first) put(&d, "::", 2);
      if (!component(&d)) d.bad = 1;
      first = 0;
    }
    if (first) d.bad = 1;
  } else {
    int std = peek(&d) == 'S' && d.p + 1 < d.end && d.p[1] == 't';
    if (!component(&d)) d.bad = 1;
    if (std && !d.bad) {
      put(&d, "::", 2);
      if (!component(&d)) d.bad = 1;
    }
  }
  if (d.bad || d.len == 0) {
    out[0] = '\0';
    return -1;
  }
  return (int)d.len;
}

/* ---- cutting a demangled name ---- */

/* "void ns::k<int>(float*, int)" -> "ns::k<int>" */
static size_t cut_signature(const char *s, char *out, size_t outlen) {
  size_t n = strlen(s), start = 0, stop = n;
  int depth = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '<' || c == '{' || c == '[') depth++;
    else if ((c == '>' || c == '}' || c == ']') && depth > 0) depth--;
    else if (c == '(' && depth == 0) {
      if (strncmp(s + i, "(anonymous namespace)", 21) == 0) {
        i += 20;
        continue;
      }
      if (i >= 8 && strncmp(s + i - 8, "operator", 8) == 0 && i + 1 < n && s[i + 1] == ')') {
        i++;
        continue;
      }
      stop = i;
      break;
    }
  }
  if (stop > 5 && strncmp(s, "void ", 5) == 0) start = 5;
  while (stop > start && s[stop - 1] == ' ') stop--;
  size_t len = stop - start;
  if (len >= outlen) len = outlen - 1;
  memcpy(out, s + start, len);
  out[len] = '\0';
  return len;
}

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

size_t npkit_kernel_readable(const char *raw, char *out, size_t outlen) {
  if (outlen == 0) return 0;
  out[0] = '\0';
  if (raw == NULL) return 0;
  if (strncmp(raw, "_Z", 2) == 0) {
    /* The application's C++ runtime, if it has one: never loaded by npkit itself. */
    cxa_demangle_fn cxa;
    *(void **)(&cxa) = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (cxa != NULL) {
      int status = -1;
      char *full = cxa(raw, NULL, NULL, &status);
      if (full != NULL && status == 0) {
        size_t len = cut_signature(full, out, outlen);
        free(full);
        if (len > 0) return len;
      } else {
        free(full);
      }
    }
    int n = npkit_kernel_demangle_builtin(raw, out, outlen);
    if (n > 0) return (size_t)n;
  }
  return cut_signature(raw, out, outlen);
}

/* ---- interning ---- */

typedef struct ptr_slot {
  const char *ptr;
  uint32_t id;
} ptr_slot;

typedef struct text_slot {
  uint64_t hash; /* 0 = empty */
  uint32_t id;
} text_slot;

static ptr_slot *by_ptr;
static size_t ptr_cap, ptr_n;
static text_slot *by_text;
static size_t text_cap, text_n;
static uint32_t names;

static uint32_t name_id(const char *raw, npkit_log_writer *log);

static size_t hash_slot(uint64_t h, size_t cap) {
  return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static int grow_ptr(void) {
  size_t cap = ptr_cap ? 2 * ptr_cap : 256;
  ptr_slot *t = calloc(cap, sizeof *t);
  if (t == NULL) return -1;
  for (size_t i = 0; i < ptr_cap; i++) {
    if (by_ptr[i].ptr == NULL) continue;
    size_t j = hash_slot((uint64_t)(uintptr_t)by_ptr[i].ptr, cap);
    while (t[j].ptr != NULL) j = (j + 1) & (cap - 1);
    t[j] = by_ptr[i];
  }
  free(by_ptr);
  by_ptr = t;
  ptr_cap = cap;
  return 0;
}

static int grow_text(void) {
  size_t cap = text_cap ? 2 * text_cap : 256;
  text_slot *t = calloc(cap, sizeof *t);
  if (t == NULL) return -1;
  for (size_t i = 0; i < text_cap; i++) {
    if (by_text[i].hash == 0) continue;
    size_t j = hash_slot(by_text[i].hash, cap);
    while (t[j].hash != 0) j = (j + 1) & (cap - 1);
    t[j] = by_text[i];
  }
  free(by_text);
  by_text = t;
  text_cap = cap;
  return 0;
}

static void write_string(npkit_log_writer *log, uint32_t id, const char *text, size_t len) {
  struct {
    npkit_string_rec rec;
    char text[NPKIT_KERNEL_NAME_MAX + 8];
  } block;
  block.rec.id = id;
  block.rec.length = (uint32_t)len;
  memcpy(block.text, text, len);
  if (log != NULL) npkit_logw_append(log, NPKIT_BLOCK_STRING, 1, &block, sizeof block.rec + len);
}

/* The id of a readable name, adding it when new. */
static uint32_t text_id(const char *text, size_t len, npkit_log_writer *log) {
  uint64_t h = npkit_hash64(NPKIT_HASH_SEED, text, len);
  if (h == 0) h = 1;
  if (2 * (text_n + 1) > text_cap && grow_text() != 0) return 0;
  size_t j = hash_slot(h, text_cap);
  while (by_text[j].hash != 0 && by_text[j].hash != h) j = (j + 1) & (text_cap - 1);
  if (by_text[j].hash == h) return by_text[j].id;
  uint32_t id = NPKIT_STRING_ID_GPU_BASE + ++names;
  by_text[j].hash = h;
  by_text[j].id = id;
  text_n++;
  write_string(log, id, text, len);
  return id;
}

uint32_t npkit_kernel_name_id(const char *raw, npkit_log_writer *log) {
  /* Records come in runs of the same kernel: the previous answer first. */
  static const char *last_raw;
  static uint32_t last_id;
  if (raw == NULL) return 0;
  if (raw == last_raw) return last_id;
  uint32_t id = name_id(raw, log);
  if (id != 0) {
    last_raw = raw;
    last_id = id;
  }
  return id;
}

static uint32_t name_id(const char *raw, npkit_log_writer *log) {
  if (ptr_cap > 0) {
    size_t j = hash_slot((uint64_t)(uintptr_t)raw, ptr_cap);
    while (by_ptr[j].ptr != NULL) {
      if (by_ptr[j].ptr == raw) return by_ptr[j].id;
      j = (j + 1) & (ptr_cap - 1);
    }
  }
  char name[NPKIT_KERNEL_NAME_MAX + 1];
  size_t len = npkit_kernel_readable(raw, name, sizeof name);
  if (len == NPKIT_KERNEL_NAME_MAX) memcpy(name + len - 3, "...", 3);
  uint32_t id = text_id(name, len, log);
  if (id == 0) return 0;
  if (2 * (ptr_n + 1) > ptr_cap && grow_ptr() != 0) return id;
  size_t j = hash_slot((uint64_t)(uintptr_t)raw, ptr_cap);
  while (by_ptr[j].ptr != NULL) j = (j + 1) & (ptr_cap - 1);
  by_ptr[j].ptr = raw;
  by_ptr[j].id = id;
  ptr_n++;
  return id;
}

uint32_t npkit_kernel_names_count(void) { return names; }
