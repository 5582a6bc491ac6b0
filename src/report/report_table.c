#include "report_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "event_facts.h"
#include "nccl_names.h"
#include "grow.h"

void npkit_table_init(npkit_table *t) {
  memset(t, 0, sizeof(*t));
  t->last_algo = SIZE_MAX;
}

void npkit_table_free(npkit_table *t) {
  for (size_t i = 0; i < t->n; i++) {
    npkit_quantile_free(&t->rows[i].cpu);
    npkit_quantile_free(&t->rows[i].gpu);
  }
  free(t->rows);
  npkit_slots_free(&t->index);
  free(t->algos);
  npkit_table_init(t);
}

static int key_eq(const npkit_table_key *a, const npkit_table_key *b) {
  return a->fn == b->fn && a->comm == b->comm && a->bytes == b->bytes && a->count == b->count &&
         a->datatype == b->datatype && a->redop == b->redop && a->root == b->root && a->tag == b->tag;
}

static uint64_t key_hash(const void *key) {
  const npkit_table_key *k = key;
  uint64_t h = k->bytes * 0x9e3779b97f4a7c15ull;
  h ^= ((uint64_t)k->fn << 40 | (uint64_t)k->comm) * 0xc2b2ae3d27d4eb4full;
  h ^= (uint64_t)(uint32_t)k->datatype << 48 ^ (uint64_t)(uint32_t)k->redop << 24 ^ (uint64_t)(uint32_t)k->root;
  h ^= k->count * 0x165667b19e3779f9ull;
  h ^= k->tag * 0xff51afd7ed558ccdull;
  h ^= h >> 31;
  return h;
}

static uint64_t row_hash(const void *t, size_t i) { return key_hash(&((const npkit_table *)t)->rows[i].key); }
static int is_row(const void *t, size_t i, const void *key) { return key_eq(&((const npkit_table *)t)->rows[i].key, key); }

npkit_table_row *npkit_table_row_for(npkit_table *t, const npkit_table_key *k, int32_t nranks) {
  /* consecutive calls usually repeat the same row: the index tries the row found last first */
  size_t i = npkit_slots_find(&t->index, t, k, is_row, key_hash);
  if (i != SIZE_MAX) return &t->rows[i];
  if (NPKIT_GROW(t->rows, t->cap, t->n + 1, 32) != 0 || npkit_slots_reserve(&t->index, t->n, 64, row_hash, t) != 0)
    return NULL;
  npkit_table_row *row = &t->rows[t->n];
  memset(row, 0, sizeof(*row));
  row->key = *k;
  row->nranks = nranks;
  npkit_quantile_init(&row->cpu);
  npkit_quantile_init(&row->gpu);
  npkit_slots_put(&t->index, key_hash(k), t->n++);
  return row;
}

static void note(char *dst, size_t len, const char *v) {
  if (v == NULL || v[0] == '\0') return;
  if (dst[0] == '\0') {
    strncpy(dst, v, len - 1);
    dst[len - 1] = '\0';
  } else if (strncmp(dst, v, len - 1) != 0) {
    strncpy(dst, "mixed", len - 1);
  }
}

void npkit_table_note_algo(npkit_table_row *row, const char *algo, const char *proto) {
  note(row->algo, sizeof(row->algo), algo);
  note(row->proto, sizeof(row->proto), proto);
}

static void note_channels(int *lo, int *hi, int ch_lo, int ch_hi) {
  if (ch_lo <= 0) return;
  if (*lo == 0 || ch_lo < *lo) *lo = ch_lo;
  if (ch_hi > *hi) *hi = ch_hi;
}

int npkit_table_note_task(npkit_table *t, uint32_t fn, int32_t nranks, uint64_t bytes, const char *algo,
                          const char *proto, int channels) {
  npkit_table_algo *a = NULL;
  /* few distinct keys, and tasks come in runs of the same one */
  if (t->last_algo < t->n_algos) {
    npkit_table_algo *l = &t->algos[t->last_algo];
    if (l->fn == fn && l->nranks == nranks && l->bytes == bytes) a = l;
  }
  for (size_t i = 0; a == NULL && i < t->n_algos; i++)
    if (t->algos[i].fn == fn && t->algos[i].nranks == nranks && t->algos[i].bytes == bytes) {
      a = &t->algos[i];
      t->last_algo = i;
    }
  if (a == NULL) {
    if (NPKIT_GROW(t->algos, t->cap_algos, t->n_algos + 1, 16) != 0) return -1;
    a = &t->algos[t->n_algos];
    memset(a, 0, sizeof(*a));
    a->fn = fn;
    a->nranks = nranks;
    a->bytes = bytes;
    t->last_algo = t->n_algos++;
  }
  note(a->algo, sizeof(a->algo), algo);
  note(a->proto, sizeof(a->proto), proto);
  note_channels(&a->ch_min, &a->ch_max, channels, channels);
  return 0;
}

static int cmp_rows(const void *a, const void *b) {
  const npkit_table_row *x = a, *y = b;
  const npkit_table_key *p = &x->key, *q = &y->key;
  if (p->fn != q->fn) return p->fn < q->fn ? -1 : 1;
  if (p->comm != q->comm) return p->comm < q->comm ? -1 : 1;
  if (p->bytes != q->bytes) return p->bytes < q->bytes ? -1 : 1;
  if (p->datatype != q->datatype) return p->datatype < q->datatype ? -1 : 1;
  if (p->redop != q->redop) return p->redop < q->redop ? -1 : 1;
  if (p->root != q->root) return p->root < q->root ? -1 : 1;
  if (p->count != q->count) return p->count < q->count ? -1 : 1;
  return (p->tag > q->tag) - (p->tag < q->tag);
}

void npkit_table_finish(npkit_table *t) {
  for (size_t i = 0; i < t->n; i++) {
    npkit_table_row *r = &t->rows[i];
    for (size_t k = 0; k < t->n_algos; k++) {
      const npkit_table_algo *a = &t->algos[k];
      if (a->fn == r->key.fn && a->nranks == r->nranks && a->bytes == r->key.bytes) {
        npkit_table_note_algo(r, a->algo, a->proto);
        note_channels(&r->channels_min, &r->channels_max, a->ch_min, a->ch_max);
      }
    }
    npkit_row_links *l = &r->links;
    l->net_tx_gbps = l->net_w > 0 ? l->net_tx / l->net_w : NAN;
    l->net_rx_gbps = l->net_w > 0 ? l->net_rx / l->net_w : NAN;
    l->nvlink_tx_gbs = l->nvl_w > 0 ? l->nvl_tx / l->nvl_w : NAN;
    l->nvlink_rx_gbs = l->nvl_w > 0 ? l->nvl_rx / l->nvl_w : NAN;
    npkit_quantile *q = r->gpu.n > 0 ? &r->gpu : r->cpu.n > 0 ? &r->cpu : NULL;
    r->source = r->gpu.n > 0 ? NPKIT_TIME_GPU : r->cpu.n > 0 ? NPKIT_TIME_CPU : NPKIT_TIME_NONE;
    r->mean_ns = r->p50_ns = r->p99_ns = r->algbw_gbs = r->busbw_gbs = NAN;
    r->samples = 0;
    r->exact = 1;
    if (q == NULL) continue;
    r->samples = q->n;
    r->mean_ns = npkit_quantile_mean(q);
    r->p50_ns = npkit_quantile_get(q, 0.5);
    r->p99_ns = npkit_quantile_get(q, 0.99);
    r->exact = npkit_quantile_is_exact(q);
    if (r->key.bytes > 0 && r->mean_ns > 0) {
      /* bytes per ns is GB/s with 1 GB = 1e9 B; busbw needs the communicator's size */
      r->algbw_gbs = npkit_gbps((double)r->key.bytes, r->mean_ns);
      if (r->nranks > 0) r->busbw_gbs = r->algbw_gbs * npkit_busbw_factor(r->key.fn, r->nranks);
    }
  }
  if (t->n > 1) qsort(t->rows, t->n, sizeof(*t->rows), cmp_rows); /* rows is NULL when empty */
  npkit_slots_free(&t->index); /* the order changed: lookups are over */
}

const char *npkit_time_source_name(npkit_time_source s) {
  switch (s) {
  case NPKIT_TIME_GPU: return "gpu";
  case NPKIT_TIME_CPU: return "cpu";
  default: return "none";
  }
}
