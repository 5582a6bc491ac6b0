#include "report_gpu.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats_robust.h"

npkit_kernel_class npkit_kernel_class_of(const char *name) {
  if (name == NULL) return NPKIT_KCLASS_COMPUTE;
  while (isspace((unsigned char)*name)) name++;
  if (strncmp(name, "void ", 5) == 0) name += 5;
  if (name[0] == '_' && name[1] == 'Z') { /* Itanium mangling of a global function: _Z<length><name> */
    name += 2;
    while (isdigit((unsigned char)*name)) name++;
  }
  if (strncmp(name, "nccl", 4) == 0) return NPKIT_KCLASS_COMM;
  if (strncmp(name, "Memcpy", 6) == 0 || strncmp(name, "Memset", 6) == 0) return NPKIT_KCLASS_MEMORY;
  return NPKIT_KCLASS_COMPUTE;
}

typedef struct span {
  int64_t a, b;
} span;

static int cmp_start(const void *x, const void *y) {
  const npkit_kernel *p = x, *q = y;
  return (p->start_ns > q->start_ns) - (p->start_ns < q->start_ns);
}

static int cmp_stream_start(const void *x, const void *y) {
  const npkit_kernel *p = x, *q = y;
  if (p->stream != q->stream) return p->stream < q->stream ? -1 : 1;
  return (p->start_ns > q->start_ns) - (p->start_ns < q->start_ns);
}

/* Activity records come in about the order they ended: often already sorted by start. */
static int sorted_by_start(const npkit_kernel *k, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (k[i].start_ns < k[i - 1].start_ns) return 0;
  return 1;
}

/* Reorders k (sorted by start) by stream, keeping the start order within each stream: a counting
 * sort when stream indices are small, as the report's are, else a comparison sort. */
static void by_stream(npkit_kernel *k, size_t n) {
  uint32_t max = 0;
  for (size_t i = 0; i < n; i++)
    if (k[i].stream > max) max = k[i].stream;
  size_t *at = max < 65536 ? calloc((size_t)max + 2, sizeof(*at)) : NULL;
  npkit_kernel *tmp = at != NULL ? malloc(n * sizeof(*tmp)) : NULL;
  if (tmp == NULL) {
    free(at);
    qsort(k, n, sizeof(*k), cmp_stream_start);
    return;
  }
  for (size_t i = 0; i < n; i++) at[k[i].stream + 1]++;
  for (uint32_t s = 1; s <= max + 1; s++) at[s] += at[s - 1];
  for (size_t i = 0; i < n; i++) tmp[at[k[i].stream]++] = k[i];
  memcpy(k, tmp, n * sizeof(*k));
  free(tmp);
  free(at);
}

/* Merges the intervals of k[0..n) (sorted by start) of class cls (-1: all); returns their count. */
static size_t merge(const npkit_kernel *k, size_t n, int cls, span *out, uint64_t *total) {
  size_t m = 0;
  *total = 0;
  for (size_t i = 0; i < n; i++) {
    if ((cls >= 0 && k[i].cls != cls) || k[i].end_ns <= k[i].start_ns) continue;
    if (m > 0 && k[i].start_ns <= out[m - 1].b) {
      if (k[i].end_ns > out[m - 1].b) out[m - 1].b = k[i].end_ns;
    } else {
      out[m].a = k[i].start_ns;
      out[m].b = k[i].end_ns;
      m++;
    }
  }
  for (size_t i = 0; i < m; i++) *total += (uint64_t)(out[i].b - out[i].a);
  return m;
}

static uint64_t intersect(const span *x, size_t nx, const span *y, size_t ny) {
  uint64_t t = 0;
  size_t i = 0, j = 0;
  while (i < nx && j < ny) {
    int64_t a = x[i].a > y[j].a ? x[i].a : y[j].a;
    int64_t b = x[i].b < y[j].b ? x[i].b : y[j].b;
    if (b > a) t += (uint64_t)(b - a);
    if (x[i].b < y[j].b) i++; else j++;
  }
  return t;
}

/* Looks for a regular pattern among the gaps of one stream. */
static int regular_gaps(const span *gap, size_t n, npkit_stream_idle *s) {
  if (n < NPKIT_GAP_REGULAR_MIN) return 0;
  double *len = malloc(n * sizeof(*len)), *per = malloc(n * sizeof(*per));
  if (len == NULL || per == NULL) {
    free(len);
    free(per);
    return -1;
  }
  for (size_t i = 0; i < n; i++) len[i] = (double)(gap[i].b - gap[i].a);
  double g = npkit_median_inplace(len, n);
  size_t similar = 0, n_per = 0;
  int64_t prev = 0;
  double idle = 0;
  for (size_t i = 0; i < n; i++) {
    double l = (double)(gap[i].b - gap[i].a);
    if (fabs(l - g) > NPKIT_GAP_SIMILAR * g) continue;
    if (similar > 0) per[n_per++] = (double)(gap[i].a - prev);
    prev = gap[i].a;
    similar++;
    idle += l;
  }
  if (similar >= NPKIT_GAP_REGULAR_MIN && n_per > 0) {
    npkit_robust r;
    npkit_robust_estimate(per, n_per, 0, &r);
    if (r.center > 0 && r.sigma / r.center < NPKIT_GAP_PERIOD_SPREAD) {
      s->regular = 1;
      s->regular_gaps = similar;
      s->gap_ns = g;
      s->period_ns = r.center;
      s->regular_idle_ns = idle;
    }
  }
  free(len);
  free(per);
  return 0;
}

static int analyse_stream(const npkit_kernel *k, size_t n, span *tmp, span *gaps, npkit_stream_idle *s) {
  memset(s, 0, sizeof(*s));
  s->stream = k[0].stream;
  s->kernels = n;
  size_t m = merge(k, n, -1, tmp, &s->busy_ns);
  if (m == 0) return 0;
  s->first_ns = tmp[0].a;
  s->last_ns = tmp[m - 1].b;
  s->idle_ns = (uint64_t)(s->last_ns - s->first_ns) - s->busy_ns;
  size_t ng = 0;
  for (size_t i = 1; i < m; i++) {
    uint64_t g = (uint64_t)(tmp[i].a - tmp[i - 1].b);
    if (g > s->max_gap_ns) s->max_gap_ns = g;
    if (g >= NPKIT_GAP_MIN_NS) {
      gaps[ng].a = tmp[i - 1].b;
      gaps[ng].b = tmp[i].a;
      ng++;
    }
  }
  s->gaps = ng;
  return regular_gaps(gaps, ng, s);
}

void npkit_gpu_rank_free(npkit_gpu_rank *g) {
  free(g->streams);
  g->streams = NULL;
  g->n_streams = 0;
}

int npkit_gpu_analyse(npkit_kernel *k, size_t n, npkit_gpu_rank *out) {
  memset(out, 0, sizeof(*out));
  out->overlap_ratio = NAN;
  if (n == 0) return 0;
  span *comm = malloc(n * sizeof(*comm)), *comp = malloc(n * sizeof(*comp)), *all = malloc(n * sizeof(*all));
  if (comm == NULL || comp == NULL || all == NULL) goto oom;
  if (!sorted_by_start(k, n)) qsort(k, n, sizeof(*k), cmp_start);
  for (size_t i = 0; i < n; i++) {
    out->kernels++;
    if (k[i].cls == NPKIT_KCLASS_COMM) out->comm_kernels++;
    else if (k[i].cls == NPKIT_KCLASS_MEMORY) out->memory_ops++;
    else out->compute_kernels++;
  }
  size_t nc = merge(k, n, NPKIT_KCLASS_COMM, comm, &out->comm_ns);
  size_t np = merge(k, n, NPKIT_KCLASS_COMPUTE, comp, &out->compute_ns);
  size_t na = merge(k, n, -1, all, &out->busy_ns);
  out->overlap_ns = intersect(comm, nc, comp, np);
  out->exposed_ns = out->comm_ns - out->overlap_ns;
  if (out->comm_ns > 0) out->overlap_ratio = (double)out->overlap_ns / (double)out->comm_ns;
  if (na > 0) {
    out->first_ns = all[0].a;
    out->last_ns = all[na - 1].b;
    out->idle_ns = (uint64_t)(out->last_ns - out->first_ns) - out->busy_ns;
  }
  /* the whole GPU as one timeline (k is sorted by start); the merge buffers are free again */
  if (analyse_stream(k, n, comm, comp, &out->gpu) != 0) goto oom;
  out->gpu.stream = UINT32_MAX;

  by_stream(k, n);
  size_t n_streams = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || k[i].stream != k[i - 1].stream) n_streams++;
  out->streams = calloc(n_streams, sizeof(*out->streams));
  if (out->streams == NULL) goto oom;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && k[j].stream == k[i].stream) j++;
    if (analyse_stream(k + i, j - i, comm, comp, &out->streams[out->n_streams++]) != 0) goto oom;
    i = j;
  }
  free(comm);
  free(comp);
  free(all);
  return 0;
oom:
  free(comm);
  free(comp);
  free(all);
  npkit_gpu_rank_free(out);
  return -1;
}
