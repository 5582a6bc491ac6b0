#include "stack_table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "sorted_find.h"

static const char unknown_frame[] = "??";

typedef struct raw_stack {
  uint32_t id, depth;
  size_t first; /* index of its first frame id in the id list */
  size_t order; /* arrival, so that the latest record of an id wins */
} raw_stack;

typedef struct loader {
  raw_stack *stacks;
  size_t n, cap;
  uint32_t *ids;
  size_t n_ids, cap_ids;
} loader;

/* Adds the records of one STACK payload; stops quietly at the first damaged record.  -1: memory. */
static int parse_stacks(loader *l, const unsigned char *p, uint32_t size, uint32_t count) {
  uint64_t off = 0;
  for (uint32_t i = 0; i < count; i++) {
    npkit_stack_rec rec;
    if (size - off < sizeof rec) return 0;
    memcpy(&rec, p + off, sizeof rec);
    off += sizeof rec;
    uint64_t bytes = ((uint64_t)rec.depth * sizeof(uint32_t) + 7) & ~(uint64_t)7;
    if (rec.id == 0 || rec.depth > NPKIT_STACK_TABLE_MAX_DEPTH || bytes > size - off) return 0;
    if (npkit_grow(&l->stacks, &l->cap, l->n + 1, sizeof *l->stacks, 16) != 0 ||
        npkit_grow(&l->ids, &l->cap_ids, l->n_ids + rec.depth, sizeof *l->ids, 16) != 0)
      return -1;
    if (rec.depth > 0) memcpy(l->ids + l->n_ids, p + off, (size_t)rec.depth * sizeof(uint32_t));
    l->stacks[l->n] = (raw_stack){rec.id, rec.depth, l->n_ids, l->n};
    l->n++;
    l->n_ids += rec.depth;
    off += bytes;
  }
  return 0;
}

static int cmp_raw(const void *a, const void *b) {
  const raw_stack *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->order < y->order ? -1 : (x->order > y->order);
}

void npkit_stack_table_free(npkit_stack_table *t) {
  free(t->stacks);
  free(t->frames);
  memset(t, 0, sizeof *t);
}

int npkit_stack_table_load(const npkit_log_reader *r, npkit_stack_table *t, char *err, size_t errlen) {
  loader l;
  memset(&l, 0, sizeof l);
  memset(t, 0, sizeof *t);
  unsigned char *buf = NULL;
  size_t buf_cap = 0;
  int rc = 0;
  /* The reader counts the STACK blocks: a log without any has no stacks, and most logs are spared
   * the second walk over their block headers. */
  if (r->n_stack_blocks == 0) return 0;
  npkit_block_header bh;
  uint64_t pos = 0, payload;
  int k;
  while ((k = npkit_reader_next_block(r, &pos, &bh, &payload)) == 1) {
    if (bh.type == NPKIT_BLOCK_STACK && bh.size > 0 && bh.size <= NPKIT_READER_MAX_META_BLOCK) {
      if (npkit_grow(&buf, &buf_cap, bh.size, 1, 16) != 0) goto oom;
      if (npkit_read_at(r->fd, buf, bh.size, payload) != 0) goto io_error;
      if (parse_stacks(&l, buf, bh.size, bh.count) != 0) goto oom;
    }
  }
  if (k < 0) goto io_error;
  if (l.n > 0) {
    qsort(l.stacks, l.n, sizeof *l.stacks, cmp_raw);
    t->stacks = calloc(l.n, sizeof *t->stacks);
    t->frames = malloc((l.n_ids ? l.n_ids : 1) * sizeof *t->frames);
    if (t->stacks == NULL || t->frames == NULL) goto oom;
    size_t used = 0;
    for (size_t i = 0; i < l.n; i++) {
      if (i + 1 < l.n && l.stacks[i + 1].id == l.stacks[i].id) continue; /* superseded */
      const raw_stack *s = &l.stacks[i];
      npkit_stack *out = &t->stacks[t->n++];
      out->id = s->id;
      out->depth = s->depth;
      out->frames = t->frames + used;
      for (uint32_t k = 0; k < s->depth; k++) {
        const npkit_log_string *str = npkit_reader_string(r, l.ids[s->first + k]);
        t->frames[used++] = str != NULL ? str->text : unknown_frame;
      }
    }
  }
  goto done;
io_error:
  snprintf(err, errlen, "%s: read error: %s", r->path, strerror(errno ? errno : EIO));
  rc = -1;
  goto done;
oom:
  snprintf(err, errlen, "%s: out of memory while reading the call stacks", r->path);
  rc = -1;
done:
  if (rc != 0) npkit_stack_table_free(t);
  free(buf);
  free(l.stacks);
  free(l.ids);
  return rc;
}

NPKIT_SORTED_FIND(find_stack, npkit_stack, uint64_t, id)

const npkit_stack *npkit_stack_find(const npkit_stack_table *t, uint64_t id) { return find_stack(t->stacks, t->n, id); }

void npkit_stack_frame_function(const char *frame, char *buf, size_t len) {
  /* "name+0xOFF (library+0xOFF) file:line": the library part is the last " (" (a C++ name may
   * hold spaces and parentheses itself), the name ends at the last "+0x" before it. */
  const char *paren = NULL, *end = NULL;
  for (const char *p = frame; (p = strstr(p, " (")) != NULL; p++) paren = p;
  for (const char *p = frame; (p = strstr(p, "+0x")) != NULL && (paren == NULL || p < paren); p++) end = p;
  size_t n = end != NULL ? (size_t)(end - frame) : strlen(frame);
  if (len == 0) return;
  if (n >= len) n = len - 1;
  memcpy(buf, frame, n);
  buf[n] = '\0';
}
