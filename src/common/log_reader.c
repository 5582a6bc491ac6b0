#include "log_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the event log is little endian and read in place: a big-endian reader needs byte swapping"
#endif

#define MAX_HEADER_SIZE (1u << 20)
#define MAX_RECORD_SIZE (64u << 10)
/* Bytes of event records the iterator reads at a time. */
#define CURSOR_BYTES (256u << 10)

static uint64_t round8(uint64_t v) { return (v + 7) & ~(uint64_t)7; }

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (err == NULL || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Reads exactly n bytes at off; -1 with errno (EIO for a short read) otherwise. */
static int read_at(int fd, void *buf, size_t n, uint64_t off) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t k = pread(fd, p, n, (off_t)off);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (k == 0) {
      errno = EIO;
      return -1;
    }
    p += k;
    n -= (size_t)k;
    off += (uint64_t)k;
  }
  return 0;
}

/* ---- latest record per key ----
 * Records arrive in file order and a later one replaces an earlier one with the same key (a
 * communicator learns its device, counters grow).  Entries are appended and the table is compacted
 * (sort by key then arrival, keep the last) whenever it has doubled, so memory follows the number
 * of distinct keys, not the number of snapshots in a long log. */

typedef struct entry_head {
  uint64_t key;
  uint64_t seq;
} entry_head;

typedef struct keyed_table {
  unsigned char *data;
  size_t n, cap, esz, compacted_n;
  uint64_t seq;
  void (*release)(void *payload);
} keyed_table;

static void table_init(keyed_table *t, size_t payload, void (*release)(void *)) {
  memset(t, 0, sizeof(*t));
  t->esz = sizeof(entry_head) + round8(payload);
  t->release = release;
}

static int entry_cmp(const void *a, const void *b) {
  const entry_head *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

static void table_compact(keyed_table *t) {
  if (t->n < 2) {
    t->compacted_n = t->n;
    return;
  }
  qsort(t->data, t->n, t->esz, entry_cmp);
  size_t out = 0;
  for (size_t i = 0; i < t->n; i++) {
    unsigned char *e = t->data + i * t->esz;
    int superseded = i + 1 < t->n && ((entry_head *)(e + t->esz))->key == ((entry_head *)e)->key;
    if (superseded) {
      if (t->release) t->release(e + sizeof(entry_head));
      continue;
    }
    if (out != i) memcpy(t->data + out * t->esz, e, t->esz);
    out++;
  }
  t->n = out;
  t->compacted_n = out;
}

/* Returns the payload slot for a new record, or NULL if memory is short or the table holds
 * NPKIT_READER_MAX_KEYS distinct keys already (*full is then set). */
static void *table_add(keyed_table *t, uint64_t key, int *full) {
  *full = 0;
  if (t->n == t->cap) {
    if (t->n >= 64 && t->n >= 2 * t->compacted_n) {
      table_compact(t);
    }
    if (t->n >= NPKIT_READER_MAX_KEYS) {
      table_compact(t);
      if (t->n >= NPKIT_READER_MAX_KEYS) {
        *full = 1;
        return NULL;
      }
    }
    if (t->n == t->cap) {
      size_t cap = t->cap ? 2 * t->cap : 16;
      unsigned char *d = realloc(t->data, cap * t->esz);
      if (d == NULL) return NULL;
      t->data = d;
      t->cap = cap;
    }
  }
  unsigned char *e = t->data + t->n * t->esz;
  memset(e, 0, t->esz);
  ((entry_head *)e)->key = key;
  ((entry_head *)e)->seq = t->seq++;
  t->n++;
  return e + sizeof(entry_head);
}

/* Compacts and copies the payloads out into a plain array of `size`-byte records.  The table is
 * emptied (payload ownership moves to the array). */
static int table_export(keyed_table *t, void **out, size_t *n, size_t size) {
  table_compact(t);
  *out = NULL;
  *n = 0;
  if (t->n > 0) {
    unsigned char *a = malloc(t->n * size);
    if (a == NULL) return -1;
    for (size_t i = 0; i < t->n; i++) memcpy(a + i * size, t->data + i * t->esz + sizeof(entry_head), size);
    *out = a;
    *n = t->n;
  }
  free(t->data);
  t->data = NULL;
  t->n = t->cap = t->compacted_n = 0;
  return 0;
}

static void table_free(keyed_table *t) {
  if (t->release)
    for (size_t i = 0; i < t->n; i++) t->release(t->data + i * t->esz + sizeof(entry_head));
  free(t->data);
  t->data = NULL;
  t->n = 0;
}

static void release_string(void *payload) {
  npkit_log_string *s = payload;
  free(s->text);
  s->text = NULL;
}

/* ---- the scan ---- */

typedef struct scan_state {
  keyed_table comms, threads, counters, strings;
  unsigned char *payload;  /* reusable buffer for one non-event block */
  size_t payload_cap;
} scan_state;

/* Why a block cannot be used; NULL if it can.  *stride gets the record size to step by. */
static const char *check_records(uint32_t count, uint32_t size, size_t known, uint64_t *stride) {
  *stride = known;
  if (count == 0) return NULL;
  /* Records of a later version may be longer; they keep being multiples of 8, so the payload
   * divides evenly. */
  if (size % count != 0) return "payload is not a whole number of records";
  *stride = size / count;
  if (*stride < known) return "records shorter than this reader's";
  return NULL;
}

static void copy_cstr(char *dst, size_t dstlen, const char *src, size_t srclen) {
  size_t n = strnlen(src, srclen);
  if (n >= dstlen) n = dstlen - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static int add_note(npkit_log_reader *r, const unsigned char *p) {
  npkit_note_rec rec;
  memcpy(&rec, p, sizeof(rec));
  if (r->n_notes >= NPKIT_READER_MAX_NOTES) {
    r->notes_omitted++;
    return 0;
  }
  if (r->n_notes == r->notes_cap) {
    size_t cap = r->notes_cap ? 2 * r->notes_cap : 8;
    npkit_log_note *n = realloc(r->notes, cap * sizeof(*n));
    if (n == NULL) return -1;
    r->notes = n;
    r->notes_cap = cap;
  }
  char *text = malloc((size_t)rec.length + 1);
  if (text == NULL) return -1;
  memcpy(text, p + sizeof(rec), rec.length);
  text[rec.length] = '\0';
  npkit_log_note *n = &r->notes[r->n_notes++];
  n->time_ns = rec.time_ns;
  n->level = rec.level;
  n->length = rec.length;
  n->text = text;
  return 0;
}

/* Parses one non-event block whose payload is in p.  Returns NULL, or why it is corrupt; sets
 * *nomem on allocation failure. */
static const char *parse_block(npkit_log_reader *r, scan_state *s, const npkit_block_header *bh,
                               const unsigned char *p, int *nomem) {
  uint64_t stride;
  const char *why;
  int full = 0;
  *nomem = 0;
  switch (bh->type) {
  case NPKIT_BLOCK_COMM:
    if ((why = check_records(bh->count, bh->size, sizeof(npkit_comm_rec), &stride)) != NULL) return why;
    for (uint32_t i = 0; i < bh->count; i++) {
      npkit_comm_rec c;
      memcpy(&c, p + i * stride, sizeof(c));
      c.name[sizeof(c.name) - 1] = '\0';
      npkit_comm_rec *slot = table_add(&s->comms, c.local_id, &full);
      if (slot == NULL) goto oom;
      *slot = c;
    }
    return NULL;
  case NPKIT_BLOCK_THREAD:
    if ((why = check_records(bh->count, bh->size, sizeof(npkit_thread_rec), &stride)) != NULL) return why;
    for (uint32_t i = 0; i < bh->count; i++) {
      npkit_thread_rec t;
      memcpy(&t, p + i * stride, sizeof(t));
      t.name[sizeof(t.name) - 1] = '\0';
      npkit_thread_rec *slot = table_add(&s->threads, t.index, &full);
      if (slot == NULL) goto oom;
      *slot = t;
    }
    return NULL;
  case NPKIT_BLOCK_COUNTERS:
    if ((why = check_records(bh->count, bh->size, sizeof(npkit_counter_rec), &stride)) != NULL) return why;
    for (uint32_t i = 0; i < bh->count; i++) {
      npkit_counter_rec c;
      memcpy(&c, p + i * stride, sizeof(c));
      npkit_counter_rec *slot = table_add(&s->counters, ((uint64_t)c.thread << 32) | c.source, &full);
      if (slot == NULL) goto oom;
      *slot = c;
    }
    return NULL;
  case NPKIT_BLOCK_PROCESS:
    if (bh->count < 1) return "PROCESS block without a record";
    if ((why = check_records(bh->count, bh->size, sizeof(npkit_process_rec), &stride)) != NULL) return why;
    memcpy(&r->process, p, sizeof(r->process));
    r->process.source[sizeof(r->process.source) - 1] = '\0';
    r->has_process = 1;
    return NULL;
  case NPKIT_BLOCK_NOTE: {
    npkit_note_rec rec;
    if (bh->size < sizeof(rec)) return "NOTE block shorter than its record";
    memcpy(&rec, p, sizeof(rec));
    if (rec.length > bh->size - sizeof(rec)) return "NOTE text longer than its block";
    if (add_note(r, p) != 0) goto oom;
    return NULL;
  }
  case NPKIT_BLOCK_STRING: {
    uint64_t off = 0;
    if (bh->count > bh->size / sizeof(npkit_string_rec)) return "more strings than fit in the block";
    for (uint32_t i = 0; i < bh->count; i++) {
      npkit_string_rec rec;
      if (bh->size - off < sizeof(rec)) return "STRING record beyond its block";
      memcpy(&rec, p + off, sizeof(rec));
      off += sizeof(rec);
      if (rec.length > bh->size - off) return "STRING text beyond its block";
      char *text = malloc((size_t)rec.length + 1);
      if (text == NULL) goto oom;
      memcpy(text, p + off, rec.length);
      text[rec.length] = '\0';
      npkit_log_string *slot = table_add(&s->strings, rec.id, &full);
      if (slot == NULL) {
        free(text);
        goto oom;
      }
      slot->id = rec.id;
      slot->length = rec.length;
      slot->text = text;
      off += round8(rec.length);
      if (off > bh->size) off = bh->size; /* last text may end unpadded: nothing follows it */
    }
    return NULL;
  }
  case NPKIT_BLOCK_END:
    if (bh->size < NPKIT_END_REC_V1_SIZE) return "END block shorter than its record";
    memset(&r->end, 0, sizeof(r->end));
    memcpy(&r->end, p, bh->size < sizeof(r->end) ? bh->size : sizeof(r->end));
    r->has_end = 1;
    return NULL;
  default:
    return NULL;
  }
oom:
  if (full) return "more distinct records than this reader keeps";
  *nomem = 1;
  return "out of memory";
}

static void mark_truncated(npkit_log_reader *r, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void mark_truncated(npkit_log_reader *r, uint64_t off, const char *fmt, ...) {
  va_list ap;
  r->truncated = 1;
  r->truncated_at = off;
  va_start(ap, fmt);
  vsnprintf(r->truncation, sizeof(r->truncation), fmt, ap);
  va_end(ap);
}

static int is_known_type(unsigned type) {
  return (type >= NPKIT_BLOCK_EVENTS && type <= NPKIT_BLOCK_NOTE) || type == NPKIT_BLOCK_END;
}

/* Walks the blocks.  Returns 0, or NPKIT_READER_EIO / ENOMEM with a message. */
static int scan_blocks(npkit_log_reader *r, scan_state *s, char *err, size_t errlen) {
  uint64_t off = r->header_size;
  while (off < r->file_size) {
    npkit_block_header bh;
    uint64_t left = r->file_size - off;
    if (left < sizeof(bh)) {
      mark_truncated(r, off, "incomplete block header: %llu of %zu bytes", (unsigned long long)left,
                     sizeof(bh));
      break;
    }
    if (read_at(r->fd, &bh, sizeof(bh), off) != 0) goto io_error;
    left -= sizeof(bh);
    if (bh.magic != NPKIT_BLOCK_MAGIC) {
      mark_truncated(r, off, "corrupt block: bad magic 0x%08x", bh.magic);
      break;
    }
    if (bh.size % 8 != 0) {
      mark_truncated(r, off, "corrupt block: size %u is not a multiple of 8", bh.size);
      break;
    }
    if (bh.size > left) {
      mark_truncated(r, off, "incomplete %s block: %llu of %u payload bytes",
                     npkit_block_type_name(bh.type), (unsigned long long)left, bh.size);
      break;
    }
    if (bh.type == NPKIT_BLOCK_EVENTS) {
      if ((uint64_t)bh.count * r->record_size != bh.size) {
        mark_truncated(r, off, "corrupt EVENTS block: %u records of %u bytes in %u bytes", bh.count,
                       r->record_size, bh.size);
        break;
      }
      r->n_events += bh.count;
      r->n_event_blocks++;
    } else if (!is_known_type(bh.type)) {
      r->n_unknown_blocks++;
    } else {
      if (bh.size > NPKIT_READER_MAX_META_BLOCK) {
        mark_truncated(r, off, "corrupt %s block: implausible size %u", npkit_block_type_name(bh.type),
                       bh.size);
        break;
      }
      if (bh.size > s->payload_cap) {
        size_t cap = bh.size < 4096 ? 4096 : bh.size;
        unsigned char *p = realloc(s->payload, cap);
        if (p == NULL) goto oom;
        s->payload = p;
        s->payload_cap = cap;
      }
      if (bh.size > 0 && read_at(r->fd, s->payload, bh.size, off + sizeof(bh)) != 0) goto io_error;
      int nomem;
      const char *why = parse_block(r, s, &bh, s->payload, &nomem);
      if (nomem) goto oom;
      if (why != NULL) {
        mark_truncated(r, off, "corrupt %s block: %s", npkit_block_type_name(bh.type), why);
        break;
      }
    }
    r->n_blocks++;
    off += sizeof(bh) + bh.size;
  }
  r->data_end = off;
  return 0;
io_error:
  set_err(err, errlen, "%s: read error: %s", r->path, strerror(errno));
  return NPKIT_READER_EIO;
oom:
  set_err(err, errlen, "%s: out of memory while reading the log", r->path);
  return NPKIT_READER_ENOMEM;
}

static int check_header(npkit_log_reader *r, char *err, size_t errlen) {
  unsigned char raw[sizeof(npkit_log_header)];
  size_t have = r->file_size < sizeof(raw) ? (size_t)r->file_size : sizeof(raw);
  if (r->file_size == 0) {
    set_err(err, errlen, "%s: empty file, not an npkit log", r->path);
    return NPKIT_READER_EFORMAT;
  }
  if (read_at(r->fd, raw, have, 0) != 0) {
    set_err(err, errlen, "%s: read error: %s", r->path, strerror(errno));
    return NPKIT_READER_EIO;
  }
  if (have < 8 || memcmp(raw, NPKIT_LOG_MAGIC, 8) != 0) {
    set_err(err, errlen, "%s: not an npkit log (bad magic)", r->path);
    return NPKIT_READER_EFORMAT;
  }
  if (have < sizeof(raw)) {
    set_err(err, errlen, "%s: truncated header: %zu of %zu bytes", r->path, have, sizeof(raw));
    return NPKIT_READER_EFORMAT;
  }
  npkit_log_header *h = &r->header;
  memcpy(h, raw, sizeof(*h));
  if (h->endian != NPKIT_LOG_ENDIAN_TAG) {
    if (h->endian == 0x04030201u)
      set_err(err, errlen, "%s: big-endian log, not supported", r->path);
    else
      set_err(err, errlen, "%s: corrupt header: bad endian tag 0x%08x", r->path, h->endian);
    return NPKIT_READER_EFORMAT;
  }
  /* A later version appends fields and block types, which this reader skips by size. */
  if (h->version == 0) {
    set_err(err, errlen, "%s: corrupt header: version 0", r->path);
    return NPKIT_READER_EFORMAT;
  }
  if (h->header_size < sizeof(*h) || h->header_size % 8 != 0 || h->header_size > MAX_HEADER_SIZE) {
    set_err(err, errlen, "%s: corrupt header: header_size %u (expected a multiple of 8 from %zu to %u)",
            r->path, h->header_size, sizeof(*h), MAX_HEADER_SIZE);
    return NPKIT_READER_EFORMAT;
  }
  if (h->header_size > r->file_size) {
    set_err(err, errlen, "%s: truncated header: %llu of %u bytes", r->path,
            (unsigned long long)r->file_size, h->header_size);
    return NPKIT_READER_EFORMAT;
  }
  if (h->record_size < sizeof(npkit_event) || h->record_size % 8 != 0 || h->record_size > MAX_RECORD_SIZE) {
    set_err(err, errlen, "%s: corrupt header: record_size %u (expected a multiple of 8 from %zu to %u)",
            r->path, h->record_size, sizeof(npkit_event), MAX_RECORD_SIZE);
    return NPKIT_READER_EFORMAT;
  }
  h->host[sizeof(h->host) - 1] = '\0';
  h->launcher[sizeof(h->launcher) - 1] = '\0';
  h->library_version[sizeof(h->library_version) - 1] = '\0';
  r->header_size = h->header_size;
  r->record_size = h->record_size;
  return 0;
}

static void settle_identity(npkit_log_reader *r) {
  r->rank = r->header.rank;
  r->world_size = r->header.world_size;
  r->local_rank = r->header.local_rank;
  r->device = -1;
  copy_cstr(r->rank_source, sizeof(r->rank_source), r->header.launcher, sizeof(r->header.launcher));
  if (!r->has_process) return;
  const npkit_process_rec *p = &r->process;
  if (p->rank >= 0) {
    r->rank = p->rank;
    copy_cstr(r->rank_source, sizeof(r->rank_source), p->source, sizeof(p->source));
  }
  if (p->world_size >= 0) r->world_size = p->world_size;
  if (p->local_rank >= 0) r->local_rank = p->local_rank;
  if (p->device >= 0) r->device = p->device;
}

static void settle_totals(npkit_log_reader *r) {
  uint64_t rec = 0, drop = 0;
  for (size_t i = 0; i < r->n_counters; i++) {
    rec += r->counters[i].recorded;
    drop += r->counters[i].dropped;
  }
  if (r->has_end) {
    if (r->end.events_recorded > rec) rec = r->end.events_recorded;
    if (r->end.events_dropped > drop) drop = r->end.events_dropped;
  }
  r->recorded = rec;
  r->dropped = drop;
}

static void scan_free(scan_state *s) {
  table_free(&s->comms);
  table_free(&s->threads);
  table_free(&s->counters);
  table_free(&s->strings);
  free(s->payload);
}

int npkit_reader_open_fd(int fd, const char *name, npkit_log_reader **out, char *err, size_t errlen) {
  struct stat st;
  int rc;
  *out = NULL;
  npkit_log_reader *r = calloc(1, sizeof(*r));
  if (r == NULL) {
    set_err(err, errlen, "%s: out of memory", name);
    return NPKIT_READER_ENOMEM;
  }
  r->fd = fd;
  copy_cstr(r->path, sizeof(r->path), name, strlen(name));
  if (fstat(fd, &st) != 0) {
    set_err(err, errlen, "%s: %s", name, strerror(errno));
    free(r);
    return NPKIT_READER_EIO;
  }
  if (!S_ISREG(st.st_mode)) {
    set_err(err, errlen, "%s: not a regular file", name);
    free(r);
    return NPKIT_READER_EIO;
  }
  r->file_size = (uint64_t)st.st_size;
  if ((rc = check_header(r, err, errlen)) != 0) {
    free(r);
    return rc;
  }

  scan_state s;
  memset(&s, 0, sizeof(s));
  table_init(&s.comms, sizeof(npkit_comm_rec), NULL);
  table_init(&s.threads, sizeof(npkit_thread_rec), NULL);
  table_init(&s.counters, sizeof(npkit_counter_rec), NULL);
  table_init(&s.strings, sizeof(npkit_log_string), release_string);
  rc = scan_blocks(r, &s, err, errlen);
  if (rc == 0) {
    if (table_export(&s.comms, (void **)&r->comms, &r->n_comms, sizeof(npkit_comm_rec)) != 0 ||
        table_export(&s.threads, (void **)&r->threads, &r->n_threads, sizeof(npkit_thread_rec)) != 0 ||
        table_export(&s.counters, (void **)&r->counters, &r->n_counters, sizeof(npkit_counter_rec)) != 0 ||
        table_export(&s.strings, (void **)&r->strings, &r->n_strings, sizeof(npkit_log_string)) != 0) {
      set_err(err, errlen, "%s: out of memory while reading the log", name);
      rc = NPKIT_READER_ENOMEM;
    }
  }
  scan_free(&s);
  if (rc != 0) {
    npkit_reader_close(r);
    return rc;
  }
  settle_identity(r);
  settle_totals(r);

  size_t per = CURSOR_BYTES / r->record_size;
  r->cursor.buf_records = per > 0 ? per : 1;
  npkit_reader_rewind(r);
  *out = r;
  return 0;
}

int npkit_reader_open(const char *path, npkit_log_reader **out, char *err, size_t errlen) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    set_err(err, errlen, "%s: %s", path, strerror(errno));
    return NPKIT_READER_EIO;
  }
  int rc = npkit_reader_open_fd(fd, path, out, err, errlen);
  if (rc != 0) {
    close(fd);
    return rc;
  }
  (*out)->own_fd = 1;
  return 0;
}

void npkit_reader_close(npkit_log_reader *r) {
  if (r == NULL) return;
  for (size_t i = 0; i < r->n_notes; i++) free(r->notes[i].text);
  for (size_t i = 0; i < r->n_strings; i++) free(r->strings[i].text);
  free(r->notes);
  free(r->strings);
  free(r->comms);
  free(r->threads);
  free(r->counters);
  free(r->cursor.buf);
  if (r->own_fd) close(r->fd);
  free(r);
}

/* ---- events ---- */

void npkit_reader_rewind(npkit_log_reader *r) {
  npkit_reader_cursor *c = &r->cursor;
  c->next_block = r->header_size;
  c->next_record = 0;
  c->block_left = 0;
  c->n = c->pos = 0;
}

int npkit_reader_next(npkit_log_reader *r, const npkit_event **ev, char *err, size_t errlen) {
  npkit_reader_cursor *c = &r->cursor;
  if (c->pos == c->n) {
    /* find the next EVENTS block with records, within the blocks the scan found complete */
    while (c->block_left == 0) {
      npkit_block_header bh;
      if (c->next_block >= r->data_end) return 0;
      if (read_at(r->fd, &bh, sizeof(bh), c->next_block) != 0) goto changed;
      if (bh.magic != NPKIT_BLOCK_MAGIC || c->next_block + sizeof(bh) + bh.size > r->data_end) goto changed;
      if (bh.type == NPKIT_BLOCK_EVENTS) {
        if ((uint64_t)bh.count * r->record_size != bh.size) goto changed;
        c->block_left = bh.count;
        c->next_record = c->next_block + sizeof(bh);
      }
      c->next_block += sizeof(bh) + bh.size;
    }
    if (c->buf == NULL) {
      c->buf = malloc(c->buf_records * r->record_size);
      if (c->buf == NULL) {
        set_err(err, errlen, "%s: out of memory while reading events", r->path);
        return NPKIT_READER_ENOMEM;
      }
    }
    size_t k = c->block_left < c->buf_records ? (size_t)c->block_left : c->buf_records;
    if (read_at(r->fd, c->buf, k * r->record_size, c->next_record) != 0) goto changed;
    c->next_record += (uint64_t)k * r->record_size;
    c->block_left -= k;
    c->n = k;
    c->pos = 0;
  }
  const unsigned char *rec = c->buf + c->pos++ * (size_t)r->record_size;
  if (r->record_size == sizeof(npkit_event)) {
    *ev = (const npkit_event *)(const void *)rec; /* malloc'd buffer, records of 8-byte multiples */
  } else {
    memcpy(&c->event, rec, sizeof(c->event));
    *ev = &c->event;
  }
  return 1;
changed:
  set_err(err, errlen, "%s: the log changed while it was read (offset %llu)", r->path,
          (unsigned long long)c->next_block);
  return NPKIT_READER_EIO;
}

/* ---- lookups ---- */

const npkit_comm_rec *npkit_reader_comm(const npkit_log_reader *r, uint32_t local_id) {
  size_t lo = 0, hi = r->n_comms;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->comms[mid].local_id == local_id) return &r->comms[mid];
    if (r->comms[mid].local_id < local_id) lo = mid + 1; else hi = mid;
  }
  return NULL;
}

const npkit_thread_rec *npkit_reader_thread(const npkit_log_reader *r, uint32_t index) {
  size_t lo = 0, hi = r->n_threads;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->threads[mid].index == index) return &r->threads[mid];
    if (r->threads[mid].index < index) lo = mid + 1; else hi = mid;
  }
  return NULL;
}

const npkit_log_string *npkit_reader_string(const npkit_log_reader *r, uint32_t id) {
  size_t lo = 0, hi = r->n_strings;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->strings[mid].id == id) return &r->strings[mid];
    if (r->strings[mid].id < id) lo = mid + 1; else hi = mid;
  }
  return NULL;
}

const char *npkit_block_type_name(unsigned type) {
  switch (type) {
  case NPKIT_BLOCK_EVENTS: return "EVENTS";
  case NPKIT_BLOCK_COMM: return "COMM";
  case NPKIT_BLOCK_THREAD: return "THREAD";
  case NPKIT_BLOCK_PROCESS: return "PROCESS";
  case NPKIT_BLOCK_COUNTERS: return "COUNTERS";
  case NPKIT_BLOCK_STRING: return "STRING";
  case NPKIT_BLOCK_NOTE: return "NOTE";
  case NPKIT_BLOCK_END: return "END";
  default: return "unknown";
  }
}
