#include "report_curve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "event_facts.h"
#include "nccl_names.h"
#include "grow.h"

void npkit_curves_free(npkit_curves *c) {
  for (size_t i = 0; i < c->n; i++) free(c->c[i].pts);
  free(c->c);
  c->c = NULL;
  c->n = 0;
}

/* Flags the sizes past a bottleneck and sums their time at stake. */
static void analyse(npkit_curve *cv) {
  double peak = 0, best_bus = 0, best_alg = 0;
  uint64_t best_bytes = 0;
  for (size_t i = 0; i < cv->n; i++)
    if (cv->pts[i].busbw_gbs > peak) {
      peak = cv->pts[i].busbw_gbs;
      cv->peak_bytes = cv->pts[i].bytes;
    }
  cv->peak_busbw_gbs = peak;
  for (size_t i = 0; i < cv->n; i++) {
    npkit_curve_point *p = &cv->pts[i];
    if (i > 0 && best_bus >= NPKIT_CURVE_REGIME * peak && p->busbw_gbs < NPKIT_CURVE_DROP * best_bus) {
      p->flagged = 1;
      p->expected_ns = (double)p->bytes / best_alg;
      double lost = p->time_ns - p->expected_ns;
      p->at_stake_ns = lost > 0 ? lost * p->instances : 0;
      if (cv->n_flagged++ == 0) cv->knee_bytes = best_bytes;
      cv->at_stake_ns += p->at_stake_ns;
    }
    if (p->busbw_gbs > best_bus) {
      best_bus = p->busbw_gbs;
      best_alg = p->algbw_gbs;
      best_bytes = p->bytes;
    }
  }
}

static int add_curve(npkit_curves *out, size_t *cap, const npkit_table_row *r) {
  if (NPKIT_GROW(out->c, *cap, out->n + 1, 8) != 0) return -1;
  npkit_curve *cv = &out->c[out->n++];
  memset(cv, 0, sizeof(*cv));
  cv->fn = r->key.fn;
  cv->comm = r->key.comm;
  cv->nranks = r->nranks;
  cv->source = NPKIT_TIME_GPU;
  return 0;
}

int npkit_curves_build(npkit_curves *out, const npkit_table *t, const uint32_t *logged, size_t n_comms) {
  size_t cap = 0, pcap = 0;
  memset(out, 0, sizeof(*out));
  /* rows are sorted by operation, communicator, size: each curve is a run of rows */
  for (size_t i = 0; i < t->n; i++) {
    const npkit_table_row *r = &t->rows[i];
    if (r->key.bytes == 0 || r->source == NPKIT_TIME_NONE || !(r->mean_ns > 0) || !npkit_fn_moves_data(r->key.fn))
      continue;
    npkit_curve *cv = out->n > 0 ? &out->c[out->n - 1] : NULL;
    if (cv == NULL || cv->fn != r->key.fn || cv->comm != r->key.comm) {
      if (add_curve(out, &cap, r) != 0) goto oom;
      cv = &out->c[out->n - 1];
      pcap = 0;
    }
    if (r->source != NPKIT_TIME_GPU) cv->source = NPKIT_TIME_CPU;
    npkit_curve_point *p = cv->n > 0 ? &cv->pts[cv->n - 1] : NULL;
    if (p == NULL || p->bytes != r->key.bytes) {
      if (NPKIT_GROW(cv->pts, pcap, cv->n + 1, 16) != 0) goto oom;
      p = &cv->pts[cv->n++];
      memset(p, 0, sizeof(*p));
      p->bytes = r->key.bytes;
    }
    /* pooled mean, weighted by timed calls */
    double total = p->time_ns * (double)p->samples + r->mean_ns * (double)r->samples;
    p->samples += r->samples;
    p->time_ns = total / (double)p->samples;
  }
  for (size_t i = 0; i < out->n; i++) {
    npkit_curve *cv = &out->c[i];
    double ranks = cv->comm < n_comms && logged != NULL && logged[cv->comm] > 0 ? (double)logged[cv->comm] : 1.0;
    double factor = npkit_busbw_factor(cv->fn, cv->nranks);
    for (size_t k = 0; k < cv->n; k++) {
      npkit_curve_point *p = &cv->pts[k];
      p->instances = (double)p->samples / ranks;
      p->algbw_gbs = npkit_gbps((double)p->bytes, p->time_ns);
      p->busbw_gbs = p->algbw_gbs * factor;
    }
    analyse(cv);
  }
  return 0;
oom:
  npkit_curves_free(out);
  return -1;
}
