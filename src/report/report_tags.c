#include "report_tags.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "grow.h"
#include "nccl_names.h"

static int cmp_sums(const void *a, const void *b) {
  const npkit_tag_sum *x = a, *y = b;
  if ((x->tag == 0) != (y->tag == 0)) return x->tag == 0 ? 1 : -1; /* the untagged last */
  if (x->time_ns != y->time_ns) return x->time_ns > y->time_ns ? -1 : 1;
  return (x->tag > y->tag) - (x->tag < y->tag);
}

static npkit_tag_sum *find(npkit_tag_sum *v, size_t n, uint64_t tag) {
  for (size_t i = 0; i < n; i++)
    if (v[i].tag == tag) return &v[i];
  return NULL;
}

static void add_op(npkit_tag_sum *s, uint32_t fn) {
  for (uint32_t i = 0; i < s->n_ops; i++)
    if (s->ops[i] == fn) return;
  if (s->n_ops < NPKIT_TAG_OPS)
    s->ops[s->n_ops++] = fn;
  else
    s->more_ops++;
}

int npkit_tags_summarize(const npkit_table *t, npkit_tag_sum **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int any = 0;
  for (size_t i = 0; i < t->n && !any; i++) any = t->rows[i].key.tag != 0;
  if (!any) return 0;
  npkit_tag_sum *v = NULL;
  size_t count = 0, cap = 0;
  double total = 0;
  for (size_t i = 0; i < t->n; i++) {
    const npkit_table_row *r = &t->rows[i];
    npkit_tag_sum *s = find(v, count, r->key.tag);
    if (s == NULL) {
      if (NPKIT_GROW(v, cap, count + 1, 8) != 0) {
        free(v);
        return -1;
      }
      s = &v[count++];
      *s = (npkit_tag_sum){.tag = r->key.tag, .source = NPKIT_TIME_NONE};
    }
    s->calls += r->calls;
    s->bytes += r->key.bytes * r->calls;
    add_op(s, r->key.fn);
    if (r->samples == 0 || isnan(r->mean_ns)) continue;
    double time = r->mean_ns * (double)r->samples;
    s->timed += r->samples;
    s->time_ns += time;
    total += time;
    if (s->source == NPKIT_TIME_NONE || (s->source == NPKIT_TIME_GPU && r->source != NPKIT_TIME_GPU))
      s->source = r->source;
  }
  for (size_t i = 0; i < count; i++) v[i].share = total > 0 ? v[i].time_ns / total : NAN;
  qsort(v, count, sizeof *v, cmp_sums);
  *out = v;
  *n = count;
  return (int)count;
}

void npkit_tag_string(uint64_t tag, char *buf, size_t len) {
  if (tag == 0)
    snprintf(buf, len, "untagged");
  else
    snprintf(buf, len, "0x%" PRIx64, tag);
}

void npkit_tag_ops_string(const npkit_tag_sum *s, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < s->n_ops && at < len; i++) {
    int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", npkit_fn_short_name(s->ops[i]));
    if (w < 0) return;
    at += (size_t)w;
  }
  if (s->more_ops > 0 && at < len) snprintf(buf + at, len - at, ", +%u", s->more_ops);
}
