/* The hang analysis (report_hang.h): per communicator, the first collective some rank did not
 * complete, the state of each rank in it, and a title that names the culprit. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grow.h"
#include "inflight_text.h"
#include "nccl_names.h"
#include "report_steps.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- what one rank's scan says ---- */

typedef struct rank_facts {
  int32_t log;                 /* -1: no log */
  uint32_t member;
  int64_t entered, completed;
} rank_facts;

static const npkit_hang_log_scan *log_scan(const npkit_report *rep, int32_t log) {
  return log >= 0 && (size_t)log < rep->hscan.n_logs ? &rep->hscan.logs[log] : NULL;
}

/* The lowest and highest sequence numbers of the member's items in its log's latest snapshot. */
static void item_seqs(const npkit_hang_log_scan *l, uint32_t member, int64_t *lo, int64_t *hi) {
  *lo = *hi = -1;
  for (size_t i = 0; l != NULL && i < l->n_items; i++) {
    uint64_t s = l->items[i].ev.u.inflight.seq;
    if (l->items[i].member != member || s == NPKIT_NO_SEQ || s > INT64_MAX) continue;
    if (*lo < 0 || (int64_t)s < *lo) *lo = (int64_t)s;
    if ((int64_t)s > *hi) *hi = (int64_t)s;
  }
}

static rank_facts facts_of(const npkit_report *rep, const npkit_job_comm *jc, int32_t r) {
  rank_facts f = {-1, NPKIT_JOB_NONE, -1, -1};
  uint32_t mid = jc->members[r];
  if (mid == NPKIT_JOB_NONE || mid >= rep->hscan.n_members) return f;
  const npkit_hang_member_scan *m = &rep->hscan.members[mid];
  f.member = mid;
  f.log = (int32_t)rep->job.members[mid].log;
  int64_t lo, hi;
  item_seqs(log_scan(rep, f.log), mid, &lo, &hi);
  f.entered = m->entered > hi ? m->entered : hi; /* a call still inside NCCL is only in the snapshot */
  f.completed = f.entered;
  if (lo >= 0) f.completed = min64(f.completed, lo - 1);
  if (m->failed_at >= 0) f.completed = min64(f.completed, m->failed_at - 1);
  return f;
}

/* The member's latest call at seq, from its window; NULL when it is not there. */
static const npkit_hang_call *call_at(const npkit_report *rep, uint32_t member, uint64_t seq) {
  const npkit_hang_member_scan *m = &rep->hscan.members[member];
  uint32_t n = m->n_calls < NPKIT_HANG_WINDOW ? m->n_calls : NPKIT_HANG_WINDOW;
  for (uint32_t k = 0; k < n; k++) {
    const npkit_hang_call *c = &m->window[(m->n_calls - 1 - k) % NPKIT_HANG_WINDOW];
    if (c->seq == seq) return c;
  }
  return NULL;
}

static int item_at(const npkit_hang_item *it, uint32_t member, uint64_t seq) {
  return it->member == member && it->ev.u.inflight.seq == seq;
}

/* ---- words ---- */

static void clock_of(uint64_t ns, char *buf, size_t len) {
  time_t s = (time_t)(ns / 1000000000ull);
  struct tm tm;
  if (gmtime_r(&s, &tm) == NULL) {
    snprintf(buf, len, "?");
    return;
  }
  snprintf(buf, len, "%02d:%02d:%02d.%03u UTC", tm.tm_hour, tm.tm_min, tm.tm_sec,
           (unsigned)(ns % 1000000000ull / 1000000u));
}

static void describe_call(const npkit_hang_call *c, char *buf, size_t len) {
  snprintf(buf, len, "%s of %" PRIu64 " %s", npkit_fn_short_name((unsigned)c->fn), c->count,
           npkit_datatype_name(c->datatype));
  size_t n = strlen(buf);
  if (c->redop >= 0 && n < len) snprintf(buf + n, len - n, " %s", npkit_redop_name(c->redop));
  n = strlen(buf);
  if (npkit_fn_has_root((unsigned)c->fn) && c->root >= 0 && n < len) snprintf(buf + n, len - n, " root %d", (int)c->root);
}

static int same_call(const npkit_hang_call *a, const npkit_hang_call *b) {
  return a->fn == b->fn && a->count == b->count && a->datatype == b->datatype && a->redop == b->redop &&
         (!npkit_fn_has_root((unsigned)a->fn) || a->root == b->root);
}

char *npkit_hang_rank_list(const npkit_hang *h, int status, char *buf, size_t len) {
  int32_t runs[64][2];
  size_t nr = 0, total = 0;
  for (size_t i = 0; i < h->n_ranks; i++) {
    const npkit_hang_rank *r = &h->ranks[i];
    int in = status >= 0 ? (int)r->status == status : status == -1 ? r->mismatched : r->stuck;
    if (status == NPKIT_HANG_MISSING && r->status == NPKIT_HANG_NO_LOG) in = 1;
    if (!in) continue;
    total++;
    if (nr > 0 && runs[nr - 1][1] == r->rank - 1) runs[nr - 1][1] = r->rank;
    else if (nr < 64) runs[nr][0] = runs[nr][1] = r->rank, nr++;
  }
  buf[0] = '\0';
  for (size_t i = 0; i < nr; i++) {
    size_t n = strlen(buf);
    const char *sep = i == 0 ? "" : i + 1 == nr ? " and " : ", ";
    if (runs[i][0] == runs[i][1]) snprintf(buf + n, len - n, "%s%d", sep, (int)runs[i][0]);
    else if (runs[i][0] + 1 == runs[i][1]) snprintf(buf + n, len - n, "%s%d, %d", sep, (int)runs[i][0], (int)runs[i][1]);
    else snprintf(buf + n, len - n, "%s%d-%d", sep, (int)runs[i][0], (int)runs[i][1]);
  }
  (void)total;
  return buf;
}

/* ---- one rank's state in the collective ---- */

/* Where the rank is in the collective: its snapshot's items of it, the most telling first. */
static void where_of(const npkit_report *rep, npkit_hang_rank *hr, uint32_t member, uint64_t seq) {
  const npkit_hang_log_scan *l = log_scan(rep, hr->log);
  for (int what = NPKIT_INFL_PROXY_STEP; what >= NPKIT_INFL_CALL && hr->n_where < NPKIT_HANG_WHERE; what--)
    for (size_t i = 0; l != NULL && i < l->n_items && hr->n_where < NPKIT_HANG_WHERE; i++) {
      const npkit_hang_item *it = &l->items[i];
      if (!item_at(it, member, seq) || it->ev.u.inflight.what != what) continue;
      npkit_inflight_where(&it->ev, hr->where[hr->n_where], sizeof hr->where[0]);
      int dup = 0;
      for (uint32_t k = 0; k < hr->n_where && !dup; k++) dup = !strcmp(hr->where[k], hr->where[hr->n_where]);
      if (!dup) hr->n_where++;
    }
}

/* Why a rank without items of the collective is where it is. */
static void say_why(const npkit_report *rep, npkit_hang_rank *hr) {
  char t[32];
  if (hr->n_where > 0) return;
  char *w = hr->where[hr->n_where++];
  size_t len = sizeof hr->where[0];
  const npkit_job_log *jl = hr->log >= 0 ? &rep->job.logs[hr->log] : NULL;
  switch (hr->status) {
  case NPKIT_HANG_NO_LOG:
    snprintf(w, len, "no log: the process wrote nothing (it died before any dump, or its log was not given)");
    break;
  case NPKIT_HANG_MISSING:
    if (hr->last_entered >= 0)
      snprintf(w, len, "its last collective on this communicator was #%" PRId64 "; its log %s", hr->last_entered,
               jl != NULL && jl->closed_cleanly ? "was closed" : "was not closed (the process was killed or crashed)");
    else
      snprintf(w, len, "it made no collective call on this communicator; its log %s",
               jl != NULL && jl->closed_cleanly ? "was closed" : "was not closed (the process was killed or crashed)");
    break;
  case NPKIT_HANG_FAILED:
    snprintf(w, len, "its call returned %s", npkit_result_name(hr->call.result));
    break;
  case NPKIT_HANG_WAITING:
    npkit_report_duration((double)hr->waited_ns, t, sizeof t);
    snprintf(w, len, "it entered the collective %s before %s (no snapshot of its work in flight)", t,
             log_scan(rep, hr->log) != NULL && log_scan(rep, hr->log)->dump > 0 ? "its last dump" : "its log ends");
    break;
  default: hr->n_where--; break;
  }
}

/* When the rank entered the collective and how long it waited: its call, or its snapshot. */
static void entry_times(const npkit_report *rep, npkit_hang_rank *hr, uint32_t member, uint64_t seq,
                        const npkit_hang_call *c) {
  const npkit_hang_log_scan *l = log_scan(rep, hr->log);
  uint64_t end = hr->log >= 0 ? rep->logs[hr->log].last_ns : 0, since = c != NULL ? c->start_ns : 0;
  for (size_t i = 0; l != NULL && i < l->n_items; i++)
    if (item_at(&l->items[i], member, seq)) {
      const npkit_event *ev = &l->items[i].ev;
      if (since == 0 || (ev->start_ns != 0 && ev->start_ns < since)) since = ev->start_ns;
      end = ev->end_ns;
    }
  hr->since_ns = since;
  hr->waited_ns = since != 0 && end > since ? end - since : 0;
}

/* ---- the likely culprits ---- */

static int has_item(const npkit_report *rep, const npkit_hang_rank *hr, uint32_t member, uint64_t seq, int what) {
  const npkit_hang_log_scan *l = log_scan(rep, hr->log);
  for (size_t i = 0; l != NULL && i < l->n_items; i++)
    if (item_at(&l->items[i], member, seq) && (what == 0 || l->items[i].ev.u.inflight.what == what)) return 1;
  return 0;
}

/* A network step that waits for the rank's own GPU or network, not for a peer: a send waiting for
 * the GPU's data or for the network to finish, a receive whose data arrived but is not flushed or
 * taken.  The receives still waiting for a peer's data mark the rank as awaiting and name the
 * peer in `awaited`. */
static int own_side_step(const npkit_report *rep, const npkit_hang_rank *hr, uint32_t member, uint64_t seq,
                         uint8_t *awaited, uint8_t *awaiting, size_t n_ranks) {
  const npkit_hang_log_scan *l = log_scan(rep, hr->log);
  int own = 0;
  for (size_t i = 0; l != NULL && i < l->n_items; i++) {
    const npkit_ev_inflight *f = &l->items[i].ev.u.inflight;
    if (!item_at(&l->items[i], member, seq) || f->what != NPKIT_INFL_PROXY_STEP || f->phase > 2) continue;
    if (f->is_send ? f->phase != 1 : f->phase != 0) {
      own = 1;
    } else if (!f->is_send && f->peer >= 0 && (size_t)f->peer < n_ranks) {
      awaited[f->peer] = 1;
      awaiting[hr->rank] = 1;
    }
  }
  return own;
}

/* The likely culprits among the waiting ranks: a kernel that never started while another rank's
 * did, a network step stuck on the rank's own side, or a peer others' receives wait for that
 * waits for nobody itself (in a ring every rank behind a stuck one waits for its predecessor). */
static void find_culprits(const npkit_report *rep, npkit_hang *h, const rank_facts *facts) {
  uint8_t *awaited = calloc(2 * h->n_ranks, 1), *awaiting = awaited != NULL ? awaited + h->n_ranks : NULL;
  int any_started = 0;
  for (size_t r = 0; r < h->n_ranks; r++)
    if (h->ranks[r].status == NPKIT_HANG_WAITING)
      any_started |= has_item(rep, &h->ranks[r], facts[r].member, h->seq, NPKIT_INFL_KERNEL_CH);
  for (size_t r = 0; r < h->n_ranks; r++) {
    npkit_hang_rank *hr = &h->ranks[r];
    if (hr->status != NPKIT_HANG_WAITING) continue;
    uint32_t m = facts[r].member;
    int queued = has_item(rep, hr, m, h->seq, NPKIT_INFL_QUEUED) && !has_item(rep, hr, m, h->seq, NPKIT_INFL_KERNEL_CH) &&
                 !has_item(rep, hr, m, h->seq, NPKIT_INFL_PROXY_OP);
    int own = awaited != NULL ? own_side_step(rep, hr, m, h->seq, awaited, awaiting, h->n_ranks) : 0;
    hr->stuck = (uint8_t)((queued && any_started) || own);
  }
  for (size_t r = 0; awaited != NULL && r < h->n_ranks; r++)
    if (awaited[r] && !awaiting[r] && h->ranks[r].status == NPKIT_HANG_WAITING) h->ranks[r].stuck = 1;
  free(awaited);
}

/* Ranks whose call differs from the most common one (ties: the group of the lowest rank). */
static void find_mismatches(npkit_hang *h) {
  size_t best = SIZE_MAX, best_n = 0;
  for (size_t a = 0; a < h->n_ranks; a++) {
    if (!h->ranks[a].has_call) continue;
    size_t n = 0;
    for (size_t b = 0; b < h->n_ranks; b++) n += h->ranks[b].has_call && same_call(&h->ranks[a].call, &h->ranks[b].call);
    if (n > best_n) best = a, best_n = n;
  }
  for (size_t r = 0; best != SIZE_MAX && r < h->n_ranks; r++)
    h->ranks[r].mismatched = h->ranks[r].has_call && !same_call(&h->ranks[best].call, &h->ranks[r].call);
}

/* ---- the title ---- */

static int count_status(const npkit_hang *h, int status) {
  int n = 0;
  for (size_t i = 0; i < h->n_ranks; i++) {
    const npkit_hang_rank *r = &h->ranks[i];
    n += status >= 0 ? (int)r->status == status || (status == NPKIT_HANG_MISSING && r->status == NPKIT_HANG_NO_LOG)
                     : status == -1 ? r->mismatched : r->stuck;
  }
  return n;
}

static const char *ranks_word(int n) { return n == 1 ? "rank" : "ranks"; }

static void make_title(const npkit_report *rep, npkit_hang *h) {
  char comm[96], what[160], list[256], waits[320] = "", since[40], dur[32], a[160], b[160];
  npkit_report_comm_label(rep, h->comm, comm, sizeof comm);
  snprintf(what, sizeof what, "%s #%" PRIu64 " of %s", npkit_fn_short_name(h->fn), h->seq, comm);
  int nw = count_status(h, NPKIT_HANG_WAITING);
  if (nw > 0) {
    clock_of(h->since_ns, since, sizeof since);
    npkit_report_duration((double)h->stuck_ns, dur, sizeof dur);
    snprintf(waits, sizeof waits, "; %s %s %s in it since %s (%s)", ranks_word(nw),
             npkit_hang_rank_list(h, NPKIT_HANG_WAITING, list, sizeof list), nw == 1 ? "waits" : "wait", since, dur);
  }
  int nm = count_status(h, NPKIT_HANG_MISSING), nn = count_status(h, NPKIT_HANG_NO_LOG);
  int nx = count_status(h, -1), ns = count_status(h, -2), nf = count_status(h, NPKIT_HANG_FAILED);
  if (nm > 0) {
    npkit_hang_rank_list(h, NPKIT_HANG_MISSING, list, sizeof list);
    snprintf(h->title, sizeof h->title, "%s %s%s never entered %s%s", ranks_word(nm), list,
             nn == nm ? (nn == 1 ? " (no log)" : " (no logs)") : nn > 0 ? " (some without a log)" : "", what, waits);
  } else if (nx > 0) {
    const npkit_hang_rank *odd = NULL, *usual = NULL;
    for (size_t i = 0; i < h->n_ranks; i++) {
      if (h->ranks[i].has_call && h->ranks[i].mismatched && odd == NULL) odd = &h->ranks[i];
      if (h->ranks[i].has_call && !h->ranks[i].mismatched && usual == NULL) usual = &h->ranks[i];
    }
    describe_call(&odd->call, a, sizeof a);
    if (usual != NULL) describe_call(&usual->call, b, sizeof b);
    npkit_hang_rank_list(h, -1, list, sizeof list);
    snprintf(h->title, sizeof h->title, "desync at %s: %s %.120s called %s, the others %s", what, ranks_word(nx), list, a,
             usual != NULL ? b : "something else");
  } else if (ns > 0) {
    const npkit_hang_rank *s = NULL;
    for (size_t i = 0; i < h->n_ranks && s == NULL; i++)
      if (h->ranks[i].stuck) s = &h->ranks[i];
    npkit_hang_rank_list(h, -2, list, sizeof list);
    snprintf(h->title, sizeof h->title, "%s %s stuck inside %s (%s)%s", ranks_word(ns), list, what,
             s->n_where > 0 ? s->where[0] : "no detail", waits);
  } else if (nf > 0) {
    const npkit_hang_rank *f = NULL;
    for (size_t i = 0; i < h->n_ranks && f == NULL; i++)
      if (h->ranks[i].status == NPKIT_HANG_FAILED) f = &h->ranks[i];
    npkit_hang_rank_list(h, NPKIT_HANG_FAILED, list, sizeof list);
    snprintf(h->title, sizeof h->title, "%s failed on %s %s (%s)%s", what, ranks_word(nf), list,
             npkit_result_name(f->call.result), waits);
  } else {
    snprintf(h->title, sizeof h->title, "%s never completed: every rank entered it%s", what, waits);
  }
}

/* ---- one communicator ---- */

static int add_progress(npkit_report *rep, uint32_t c, const rank_facts *facts, size_t n) {
  npkit_hangs *hs = &rep->hangs;
  if (NPKIT_GROW(hs->progress, hs->cap_progress, hs->n_progress + 1, 8) != 0) return -1;
  npkit_hang_progress *p = &hs->progress[hs->n_progress];
  p->comm = c;
  p->n_ranks = n;
  p->log = malloc(n * sizeof *p->log);
  p->entered = malloc(n * sizeof *p->entered);
  p->completed = malloc(n * sizeof *p->completed);
  hs->n_progress++;
  if (p->log == NULL || p->entered == NULL || p->completed == NULL) return -1;
  for (size_t r = 0; r < n; r++) {
    p->log[r] = facts[r].log;
    p->entered[r] = facts[r].entered;
    p->completed[r] = facts[r].completed;
  }
  return 0;
}

/* The state of every rank in collective seq of comm c; 1 when it counts as hung. */
static int judge(const npkit_report *rep, npkit_hang *h, const rank_facts *facts) {
  int missing = 0, evidence = 0;
  for (size_t r = 0; r < h->n_ranks; r++) missing |= facts[r].log < 0 || facts[r].entered < (int64_t)h->seq;
  for (size_t r = 0; r < h->n_ranks; r++) {
    npkit_hang_rank *hr = &h->ranks[r];
    const rank_facts *f = &facts[r];
    hr->rank = (int32_t)r;
    hr->log = f->log;
    hr->last_entered = f->entered;
    hr->last_completed = f->completed;
    if (f->log < 0) {
      hr->status = NPKIT_HANG_NO_LOG;
      continue;
    }
    const npkit_hang_call *c = call_at(rep, f->member, h->seq);
    if (c != NULL) {
      hr->call = *c;
      hr->has_call = 1;
      if (h->fn == 0) h->fn = (unsigned)c->fn;
    }
    if (f->entered < (int64_t)h->seq) hr->status = NPKIT_HANG_MISSING;
    else if (rep->hscan.members[f->member].failed_at == (int64_t)h->seq) hr->status = NPKIT_HANG_FAILED;
    else if (f->completed >= (int64_t)h->seq && !missing) hr->status = NPKIT_HANG_DONE;
    else hr->status = NPKIT_HANG_WAITING;
    if (hr->status == NPKIT_HANG_WAITING || hr->status == NPKIT_HANG_FAILED) {
      entry_times(rep, hr, f->member, h->seq, c);
      where_of(rep, hr, f->member, h->seq);
      if (h->fn == 0) { /* a call still inside NCCL: its snapshot names the operation */
        const npkit_hang_log_scan *l = log_scan(rep, f->log);
        for (size_t i = 0; l != NULL && i < l->n_items && h->fn == 0; i++)
          if (item_at(&l->items[i], f->member, h->seq)) h->fn = l->items[i].ev.func;
      }
    }
    if (hr->status == NPKIT_HANG_WAITING) {
      evidence |= hr->waited_ns >= NPKIT_HANG_AFTER_NS;
      if (h->since_ns == 0 || (hr->since_ns != 0 && hr->since_ns < h->since_ns)) h->since_ns = hr->since_ns;
      if (hr->waited_ns > h->stuck_ns) h->stuck_ns = hr->waited_ns;
    }
    evidence |= hr->status == NPKIT_HANG_FAILED;
  }
  find_mismatches(h);
  find_culprits(rep, h, facts);
  for (size_t r = 0; r < h->n_ranks; r++) {
    evidence |= h->ranks[r].mismatched;
    say_why(rep, &h->ranks[r]);
  }
  return evidence;
}

static int analyse_comm(npkit_report *rep, uint32_t c) {
  const npkit_job_comm *jc = &rep->job.comms[c];
  if (jc->nranks <= 0 || jc->members == NULL) return 0;
  size_t n = (size_t)jc->nranks;
  rank_facts *facts = malloc(n * sizeof *facts);
  if (facts == NULL) return -1;
  int64_t lowest = INT64_MAX, highest = -1;
  for (size_t r = 0; r < n; r++) {
    facts[r] = facts_of(rep, jc, (int32_t)r);
    if (facts[r].log < 0) continue;
    lowest = min64(lowest, facts[r].completed);
    if (facts[r].entered > highest) highest = facts[r].entered;
  }
  int rc = 0;
  if (highest < 0) goto out; /* no collective on it */
  if (add_progress(rep, c, facts, n) != 0) goto oom;
  if (lowest + 1 > highest) goto out; /* every rank completed all it entered */
  npkit_hang h;
  memset(&h, 0, sizeof h);
  h.comm = c;
  h.seq = (uint64_t)(lowest + 1);
  h.n_ranks = n;
  h.ranks = calloc(n, sizeof *h.ranks);
  if (h.ranks == NULL) goto oom;
  if (!judge(rep, &h, facts)) {
    free(h.ranks);
    goto out;
  }
  make_title(rep, &h);
  if (NPKIT_GROW(rep->hangs.h, rep->hangs.cap, rep->hangs.n + 1, 4) != 0) {
    free(h.ranks);
    goto oom;
  }
  rep->hangs.h[rep->hangs.n++] = h;
  goto out;
oom:
  rc = -1;
out:
  free(facts);
  return rc;
}

int npkit_report_hangs(npkit_report *rep) {
  for (uint32_t c = 0; c < rep->job.n_comms; c++)
    if (analyse_comm(rep, c) != 0) return -1;
  /* the earliest stuck first: later ones are often stuck behind it */
  for (size_t i = 1; i < rep->hangs.n; i++) {
    npkit_hang h = rep->hangs.h[i];
    size_t j = i;
    while (j > 0 && rep->hangs.h[j - 1].since_ns > h.since_ns) {
      rep->hangs.h[j] = rep->hangs.h[j - 1];
      j--;
    }
    rep->hangs.h[j] = h;
  }
  return 0;
}

void npkit_hangs_free(npkit_hangs *hs) {
  for (size_t i = 0; i < hs->n; i++) free(hs->h[i].ranks);
  for (size_t i = 0; i < hs->n_progress; i++) {
    free(hs->progress[i].log);
    free(hs->progress[i].entered);
    free(hs->progress[i].completed);
  }
  free(hs->h);
  free(hs->progress);
  memset(hs, 0, sizeof *hs);
}
