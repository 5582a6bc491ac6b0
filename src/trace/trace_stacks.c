#include "trace_stacks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sorted_find.h"

/* Node lookup by (caller node, frame text): open addressing over node indices + 1. */
typedef struct node_index {
  uint32_t *slots;
  size_t mask;
} node_index;

static size_t node_hash(uint32_t parent, const char *name) {
  uint64_t h = ((uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)parent * 0xff51afd7ed558ccdull);
  return (size_t)(h ^ (h >> 29));
}

/* The node for `name` under `parent`, created if new. */
static uint32_t node_get(npkit_stack_fmt *f, node_index *ix, uint32_t parent, const char *name) {
  for (size_t i = node_hash(parent, name) & ix->mask;; i = (i + 1) & ix->mask) {
    uint32_t k = ix->slots[i];
    if (k == 0) {
      f->nodes[f->n_nodes] = (npkit_stack_node){parent, name};
      ix->slots[i] = (uint32_t)++f->n_nodes;
      return ix->slots[i];
    }
    if (f->nodes[k - 1].parent == parent && f->nodes[k - 1].name == name) return k;
  }
}

int npkit_stack_fmt_init(npkit_stack_fmt *f, const npkit_log_reader *r, int64_t pid, npkit_sink *sink, char *err,
                         size_t errlen) {
  memset(f, 0, sizeof *f);
  f->pid = pid;
  if (npkit_stack_table_load(r, &f->table, err, errlen) != 0) return -1;
  if (f->table.n == 0) return 0;
  size_t total = 0;
  for (size_t i = 0; i < f->table.n; i++) total += f->table.stacks[i].depth;
  node_index ix = {NULL, 0};
  size_t cap = 16;
  while (cap < 2 * total + 2) cap *= 2;
  ix.slots = calloc(cap, sizeof *ix.slots);
  ix.mask = cap - 1;
  f->nodes = malloc((total + 1) * sizeof *f->nodes);
  f->frags = calloc(f->table.n, sizeof *f->frags);
  if (ix.slots == NULL || f->nodes == NULL || f->frags == NULL) goto oom;
  for (size_t i = 0; i < f->table.n; i++) {
    const npkit_stack *s = &f->table.stacks[i];
    npkit_stack_frag *fr = &f->frags[i];
    fr->id = s->id;
    f->n = i + 1;
    uint32_t node = 0;
    for (uint32_t k = s->depth; k-- > 0;) node = node_get(f, &ix, node, s->frames[k]);
    if (sink == NULL) continue;
    char sf[64];
    int n = snprintf(sf, sizeof sf, "%" PRId64 ".%" PRIu32, pid, node - 1);
    fr->text = npkit_sink_intern_stack(sink, (const char *const *)s->frames, s->depth);
    fr->frame = node != 0 ? npkit_sink_intern(sink, sf, (size_t)n) : 0;
    if (fr->text == 0 || (node != 0 && fr->frame == 0)) goto oom;
  }
  free(ix.slots);
  return 0;
oom:
  free(ix.slots);
  npkit_stack_fmt_free(f);
  snprintf(err, errlen, "%s: out of memory while formatting the call stacks", r->path);
  return -1;
}

void npkit_stack_fmt_free(npkit_stack_fmt *f) {
  free(f->frags);
  free(f->nodes);
  npkit_stack_table_free(&f->table);
  memset(f, 0, sizeof *f);
}

NPKIT_SORTED_FIND(find_frag, npkit_stack_frag, uint64_t, id)

const npkit_stack_frag *npkit_stack_fmt_find(const npkit_stack_fmt *f, uint64_t id) {
  return f != NULL ? find_frag(f->frags, f->n, id) : NULL;
}

void npkit_stack_fmt_write_nodes(const npkit_stack_fmt *f, npkit_sink *s) {
  for (size_t i = 0; i < f->n_nodes; i++) npkit_sink_frame(s, f->pid, (uint32_t)i, f->nodes[i].name, f->nodes[i].parent);
}

int npkit_trace_stack_frames(const npkit_log_reader *r, npkit_sink *s, int64_t pid, char *err, size_t errlen) {
  npkit_stack_fmt f;
  if (npkit_stack_fmt_init(&f, r, pid, NULL, err, errlen) != 0) return -1;
  if (f.n_nodes > 0) {
    npkit_sink_frames_begin(s);
    npkit_stack_fmt_write_nodes(&f, s);
    npkit_sink_frames_end(s);
  }
  npkit_stack_fmt_free(&f);
  return 0;
}
