#include "report_callsites.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "nccl_names.h"

void npkit_callsites_init(npkit_callsites *cs) { memset(cs, 0, sizeof *cs); }

void npkit_callsites_free(npkit_callsites *cs) {
  for (size_t i = 0; i < cs->n_sites; i++) free(cs->sites[i].text);
  for (size_t i = 0; i < cs->n_rows; i++) npkit_quantile_free(&cs->rows[i].time);
  free(cs->sites);
  free(cs->rows);
  free(cs->site_of);
  free(cs->row_of);
  npkit_stack_table_free(&cs->table);
  memset(cs, 0, sizeof *cs);
}

/* The frames joined by newlines. */
static char *join_frames(const npkit_stack *s) {
  size_t n = 1;
  for (uint32_t k = 0; k < s->depth; k++) n += strlen(s->frames[k]) + 1;
  char *text = malloc(n), *p = text;
  if (text == NULL) return NULL;
  for (uint32_t k = 0; k < s->depth; k++) {
    size_t len = strlen(s->frames[k]);
    if (k > 0) *p++ = '\n';
    memcpy(p, s->frames[k], len);
    p += len;
  }
  *p = '\0';
  return text;
}

/* The site with these frames, added if new; SIZE_MAX when memory is short. */
static size_t site_for(npkit_callsites *cs, const npkit_stack *s) {
  char *text = join_frames(s);
  if (text == NULL) return SIZE_MAX;
  for (size_t i = 0; i < cs->n_sites; i++)
    if (strcmp(cs->sites[i].text, text) == 0) {
      free(text);
      return i;
    }
  size_t old_cap = cs->row_of_sites;
  if (npkit_grow(&cs->sites, &cs->cap_sites, cs->n_sites + 1, sizeof *cs->sites, 16) != 0 ||
      npkit_grow(&cs->row_of, &cs->row_of_sites, cs->n_sites + 1, NPKIT_FN_COUNT * sizeof *cs->row_of, 16) != 0) {
    free(text);
    return SIZE_MAX;
  }
  if (cs->row_of_sites > old_cap)
    memset(cs->row_of + old_cap * NPKIT_FN_COUNT, 0,
           (cs->row_of_sites - old_cap) * NPKIT_FN_COUNT * sizeof *cs->row_of);
  cs->sites[cs->n_sites] = (npkit_callsite){text, s->depth, 0, 0};
  if (s->depth > cs->max_depth) cs->max_depth = s->depth;
  return cs->n_sites++;
}

int npkit_callsites_begin_log(npkit_callsites *cs, const npkit_log_reader *r, char *err, size_t errlen) {
  npkit_callsites_end_log(cs);
  cs->log_index = cs->logs++;
  if (npkit_stack_table_load(r, &cs->table, err, errlen) != 0) return -1;
  if (cs->table.n == 0) return 0;
  cs->logs_with_stacks++;
  cs->site_of = malloc(cs->table.n * sizeof *cs->site_of);
  if (cs->site_of == NULL) goto oom;
  for (size_t i = 0; i < cs->table.n; i++) {
    size_t site = site_for(cs, &cs->table.stacks[i]);
    if (site == SIZE_MAX) goto oom;
    cs->site_of[i] = (uint32_t)site;
  }
  return 0;
oom:
  npkit_callsites_end_log(cs);
  snprintf(err, errlen, "%s: out of memory while collecting call sites", r->path);
  return -1;
}

void npkit_callsites_end_log(npkit_callsites *cs) {
  free(cs->site_of);
  cs->site_of = NULL;
  npkit_stack_table_free(&cs->table);
}

int npkit_callsites_event(npkit_callsites *cs, const npkit_event *ev) {
  if (ev->kind != NPKIT_EV_API || cs->site_of == NULL) return 0;
  const npkit_ev_api *a = &ev->u.api;
  const npkit_stack *s = a->stack_id != 0 ? npkit_stack_find(&cs->table, a->stack_id) : NULL;
  unsigned fn = ev->func < NPKIT_FN_COUNT ? ev->func : NPKIT_FN_NONE;
  if (s == NULL) {
    cs->calls_without_stack++;
    return 0;
  }
  uint32_t site = cs->site_of[s - cs->table.stacks];
  int32_t *slot = &cs->row_of[(size_t)site * NPKIT_FN_COUNT + fn];
  if (*slot == 0) {
    if (npkit_grow(&cs->rows, &cs->cap_rows, cs->n_rows + 1, sizeof *cs->rows, 16) != 0) return -1;
    npkit_callsite_row *row = &cs->rows[cs->n_rows];
    memset(row, 0, sizeof *row);
    row->site = site;
    row->fn = (uint16_t)fn;
    npkit_quantile_init(&row->time);
    *slot = (int32_t)++cs->n_rows;
  }
  npkit_callsite_row *row = &cs->rows[*slot - 1];
  row->calls++;
  if (row->last_log != cs->log_index + 1) {
    row->last_log = cs->log_index + 1;
    row->ranks++;
  }
  if (npkit_fn_moves_data(fn)) row->bytes += a->bytes;
  uint64_t t = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
  row->total_ns += t;
  return npkit_quantile_add(&row->time, t);
}

int npkit_callsites_add_log(npkit_callsites *cs, npkit_log_reader *r, char *err, size_t errlen) {
  if (npkit_callsites_begin_log(cs, r, err, errlen) != 0) return -1;
  int rc = 0;
  if (cs->site_of != NULL) {
    npkit_reader_rewind(r);
    const npkit_event *ev;
    int k;
    while ((k = npkit_reader_next(r, &ev, err, errlen)) > 0)
      if (npkit_callsites_event(cs, ev) != 0) {
        snprintf(err, errlen, "%s: out of memory while collecting call sites", r->path);
        k = -1;
        break;
      }
    rc = k < 0 ? -1 : 0;
  }
  npkit_callsites_end_log(cs);
  return rc;
}

static int cmp_rows(const void *a, const void *b, void *ctx) {
  const npkit_callsites *cs = ctx;
  const npkit_callsite_row *x = a, *y = b;
  uint64_t sx = cs->sites[x->site].total_ns, sy = cs->sites[y->site].total_ns;
  if (sx != sy) return sx > sy ? -1 : 1; /* sites by total time, then rows within a site */
  if (x->site != y->site) return x->site < y->site ? -1 : 1;
  if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
  return (x->fn > y->fn) - (x->fn < y->fn);
}

void npkit_callsites_finish(npkit_callsites *cs) {
  npkit_callsites_end_log(cs);
  for (size_t i = 0; i < cs->n_sites; i++) cs->sites[i].total_ns = 0;
  for (size_t i = 0; i < cs->n_rows; i++) cs->sites[cs->rows[i].site].total_ns += cs->rows[i].total_ns;
  if (cs->n_rows > 1) qsort_r(cs->rows, cs->n_rows, sizeof *cs->rows, cmp_rows, cs);
  /* the row table is not valid for adding any more */
  free(cs->row_of);
  cs->row_of = NULL;
  cs->row_of_sites = 0;
  uint32_t next = 0;
  for (size_t i = 0; i < cs->n_rows; i++)
    if (cs->sites[cs->rows[i].site].number == 0) cs->sites[cs->rows[i].site].number = ++next;
}
