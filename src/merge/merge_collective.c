#include "merge_collective.h"

#include <stdlib.h>

typedef struct span_walk {
  const npkit_job *job;
  const unsigned char *sel;
  uint64_t lo, hi;
  int64_t first, last;
  int64_t found;
} span_walk;

static int in_range(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  span_walk *w = p;
  if (seq < w->lo) return 0;
  if (seq > w->hi) return 1; /* the join goes in sequence order: done */
  for (size_t i = 0; i < n; i++) {
    uint32_t log = w->job->members[e[i].member].log;
    if (!w->sel[log]) continue; /* read for the clocks only */
    const npkit_job_log *l = &w->job->logs[log];
    int64_t off = w->job->hosts[l->host].align.offset_ns;
    int64_t s = (int64_t)e[i].start_ns + off, t = (int64_t)e[i].end_ns + off;
    if (w->found++ == 0) w->first = s, w->last = t;
    if (s < w->first) w->first = s;
    if (t > w->last) w->last = t;
  }
  return 0;
}

int64_t npkit_merge_collective_span(const npkit_job *job, uint32_t comm, const unsigned char *sel, uint64_t seq_lo,
                                    uint64_t seq_hi, int64_t *first_ns, int64_t *last_ns) {
  const npkit_job_comm *c = &job->comms[comm];
  uint32_t *ids = malloc((c->n_members ? c->n_members : 1) * sizeof(*ids));
  if (ids == NULL) return -1;
  size_t n = npkit_job_comm_members(c, ids);
  span_walk w = {job, sel, seq_lo, seq_hi, 0, 0, 0};
  int rc = npkit_inst_join(job->inst, ids, n, in_range, &w);
  free(ids);
  if (rc < 0) return -1;
  *first_ns = w.first;
  *last_ns = w.last;
  return w.found;
}

int npkit_merge_log_in_comm(const npkit_job *job, uint32_t comm, size_t log) {
  const npkit_job_comm *c = &job->comms[comm];
  for (int32_t r = 0; c->members != NULL && r < c->nranks; r++)
    if (c->members[r] != NPKIT_JOB_NONE && job->members[c->members[r]].log == log) return 1;
  return 0;
}
