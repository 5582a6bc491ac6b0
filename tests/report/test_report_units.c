/* Unit tests of the analysis building blocks of `npkit report` and `npkit merge`: quantiles,
 * robust estimation, clock alignment, the instance store, stragglers, bandwidth curves, GPU
 * overlap and idle, and the option parsers.  Expected values are computed here independently. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clock_align.h"
#include "merge_filter.h"
#include "nccl_names.h"
#include "report_curve.h"
#include "report_gpu.h"
#include "job.h"
#include "job_instances.h"
#include "report_tags.h"
#include "report_model.h"
#include "report_straggler.h"
#include "report_table.h"
#include "stats_quantile.h"
#include "stats_robust.h"

#define CHECK_NEAR(a, b, tol)                                                                              \
  do {                                                                                                     \
    double a_ = (a), b_ = (b), t_ = (tol);                                                                 \
    check_count++;                                                                                         \
    if (!(fabs(a_ - b_) <= t_)) {                                                                          \
      check_failures++;                                                                                    \
      fprintf(stderr, "%s:%d: %s = %.9g, want %s = %.9g within %.3g\n", __FILE__, __LINE__, #a, a_, #b, b_, t_); \
    }                                                                                                      \
  } while (0)

static uint64_t rng = 88172645463325252ull;
static uint64_t next_u64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static double unif(void) {
  return (double)(next_u64() >> 11) / 9007199254740992.0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Linear interpolation between order statistics, numpy's default. */
static double ref_quantile(const uint64_t *sorted, size_t n, double p) {
  double h = p * (double)(n - 1);
  size_t lo = (size_t)h;
  if (lo + 1 >= n) return (double)sorted[n - 1];
  return (double)sorted[lo] + (h - (double)lo) * ((double)sorted[lo + 1] - (double)sorted[lo]);
}

static void test_quantile(void) {
  npkit_quantile q;
  uint64_t *v = malloc(200000 * sizeof(*v));
  /* exact mode */
  npkit_quantile_init(&q);
  size_t n = 1000;
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    v[i] = 1000 + next_u64() % 100000;
    sum += (double)v[i];
    CHECK(npkit_quantile_add(&q, v[i]) == 0);
  }
  qsort(v, n, sizeof(*v), cmp_u64);
  CHECK(npkit_quantile_is_exact(&q));
  CHECK_NEAR(npkit_quantile_get(&q, 0.5), ref_quantile(v, n, 0.5), 1e-9);
  CHECK_NEAR(npkit_quantile_get(&q, 0.99), ref_quantile(v, n, 0.99), 1e-9);
  CHECK_NEAR(npkit_quantile_mean(&q), sum / (double)n, 1e-6);
  CHECK_EQ_U64(q.min, v[0]);
  CHECK_EQ_U64(q.max, v[n - 1]);
  npkit_quantile_free(&q);

  /* histogram mode: within 1/128 of the exact order statistic */
  npkit_quantile_init(&q);
  n = 200000;
  sum = 0;
  for (size_t i = 0; i < n; i++) {
    v[i] = (uint64_t)(2000.0 * exp(6.0 * unif())); /* spans three decades */
    sum += (double)v[i];
    npkit_quantile_add(&q, v[i]);
  }
  qsort(v, n, sizeof(*v), cmp_u64);
  CHECK(!npkit_quantile_is_exact(&q));
  for (double p = 0.01; p < 1.0; p += 0.07) {
    double want = (double)v[(size_t)llround(p * (double)(n - 1))];
    CHECK_NEAR(npkit_quantile_get(&q, p), want, want / 128.0 + 1.0);
  }
  CHECK_NEAR(npkit_quantile_mean(&q), sum / (double)n, 1e-6 * sum / (double)n);
  CHECK_EQ_U64(q.n, n);

  /* merging gives what adding everything to one would */
  npkit_quantile a, b;
  npkit_quantile_init(&a);
  npkit_quantile_init(&b);
  for (size_t i = 0; i < 3000; i++) npkit_quantile_add(i % 2 ? &a : &b, 10 * i);
  CHECK(npkit_quantile_merge(&a, &b) == 0);
  CHECK_EQ_U64(a.n, 3000);
  CHECK_NEAR(npkit_quantile_get(&a, 0.5), 0.5 * 29990, 1e-9);
  CHECK(npkit_quantile_merge(&q, &a) == 0);
  CHECK_EQ_U64(q.n, n + 3000);
  npkit_quantile_free(&a);
  npkit_quantile_free(&b);
  npkit_quantile_free(&q);

  /* every value lies in its bucket, whose middle is within 1/128 of it */
  for (int i = 0; i < 100000; i++) {
    uint64_t x = next_u64() >> (next_u64() % 60);
    double m = npkit_quantile_bucket_value(npkit_quantile_bucket(x));
    CHECK_NEAR(m, (double)x, (double)x / 128.0 + 0.5);
  }
  CHECK(npkit_quantile_bucket(UINT64_MAX) < NPKIT_QUANT_BUCKETS);
  npkit_quantile_init(&q);
  CHECK(isnan(npkit_quantile_get(&q, 0.5)));
  free(v);
}

static void test_robust(void) {
  double x[1100], y[4] = {4, 1, 3, 2};
  npkit_robust r;
  for (int i = 0; i < 1000; i++) x[i] = 5000 + 100 * (unif() + unif() + unif() - 1.5) * 2; /* sigma ~100 */
  for (int i = 1000; i < 1050; i++) x[i] = 1e6 + i;                                        /* outliers */
  npkit_robust_estimate(x, 1050, 0, &r);
  CHECK_EQ_U64(r.rejected, 50);
  CHECK_EQ_U64(r.kept, 1000);
  CHECK_NEAR(r.center, 5000, 15);
  CHECK(r.sigma > 60 && r.sigma < 140);
  CHECK_NEAR(r.stderr_, 1.2533 * r.sigma / sqrt(1000.0), 1e-9);
  CHECK_NEAR(npkit_median_inplace(y, 4), 2.5, 0);
  double one = 7;
  CHECK_NEAR(npkit_median_inplace(&one, 1), 7, 0);
}

static void test_align(void) {
  /* four hosts: 0-1, 0-2, 1-3, 2-3 share collectives; true offsets to add: 0, +1500, −2500, +40000 */
  const double truth[4] = {0, 1500, -2500, 40000};
  npkit_clock_align *a = npkit_align_create(5);
  const int pairs[4][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  for (int p = 0; p < 4; p++)
    for (int i = 0; i < 2000; i++) {
      /* one collective: its end E seen as E − offset(h) on host h, plus exit noise */
      double e = 1e9 + i * 1e4, ea = e - truth[pairs[p][0]] + 300 * unif(), eb = e - truth[pairs[p][1]] + 300 * unif();
      if (i % 100 == 0) eb += 50000; /* a late exit now and then */
      CHECK(npkit_align_add(a, (uint32_t)pairs[p][0], (uint32_t)pairs[p][1], (int64_t)(ea - eb)) == 0);
    }
  npkit_align_host out[5];
  npkit_align_summary s;
  CHECK(npkit_align_solve(a, 0, out, &s) == 0);
  CHECK(out[0].status == NPKIT_ALIGN_REFERENCE);
  for (int h = 1; h < 4; h++) {
    CHECK(out[h].status == NPKIT_ALIGN_OK);
    CHECK_NEAR((double)out[h].offset_ns, truth[h], 5 * out[h].uncertainty_ns + 20);
    CHECK(out[h].uncertainty_ns > 0 && out[h].uncertainty_ns < 20);
    CHECK(out[h].rejected >= 20); /* the late exits */
  }
  CHECK(out[3].hops == 2);
  CHECK(out[4].status == NPKIT_ALIGN_NONE); /* shares nothing */
  CHECK_EQ_U64(s.pairs, 4);
  CHECK_EQ_U64(s.cycle_checks, 1);
  CHECK_EQ_U64(s.cycle_failures, 0);
  /* a pair that contradicts the others fails the consistency check */
  for (int i = 0; i < 500; i++) npkit_align_add(a, 1, 2, (int64_t)(truth[2] - truth[1] + 30000));
  CHECK(npkit_align_solve(a, 0, out, &s) == 0);
  CHECK(s.cycle_failures >= 1);
  npkit_align_free(a);

  /* the reservoir keeps memory bounded and the estimate right */
  a = npkit_align_create(2);
  for (int i = 0; i < 100000; i++) npkit_align_add(a, 1, 0, (int64_t)(777 + 100 * unif()));
  CHECK(npkit_align_solve(a, 0, out, &s) == 0);
  CHECK_EQ_U64(out[1].samples, 100000);
  CHECK(out[1].used + out[1].rejected == NPKIT_ALIGN_RESERVOIR);
  CHECK_NEAR((double)out[1].offset_ns, -827, 5); /* add(1, 0, d): offset(0) − offset(1) = d */
  npkit_align_free(a);
}

static int count_fn(void *ctx, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  uint64_t *c = ctx;
  c[0]++;
  c[1] += n;
  c[2] += seq;
  for (size_t i = 0; i < n; i++) c[3] += e[i].gpu;
  return 0;
}

static void test_instances(void) {
  npkit_inst_store *s = npkit_inst_create();
  uint32_t m0 = 0, m1 = 0;
  CHECK(npkit_inst_add_member(s, &m0) == 0 && npkit_inst_add_member(s, &m1) == 0);
  /* call first, GPU later: GPU times win, the row stays */
  CHECK(npkit_inst_put_call(s, m0, 5, NPKIT_FN_AllReduce, 42, 1000, 2000, 1) == 0);
  CHECK(npkit_inst_put_gpu(s, m0, 5, NPKIT_FN_AllReduce, 1500, 1800) == 0);
  CHECK(npkit_inst_put_gpu(s, m0, 5, NPKIT_FN_AllReduce, 1400, 1700) == 0); /* union */
  /* GPU first, call later */
  CHECK(npkit_inst_put_gpu(s, m1, 5, NPKIT_FN_AllReduce, 1450, 1810) == 0);
  CHECK(npkit_inst_put_call(s, m1, 5, NPKIT_FN_AllReduce, 43, 900, 2100, 1) == 0);
  /* an untimed call without GPU activity takes no part; a timed one does */
  CHECK(npkit_inst_put_call(s, m0, 6, NPKIT_FN_AllReduce, 44, 3000, 3001, 0) == 0);
  CHECK(npkit_inst_put_call(s, m1, 6, NPKIT_FN_AllReduce, 44, 3000, 9000, 1) == 0);
  /* far sequence numbers and long durations */
  CHECK(npkit_inst_put_call(s, m1, 1000000, NPKIT_FN_AllGather, 45, 10, 10 + 3000000000ull, 1) == 0);
  CHECK(npkit_inst_put_call(s, m1, NPKIT_INST_MAX_SEQ, NPKIT_FN_AllGather, 45, 10, 20, 1) == 1);
  uint32_t both[2] = {m0, m1};
  uint64_t c[4] = {0};
  CHECK(npkit_inst_join(s, both, 2, count_fn, c) == 0);
  CHECK_EQ_U64(c[0], 3);                 /* seq 5, 6, 1000000 */
  CHECK_EQ_U64(c[1], 2 + 1 + 1);
  CHECK_EQ_U64(c[2], 5 + 6 + 1000000);
  CHECK_EQ_U64(c[3], 2);
  CHECK_EQ_U64(npkit_inst_count(s, m0), 2);
  CHECK_EQ_U64(npkit_inst_count(s, m1), 3);
  npkit_inst_free(s);
}

typedef struct one_walk {
  npkit_inst_entry e[8];
  size_t n;
} one_walk;

static int first_fn(void *ctx, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  one_walk *w = ctx;
  (void)seq;
  memcpy(w->e, e, n * sizeof(*e));
  w->n = n;
  return 1; /* stop: the return value comes back */
}

static void test_instance_values(void) {
  npkit_inst_store *s = npkit_inst_create();
  uint32_t m;
  npkit_inst_add_member(s, &m);
  npkit_inst_put_call(s, m, 0, NPKIT_FN_AllReduce, 7, 1000, 2000, 1);
  npkit_inst_put_gpu(s, m, 0, NPKIT_FN_AllReduce, 1500, 1800);
  npkit_inst_put_gpu(s, m, 0, NPKIT_FN_AllReduce, 1400, 1700);
  one_walk w = {0};
  CHECK(npkit_inst_join(s, &m, 1, first_fn, &w) == 1);
  CHECK_EQ_U64(w.n, 1);
  CHECK_EQ_U64(w.e[0].start_ns, 1400);
  CHECK_EQ_U64(w.e[0].end_ns, 1800);
  CHECK_EQ_U64(w.e[0].row, 7);
  CHECK(w.e[0].gpu == 1);
  /* a long duration keeps its end exactly and its start to the microsecond */
  npkit_inst_put_call(s, m, 1, NPKIT_FN_AllReduce, 8, 5, 5 + 3000000000ull, 1);
  npkit_inst_free(s);
  s = npkit_inst_create();
  npkit_inst_add_member(s, &m);
  npkit_inst_put_call(s, m, 1, NPKIT_FN_AllReduce, 8, 5, 5 + 3000000000ull, 1);
  CHECK(npkit_inst_join(s, &m, 1, first_fn, &w) == 1);
  CHECK_EQ_U64(w.e[0].end_ns, 5 + 3000000000ull);
  CHECK_NEAR((double)w.e[0].start_ns, 5, 1024);
  npkit_inst_free(s);
}

/* ---- sealed members: the walks see the same records, from memory, a file, or both ---- */

typedef struct rec_walk {
  uint64_t *v;
  size_t n, cap;
} rec_walk;

static int record_fn(void *ctx, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  rec_walk *w = ctx;
  for (size_t i = 0; i < n; i++) {
    uint64_t r[8] = {seq, n, e[i].member, e[i].row, e[i].gpu, e[i].fn, e[i].start_ns, e[i].end_ns};
    if (w->n + 8 > w->cap) {
      w->cap = w->cap ? 2 * w->cap : 4096;
      w->v = realloc(w->v, w->cap * sizeof(*w->v));
    }
    memcpy(w->v + w->n, r, sizeof r);
    w->n += 8;
  }
  return 0;
}

#define SEAL_MEMBERS 5

/* The same random records into a store, every time (the seed is reset): calls timed and not,
 * GPU activity before and after its call, durations past 2^29 ns, gaps across chunks. */
static npkit_inst_store *random_store(void) {
  rng = 0x5eed5eed5eedull;
  npkit_inst_store *s = npkit_inst_create();
  for (int m = 0; m < SEAL_MEMBERS; m++) {
    uint32_t id;
    npkit_inst_add_member(s, &id);
    uint64_t seq = next_u64() % 3, t = 1000000000000ull + next_u64() % 1000000;
    for (int k = 0; k < 3000; k++) {
      seq += 1 + (next_u64() % 97 == 0 ? 20000 : next_u64() % 3);
      t += next_u64() % 2000000;
      uint64_t d = next_u64() % 8 == 0 ? 1000000000ull + next_u64() % 3000000000ull : next_u64() % 100000;
      unsigned what = (unsigned)(next_u64() % 5), fn = (unsigned)(next_u64() % 12);
      uint32_t row = (uint32_t)(next_u64() % 70000);
      if (what != 1) npkit_inst_put_call(s, id, seq, fn, row, t, t + d, what != 2);
      if (what == 1 || what == 3) npkit_inst_put_gpu(s, id, seq, fn, t + 10, t + d / 2 + 10);
      if (what == 4) npkit_inst_put_gpu(s, id, seq, fn, t + 5, t + d + 20);
    }
  }
  return s;
}

static void walk_all(const npkit_inst_store *s, rec_walk *w) {
  uint32_t order[] = {3, 0, 4, 1, 2, 99}; /* not sorted, one unknown */
  CHECK(npkit_inst_join(s, order, 6, record_fn, w) == 0);
  for (uint32_t m = 0; m < SEAL_MEMBERS; m++) CHECK(npkit_inst_each(s, m, record_fn, w) == 0);
}

static int same_walk(const rec_walk *a, const rec_walk *b) {
  return a->n == b->n && memcmp(a->v, b->v, a->n * sizeof(*a->v)) == 0;
}

static void test_instance_seal(void) {
  const char *tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
  npkit_inst_store *ref = random_store();
  rec_walk want = {0};
  walk_all(ref, &want);
  CHECK(want.n > 8 * 10000);
  /* every seal to the file; part in the file, part in memory; no file to be had */
  struct { size_t memory; const char *dir; } how[] = {{0, tmp}, {1000, tmp}, {0, "/nonexistent/npkit"}};
  for (size_t h = 0; h < sizeof how / sizeof how[0]; h++) {
    npkit_inst_store *s = random_store();
    npkit_inst_spill_setup(s, how[h].memory, how[h].dir);
    uint64_t before = npkit_inst_bytes(s);
    for (uint32_t m = 0; m < SEAL_MEMBERS - 1; m++) CHECK(npkit_inst_seal(s, m) == 0); /* the last one not */
    CHECK(npkit_inst_seal(s, 0) == 0);                                                   /* twice: nothing */
    if (how[h].memory == 0 && how[h].dir == tmp) CHECK(npkit_inst_bytes(s) < before / 4);
    rec_walk got = {0};
    walk_all(s, &got);
    CHECK(same_walk(&want, &got));
    CHECK_EQ_U64(npkit_inst_count(s, 1), npkit_inst_count(ref, 1));
    /* records put after the seal: a new instance and more GPU activity of a sealed one */
    for (npkit_inst_store *x = s;; x = ref) {
      CHECK(npkit_inst_put_call(x, 1, 900000, NPKIT_FN_AllGather, 5, 10, 20, 1) == 0);
      CHECK(npkit_inst_put_gpu(x, 2, 40, NPKIT_FN_AllReduce, 1, 1ull << 41) == 0);
      if (x == ref) break;
    }
    rec_walk again = {0}, want2 = {0};
    walk_all(s, &again);
    walk_all(ref, &want2);
    CHECK(same_walk(&want2, &again));
    CHECK(!same_walk(&want, &again));
    free(got.v), free(again.v), free(want2.v);
    npkit_inst_free(s);
    npkit_inst_free(ref);
    ref = random_store();
  }
  npkit_inst_free(ref);
  free(want.v);
}

static void test_straggler(void) {
  /* ranks 0, 1 on host 0, rank 2 on host 1 whose clock is 10 us behind (offset +10000) */
  uint32_t member_log[3] = {0, 1, 2}, log_host[3] = {0, 0, 1};
  int64_t off[2] = {0, 10000};
  double unc[2] = {0, 50};
  npkit_strag_ctx ctx = {member_log, log_host, off, unc};
  npkit_straggler s;
  CHECK(npkit_straggler_init(&s, 3, 1, 5000, 2) == 0);
  for (uint64_t k = 0; k < 10; k++) {
    /* true arrivals: rank 0 at 0, rank 1 at 1000, rank 2 at 7000 (+k); rank 2's clock reads 10 us less */
    npkit_inst_entry e[3] = {{0, 0, 0, NPKIT_FN_AllReduce, 100000, 200000},
                             {1, 0, 0, NPKIT_FN_AllReduce, 101000, 200000},
                             {2, 0, 0, NPKIT_FN_AllReduce, 100000 + 7000 + k - 10000, 190000}};
    CHECK(npkit_straggler_add(&s, &ctx, 0, k, e, 3) == 0);
  }
  CHECK_EQ_U64(s.instances, 10);
  CHECK_EQ_U64(s.over, 10);
  CHECK_EQ_U64(s.cross_host, 10);
  CHECK_EQ_U64(s.ranks[2].last, 10);
  CHECK_EQ_U64(s.ranks[2].last_over, 10);
  CHECK_NEAR(s.ranks[2].delay_caused_ns, 10 * 7000 + 45, 1e-6);
  CHECK_NEAR(s.ranks[0].waited_ns, 10 * 7000 + 45, 1e-6);
  CHECK_NEAR(s.ranks[1].lag_ns, 10 * 1000, 1e-6);
  CHECK_EQ_U64(s.n_top, 2);
  CHECK_NEAR(s.top[0].spread_ns, 7009, 1e-9);
  CHECK_NEAR(s.top[1].spread_ns, 7008, 1e-9);
  CHECK_EQ_U64(s.top[0].last_log, 2);
  CHECK_EQ_U64(s.top[0].first_log, 0);
  CHECK_EQ_U64(s.top[0].first_arrival_ns, 100000);
  CHECK_NEAR(s.max_uncertainty_ns, 50, 0);
  /* GPU and CPU times are not compared */
  npkit_inst_entry mix[2] = {{0, 0, 1, NPKIT_FN_AllReduce, 1, 2}, {1, 0, 0, NPKIT_FN_AllReduce, 1, 2}};
  CHECK(npkit_straggler_add(&s, &ctx, 0, 99, mix, 2) == 0);
  CHECK_EQ_U64(s.mixed, 1);
  CHECK_EQ_U64(s.instances, 10);
  npkit_straggler_free(&s);
}

static void add_row(npkit_table *t, uint64_t bytes, double time_ns, int samples) {
  npkit_table_key k = {NPKIT_FN_AllReduce, 0, bytes, bytes / 4, 7, 0, -1, 0};
  npkit_table_row *r = npkit_table_row_for(t, &k, 8);
  for (int i = 0; i < samples; i++) {
    r->calls++;
    npkit_quantile_add(&r->cpu, (uint64_t)time_ns);
  }
}

static void test_curve(void) {
  /* 100 GB/s up to 16 MiB, then 40 GB/s: the two largest sizes are flagged */
  npkit_table t;
  npkit_table_init(&t);
  const uint64_t sizes[] = {4096, 65536, 1 << 20, 16 << 20, 64 << 20, 256 << 20};
  for (int i = 0; i < 6; i++) {
    double gbps = sizes[i] > (16u << 20) ? 40 : 100;
    add_row(&t, sizes[i], 5000 + (double)sizes[i] / gbps, 16);
  }
  npkit_table_finish(&t);
  CHECK_EQ_U64(t.n, 6);
  const npkit_table_row *r = &t.rows[3];
  CHECK_EQ_U64(r->key.bytes, 16 << 20);
  double tm = (double)(5000 + (16u << 20) / 100);
  CHECK_NEAR(r->algbw_gbs, (double)(16u << 20) / tm, 1e-9);
  CHECK_NEAR(r->busbw_gbs, r->algbw_gbs * 2 * 7 / 8.0, 1e-9);
  CHECK(r->source == NPKIT_TIME_CPU);
  uint32_t logged[1] = {8};
  npkit_curves c;
  CHECK(npkit_curves_build(&c, &t, logged, 1) == 0);
  CHECK_EQ_U64(c.n, 1);
  const npkit_curve *cv = &c.c[0];
  CHECK_EQ_U64(cv->n, 6);
  CHECK_EQ_U64(cv->n_flagged, 2);
  CHECK(!cv->pts[3].flagged && cv->pts[4].flagged && cv->pts[5].flagged);
  CHECK_EQ_U64(cv->knee_bytes, 16 << 20);
  /* at stake: instances (16 samples / 8 ranks) × (t − S / best algbw before) */
  double best = cv->pts[3].algbw_gbs, stake = 0;
  for (int i = 4; i < 6; i++) stake += 2 * (cv->pts[i].time_ns - (double)cv->pts[i].bytes / best);
  CHECK_NEAR(cv->at_stake_ns, stake, 1e-6 * stake);
  npkit_curves_free(&c);
  npkit_table_free(&t);

  /* rising bandwidth alone is never flagged, nor are latency-bound small sizes */
  npkit_table_init(&t);
  add_row(&t, 8, 9000, 8);
  add_row(&t, 16, 5000, 8); /* faster: noise among tiny sizes */
  add_row(&t, 32, 9000, 8);
  add_row(&t, 1 << 20, 5000 + (1 << 20) / 50.0, 8);
  npkit_table_finish(&t);
  CHECK(npkit_curves_build(&c, &t, logged, 1) == 0);
  CHECK_EQ_U64(c.c[0].n_flagged, 0);
  npkit_curves_free(&c);
  npkit_table_free(&t);
}

static void test_gpu(void) {
  CHECK(npkit_kernel_class_of("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == NPKIT_KCLASS_COMM);
  CHECK(npkit_kernel_class_of("_Z28ncclDevKernel_AllReduce_Sum_f32_RING_LLv") == NPKIT_KCLASS_COMM);
  CHECK(npkit_kernel_class_of("void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)") == NPKIT_KCLASS_COMM);
  CHECK(npkit_kernel_class_of("ncclSymkDevKernel_AllGather") == NPKIT_KCLASS_COMM);
  CHECK(npkit_kernel_class_of("Memcpy HtoD (Pageable -> Device)") == NPKIT_KCLASS_MEMORY);
  CHECK(npkit_kernel_class_of("sgemm_128x64_nn") == NPKIT_KCLASS_COMPUTE);
  CHECK(npkit_kernel_class_of(NULL) == NPKIT_KCLASS_COMPUTE);

  /* 20 steps of period 1000 us: compute [0, 400) on stream 0, comm [300, 700) on stream 1 */
  npkit_kernel k[41];
  size_t n = 0;
  for (int i = 0; i < 20; i++) {
    int64_t t = (int64_t)i * 1000000;
    k[n++] = (npkit_kernel){t, t + 400000, 0, NPKIT_KCLASS_COMPUTE};
    k[n++] = (npkit_kernel){t + 300000, t + 700000, 1, NPKIT_KCLASS_COMM};
  }
  k[n++] = (npkit_kernel){5000, 6000, 2, NPKIT_KCLASS_MEMORY};
  npkit_gpu_rank g;
  CHECK(npkit_gpu_analyse(k, n, &g) == 0);
  CHECK_EQ_U64(g.kernels, 41);
  CHECK_EQ_U64(g.comm_kernels, 20);
  CHECK_EQ_U64(g.memory_ops, 1);
  CHECK_EQ_U64(g.comm_ns, 20 * 400000);
  CHECK_EQ_U64(g.overlap_ns, 20 * 100000);
  CHECK_EQ_U64(g.exposed_ns, 20 * 300000);
  CHECK_NEAR(g.overlap_ratio, 0.25, 1e-12);
  CHECK_EQ_U64(g.busy_ns, 20 * 700000);
  CHECK_EQ_U64(g.idle_ns, 19 * 300000);
  CHECK_EQ_U64(g.n_streams, 3);
  const npkit_stream_idle *s0 = &g.streams[0];
  CHECK(s0->regular);
  CHECK_EQ_U64(s0->regular_gaps, 19);
  CHECK_NEAR(s0->gap_ns, 600000, 1e-9);
  CHECK_NEAR(s0->period_ns, 1000000, 1e-9);
  CHECK_NEAR(s0->regular_idle_ns, 19 * 600000.0, 1e-6);
  npkit_gpu_rank_free(&g);

  /* irregular gaps are not a pattern */
  n = 0;
  int64_t t = 0;
  for (int i = 0; i < 30; i++) {
    k[n++] = (npkit_kernel){t, t + 10000, 0, NPKIT_KCLASS_COMPUTE};
    t += 10000 + (int64_t)(2000 + 500000 * unif() * unif());
    if (n == 41) break;
  }
  CHECK(npkit_gpu_analyse(k, n, &g) == 0);
  CHECK(!g.streams[0].regular);
  CHECK(isnan(g.overlap_ratio)); /* no communication */
  npkit_gpu_rank_free(&g);
}

static void test_parsers(void) {
  double ns;
  char err[256];
  CHECK(npkit_parse_duration("5us", "s", &ns) == 0 && ns == 5000);
  CHECK(npkit_parse_duration("2.5ms", "s", &ns) == 0 && ns == 2.5e6);
  CHECK(npkit_parse_duration("3", "us", &ns) == 0 && ns == 3000);
  CHECK(npkit_parse_duration("1s", "us", &ns) == 0 && ns == 1e9);
  CHECK(npkit_parse_duration("1 s", "us", &ns) != 0);
  CHECK(npkit_parse_duration("5min", "us", &ns) != 0);
  CHECK(npkit_parse_duration("", "us", &ns) != 0);

  npkit_merge_filter f;
  memset(&f, 0, sizeof(f));
  CHECK(npkit_merge_parse_ranks(&f, "0-3,8,12-13", err, sizeof(err)) == 0);
  CHECK(npkit_merge_rank_selected(&f, 0) && npkit_merge_rank_selected(&f, 3) && npkit_merge_rank_selected(&f, 8));
  CHECK(!npkit_merge_rank_selected(&f, 4) && !npkit_merge_rank_selected(&f, -1) && npkit_merge_rank_selected(&f, 13));
  CHECK(npkit_merge_parse_ranks(&f, "3-1", err, sizeof(err)) != 0);
  CHECK_CONTAINS(err, "--ranks");
  CHECK(npkit_merge_parse_ranks(&f, "a", err, sizeof(err)) != 0);
  CHECK(npkit_merge_parse_ranks(&f, "1,,2", err, sizeof(err)) != 0);

  memset(&f, 0, sizeof(f));
  CHECK(npkit_merge_parse_ops(&f, "AllReduce,ncclSend,group", err, sizeof(err)) == 0);
  CHECK(f.op[NPKIT_FN_AllReduce] && f.op[NPKIT_FN_Send] && f.op[NPKIT_FN_GroupStart] && f.op[NPKIT_FN_GroupEnd]);
  CHECK(!f.op[NPKIT_FN_Recv] && !f.op[NPKIT_FN_AllGather]);
  CHECK(npkit_merge_parse_ops(&f, "AllReduse", err, sizeof(err)) != 0);
  CHECK_CONTAINS(err, "AllReduse");

  memset(&f, 0, sizeof(f));
  CHECK(npkit_merge_parse_window(&f, "1.5s:2s", err, sizeof(err)) == 0);
  CHECK(f.window_start_ns == 1500000000 && f.window_end_ns == 2000000000);
  CHECK(npkit_merge_parse_window(&f, "200ms:", err, sizeof(err)) == 0);
  CHECK(f.window_start_ns == 200000000 && f.window_end_ns == INT64_MAX);
  CHECK(npkit_merge_parse_window(&f, ":10", err, sizeof(err)) == 0);
  CHECK(f.window_start_ns == INT64_MIN && f.window_end_ns == 10000000000);
  CHECK(npkit_merge_parse_window(&f, "2s:1s", err, sizeof(err)) != 0);
  CHECK(npkit_merge_parse_window(&f, "2s", err, sizeof(err)) != 0);
  CHECK(npkit_merge_parse_window(&f, "x:y", err, sizeof(err)) != 0);
  CHECK(npkit_merge_filters_events(&f));

  /* --collective COMM:SEQ[-SEQ] and --context; not with --window */
  npkit_merge_filter g;
  memset(&g, 0, sizeof(g));
  CHECK(npkit_merge_parse_collective(&g, "world:412", err, sizeof(err)) == 0);
  CHECK_STR(g.coll_comm, "world");
  CHECK(g.coll_seq_lo == 412 && g.coll_seq_hi == 412 && g.selects_logs && !g.has_context);
  CHECK(npkit_merge_parse_collective(&g, "1f2e3d4c:400-420", err, sizeof(err)) == 0);
  CHECK_STR(g.coll_comm, "1f2e3d4c");
  CHECK(g.coll_seq_lo == 400 && g.coll_seq_hi == 420);
  CHECK(npkit_merge_parse_collective(&g, "a:b:7", err, sizeof(err)) == 0); /* the last colon */
  CHECK_STR(g.coll_comm, "a:b");
  const char *bad[] = {"world", ":5", "world:", "world:5-3", "world:x", "world:5-", "world:99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(npkit_merge_parse_collective(&g, bad[i], err, sizeof(err)) != 0);
  CHECK(npkit_merge_parse_window(&g, "1s:2s", err, sizeof(err)) != 0);
  CHECK_CONTAINS(err, "leave out --window");
  CHECK(npkit_merge_parse_context(&g, "500us", err, sizeof(err)) == 0);
  CHECK(g.has_context && g.context_ns == 500000);
  CHECK(npkit_merge_parse_context(&g, "3", err, sizeof(err)) == 0);
  CHECK(g.context_ns == 3000000); /* a bare number is in milliseconds */
  CHECK(npkit_merge_parse_context(&g, "-1ms", err, sizeof(err)) != 0);
  CHECK(npkit_merge_parse_collective(&f, "world:1", err, sizeof(err)) != 0); /* f has a window */

  /* communicators named as the report names them in commands, and found again */
  npkit_job_comm comms[4] = {{.comm_id = 0x1f2e3d4c5b6a7988ull, .nranks = 8, .name = "world"},
                             {.comm_id = 0x1f2e3d4c00000001ull, .nranks = 4, .name = "half"},
                             {.comm_id = 0x5a5a123400000000ull, .nranks = 4, .name = "half"},
                             {.comm_id = 0x77ull, .nranks = 2, .name = ""}};
  npkit_job job;
  memset(&job, 0, sizeof(job));
  job.comms = comms;
  job.n_comms = 4;
  char ref[40];
  CHECK_STR(npkit_job_comm_ref(&job, 0, ref, sizeof ref), "world");
  CHECK_STR(npkit_job_comm_ref(&job, 1, ref, sizeof ref), "1f2e3d4c00000001"); /* name and prefix shared */
  CHECK_STR(npkit_job_comm_ref(&job, 2, ref, sizeof ref), "5a5a1234");
  CHECK_STR(npkit_job_comm_ref(&job, 3, ref, sizeof ref), "00000000");
  for (uint32_t c = 0; c < 4; c++) CHECK(npkit_job_find_comm(&job, npkit_job_comm_ref(&job, c, ref, sizeof ref)) == c);
  CHECK(npkit_job_find_comm(&job, "half") == UINT32_MAX);             /* two of them */
  CHECK(npkit_job_find_comm(&job, "0x5a5a1234") == 2);
  CHECK(npkit_job_find_comm(&job, "1f2e3d4c") == UINT32_MAX);         /* the prefix of two */
  CHECK(npkit_job_find_comm(&job, "0x1f2e3d4c5b6a7988") == 0);
  CHECK(npkit_job_find_comm(&job, "nosuch") == UINT32_MAX);
  /* a communicator named as another's digits: that other gets its whole id */
  memcpy(comms[3].name, "5a5a1234", 9);
  CHECK_STR(npkit_job_comm_ref(&job, 2, ref, sizeof ref), "5a5a123400000000");
  CHECK(npkit_job_find_comm(&job, npkit_job_comm_ref(&job, 2, ref, sizeof ref)) == 2);
  CHECK(npkit_job_find_comm(&job, npkit_job_comm_ref(&job, 3, ref, sizeof ref)) == 3);

  char b[32];
  npkit_report_bytes(8 << 20, b, sizeof(b));
  CHECK_STR(b, "8 MiB");
  npkit_report_bytes(4000, b, sizeof(b));
  CHECK_STR(b, "4000 B");
  npkit_report_bytes(100000000, b, sizeof(b));
  CHECK_STR(b, "95.4 MiB");
  npkit_report_duration(1234567, b, sizeof(b));
  CHECK_STR(b, "1.23 ms");
  npkit_report_duration(999.6e3, b, sizeof(b));
  CHECK_STR(b, "1.00 ms");
}

/* Rows by user tag: sums of calls, bytes and time (mean x timed calls), shares of the total, the
 * largest time first and the untagged last, and operations beyond NPKIT_TAG_OPS counted. */
static void tag_row(npkit_table *t, uint32_t fn, uint64_t tag, uint64_t bytes, uint64_t time_ns, int calls, int timed) {
  npkit_table_key k = {fn, 0, bytes, bytes / 4, 7, -1, -1, tag};
  npkit_table_row *r = npkit_table_row_for(t, &k, 4);
  for (int i = 0; i < calls; i++) {
    r->calls++;
    if (i < timed) npkit_quantile_add(&r->gpu, time_ns);
  }
}

static void test_tags(void) {
  npkit_table t;
  npkit_table_init(&t);
  tag_row(&t, NPKIT_FN_AllReduce, 0, 1024, 1000, 4, 4);
  npkit_table_finish(&t);
  npkit_tag_sum *v;
  size_t n;
  CHECK(npkit_tags_summarize(&t, &v, &n) == 0 && v == NULL && n == 0); /* nothing tagged */
  npkit_table_free(&t);

  npkit_table_init(&t);
  tag_row(&t, NPKIT_FN_AllReduce, 0x10, 4096, 2000, 3, 3);    /* 6000 ns */
  tag_row(&t, NPKIT_FN_AllReduce, 0x10, 8192, 5000, 2, 1);    /* 5000 ns, one untimed call */
  tag_row(&t, NPKIT_FN_AllGather, 0x20, 1024, 30000, 1, 1);   /* 30000 ns */
  tag_row(&t, NPKIT_FN_Broadcast, 0, 512, 1000, 9, 9);        /* 9000 ns, untagged */
  static const uint32_t many[] = {NPKIT_FN_AllReduce, NPKIT_FN_Broadcast, NPKIT_FN_Reduce, NPKIT_FN_AllGather,
                                  NPKIT_FN_ReduceScatter, NPKIT_FN_AlltoAll};
  for (int i = 0; i < 6; i++) tag_row(&t, many[i], 0x30, 64, 100, 1, 1); /* 600 ns, six operations */
  npkit_table_finish(&t);
  CHECK(npkit_tags_summarize(&t, &v, &n) == 4 && n == 4);
  double total = 6000 + 5000 + 30000 + 9000 + 600;
  CHECK(v[0].tag == 0x20 && v[1].tag == 0x10 && v[2].tag == 0x30 && v[3].tag == 0);
  CHECK_EQ_U64(v[1].calls, 5);
  CHECK_EQ_U64(v[1].timed, 4);
  CHECK_EQ_U64(v[1].bytes, 3 * 4096 + 2 * 8192);
  CHECK_NEAR(v[1].time_ns, 11000, 1e-6);
  CHECK_NEAR(v[1].share, 11000 / total, 1e-12);
  CHECK(v[1].n_ops == 1 && v[1].ops[0] == NPKIT_FN_AllReduce && v[1].source == NPKIT_TIME_GPU);
  CHECK(v[2].n_ops == NPKIT_TAG_OPS && v[2].more_ops == 6 - NPKIT_TAG_OPS);
  CHECK_NEAR(v[3].share, 9000 / total, 1e-12);
  char text[96];
  npkit_tag_string(v[1].tag, text, sizeof text);
  CHECK(strcmp(text, "0x10") == 0);
  npkit_tag_string(0, text, sizeof text);
  CHECK(strcmp(text, "untagged") == 0);
  npkit_tag_ops_string(&v[2], text, sizeof text);
  CHECK(strcmp(text, "AllReduce, Broadcast, Reduce, AllGather, +2") == 0);
  free(v);
  npkit_table_free(&t);
}

int main(void) {
  test_tags();
  test_quantile();
  test_robust();
  test_align();
  test_instances();
  test_instance_values();
  test_instance_seal();
  test_straggler();
  test_curve();
  test_gpu();
  test_parsers();
  return check_exit_code("test_report_units");
}
