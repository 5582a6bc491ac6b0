#include "clock_align.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats_robust.h"
#include "grow.h"
#include "slots.h"

/* Samples of offset(hi) − offset(lo) for one pair of hosts lo < hi. */
typedef struct align_pair {
  uint32_t lo, hi;
  uint64_t seen;         /* samples offered */
  double *res;           /* reservoir */
  uint32_t n, cap;
  /* solved */
  npkit_robust est;
  int usable, in_tree;
} align_pair;

struct npkit_clock_align {
  uint32_t n_hosts;
  align_pair *pairs;
  size_t n_pairs, cap_pairs;
  npkit_slots index;     /* of pairs, by pair_key */
  uint64_t rng;
};

/* A pair's reservoir grows by doubling from 64 entries (NPKIT_GROW), which lands on its size. */
_Static_assert(NPKIT_ALIGN_RESERVOIR % 64 == 0 && ((NPKIT_ALIGN_RESERVOIR / 64) & (NPKIT_ALIGN_RESERVOIR / 64 - 1)) == 0,
               "NPKIT_ALIGN_RESERVOIR: 64 times a power of two");

static uint64_t next_random(uint64_t *s) { /* xorshift64: deterministic, so reports are reproducible */
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

npkit_clock_align *npkit_align_create(uint32_t n_hosts) {
  npkit_clock_align *a = calloc(1, sizeof(*a));
  if (a == NULL) return NULL;
  a->n_hosts = n_hosts;
  a->rng = 0x9e3779b97f4a7c15ull;
  return a;
}

void npkit_align_free(npkit_clock_align *a) {
  if (a == NULL) return;
  for (size_t i = 0; i < a->n_pairs; i++) free(a->pairs[i].res);
  free(a->pairs);
  npkit_slots_free(&a->index);
  free(a);
}

/* A pair's key is its hosts, lo << 32 | hi: distinct keys, and a hash good enough as it is. */
static uint64_t pair_key(uint32_t lo, uint32_t hi) { return (uint64_t)lo << 32 | hi; }
static uint64_t key_itself(const void *key) { return *(const uint64_t *)key; }

static uint64_t pair_hash(const void *a, size_t i) {
  const align_pair *p = &((const npkit_clock_align *)a)->pairs[i];
  return pair_key(p->lo, p->hi);
}

static int is_pair(const void *a, size_t i, const void *key) { return pair_hash(a, i) == *(const uint64_t *)key; }

/* Samples come in runs of the same pair: the index tries the pair found last first. */
static align_pair *find_pair(npkit_clock_align *a, uint32_t lo, uint32_t hi) {
  uint64_t key = pair_key(lo, hi);
  size_t i = npkit_slots_find(&a->index, a, &key, is_pair, key_itself);
  if (i != SIZE_MAX) return &a->pairs[i];
  if (NPKIT_GROW(a->pairs, a->cap_pairs, a->n_pairs + 1, 8) != 0 ||
      npkit_slots_reserve(&a->index, a->n_pairs, 16, pair_hash, a) != 0)
    return NULL;
  align_pair *p = &a->pairs[a->n_pairs];
  memset(p, 0, sizeof(*p));
  p->lo = lo;
  p->hi = hi;
  npkit_slots_put(&a->index, key, a->n_pairs++);
  return p;
}

int npkit_align_add(npkit_clock_align *a, uint32_t host_a, uint32_t host_b, int64_t d_ns) {
  if (host_a == host_b || host_a >= a->n_hosts || host_b >= a->n_hosts) return 0;
  double d = (double)d_ns;
  if (host_a > host_b) { /* stored as offset(hi) − offset(lo) */
    uint32_t t = host_a;
    host_a = host_b;
    host_b = t;
    d = -d;
  }
  align_pair *p = find_pair(a, host_a, host_b);
  if (p == NULL) return -1;
  p->seen++;
  if (p->n < NPKIT_ALIGN_RESERVOIR) {
    size_t cap = p->cap; /* doubles from 64 and so stops at the reservoir's size exactly (below) */
    if (p->n == p->cap && NPKIT_GROW(p->res, cap, p->n + 1, 64) != 0) return -1;
    p->cap = (uint32_t)cap;
    p->res[p->n++] = d;
  } else {
    /* reservoir sampling: every sample offered so far stays with the same probability */
    uint64_t j = next_random(&a->rng) % p->seen;
    if (j < NPKIT_ALIGN_RESERVOIR) p->res[j] = d;
  }
  return 0;
}

const char *npkit_align_status_name(npkit_align_status s) {
  switch (s) {
  case NPKIT_ALIGN_REFERENCE: return "reference";
  case NPKIT_ALIGN_OK: return "aligned";
  case NPKIT_ALIGN_NONE: return "not aligned";
  }
  return "unknown";
}

int npkit_align_solve(npkit_clock_align *a, uint32_t reference, npkit_align_host *out,
                      npkit_align_summary *summary) {
  uint32_t n = a->n_hosts;
  memset(summary, 0, sizeof(*summary));
  summary->reference = reference;
  for (uint32_t h = 0; h < n; h++) {
    memset(&out[h], 0, sizeof(out[h]));
    out[h].via = -1;
    out[h].status = NPKIT_ALIGN_NONE;
  }
  if (reference >= n) return 0;

  for (size_t i = 0; i < a->n_pairs; i++) {
    align_pair *p = &a->pairs[i];
    p->usable = p->in_tree = 0;
    if (p->n < NPKIT_ALIGN_MIN_SAMPLES) continue;
    /* the estimate reorders a copy: the reservoir keeps its order for later solves */
    double *x = malloc(p->n * sizeof(*x));
    if (x == NULL) return -1;
    memcpy(x, p->res, p->n * sizeof(*x));
    npkit_robust_estimate(x, p->n, NPKIT_ALIGN_REJECT_FLOOR_NS, &p->est);
    free(x);
    p->usable = isfinite(p->est.center) && isfinite(p->est.stderr_);
    if (p->usable) summary->pairs++;
  }

  /* Dijkstra on variance: each host takes the chain of links whose variances add up least; a
   * zero-variance link still counts one nanosecond squared so that shorter chains win ties. */
  double *var = malloc(n * sizeof(*var));
  unsigned char *done = calloc(n, 1);
  int32_t *link = malloc(n * sizeof(*link));
  if (var == NULL || done == NULL || link == NULL) {
    free(var);
    free(done);
    free(link);
    return -1;
  }
  for (uint32_t h = 0; h < n; h++) {
    var[h] = INFINITY;
    link[h] = -1;
  }
  var[reference] = 0;
  out[reference].status = NPKIT_ALIGN_REFERENCE;
  for (;;) {
    uint32_t u = n;
    for (uint32_t h = 0; h < n; h++)
      if (!done[h] && isfinite(var[h]) && (u == n || var[h] < var[u])) u = h;
    if (u == n) break;
    done[u] = 1;
    if (link[u] >= 0) {
      align_pair *p = &a->pairs[link[u]];
      uint32_t from = p->lo == u ? p->hi : p->lo;
      double d = p->lo == u ? -p->est.center : p->est.center;
      out[u].offset_ns = out[from].offset_ns + (int64_t)llround(d);
      out[u].uncertainty_ns = sqrt(var[u]);
      out[u].sigma_ns = p->est.sigma;
      out[u].samples = p->seen;
      out[u].used = p->est.kept;
      out[u].rejected = p->est.rejected;
      out[u].via = (int32_t)from;
      out[u].hops = out[from].hops + 1;
      out[u].status = NPKIT_ALIGN_OK;
      p->in_tree = 1;
    }
    for (size_t i = 0; i < a->n_pairs; i++) {
      align_pair *p = &a->pairs[i];
      if (!p->usable || (p->lo != u && p->hi != u)) continue;
      uint32_t v = p->lo == u ? p->hi : p->lo;
      double w = p->est.stderr_ * p->est.stderr_;
      if (w < 1.0) w = 1.0;
      if (!done[v] && var[u] + w < var[v]) {
        var[v] = var[u] + w;
        link[v] = (int32_t)i;
      }
    }
  }

  /* links not on any chain check the solution */
  for (size_t i = 0; i < a->n_pairs; i++) {
    align_pair *p = &a->pairs[i];
    if (!p->usable || p->in_tree || !done[p->lo] || !done[p->hi]) continue;
    double mismatch = fabs((double)(out[p->hi].offset_ns - out[p->lo].offset_ns) - p->est.center);
    double sigma = sqrt(out[p->hi].uncertainty_ns * out[p->hi].uncertainty_ns +
                        out[p->lo].uncertainty_ns * out[p->lo].uncertainty_ns + p->est.stderr_ * p->est.stderr_);
    summary->cycle_checks++;
    if (mismatch > NPKIT_ALIGN_CYCLE_SIGMAS * sigma + NPKIT_ALIGN_CYCLE_FLOOR_NS) summary->cycle_failures++;
    if (summary->cycle_checks == 1 || mismatch > summary->worst_cycle_ns) {
      summary->worst_cycle_ns = mismatch;
      summary->worst_a = p->lo;
      summary->worst_b = p->hi;
    }
  }
  free(var);
  free(done);
  free(link);
  return 0;
}
