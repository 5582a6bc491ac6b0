#include "log_reader.h"

#include "crc32c.h"
#include "event_pack.h"
#include "grow.h"
#include "sorted_find.h"

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

int npkit_read_at(int fd, void *buf, size_t n, uint64_t off) {
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
    if (npkit_grow(&t->data, &t->cap, t->n + 1, t->esz, 16) != 0) return NULL;
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
  uint64_t resync_budget;  /* bytes searches for an intact block may still checksum */
  npkit_reader_skip *skips; /* handed to the reader at the end */
  size_t n_skips, cap_skips;
  uint64_t *lanes, *rec;    /* scratch of the check of packed events, once one is met */
  int lazy;                 /* event blocks counted by their headers, not checksummed nor decoded */
  npkit_block_span *spans;  /* handed to the reader at the end */
  size_t n_spans, cap_spans;
  int have_span;            /* the block just checked has its events' span in span */
  npkit_block_span span;
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
  if (NPKIT_GROW(r->notes, r->notes_cap, r->n_notes + 1, 8) != 0) return -1;
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

/* The key of a COMM, THREAD or COUNTERS record in its table (the latest record of a key wins);
 * a name is terminated here too, so that a damaged one cannot run past its field. */
static uint64_t comm_key(void *rec) {
  npkit_comm_rec *c = rec;
  c->name[sizeof(c->name) - 1] = '\0';
  return c->local_id;
}

static uint64_t thread_key(void *rec) {
  npkit_thread_rec *t = rec;
  t->name[sizeof(t->name) - 1] = '\0';
  return t->index;
}

static uint64_t counter_key(void *rec) {
  const npkit_counter_rec *c = rec;
  return ((uint64_t)c->thread << 32) | c->source;
}

/* Copies each record of a COMM, THREAD or COUNTERS block (records of `size` bytes, or longer ones
 * of a later version) into table t.  Returns NULL, or why the block is corrupt; sets *oom when
 * a record found no room (*full: because the table holds all the keys it may). */
static const char *add_records(keyed_table *t, const npkit_block_header *bh, const unsigned char *p, size_t size,
                               uint64_t (*key_of)(void *rec), int *full, int *oom) {
  union {
    npkit_comm_rec comm;
    npkit_thread_rec thread;
    npkit_counter_rec counter;
  } rec;
  uint64_t stride;
  const char *why = check_records(bh->count, bh->size, size, &stride);
  if (why != NULL) return why;
  for (uint32_t i = 0; i < bh->count; i++) {
    memcpy(&rec, p + i * stride, size);
    void *slot = table_add(t, key_of(&rec), full);
    if (slot == NULL) {
      *oom = 1;
      return NULL;
    }
    memcpy(slot, &rec, size);
  }
  return NULL;
}

/* Parses one non-event block whose payload is in p.  Returns NULL, or why it is corrupt; sets
 * *nomem on allocation failure. */
static const char *parse_block(npkit_log_reader *r, scan_state *s, const npkit_block_header *bh,
                               const unsigned char *p, int *nomem) {
  uint64_t stride;
  const char *why;
  int full = 0, oom = 0;
  *nomem = 0;
  switch (bh->type) {
  case NPKIT_BLOCK_COMM:
    why = add_records(&s->comms, bh, p, sizeof(npkit_comm_rec), comm_key, &full, &oom);
    if (oom) goto oom;
    return why;
  case NPKIT_BLOCK_THREAD:
    why = add_records(&s->threads, bh, p, sizeof(npkit_thread_rec), thread_key, &full, &oom);
    if (oom) goto oom;
    return why;
  case NPKIT_BLOCK_COUNTERS:
    why = add_records(&s->counters, bh, p, sizeof(npkit_counter_rec), counter_key, &full, &oom);
    if (oom) goto oom;
    return why;
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
  case NPKIT_BLOCK_EVENTS_PACKED: {
    /* Checked whole here, so that the event iterator never meets an event that does not decode. */
    size_t words = r->record_size / 8;
    if (s->lanes == NULL) {
      s->lanes = malloc(NPKIT_PACK_LANES * words * sizeof(uint64_t));
      s->rec = malloc(words * sizeof(uint64_t));
      if (s->lanes == NULL || s->rec == NULL) goto oom;
    }
    why = npkit_unpack_check_span(p, bh->size, bh->count, (uint32_t)words, s->lanes, s->rec, &s->span.first_ns,
                                  &s->span.last_ns);
    s->have_span = why == NULL;
    return why;
  }
  case NPKIT_BLOCK_POOL:
    if (bh->count != 1 || bh->size < sizeof(r->pool)) return "POOL block without its record";
    memcpy(&r->pool, p, sizeof(r->pool));
    r->pool.path[sizeof(r->pool.path) - 1] = '\0';
    r->has_pool = 1;
    return NULL;
  case NPKIT_BLOCK_RECOVERED:
    if (bh->count != 1 || bh->size < sizeof(r->recovered)) return "RECOVERED block without its record";
    memcpy(&r->recovered, p, sizeof(r->recovered));
    r->recovered.by[sizeof(r->recovered.by) - 1] = '\0';
    r->recovered.host[sizeof(r->recovered.host) - 1] = '\0';
    r->n_recovered++;
    r->recovered_events += r->recovered.events;
    return NULL;
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

/* ---- the walk over the blocks ----
 * Every block is judged in turn: its header must make sense, its payload must fit in the file and,
 * from version 2 on, a CHECK block with the CRC32C of header and payload must follow it; the
 * blocks the scan keeps must parse.  A block that fails is skipped: the scan looks for the next
 * block magic that begins an intact block and goes on from there.
 * When none follows, the log ends at the bad block: it is truncated. */

/* Bytes of payload read at a time to checksum a block. */
#define CRC_CHUNK (256u << 10)
/* Largest CHECK payload taken (version 2 writes 8 bytes; a later version may append fields). */
#define MAX_CHECK_SIZE 256u
/* Bytes of candidate blocks a search for the next intact block may checksum, beyond twice the
 * file's size: a file full of fake block headers cannot make the scan quadratic. */
#define RESYNC_EXTRA_BYTES (64u << 20)
/* Skipped stretches kept; a log with more is taken as truncated at the next bad block. */
#define MAX_SKIPS (1u << 20)

static int is_known_type(const npkit_log_reader *r, unsigned type) {
  return (type >= NPKIT_BLOCK_EVENTS && type <= NPKIT_BLOCK_NOTE) || npkit_reader_is_packed(r, type) ||
         type == NPKIT_BLOCK_END || (r->header.version >= 6 && (type == NPKIT_BLOCK_POOL || type == NPKIT_BLOCK_RECOVERED));
}

/* The buffer holds one block's payload at a time and grows to the exact size asked, not through
 * NPKIT_GROW: what it held is never needed again, and doubling could hold nearly twice the
 * largest block read (64 MiB for a STRING block of just over 32 MiB; NPKIT_READER_MAX_META_BLOCK),
 * where the exact size keeps the reader's memory at the largest block it actually read. */
static int grow_payload(scan_state *s, size_t n) {
  if (n <= s->payload_cap) return 0;
  size_t cap = n < 4096 ? 4096 : n;
  unsigned char *p = realloc(s->payload, cap);
  if (p == NULL) return -1;
  s->payload = p;
  s->payload_cap = cap;
  return 0;
}

/* A block as its header and checksum describe it. */
typedef struct block_at {
  npkit_block_header bh;
  uint64_t next;      /* where the block after it starts (after its CHECK block from version 2 on) */
  uint32_t crc;       /* what its CHECK block says */
  int has_crc;
} block_at;

/* Judges the header of the block at off (and finds its CHECK block).  Returns NULL, or why it
 * cannot be used, in why; *incomplete is set when the block runs past the end of the file. */
static const char *judge_header(const npkit_log_reader *r, uint64_t off, block_at *b, char *why, size_t wlen,
                                int *incomplete, int *io) {
  *incomplete = *io = 0;
  memset(b, 0, sizeof(*b));
  uint64_t left = r->file_size - off;
  npkit_block_header *bh = &b->bh;
  if (left < sizeof(*bh)) {
    *incomplete = 1;
    snprintf(why, wlen, "incomplete block header: %llu of %zu bytes", (unsigned long long)left, sizeof(*bh));
    return why;
  }
  if (npkit_read_at(r->fd, bh, sizeof(*bh), off) != 0) goto io_error;
  left -= sizeof(*bh);
  const char *name = npkit_block_type_name(bh->type);
  if (bh->magic != NPKIT_BLOCK_MAGIC) {
    snprintf(why, wlen, "corrupt block: bad magic 0x%08x", bh->magic);
    return why;
  }
  if (bh->size % 8 != 0) {
    snprintf(why, wlen, "corrupt block: size %u is not a multiple of 8", bh->size);
    return why;
  }
  if (bh->size > left) {
    *incomplete = 1;
    snprintf(why, wlen, "incomplete %s block: %llu of %u payload bytes", name, (unsigned long long)left, bh->size);
    return why;
  }
  if (bh->type == NPKIT_BLOCK_EVENTS && (uint64_t)bh->count * r->record_size != bh->size) {
    snprintf(why, wlen, "corrupt EVENTS block: %u records of %u bytes in %u bytes", bh->count, r->record_size,
             bh->size);
    return why;
  }
  if (npkit_reader_is_packed(r, bh->type) && bh->count > bh->size / npkit_pack_min_bytes(r->record_size / 8)) {
    snprintf(why, wlen, "corrupt EVENTS_PACKED block: %u events cannot fit in %u bytes", bh->count, bh->size);
    return why;
  }
  /* Packed events are decoded from memory: their blocks are held whole, as the others are. */
  if (is_known_type(r, bh->type) && bh->type != NPKIT_BLOCK_EVENTS && bh->size > NPKIT_READER_MAX_META_BLOCK) {
    snprintf(why, wlen, "corrupt %s block: implausible size %u", name, bh->size);
    return why;
  }
  b->next = off + sizeof(*bh) + bh->size;
  if (!r->checksums || bh->type == NPKIT_BLOCK_CHECK) return NULL;
  npkit_block_header ch;
  npkit_check_rec rec;
  left -= bh->size;
  if (left < sizeof(ch) + sizeof(rec)) {
    *incomplete = 1;
    snprintf(why, wlen, "incomplete %s block: its checksum is missing", name);
    return why;
  }
  if (npkit_read_at(r->fd, &ch, sizeof(ch), b->next) != 0) goto io_error;
  if (ch.magic != NPKIT_BLOCK_MAGIC || ch.type != NPKIT_BLOCK_CHECK || ch.count != 1 || ch.size < sizeof(rec) ||
      ch.size % 8 != 0 || ch.size > MAX_CHECK_SIZE) {
    snprintf(why, wlen, "corrupt %s block: no checksum after it", name);
    return why;
  }
  if (ch.size > left - sizeof(ch)) {
    *incomplete = 1;
    snprintf(why, wlen, "incomplete %s block: its checksum is cut", name);
    return why;
  }
  if (npkit_read_at(r->fd, &rec, sizeof(rec), b->next + sizeof(ch)) != 0) goto io_error;
  b->crc = rec.crc32c;
  b->has_crc = 1;
  b->next += sizeof(ch) + ch.size;
  return NULL;
io_error:
  *io = 1;
  return "read error";
}

/* Checksums the block at off.  With keep, its payload stays in s->payload (it must fit
 * NPKIT_READER_MAX_META_BLOCK).  Returns 1 when it matches, 0 when not, -1 on a read error, -2
 * when memory is short. */
static int verify_block(const npkit_log_reader *r, scan_state *s, uint64_t off, const block_at *b, int keep) {
  size_t chunk = keep ? b->bh.size : (b->bh.size < CRC_CHUNK ? b->bh.size : CRC_CHUNK);
  if (grow_payload(s, chunk) != 0) return -2;
  uint32_t crc = npkit_crc32c(0, &b->bh, sizeof(b->bh));
  for (uint64_t done = 0; done < b->bh.size;) {
    size_t k = b->bh.size - done < chunk ? (size_t)(b->bh.size - done) : chunk;
    if (npkit_read_at(r->fd, s->payload, k, off + sizeof(b->bh) + done) != 0) return -1;
    crc = npkit_crc32c(crc, s->payload, k);
    done += k;
  }
  return crc == b->crc;
}

/* Whether the block at off is intact enough to go on from, after a corrupt one: from version 2
 * on, its checksum matches; before, its header makes sense and the next block (or the end of the
 * file) follows it.  CHECK blocks are no place to start (*is_check).  Returns 1, 0, or < 0 as
 * verify_block. */
static int intact_at(const npkit_log_reader *r, scan_state *s, uint64_t off, int *is_check) {
  block_at b;
  char why[128];
  int incomplete, io;
  const char *bad = judge_header(r, off, &b, why, sizeof(why), &incomplete, &io);
  *is_check = r->checksums && b.bh.type == NPKIT_BLOCK_CHECK;
  if (bad != NULL) return io ? -1 : 0;
  if (*is_check) return 0;
  if (r->checksums) {
    if (s->resync_budget < b.bh.size) return 0;
    s->resync_budget -= b.bh.size;
    return verify_block(r, s, off, &b, 0);
  }
  if (b.next == r->file_size) return 1;
  uint32_t magic;
  if (r->file_size - b.next < sizeof(magic)) return 0;
  if (npkit_read_at(r->fd, &magic, sizeof(magic), b.next) != 0) return -1;
  return magic == NPKIT_BLOCK_MAGIC;
}

/* The offset of the next intact block from `from` on, or 0 if none.  Every byte offset is looked
 * at: a writer keeps blocks 8-aligned, but damage need not keep them so.  *rejected counts the
 * block headers found on the way that were not intact, CHECK blocks aside.  < 0 as verify_block. */
static int64_t find_intact(const npkit_log_reader *r, scan_state *s, uint64_t from, uint64_t *rejected) {
  static const uint32_t want = NPKIT_BLOCK_MAGIC;
  unsigned char buf[64 << 10];
  *rejected = 0;
  for (uint64_t at = from; at + sizeof(npkit_block_header) <= r->file_size;) {
    size_t k = r->file_size - at < sizeof(buf) ? (size_t)(r->file_size - at) : sizeof(buf);
    if (npkit_read_at(r->fd, buf, k, at) != 0) return -1;
    const unsigned char *p = buf, *end = buf + k;
    while ((size_t)(end - p) >= sizeof(want) && (p = memmem(p, (size_t)(end - p), &want, sizeof(want))) != NULL) {
      int is_check, ok = intact_at(r, s, at + (uint64_t)(p - buf), &is_check);
      if (ok < 0) return ok;
      if (ok) return (int64_t)(at + (uint64_t)(p - buf));
      if (!is_check) (*rejected)++;
      p++;
    }
    if (k < sizeof(buf)) break;
    at += k - (sizeof(want) - 1); /* a magic across the chunk boundary is seen in the next chunk */
  }
  return 0;
}

/* The span of the plain EVENTS block in s->payload: words 0 and 1 of an event are its start and end. */
static void plain_span(const npkit_log_reader *r, scan_state *s, const npkit_block_header *bh) {
  s->span.first_ns = UINT64_MAX;
  s->span.last_ns = 0;
  for (uint32_t i = 0; i < bh->count; i++) {
    uint64_t t[2];
    memcpy(t, s->payload + (size_t)i * r->record_size, sizeof t);
    if (t[0] < s->span.first_ns) s->span.first_ns = t[0];
    if (t[1] > s->span.last_ns) s->span.last_ns = t[1];
    if (t[0] > s->span.last_ns) s->span.last_ns = t[0];
  }
  s->have_span = 1;
}

static int add_span(scan_state *s, uint64_t off) {
  if (NPKIT_GROW(s->spans, s->cap_spans, s->n_spans + 1, 16) != 0) return -1;
  s->span.offset = off;
  s->spans[s->n_spans++] = s->span;
  return 0;
}

static int add_skip(scan_state *s, uint64_t from, uint64_t to) {
  if (NPKIT_GROW(s->skips, s->cap_skips, s->n_skips + 1, 8) != 0) return -1;
  s->skips[s->n_skips++] = (npkit_reader_skip){from, to};
  return 0;
}

/* Walks the blocks.  Returns 0, or NPKIT_READER_EIO / ENOMEM with a message. */
static int scan_blocks(npkit_log_reader *r, scan_state *s, char *err, size_t errlen) {
  uint64_t off = r->header_size;
  s->resync_budget = 2 * r->file_size + RESYNC_EXTRA_BYTES;
  while (off < r->file_size) {
    block_at b;
    char why_buf[128];
    int incomplete, io;
    const char *why = judge_header(r, off, &b, why_buf, sizeof(why_buf), &incomplete, &io);
    if (io) goto io_error;
    const npkit_block_header *bh = &b.bh;
    int events = bh->type == NPKIT_BLOCK_EVENTS || npkit_reader_is_packed(r, bh->type);
    int meta = why == NULL && is_known_type(r, bh->type) && bh->type != NPKIT_BLOCK_EVENTS;
    /* a plain EVENTS block is read whole for its checksum anyway: its span comes with it */
    int span_of_plain = why == NULL && bh->type == NPKIT_BLOCK_EVENTS && !s->lazy && r->checksums &&
                        bh->size <= NPKIT_READER_MAX_META_BLOCK && bh->count > 0 &&
                        (uint64_t)bh->count * r->record_size == bh->size;
    s->have_span = 0;
    if (why == NULL && s->lazy && events) {
      meta = 0; /* its header and checksum block are sound (judge_header): counted, not read */
    } else if (why == NULL && r->checksums && bh->type == NPKIT_BLOCK_CHECK) {
      why = "corrupt block: a checksum without its block";
    } else if (why == NULL && r->checksums) {
      int ok = verify_block(r, s, off, &b, meta || span_of_plain);
      if (ok == -1) goto io_error;
      if (ok == -2) goto oom;
      if (!ok) {
        snprintf(why_buf, sizeof(why_buf), "corrupt %s block: bad checksum", npkit_block_type_name(bh->type));
        why = why_buf;
      }
    } else if (meta) {
      if (grow_payload(s, bh->size) != 0) goto oom;
      if (bh->size > 0 && npkit_read_at(r->fd, s->payload, bh->size, off + sizeof(*bh)) != 0) goto io_error;
    }
    if (why == NULL && meta) {
      int nomem;
      const char *perr = parse_block(r, s, bh, s->payload, &nomem);
      if (nomem) goto oom;
      if (perr != NULL) {
        snprintf(why_buf, sizeof(why_buf), "corrupt %s block: %s", npkit_block_type_name(bh->type), perr);
        why = why_buf;
      }
    }
    if (why != NULL) {
      uint64_t rejected = 0;
      int64_t next = s->n_skips >= MAX_SKIPS ? 0 : find_intact(r, s, off + 1, &rejected);
      if (next == -1) goto io_error;
      if (next == -2) goto oom;
      if (next == 0) {
        mark_truncated(r, off, "%s", why);
        break;
      }
      if (add_skip(s, off, (uint64_t)next) != 0) goto oom;
      if (r->skipped_blocks == 0) {
        r->first_skip_at = off;
        copy_cstr(r->skip_reason, sizeof(r->skip_reason), why, strlen(why));
      }
      r->skipped_blocks += 1 + rejected;
      r->skipped_bytes += (uint64_t)next - off;
      off = (uint64_t)next;
      continue;
    }
    if (events) {
      if (span_of_plain) plain_span(r, s, bh);
      if (s->have_span && add_span(s, off) != 0) goto oom;
      r->n_events += bh->count;
      r->n_event_blocks++;
      r->n_packed_blocks += bh->type != NPKIT_BLOCK_EVENTS;
    } else if (bh->type == NPKIT_BLOCK_MACHINE) {
      r->n_machine_blocks++;
    } else if (bh->type == NPKIT_BLOCK_STACK) {
      r->n_stack_blocks++;
    } else if (!is_known_type(r, bh->type) && !(r->checksums && bh->type == NPKIT_BLOCK_CHECK)) {
      r->n_unknown_blocks++;
    }
    r->n_blocks++;
    off = b.next;
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
  if (npkit_read_at(r->fd, raw, have, 0) != 0) {
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
  r->checksums = h->version >= 2;
  r->newer_version = h->version > NPKIT_LOG_VERSION;
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
  free(s->skips);
  free(s->spans);
  free(s->lanes);
  free(s->rec);
}

static int open_fd(int fd, const char *name, int lazy, npkit_log_reader **out, char *err, size_t errlen) {
  struct stat st;
  int rc;
  *out = NULL;
  npkit_log_reader *r = calloc(1, sizeof(*r));
  if (r == NULL) {
    set_err(err, errlen, "%s: out of memory", name);
    return NPKIT_READER_ENOMEM;
  }
  r->fd = fd;
  r->filter_hi = UINT64_MAX; /* no filter */
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
  s.lazy = r->lazy = lazy;
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
  r->skips = s.skips;
  r->n_skips = s.n_skips;
  s.skips = NULL;
  r->spans = s.spans;
  r->n_spans = s.n_spans;
  s.spans = NULL;
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

int npkit_reader_open_fd(int fd, const char *name, npkit_log_reader **out, char *err, size_t errlen) {
  return open_fd(fd, name, 0, out, err, errlen);
}

static int open_path(const char *path, int lazy, npkit_log_reader **out, char *err, size_t errlen) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    set_err(err, errlen, "%s: %s", path, strerror(errno));
    return NPKIT_READER_EIO;
  }
  int rc = open_fd(fd, path, lazy, out, err, errlen);
  if (rc != 0) {
    close(fd);
    return rc;
  }
  (*out)->own_fd = 1;
  return 0;
}

int npkit_reader_open(const char *path, npkit_log_reader **out, char *err, size_t errlen) {
  return open_path(path, 0, out, err, errlen);
}

int npkit_reader_open_lazy(const char *path, npkit_log_reader **out, char *err, size_t errlen) {
  return open_path(path, 1, out, err, errlen);
}

static void free_tables(npkit_log_reader *r) {
  for (size_t i = 0; i < r->n_notes; i++) free(r->notes[i].text);
  for (size_t i = 0; i < r->n_strings; i++) free(r->strings[i].text);
  free(r->notes);
  free(r->strings);
  free(r->comms);
  free(r->threads);
  free(r->counters);
  free(r->cursor.buf);
  free(r->cursor.lanes);
  free(r->cursor.rec);
  free(r->skips);
  free(r->spans);
}

void npkit_reader_close(npkit_log_reader *r) {
  if (r == NULL) return;
  free_tables(r);
  if (r->own_fd && r->fd >= 0) close(r->fd);
  free(r);
}

int npkit_reader_complete(npkit_log_reader *r, npkit_reader_same_fn same, void *ctx, char *err, size_t errlen) {
  if (!r->lazy) return 0;
  if (r->fd < 0) {
    set_err(err, errlen, "%s: closed before its events were checked", r->path);
    return NPKIT_READER_EIO;
  }
  npkit_log_reader *full;
  int rc = open_fd(r->fd, r->path, 0, &full, err, errlen);
  if (rc != 0) return rc;
  if (same != NULL && !same(ctx, r, full)) {
    set_err(err, errlen, "%s: its tables differ once its events are checked (a damaged log, or one still written)",
            r->path);
    full->fd = -1; /* r's descriptor: not closed here */
    npkit_reader_close(full);
    return NPKIT_READER_EFORMAT;
  }
  int own = r->own_fd;
  free_tables(r);
  *r = *full; /* the same descriptor, every table from the full scan */
  r->own_fd = own;
  free(full);
  return 0;
}

void npkit_reader_release(npkit_log_reader *r) {
  npkit_reader_cursor *c = &r->cursor;
  free(c->buf);
  free(c->lanes);
  free(c->rec);
  c->buf = NULL;
  c->lanes = c->rec = NULL;
  c->n = c->pos = 0;
  c->block_left = 0;
  c->packed = 0;
  c->buf_records = CURSOR_BYTES / r->record_size > 0 ? CURSOR_BYTES / r->record_size : 1; /* as start_packed may have grown it */
  c->next_block = c->next_record = 0; /* as after a rewind */
}

void npkit_reader_done(npkit_log_reader *r) {
  npkit_reader_release(r);
  if (r->own_fd && r->fd >= 0) close(r->fd);
  r->fd = -1;
  r->own_fd = 0;
}

/* ---- events ---- */

void npkit_reader_rewind(npkit_log_reader *r) {
  npkit_reader_cursor *c = &r->cursor;
  c->next_block = 0;
  c->next_record = 0;
  c->block_left = 0;
  c->n = c->pos = 0;
  c->packed = 0;
  r->filter_kept = 0;
}

/* Where the walk goes on from p: past the skipped stretches that start there, if any (a stretch
 * can end where the next begins: an intact-looking block that did not parse). */
static uint64_t past_skips(const npkit_log_reader *r, uint64_t p) {
  size_t lo = 0, hi = r->n_skips;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->skips[mid].from < p) lo = mid + 1; else hi = mid;
  }
  while (lo < r->n_skips && r->skips[lo].from == p) p = r->skips[lo++].to;
  return p;
}

int npkit_reader_next_block(const npkit_log_reader *r, uint64_t *pos, npkit_block_header *bh, uint64_t *payload) {
  if (r->fd < 0) return NPKIT_READER_EIO;
  uint64_t p = *pos != 0 ? *pos : r->header_size;
  for (;;) {
    p = past_skips(r, p);
    if (p >= r->data_end) {
      *pos = p;
      return 0;
    }
    if (r->data_end - p < sizeof(*bh) || npkit_read_at(r->fd, bh, sizeof(*bh), p) != 0 || bh->magic != NPKIT_BLOCK_MAGIC ||
        bh->size > r->data_end - p - sizeof(*bh))
      return NPKIT_READER_EIO;
    uint64_t at = p + sizeof(*bh);
    p = at + bh->size;
    if (r->checksums && bh->type == NPKIT_BLOCK_CHECK) continue;
    *pos = p;
    *payload = at;
    return 1;
  }
}

/* Reads the packed block at `payload` and starts decoding it: 0, -1 (read error: the file changed),
 * -3 (out of memory). */
static int start_packed(npkit_log_reader *r, const npkit_block_header *bh, uint64_t payload) {
  npkit_reader_cursor *c = &r->cursor;
  size_t words = r->record_size / 8;
  if (c->lanes == NULL) {
    c->lanes = malloc(NPKIT_PACK_LANES * words * sizeof(uint64_t));
    c->rec = malloc(words * sizeof(uint64_t));
    if (c->lanes == NULL || c->rec == NULL) return -3;
  }
  /* the cursor's buffer holds the block; its size is bounded by the scan (MAX_META_BLOCK) */
  size_t cap = c->buf_records * r->record_size;
  if (bh->size > cap) {
    size_t records = bh->size / r->record_size + 1;
    unsigned char *b = realloc(c->buf, records * r->record_size);
    if (b == NULL) return -3;
    c->buf = b;
    c->buf_records = records;
  }
  if (bh->size > 0 && npkit_read_at(r->fd, c->buf, bh->size, payload) != 0) return -1;
  npkit_unpack_begin(&c->unpack, c->buf, bh->size, bh->count, (uint32_t)words, c->lanes);
  c->packed = 1;
  return 0;
}

void npkit_reader_filter(npkit_log_reader *r, npkit_reader_keep_fn keep, void *ctx, uint64_t lo_ns, uint64_t hi_ns) {
  r->keep = keep;
  r->keep_ctx = ctx;
  r->filter_lo = keep != NULL ? lo_ns : 0;
  r->filter_hi = keep != NULL ? hi_ns : UINT64_MAX;
  r->filter_kept = 0;
}

static int cmp_span(const void *key, const void *elem) {
  uint64_t k = *(const uint64_t *)key, o = ((const npkit_block_span *)elem)->offset;
  return k < o ? -1 : k > o;
}

/* Whether the filter's window leaves out every event of the block whose header is at off. */
static int outside_window(const npkit_log_reader *r, uint64_t off) {
  if ((r->filter_lo == 0 && r->filter_hi == UINT64_MAX) || r->n_spans == 0) return 0;
  const npkit_block_span *sp = bsearch(&off, r->spans, r->n_spans, sizeof(*sp), cmp_span);
  return sp != NULL && (sp->last_ns < r->filter_lo || sp->first_ns > r->filter_hi);
}

static int next_event(npkit_log_reader *r, const npkit_event **ev, char *err, size_t errlen);

int npkit_reader_next(npkit_log_reader *r, const npkit_event **ev, char *err, size_t errlen) {
  if (r->fd < 0 || r->lazy) {
    snprintf(err, errlen, r->lazy ? "%s: opened for its identity only (npkit_reader_complete first)"
                                  : "%s: its events were read and the file closed", r->path);
    return NPKIT_READER_EIO;
  }
  for (;;) {
    int k = next_event(r, ev, err, errlen);
    if (k != 1 || r->keep == NULL) return k;
    if (r->keep(r->keep_ctx, *ev)) {
      r->filter_kept++;
      return 1;
    }
  }
}

static int next_event(npkit_log_reader *r, const npkit_event **ev, char *err, size_t errlen) {
  npkit_reader_cursor *c = &r->cursor;
  if (c->packed) {
    int k = npkit_unpack_next(&c->unpack, c->rec);
    if (k == 1) {
      *ev = (const npkit_event *)(const void *)c->rec; /* malloc'd, whole words */
      return 1;
    }
    if (k < 0) goto changed; /* the scan decoded it: it changed since */
    c->packed = 0;
  }
  if (c->pos == c->n) {
    /* find the next EVENTS block with records, within the blocks the scan found intact */
    if (c->buf == NULL) {
      c->buf = malloc(c->buf_records * r->record_size);
      if (c->buf == NULL) goto nomem;
    }
    while (c->block_left == 0) {
      npkit_block_header bh;
      uint64_t payload;
      int k = npkit_reader_next_block(r, &c->next_block, &bh, &payload);
      if (k == 0) return 0;
      if (k < 0) goto changed;
      if ((bh.type == NPKIT_BLOCK_EVENTS || npkit_reader_is_packed(r, bh.type)) &&
          outside_window(r, payload - sizeof(bh)))
        continue;
      if (bh.type == NPKIT_BLOCK_EVENTS) {
        if ((uint64_t)bh.count * r->record_size != bh.size) goto changed;
        r->event_blocks_read++;
        c->block_left = bh.count;
        c->next_record = payload;
      } else if (npkit_reader_is_packed(r, bh.type) && bh.count > 0) {
        r->event_blocks_read++;
        int e = start_packed(r, &bh, payload);
        if (e == -3) goto nomem;
        if (e != 0) goto changed;
        return next_event(r, ev, err, errlen);
      }
    }
    size_t k = c->block_left < c->buf_records ? (size_t)c->block_left : c->buf_records;
    if (npkit_read_at(r->fd, c->buf, k * r->record_size, c->next_record) != 0) goto changed;
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
nomem:
  set_err(err, errlen, "%s: out of memory while reading events", r->path);
  return NPKIT_READER_ENOMEM;
changed:
  set_err(err, errlen, "%s: the log changed while it was read (offset %llu)", r->path,
          (unsigned long long)c->next_block);
  return NPKIT_READER_EIO;
}

char *npkit_reader_damage(const npkit_log_reader *r, char *buf, size_t len) {
  if (len == 0) return buf;
  buf[0] = '\0';
  size_t n = 0;
  if (r->skipped_blocks > 0)
    n = (size_t)snprintf(buf, len, "%llu corrupt block%s (%llu bytes) skipped, the first at offset %llu: %s",
                         (unsigned long long)r->skipped_blocks, r->skipped_blocks == 1 ? "" : "s",
                         (unsigned long long)r->skipped_bytes, (unsigned long long)r->first_skip_at, r->skip_reason);
  if (r->truncated && n < len)
    snprintf(buf + n, len - n, "%struncated at offset %llu: %s", n > 0 ? "; " : "", (unsigned long long)r->truncated_at,
             r->truncation);
  return buf;
}

char *npkit_reader_version_note(const npkit_log_reader *r, char *buf, size_t len) {
  if (len == 0) return buf;
  buf[0] = '\0';
  if (r->newer_version)
    snprintf(buf, len, "event-log format version %u is newer than this npkit's (%u): the parts it does not know are left out",
             r->header.version, NPKIT_LOG_VERSION);
  return buf;
}

/* ---- lookups ---- */

NPKIT_SORTED_FIND(find_comm, npkit_comm_rec, uint32_t, local_id)
NPKIT_SORTED_FIND(find_thread, npkit_thread_rec, uint32_t, index)
NPKIT_SORTED_FIND(find_string, npkit_log_string, uint32_t, id)

size_t npkit_reader_comm_pos(const npkit_log_reader *r, uint32_t local_id, size_t *hint) {
  if (hint != NULL && *hint < r->n_comms && r->comms[*hint].local_id == local_id) return *hint;
  const npkit_comm_rec *c = find_comm(r->comms, r->n_comms, local_id);
  if (c == NULL) return SIZE_MAX;
  size_t pos = (size_t)(c - r->comms);
  if (hint != NULL) *hint = pos;
  return pos;
}

const npkit_comm_rec *npkit_reader_comm(const npkit_log_reader *r, uint32_t local_id) {
  size_t pos = npkit_reader_comm_pos(r, local_id, NULL);
  return pos != SIZE_MAX ? &r->comms[pos] : NULL;
}

const npkit_thread_rec *npkit_reader_thread(const npkit_log_reader *r, uint32_t index) {
  return find_thread(r->threads, r->n_threads, index);
}

const npkit_log_string *npkit_reader_string(const npkit_log_reader *r, uint32_t id) {
  return find_string(r->strings, r->n_strings, id);
}

const char *npkit_block_type_name(unsigned type) {
  switch (type) {
  case NPKIT_BLOCK_EVENTS: return "EVENTS";
  case NPKIT_BLOCK_EVENTS_PACKED: return "EVENTS_PACKED";
  case NPKIT_BLOCK_COMM: return "COMM";
  case NPKIT_BLOCK_THREAD: return "THREAD";
  case NPKIT_BLOCK_PROCESS: return "PROCESS";
  case NPKIT_BLOCK_COUNTERS: return "COUNTERS";
  case NPKIT_BLOCK_STRING: return "STRING";
  case NPKIT_BLOCK_NOTE: return "NOTE";
  case NPKIT_BLOCK_END: return "END";
  case NPKIT_BLOCK_POOL: return "POOL";
  case NPKIT_BLOCK_RECOVERED: return "RECOVERED";
  case NPKIT_BLOCK_MACHINE: return "MACHINE";
  case NPKIT_BLOCK_STACK: return "STACK";
  default: return "unknown";
  }
}
