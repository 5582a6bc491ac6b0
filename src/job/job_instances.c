#include "job_instances.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

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

typedef struct inst_member {
  inst_chunk **chunks;
  size_t n_chunks;
  uint64_t count;
} inst_member;

struct npkit_inst_store {
  inst_member *members;
  size_t n_members, cap_members;
  uint64_t bytes;
};

npkit_inst_store *npkit_inst_create(void) {
  return calloc(1, sizeof(npkit_inst_store));
}

void npkit_inst_free(npkit_inst_store *s) {
  if (s == NULL) return;
  for (size_t m = 0; m < s->n_members; m++) {
    for (size_t c = 0; c < s->members[m].n_chunks; c++) free(s->members[m].chunks[c]);
    free(s->members[m].chunks);
  }
  free(s->members);
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

/* The slot of (member, seq), allocated if needed; NULL with *rc set when out of range or memory. */
static inst_chunk *slot(npkit_inst_store *s, uint32_t member, uint64_t seq, size_t *i, int *rc) {
  *rc = 1;
  if (member >= s->n_members || seq >= NPKIT_INST_MAX_SEQ) return NULL;
  *rc = -1;
  inst_member *m = &s->members[member];
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
  return s->bytes + s->cap_members * sizeof(inst_member);
}

/* The entry at (chunk, i) of a member, if it has usable times. */
static int entry(const inst_member *m, uint32_t member, size_t c, size_t i, npkit_inst_entry *e) {
  if (c >= m->n_chunks || m->chunks[c] == NULL) return 0;
  const inst_chunk *ch = m->chunks[c];
  uint32_t dur = ch->dur[i];
  if (ch->end[i] == 0 || (dur & DUR_UNTIMED)) return 0;
  uint64_t d = unpack_dur(dur);
  e->member = member;
  e->row = ch->row[i];
  e->gpu = (dur & DUR_GPU) != 0;
  e->fn = ch->fn[i];
  e->end_ns = ch->end[i];
  e->start_ns = ch->end[i] > d ? ch->end[i] - d : 0;
  return 1;
}

int npkit_inst_each(const npkit_inst_store *s, uint32_t member, npkit_inst_fn fn, void *ctx) {
  if (member >= s->n_members) return 0;
  const inst_member *m = &s->members[member];
  for (size_t c = 0; c < m->n_chunks; c++) {
    if (m->chunks[c] == NULL) continue;
    for (size_t i = 0; i < CHUNK; i++) {
      npkit_inst_entry e;
      if (!entry(m, member, c, i, &e)) continue;
      int rc = fn(ctx, ((uint64_t)c << CHUNK_BITS) | i, &e, 1);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

int npkit_inst_join(const npkit_inst_store *s, const uint32_t *members, size_t n_members, npkit_inst_fn fn,
                    void *ctx) {
  if (n_members == 0) return 0;
  npkit_inst_entry *e = malloc(n_members * sizeof(*e));
  if (e == NULL) return -1;
  size_t n_chunks = 0;
  for (size_t k = 0; k < n_members; k++)
    if (members[k] < s->n_members && s->members[members[k]].n_chunks > n_chunks)
      n_chunks = s->members[members[k]].n_chunks;
  int rc = 0;
  for (size_t c = 0; c < n_chunks && rc == 0; c++) {
    int any = 0;
    for (size_t k = 0; k < n_members && !any; k++) {
      const inst_member *m = members[k] < s->n_members ? &s->members[members[k]] : NULL;
      any = m != NULL && c < m->n_chunks && m->chunks[c] != NULL;
    }
    if (!any) continue;
    for (size_t i = 0; i < CHUNK && rc == 0; i++) {
      size_t n = 0;
      for (size_t k = 0; k < n_members; k++)
        if (members[k] < s->n_members && entry(&s->members[members[k]], members[k], c, i, &e[n])) n++;
      if (n > 0) rc = fn(ctx, ((uint64_t)c << CHUNK_BITS) | i, e, n);
    }
  }
  free(e);
  return rc;
}
