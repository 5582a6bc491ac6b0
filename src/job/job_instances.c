#include "job_instances.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "job_spill.h"
#include "proto_writer.h"

#define CHUNK_BITS 14u
#define CHUNK (1u << CHUNK_BITS)

/* dur packs four things: bit 31 GPU times, bit 30 the duration is in units of 1024 ns (it did not
 * fit in 29 bits of ns), bit 29 no usable time, bits 0-28 the duration. */
#define DUR_GPU 0x80000000u
#define DUR_SCALED 0x40000000u
#define DUR_UNTIMED 0x20000000u
#define DUR_MASK 0x1fffffffu
#define DUR_SCALE_SHIFT 10u

typedef struct inst_chunk {
  uint64_t end[CHUNK];   /* 0: no record */
  uint32_t dur[CHUNK];
  uint32_t row[CHUNK];
  uint8_t fn[CHUNK];
} inst_chunk;

/* A member's records live in chunks while its log is read; once sealed they are encoded one after
 * the other in the spill (seal_record), in sequence order, and the chunks are freed. */
typedef struct inst_member {
  inst_chunk **chunks;
  size_t n_chunks;
  uint64_t count;
  uint64_t sealed_off, sealed_len; /* the sealed records in the spill; len 0: none */
} inst_member;

struct npkit_inst_store {
  inst_member *members;
  size_t n_members, cap_members;
  uint64_t bytes;
  npkit_spill spill;
};

npkit_inst_store *npkit_inst_create(void) {
  npkit_inst_store *s = calloc(1, sizeof(npkit_inst_store));
  if (s != NULL) npkit_spill_init(&s->spill, NPKIT_SPILL_MEMORY_DEFAULT, NULL);
  return s;
}

void npkit_inst_spill_setup(npkit_inst_store *s, size_t memory_bytes, const char *dir) {
  s->spill.memory_max = memory_bytes;
  s->spill.dir = dir;
}

void npkit_inst_free(npkit_inst_store *s) {
  if (s == NULL) return;
  for (size_t m = 0; m < s->n_members; m++) {
    for (size_t c = 0; c < s->members[m].n_chunks; c++) free(s->members[m].chunks[c]);
    free(s->members[m].chunks);
  }
  free(s->members);
  npkit_spill_free(&s->spill);
  free(s);
}

int npkit_inst_add_member(npkit_inst_store *s, uint32_t *id) {
  if (NPKIT_GROW(s->members, s->cap_members, s->n_members + 1, 16) != 0) return -1;
  memset(&s->members[s->n_members], 0, sizeof(inst_member));
  *id = (uint32_t)s->n_members++;
  return 0;
}

static uint32_t pack_dur(uint64_t d, uint32_t flags) {
  if (d <= DUR_MASK) return flags | (uint32_t)d;
  d >>= DUR_SCALE_SHIFT;
  if (d > DUR_MASK) d = DUR_MASK;
  return flags | DUR_SCALED | (uint32_t)d;
}

static uint64_t unpack_dur(uint32_t v) {
  uint64_t d = v & DUR_MASK;
  return (v & DUR_SCALED) ? d << DUR_SCALE_SHIFT : d;
}

/* ---- sealed records ----
 * One record: varint(seq - previous seq), varint(zigzag(end - previous end)), varint(dur with its
 * three flag bits moved to the bottom), varint(row + 1, so that NPKIT_INST_NO_ROW is 0), fn as a
 * byte; the previous values start at 0.  About 9 bytes where the chunks hold 17. */
#define SEAL_MAX 31 /* 10 + 10 + 5 + 5 + 1 */

typedef struct raw_record {
  uint64_t seq, end;
  uint32_t dur, row;
  uint8_t fn;
} raw_record;

static unsigned char *seal_record(unsigned char *p, raw_record *prev, const raw_record *r) {
  uint64_t d = r->end - prev->end;
  p = npkit_pb_varint(p, r->seq - prev->seq);
  p = npkit_pb_varint(p, (d << 1) ^ (uint64_t)-(int64_t)(d >> 63));
  p = npkit_pb_varint(p, ((uint64_t)(r->dur & DUR_MASK) << 3) | (r->dur >> 29));
  p = npkit_pb_varint(p, (uint32_t)(r->row + 1u));
  *p++ = r->fn;
  *prev = *r;
  return p;
}

static int take_varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
  uint64_t x = 0;
  for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
    unsigned char c = *(*p)++;
    x |= (uint64_t)(c & 0x7f) << shift;
    if (c < 0x80) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

static int unseal_record(const unsigned char **p, const unsigned char *end, raw_record *prev) {
  uint64_t ds, zz, dur, row;
  if (take_varint(p, end, &ds) != 0 || take_varint(p, end, &zz) != 0 || take_varint(p, end, &dur) != 0 ||
      take_varint(p, end, &row) != 0 || *p >= end)
    return -1;
  prev->seq += ds;
  prev->end += (zz >> 1) ^ (uint64_t)-(int64_t)(zz & 1);
  prev->dur = (uint32_t)(((dur & 7) << 29) | ((dur >> 3) & DUR_MASK));
  prev->row = (uint32_t)row - 1u;
  prev->fn = *(*p)++;
  return 0;
}

/* Walks one member's records in sequence order, sealed or not, a buffer at a time. */
typedef struct inst_cursor {
  const npkit_inst_store *s;
  const inst_member *m;
  size_t c, i;                 /* chunks: the next slot */
  uint64_t off, end;           /* sealed: the next byte in the spill, and the end of the member's */
  unsigned char *buf;
  size_t pos, len, cap;
  raw_record r;                /* the last record read */
} inst_cursor;

static void cursor_open(inst_cursor *k, const npkit_inst_store *s, uint32_t member, unsigned char *buf,
                        size_t cap) {
  memset(k, 0, sizeof(*k));
  k->s = s;
  k->m = &s->members[member];
  k->off = k->m->sealed_off;
  k->end = k->m->sealed_off + k->m->sealed_len;
  k->buf = buf;
  k->cap = cap;
}

/* The next record: 1, 0 at the end, -1 when the spill cannot be read. */
static int cursor_next(inst_cursor *k) {
  const inst_member *m = k->m;
  if (m->sealed_len == 0) {
    for (; k->c < m->n_chunks; k->c++, k->i = 0) {
      const inst_chunk *ch = m->chunks[k->c];
      if (ch == NULL) continue;
      for (; k->i < CHUNK; k->i++)
        if (ch->end[k->i] != 0) {
          k->r = (raw_record){((uint64_t)k->c << CHUNK_BITS) | k->i, ch->end[k->i], ch->dur[k->i], ch->row[k->i],
                              ch->fn[k->i]};
          k->i++;
          return 1;
        }
    }
    return 0;
  }
  if (k->len - k->pos < SEAL_MAX && k->off < k->end) { /* refill: keep the rest, read on */
    memmove(k->buf, k->buf + k->pos, k->len - k->pos);
    k->len -= k->pos;
    k->pos = 0;
    size_t want = k->cap - k->len;
    if ((uint64_t)want > k->end - k->off) want = (size_t)(k->end - k->off);
    if (npkit_spill_read(&k->s->spill, k->off, k->buf + k->len, want) != 0) return -1;
    k->len += want;
    k->off += want;
  }
  if (k->pos == k->len) return 0;
  const unsigned char *p = k->buf + k->pos;
  if (unseal_record(&p, k->buf + k->len, &k->r) != 0) return -1;
  k->pos = (size_t)(p - k->buf);
  return 1;
}

static int slot_fill(npkit_inst_store *s, uint32_t member, const raw_record *r);

/* Records put after a member was sealed: its sealed ones back into chunks first (rare: a log read
 * twice).  The old bytes stay unused in the spill. */
static int unseal(npkit_inst_store *s, uint32_t member) {
  unsigned char buf[4096];
  inst_cursor k;
  cursor_open(&k, s, member, buf, sizeof buf);
  int rc;
  raw_record *all = NULL;
  size_t n = 0, cap = 0;
  while ((rc = cursor_next(&k)) > 0) {
    if (NPKIT_GROW(all, cap, n + 1, 256) != 0) {
      rc = -1;
      break;
    }
    all[n++] = k.r;
  }
  if (rc == 0) {
    s->members[member].sealed_len = 0;
    for (size_t j = 0; j < n && rc == 0; j++) rc = slot_fill(s, member, &all[j]);
  }
  free(all);
  return rc;
}

/* The slot of (member, seq), allocated if needed; NULL with *rc set when out of range or memory. */
static inst_chunk *slot(npkit_inst_store *s, uint32_t member, uint64_t seq, size_t *i, int *rc) {
  *rc = 1;
  if (member >= s->n_members || seq >= NPKIT_INST_MAX_SEQ) return NULL;
  *rc = -1;
  inst_member *m = &s->members[member];
  if (m->sealed_len > 0 && unseal(s, member) != 0) return NULL;
  size_t c = (size_t)(seq >> CHUNK_BITS);
  if (c >= m->n_chunks) {
    size_t old = m->n_chunks;
    if (NPKIT_GROW(m->chunks, m->n_chunks, c + 1, 4) != 0) return NULL;
    memset(m->chunks + old, 0, (m->n_chunks - old) * sizeof(*m->chunks));
    s->bytes += (m->n_chunks - old) * sizeof(*m->chunks);
  }
  if (m->chunks[c] == NULL) {
    m->chunks[c] = calloc(1, sizeof(inst_chunk));
    if (m->chunks[c] == NULL) return NULL;
    s->bytes += sizeof(inst_chunk);
  }
  *i = (size_t)(seq & (CHUNK - 1));
  *rc = 0;
  return m->chunks[c];
}

int npkit_inst_put_call(npkit_inst_store *s, uint32_t member, uint64_t seq, unsigned fn, uint32_t row,
                        uint64_t start_ns, uint64_t end_ns, int timed) {
  size_t i;
  int rc;
  if (end_ns == 0) return 1;
  inst_chunk *ch = slot(s, member, seq, &i, &rc);
  if (ch == NULL) return rc;
  ch->row[i] = row;
  ch->fn[i] = (uint8_t)(fn < 256 ? fn : 0);
  if (ch->end[i] != 0 && (ch->dur[i] & DUR_GPU)) return 0; /* GPU times came first: they stay */
  if (ch->end[i] == 0) s->members[member].count++;
  ch->end[i] = end_ns;
  ch->dur[i] = pack_dur(end_ns >= start_ns ? end_ns - start_ns : 0, timed ? 0 : DUR_UNTIMED);
  return 0;
}

int npkit_inst_put_gpu(npkit_inst_store *s, uint32_t member, uint64_t seq, unsigned fn, uint64_t start_ns,
                       uint64_t end_ns) {
  size_t i;
  int rc;
  if (end_ns == 0 || end_ns < start_ns) return 1;
  inst_chunk *ch = slot(s, member, seq, &i, &rc);
  if (ch == NULL) return rc;
  if (ch->end[i] == 0) {
    s->members[member].count++;
    ch->row[i] = NPKIT_INST_NO_ROW;
  } else if (ch->dur[i] & DUR_GPU) { /* more activity of the same call: the union */
    uint64_t old_start = ch->end[i] - unpack_dur(ch->dur[i]);
    if (old_start < start_ns) start_ns = old_start;
    if (ch->end[i] > end_ns) end_ns = ch->end[i];
  }
  ch->fn[i] = (uint8_t)(fn < 256 ? fn : 0);
  ch->end[i] = end_ns;
  ch->dur[i] = pack_dur(end_ns - start_ns, DUR_GPU);
  return 0;
}

uint64_t npkit_inst_count(const npkit_inst_store *s, uint32_t member) {
  return member < s->n_members ? s->members[member].count : 0;
}

uint64_t npkit_inst_bytes(const npkit_inst_store *s) {
  return s->bytes + s->cap_members * sizeof(inst_member) + s->spill.cap;
}

static int slot_fill(npkit_inst_store *s, uint32_t member, const raw_record *r) {
  size_t i;
  int rc;
  inst_chunk *ch = slot(s, member, r->seq, &i, &rc);
  if (ch == NULL) return -1;
  ch->end[i] = r->end;
  ch->dur[i] = r->dur;
  ch->row[i] = r->row;
  ch->fn[i] = r->fn;
  return 0;
}

int npkit_inst_seal(npkit_inst_store *s, uint32_t member) {
  if (member >= s->n_members || s->members[member].n_chunks == 0) return 0;
  inst_member *m = &s->members[member];
  inst_cursor k;
  cursor_open(&k, s, member, NULL, 0);
  raw_record prev = {0};
  size_t used = 0;
  while (cursor_next(&k) > 0) {
    unsigned char *base = npkit_spill_reserve(&s->spill, used + SEAL_MAX);
    if (base == NULL) return -1; /* the chunks stay: nothing is lost */
    used = (size_t)(seal_record(base + used, &prev, &k.r) - base);
  }
  m->sealed_off = npkit_spill_size(&s->spill);
  m->sealed_len = used;
  npkit_spill_commit(&s->spill, used);
  for (size_t c = 0; c < m->n_chunks; c++)
    if (m->chunks[c] != NULL) {
      free(m->chunks[c]);
      s->bytes -= sizeof(inst_chunk);
    }
  s->bytes -= m->n_chunks * sizeof(*m->chunks);
  free(m->chunks);
  m->chunks = NULL;
  m->n_chunks = 0;
  return 0;
}

/* The entry of a record, if it has usable times. */
static int usable(const raw_record *r, uint32_t member, npkit_inst_entry *e) {
  if (r->end == 0 || (r->dur & DUR_UNTIMED)) return 0;
  uint64_t d = unpack_dur(r->dur);
  e->member = member;
  e->row = r->row;
  e->gpu = (r->dur & DUR_GPU) != 0;
  e->fn = r->fn;
  e->end_ns = r->end;
  e->start_ns = r->end > d ? r->end - d : 0;
  return 1;
}

/* The cursor's next usable record into *e: 1, 0 at the end, -1 (spill unreadable). */
static int next_usable(inst_cursor *k, uint32_t member, npkit_inst_entry *e) {
  int rc;
  while ((rc = cursor_next(k)) > 0)
    if (usable(&k->r, member, e)) return 1;
  return rc;
}

int npkit_inst_each(const npkit_inst_store *s, uint32_t member, npkit_inst_fn fn, void *ctx) {
  if (member >= s->n_members) return 0;
  unsigned char *buf = malloc(1u << 16);
  if (buf == NULL) return -1;
  inst_cursor k;
  cursor_open(&k, s, member, buf, 1u << 16);
  npkit_inst_entry e;
  int rc;
  while ((rc = next_usable(&k, member, &e)) > 0)
    if ((rc = fn(ctx, k.r.seq, &e, 1)) != 0) break;
  free(buf);
  return rc;
}

/* The members' records merged by sequence number: one cursor per member, each with a small
 * buffer, so that a join of thousands of sealed members reads them all at once in a few MB. */
int npkit_inst_join(const npkit_inst_store *s, const uint32_t *members, size_t n_members, npkit_inst_fn fn,
                    void *ctx) {
  if (n_members == 0) return 0;
  size_t cap = ((size_t)8 << 20) / n_members;
  cap = cap < 256 ? 256 : cap > 65536 ? 65536 : cap;
  inst_cursor *k = malloc(n_members * sizeof(*k));
  npkit_inst_entry *head = malloc(n_members * sizeof(*head));
  npkit_inst_entry *out = malloc(n_members * sizeof(*out));
  unsigned char *bufs = malloc(n_members * cap);
  uint8_t *have = calloc(n_members, 1);
  int rc = -1;
  if (k == NULL || head == NULL || out == NULL || bufs == NULL || have == NULL) goto done;
  rc = 0;
  for (size_t j = 0; j < n_members && rc >= 0; j++) {
    if (members[j] >= s->n_members) continue;
    cursor_open(&k[j], s, members[j], bufs + j * cap, cap);
    rc = next_usable(&k[j], members[j], &head[j]);
    have[j] = rc > 0;
  }
  while (rc >= 0) {
    uint64_t seq = UINT64_MAX;
    int any = 0;
    for (size_t j = 0; j < n_members; j++)
      if (have[j] && (!any || k[j].r.seq < seq)) seq = k[j].r.seq, any = 1;
    if (!any) {
      rc = 0;
      break;
    }
    size_t n = 0;
    for (size_t j = 0; j < n_members && rc >= 0; j++)
      if (have[j] && k[j].r.seq == seq) {
        out[n++] = head[j];
        rc = next_usable(&k[j], members[j], &head[j]);
        have[j] = rc > 0;
      }
    if (rc >= 0 && (rc = fn(ctx, seq, out, n)) != 0) break;
  }
done:
  free(k);
  free(head);
  free(out);
  free(bufs);
  free(have);
  return rc;
}
