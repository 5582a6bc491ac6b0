/* Host clock offsets from the collectives of the logs (see clock_align.h and docs/report.md). */
#include <stdlib.h>
#include <string.h>

#include "clock_align.h"
#include "job.h"

typedef struct host_end {
  uint32_t host;
  uint64_t end_ns;
} host_end;

typedef struct align_walk {
  npkit_job *job;
  npkit_clock_align *align;  /* NULL: only the same-host end spread */
  host_end *tmp;
  int spread;                /* collect the same-host end spread */
  uint64_t gpu, cpu;
} align_walk;

static int cmp_host_end(const void *a, const void *b) {
  const host_end *x = a, *y = b;
  if (x->host != y->host) return x->host < y->host ? -1 : 1;
  return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

/* One instance: per host the median end of its ranks; every host against the lowest host present. */
static int align_instance(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  align_walk *w = p;
  (void)seq;
  if (n < 2) return 0;
  for (size_t i = 1; i < n; i++)
    if (e[i].gpu != e[0].gpu) return 0; /* GPU and CPU ends do not mean the same instant */
  for (size_t i = 0; i < n; i++) {
    w->tmp[i].host = w->job->logs[w->job->members[e[i].member].log].host;
    w->tmp[i].end_ns = e[i].end_ns;
  }
  qsort(w->tmp, n, sizeof(*w->tmp), cmp_host_end);
  uint64_t anchor = 0;
  uint32_t anchor_host = w->tmp[0].host;
  int samples = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && w->tmp[j].host == w->tmp[i].host) j++;
    size_t k = j - i;
    /* median of the sorted run; for an even count the lower middle plus half the difference */
    uint64_t lo = w->tmp[i + (k - 1) / 2].end_ns, hi = w->tmp[i + k / 2].end_ns;
    uint64_t median = lo + (hi - lo) / 2;
    if (k >= 2 && w->spread && npkit_quantile_add(&w->job->host_end_spread, w->tmp[j - 1].end_ns - w->tmp[i].end_ns) != 0)
      return -1;
    if (i == 0) {
      anchor = median;
    } else if (w->align != NULL) {
      if (npkit_align_add(w->align, anchor_host, w->tmp[i].host, (int64_t)(anchor - median)) != 0) return -1;
      samples = 1;
    }
    i = j;
  }
  if (samples) {
    if (e[0].gpu) w->gpu++;
    else w->cpu++;
  }
  return 0;
}

int npkit_job_align(npkit_job *job, int estimate, int spread) {
  int want_offsets = estimate && job->n_hosts > 1;
  for (size_t h = 0; h < job->n_hosts; h++) {
    memset(&job->hosts[h].align, 0, sizeof(job->hosts[h].align));
    job->hosts[h].align.via = -1;
    job->hosts[h].align.status = h == 0 ? NPKIT_ALIGN_REFERENCE : NPKIT_ALIGN_NONE;
  }
  if (!want_offsets && !spread) return 0;
  align_walk w = {.job = job, .spread = spread};
  uint32_t *ids = malloc((job->n_members ? job->n_members : 1) * sizeof(*ids));
  w.tmp = malloc((job->n_members ? job->n_members : 1) * sizeof(*w.tmp));
  if (want_offsets) w.align = npkit_align_create((uint32_t)job->n_hosts);
  int rc = -1;
  if (ids == NULL || w.tmp == NULL || (want_offsets && w.align == NULL)) goto out;
  rc = 0;
  for (size_t c = 0; c < job->n_comms && rc == 0; c++) {
    size_t n = npkit_job_comm_members(&job->comms[c], ids);
    if (n >= 2) rc = npkit_inst_join(job->inst, ids, n, align_instance, &w) != 0 ? -1 : 0;
  }
  if (rc == 0 && want_offsets) {
    npkit_align_host *out = malloc(job->n_hosts * sizeof(*out));
    if (out == NULL || npkit_align_solve(w.align, 0, out, &job->align) != 0) {
      rc = -1;
    } else {
      for (size_t h = 0; h < job->n_hosts; h++) job->hosts[h].align = out[h];
      job->align_done = 1;
      job->align_source = w.gpu > 0 && w.cpu == 0 ? NPKIT_TIME_GPU : NPKIT_TIME_CPU;
    }
    free(out);
  }
out:
  npkit_align_free(w.align);
  free(ids);
  free(w.tmp);
  return rc;
}
