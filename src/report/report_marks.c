#include "report_marks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_names.h"
#include "grow.h"

void npkit_mark_overlap_init(npkit_mark_overlap *o) {
  memset(o, 0, sizeof *o);
  o->overlap_ratio = NAN;
  npkit_mark_pairer_init(&o->pairer);
}

void npkit_mark_overlap_free(npkit_mark_overlap *o) {
  npkit_mark_pairer_free(&o->pairer);
  free(o->marks);
  free(o->calls);
  free(o->totals);
  memset(o, 0, sizeof *o);
}

static int push(npkit_overlap_span **v, size_t *n, size_t *cap, npkit_overlap_span s, int *incomplete) {
  if (*n + 1 >= NPKIT_MARK_OVERLAP_MAX_SPANS) {
    *incomplete = 1;
    return 0;
  }
  if (NPKIT_GROW(*v, *cap, *n + 1, 256) != 0) return -1;
  (*v)[(*n)++] = s;
  return 0;
}

static int is_communication(unsigned fn) {
  return npkit_fn_moves_data(fn) || fn == NPKIT_FN_GroupEnd;
}

int npkit_mark_overlap_event(npkit_mark_overlap *o, const npkit_event *ev) {
  if (ev->end_ns > o->last_ns) o->last_ns = ev->end_ns;
  npkit_mark_range rg;
  switch (ev->kind) {
  case NPKIT_EV_API:
    if (ev->end_ns <= ev->start_ns) return 0;
    return push(&o->calls, &o->n_calls, &o->cap_calls,
                (npkit_overlap_span){ev->thread, (uint32_t)is_communication(ev->func), ev->start_ns, ev->end_ns},
                &o->incomplete);
  case NPKIT_EV_CUPTI_KERNEL:
  case NPKIT_EV_CUPTI_MEMCPY:
  case NPKIT_EV_CUPTI_MEMSET:
    o->gpu_events++;
    return 0;
  case NPKIT_EV_MARK_BEGIN:
  case NPKIT_EV_MARK_END:
    if (!npkit_mark_pair(&o->pairer, ev, &rg)) return 0;
    return push(&o->marks, &o->n_marks, &o->cap_marks, (npkit_overlap_span){rg.thread, rg.name, rg.start_ns, rg.end_ns},
                &o->incomplete);
  case NPKIT_EV_RECORDING: /* ranges open at a pause are cut there, as in the trace */
    while (!ev->u.recording.recording && npkit_mark_pair_flush(&o->pairer, ev->start_ns, NPKIT_MARK_CUT_BY_PAUSE, &rg))
      if (push(&o->marks, &o->n_marks, &o->cap_marks, (npkit_overlap_span){rg.thread, rg.name, rg.start_ns, rg.end_ns},
               &o->incomplete) != 0)
        return -1;
    return 0;
  default:
    return 0;
  }
}

static int cmp_span(const void *a, const void *b) {
  const npkit_overlap_span *x = a, *y = b;
  if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
  return x->a < y->a ? -1 : (x->a > y->a);
}

static void sort_spans(npkit_overlap_span *s, size_t n) {
  if (n > 1) qsort(s, n, sizeof *s, cmp_span); /* s may be NULL when n is 0 */
}

/* Merges spans sorted by start into disjoint ones, in place; returns their count. */
static size_t merge(npkit_overlap_span *s, size_t n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i].b <= s[i].a) continue;
    if (m > 0 && s[i].a <= s[m - 1].b) {
      if (s[i].b > s[m - 1].b) s[m - 1].b = s[i].b;
    } else {
      s[m++] = s[i];
    }
  }
  return m;
}

static uint64_t length(const npkit_overlap_span *s, size_t n) {
  uint64_t t = 0;
  for (size_t i = 0; i < n; i++) t += s[i].b - s[i].a;
  return t;
}

/* Total length of the intersection of two disjoint sorted span lists. */
static uint64_t intersect(const npkit_overlap_span *x, size_t nx, const npkit_overlap_span *y, size_t ny) {
  uint64_t t = 0;
  for (size_t i = 0, j = 0; i < nx && j < ny;) {
    uint64_t a = x[i].a > y[j].a ? x[i].a : y[j].a, b = x[i].b < y[j].b ? x[i].b : y[j].b;
    if (b > a) t += b - a;
    if (x[i].b < y[j].b) i++; else j++;
  }
  return t;
}

/* Appends to out what of the disjoint sorted spans u is not covered by the disjoint sorted c. */
static int subtract(const npkit_overlap_span *u, size_t nu, const npkit_overlap_span *c, size_t nc,
                    npkit_overlap_span **out, size_t *n, size_t *cap, int *incomplete) {
  size_t j = 0;
  for (size_t i = 0; i < nu; i++) {
    uint64_t a = u[i].a;
    while (j < nc && c[j].b <= a) j++;
    for (size_t k = j; k < nc && c[k].a < u[i].b; k++) {
      if (c[k].a > a && push(out, n, cap, (npkit_overlap_span){0, 0, a, c[k].a}, incomplete) != 0) return -1;
      if (c[k].b > a) a = c[k].b;
    }
    if (a < u[i].b && push(out, n, cap, (npkit_overlap_span){0, 0, a, u[i].b}, incomplete) != 0) return -1;
  }
  return 0;
}

static int cmp_total(const void *a, const void *b) {
  const npkit_mark_total *x = a, *y = b;
  if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
  return (x->name > y->name) - (x->name < y->name);
}

static int add_totals(npkit_mark_overlap *o, const npkit_log_reader *r) {
  for (size_t i = 0; i < o->n_marks; i++) {
    const npkit_overlap_span *m = &o->marks[i];
    size_t k = 0;
    while (k < o->n_totals && o->totals[k].name != m->tag) k++;
    if (k == o->n_totals) {
      if (NPKIT_GROW(o->totals, o->cap_totals, o->n_totals + 1, 8) != 0) return -1;
      npkit_mark_total *t = o->totals;
      memset(&t[k], 0, sizeof t[k]);
      t[k].name = m->tag;
      char buf[32];
      snprintf(t[k].text, sizeof t[k].text, "%s", npkit_mark_name(r, m->tag, buf, sizeof buf));
      o->n_totals++;
    }
    o->totals[k].ranges++;
    o->totals[k].total_ns += m->b - m->a;
  }
  if (o->n_totals > 1) qsort(o->totals, o->n_totals, sizeof *o->totals, cmp_total);
  return 0;
}

int npkit_mark_overlap_finish(npkit_mark_overlap *o, const npkit_log_reader *r) {
  uint64_t end = r->has_end && r->end.end_ns > o->last_ns ? r->end.end_ns : o->last_ns;
  npkit_mark_range rg;
  while (npkit_mark_pair_flush(&o->pairer, end, NPKIT_MARK_OPEN_AT_END, &rg))
    if (push(&o->marks, &o->n_marks, &o->cap_marks, (npkit_overlap_span){rg.thread, rg.name, rg.start_ns, rg.end_ns},
             &o->incomplete) != 0)
      return -1;
  o->ranges = o->n_marks;
  if (add_totals(o, r) != 0) return -1;

  /* communication: all threads */
  npkit_overlap_span *comm = malloc((o->n_calls ? o->n_calls : 1) * sizeof *comm);
  npkit_overlap_span *compute = NULL;
  size_t n_comm = 0, n_compute = 0, cap_compute = 0;
  if (comm == NULL) return -1;
  for (size_t i = 0; i < o->n_calls; i++)
    if (o->calls[i].tag) {
      comm[n_comm] = o->calls[i];
      comm[n_comm++].thread = 0;
    }
  sort_spans(comm, n_comm);
  n_comm = merge(comm, n_comm);
  o->comm_ns = length(comm, n_comm);

  /* computation: per thread, its marked time outside its own NCCL calls */
  sort_spans(o->marks, o->n_marks);
  sort_spans(o->calls, o->n_calls);
  for (size_t i = 0, j = 0; i < o->n_marks;) {
    uint32_t th = o->marks[i].thread;
    size_t ie = i;
    while (ie < o->n_marks && o->marks[ie].thread == th) ie++;
    while (j < o->n_calls && o->calls[j].thread < th) j++;
    size_t je = j;
    while (je < o->n_calls && o->calls[je].thread == th) je++;
    size_t nu = merge(o->marks + i, ie - i), nc = merge(o->calls + j, je - j);
    if (subtract(o->marks + i, nu, o->calls + j, nc, &compute, &n_compute, &cap_compute, &o->incomplete) != 0) {
      free(comm);
      free(compute);
      return -1;
    }
    i = ie;
    j = je;
  }
  sort_spans(compute, n_compute);
  n_compute = merge(compute, n_compute);
  o->compute_ns = length(compute, n_compute);
  o->overlap_ns = intersect(comm, n_comm, compute, n_compute);
  o->exposed_ns = o->comm_ns - o->overlap_ns;
  o->overlap_ratio = o->comm_ns > 0 ? (double)o->overlap_ns / (double)o->comm_ns : NAN;
  free(comm);
  free(compute);
  /* the spans are read by nothing after: 24 bytes per call of every log no longer held */
  free(o->marks);
  free(o->calls);
  o->marks = o->calls = NULL;
  o->n_marks = o->cap_marks = o->n_calls = o->cap_calls = 0;
  return 0;
}
