#include "report_straggler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

int npkit_straggler_init(npkit_straggler *s, size_t n_logs, size_t n_comms, double threshold_ns, uint32_t top) {
  memset(s, 0, sizeof(*s));
  s->threshold_ns = threshold_ns;
  s->top_max = top < NPKIT_STRAG_TOP_MAX ? top : NPKIT_STRAG_TOP_MAX;
  npkit_quantile_init(&s->spread);
  s->ranks = calloc(n_logs ? n_logs : 1, sizeof(*s->ranks));
  s->comms = calloc(n_comms ? n_comms : 1, sizeof(*s->comms));
  if (s->ranks == NULL || s->comms == NULL) {
    npkit_straggler_free(s);
    return -1;
  }
  s->n_ranks = n_logs;
  s->n_comms = n_comms;
  for (size_t c = 0; c < n_comms; c++) npkit_quantile_init(&s->comms[c].spread);
  return 0;
}

void npkit_straggler_free(npkit_straggler *s) {
  if (s->comms != NULL)
    for (size_t c = 0; c < s->n_comms; c++) npkit_quantile_free(&s->comms[c].spread);
  npkit_quantile_free(&s->spread);
  free(s->ranks);
  free(s->comms);
  s->ranks = NULL;
  s->comms = NULL;
  s->n_ranks = s->n_comms = 0;
}

/* Keeps the top_max largest spreads, largest first. */
static void keep_top(npkit_straggler *s, const npkit_strag_instance *in) {
  if (s->top_max == 0) return;
  if (s->n_top == s->top_max && in->spread_ns <= s->top[s->n_top - 1].spread_ns) return;
  size_t i = s->n_top < s->top_max ? s->n_top++ : s->n_top - 1;
  while (i > 0 && s->top[i - 1].spread_ns < in->spread_ns) {
    s->top[i] = s->top[i - 1];
    i--;
  }
  s->top[i] = *in;
}

/* Arrival of entry i on the reference clock, relative to entry 0.  Timestamps come from files and
 * may be absurd: the difference wraps as unsigned (no overflow), and adding the host's offset
 * saturates instead of overflowing. */
static int64_t arrival(const npkit_strag_ctx *ctx, const npkit_inst_entry *e, size_t i) {
  uint32_t h = ctx->log_host[ctx->member_log[e[i].member]];
  int64_t a = (int64_t)(e[i].start_ns - e[0].start_ns), r;
  if (__builtin_add_overflow(a, ctx->host_offset_ns[h], &r)) return ctx->host_offset_ns[h] > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

/* A spread as an integer for the quantiles; 2^64 itself (INT64_MAX - INT64_MIN rounded) does not
 * convert. */
static uint64_t spread_u64(double spread) { return spread >= 0x1p64 ? UINT64_MAX : (uint64_t)spread; }

int npkit_straggler_add(npkit_straggler *s, const npkit_strag_ctx *ctx, uint32_t comm, uint64_t seq,
                        const npkit_inst_entry *e, size_t n) {
  if (n < 2) return 0;
  for (size_t i = 1; i < n; i++)
    if (e[i].gpu != e[0].gpu) {
      s->mixed++;
      return 0;
    }
  /* arrivals on the reference clock; the first entry anchors them so that the numbers stay small */
  size_t first = 0, last = 0;
  int64_t amin = 0, amax = 0;
  double unc = 0;
  uint32_t host0 = ctx->log_host[ctx->member_log[e[0].member]];
  int cross = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t h = ctx->log_host[ctx->member_log[e[i].member]];
    int64_t a = arrival(ctx, e, i);
    if (h != host0) cross = 1;
    if (ctx->host_uncertainty_ns != NULL && ctx->host_uncertainty_ns[h] > unc) unc = ctx->host_uncertainty_ns[h];
    if (i == 0 || a < amin) {
      amin = a;
      first = i;
    }
    if (i == 0 || a > amax) {
      amax = a;
      last = i;
    }
  }
  double spread = (double)amax - (double)amin; /* the difference may not fit an int64_t */
  int over = spread > s->threshold_ns;
  if (!cross) unc = 0;
  s->instances++;
  if (cross) s->cross_host++;
  if (e[0].gpu) s->gpu++;
  if (unc > s->max_uncertainty_ns) s->max_uncertainty_ns = unc;
  if (npkit_quantile_add(&s->spread, spread_u64(spread)) != 0) return -1;
  if (comm < s->n_comms) {
    npkit_strag_comm *c = &s->comms[comm];
    if (c->instances == 0 || spread > c->max_spread_ns) {
      c->max_spread_ns = spread;
      c->max_last_log = ctx->member_log[e[last].member];
    }
    c->instances++;
    if (npkit_quantile_add(&c->spread, spread_u64(spread)) != 0) return -1;
    if (over) {
      c->over++;
      c->over_ns += spread;
    }
  }
  if (over) {
    s->over++;
    s->over_ns += spread;
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t log = ctx->member_log[e[i].member];
    if (log >= s->n_ranks) continue;
    int64_t a = arrival(ctx, e, i);
    npkit_strag_rank *r = &s->ranks[log];
    r->instances++;
    r->lag_ns += (double)a - (double)amin;
    r->waited_ns += (double)amax - (double)a;
    if (i == last && spread > 0) { /* a tie has no last rank */
      r->last++;
      if (over) {
        r->last_over++;
        r->delay_caused_ns += spread;
      }
    }
  }
  npkit_strag_instance in = {
    .comm = comm, .seq = seq, .fn = e[0].fn, .gpu = e[0].gpu, .ranks = (uint32_t)n,
    .last_log = ctx->member_log[e[last].member], .first_log = ctx->member_log[e[first].member],
    .first_arrival_ns = e[0].start_ns + (uint64_t)amin, /* unsigned: wraps, never overflows */ .spread_ns = spread, .uncertainty_ns = unc,
  };
  if (spread > 0) keep_top(s, &in);
  return 0;
}

typedef struct strag_walk {
  npkit_straggler *s;
  npkit_strag_ctx ctx;
  uint32_t comm;
} strag_walk;

static int strag_instance(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  strag_walk *w = p;
  return npkit_straggler_add(w->s, &w->ctx, w->comm, seq, e, n);
}

int npkit_straggler_job(npkit_straggler *s, const npkit_job *job) {
  uint32_t *member_log = malloc((job->n_members ? job->n_members : 1) * sizeof(*member_log));
  uint32_t *log_host = malloc((job->n_logs ? job->n_logs : 1) * sizeof(*log_host));
  int64_t *offset = malloc((job->n_hosts ? job->n_hosts : 1) * sizeof(*offset));
  double *unc = malloc((job->n_hosts ? job->n_hosts : 1) * sizeof(*unc));
  uint32_t *ids = malloc((job->n_members ? job->n_members : 1) * sizeof(*ids));
  int rc = -1;
  if (member_log == NULL || log_host == NULL || offset == NULL || unc == NULL || ids == NULL) goto out;
  for (size_t i = 0; i < job->n_members; i++) member_log[i] = job->members[i].log;
  for (size_t i = 0; i < job->n_logs; i++) log_host[i] = job->logs[i].host;
  for (size_t h = 0; h < job->n_hosts; h++) {
    offset[h] = job->hosts[h].align.offset_ns;
    unc[h] = job->hosts[h].align.uncertainty_ns;
  }
  strag_walk w = {.s = s, .ctx = {member_log, log_host, offset, unc}};
  rc = 0;
  for (uint32_t c = 0; c < job->n_comms && rc == 0; c++) {
    w.comm = c;
    size_t n = npkit_job_comm_members(&job->comms[c], ids);
    if (n >= 2) rc = npkit_inst_join(job->inst, ids, n, strag_instance, &w) != 0 ? -1 : 0;
  }
out:
  free(member_log);
  free(log_host);
  free(offset);
  free(unc);
  free(ids);
  return rc;
}
