/* The timeline strip's analysis (report_timeline.h): above the model, whose findings and stragglers
 * choose the instance; its result is the model's rep->timeline. */
#include "report_timeline.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_facts.h"
#include "grow.h"
#include "log_reader.h"
#include "nccl_names.h"
#include "report_gpu.h"
#include "report_model.h"

/* The instance's entries, found by walking the communicator's instances up to its sequence. */
typedef struct find_ctx {
  uint64_t seq;
  npkit_inst_entry *out;
  size_t n;
} find_ctx;

static int find_instance(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  find_ctx *f = p;
  if (seq < f->seq) return 0;
  if (seq == f->seq) {
    memcpy(f->out, e, n * sizeof *e);
    f->n = n;
  }
  return 1; /* found, or passed: stop */
}

/* The largest spread whose last rank is the straggler the findings name, else the largest. */
static const npkit_strag_instance *choose(const npkit_report *rep, int *straggler) {
  const npkit_straggler *s = &rep->strag;
  *straggler = 0;
  if (s->n_top == 0) return NULL;
  for (size_t i = 0; i < rep->findings.n; i++) {
    const npkit_finding *f = &rep->findings.f[i];
    if (f->kind != NPKIT_FIND_STRAGGLER || f->log < 0) continue;
    for (size_t k = 0; k < s->n_top; k++)
      if (s->top[k].last_log == (uint32_t)f->log) {
        *straggler = 1;
        return &s->top[k];
      }
    break;
  }
  return &s->top[0];
}

static int64_t host_offset(const npkit_report *rep, size_t log) {
  return rep->job.hosts[rep->job.logs[log].host].align.offset_ns;
}

static int push(npkit_tl_lane *l, int gpu, const npkit_tl_item *it) {
  npkit_tl_item **v = gpu ? &l->gpu : &l->calls;
  size_t *n = gpu ? &l->n_gpu : &l->n_calls, *cap = gpu ? &l->cap_gpu : &l->cap_calls;
  if (*n == NPKIT_TL_MAX_ITEMS) {
    l->hidden++;
    return 0;
  }
  if (npkit_grow(v, cap, *n + 1, sizeof **v, 64) != 0) return -1;
  (*v)[(*n)++] = *it;
  return 0;
}

/* Class of a GPU record, the way the overlap analysis classes it. */
static uint8_t gpu_kind(const npkit_log_reader *r, const npkit_event *ev) {
  if (ev->kind != NPKIT_EV_CUPTI_KERNEL) return NPKIT_TL_MEMORY;
  const npkit_log_string *name = ev->u.gpu.x.kernel.name ? npkit_reader_string(r, ev->u.gpu.x.kernel.name) : NULL;
  npkit_kernel_class c = name != NULL ? npkit_kernel_class_of(name->text)
                                      : ev->func != NPKIT_FN_NONE ? NPKIT_KCLASS_COMM : NPKIT_KCLASS_COMPUTE;
  return c == NPKIT_KCLASS_COMM ? NPKIT_TL_COMM_KERNEL : c == NPKIT_KCLASS_COMPUTE ? NPKIT_TL_COMPUTE_KERNEL
                                                                                   : NPKIT_TL_MEMORY;
}

/* One item from an event's times on its own clock; 0 when it lies outside the window. */
static int place(const npkit_timeline *tl, int64_t off, const npkit_event *ev, npkit_tl_item *it) {
  int64_t a = (int64_t)(ev->start_ns - tl->t0_ns) + off, b = (int64_t)(ev->end_ns - tl->t0_ns) + off;
  if (b < a) b = a;
  if (b < 0 || a > tl->span_ns) return 0;
  it->start_ns = a < 0 ? 0 : a;
  it->end_ns = b > tl->span_ns ? tl->span_ns : b;
  return 1;
}

/* A call inside a group is launched by the ncclGroupEnd that closes it: the kernels of its group
 * (attributed to that GroupEnd, without the call's seq) are the instance's too. */
static void mark_group_kernels(npkit_tl_lane *l) {
  uint64_t group = 0;
  for (size_t i = 0; i < l->n_calls && group == 0; i++)
    if (l->calls[i].focus) group = l->calls[i].group;
  if (group == 0) return;
  for (size_t i = 0; i < l->n_gpu; i++)
    if (l->gpu[i].group == group && l->gpu[i].kind == NPKIT_TL_COMM_KERNEL) l->gpu[i].focus = 1;
}

/* Walks one log again for the calls and GPU activity in the window.  1: read, 0: a read error
 * (warned; what was read is kept), -1: memory. */
static int read_lane(npkit_report *rep, npkit_timeline *tl, npkit_tl_lane *l) {
  npkit_log_reader *r = rep->job.logs[l->log].reader;
  char why[512];
  npkit_reader_rewind(r);
  uint32_t local = 0; /* the instance's communicator in this process */
  for (size_t i = 0; i < r->n_comms; i++)
    if (r->comms[i].comm_id == tl->comm_id) local = r->comms[i].local_id;
  int64_t off = host_offset(rep, l->log);
  const npkit_event *ev;
  int k, rc = 1;
  while ((k = npkit_reader_next(r, &ev, why, sizeof why)) > 0) {
    npkit_tl_item it = {.fn = ev->func};
    int gpu = 0;
    if (ev->kind == NPKIT_EV_API) {
      it.kind = NPKIT_TL_CALL;
      it.group = ev->u.api.group;
      it.focus = local != 0 && ev->u.api.comm == local && ev->u.api.seq == tl->inst.seq && ev->func == tl->inst.fn;
    } else if (npkit_ev_is_cupti(ev->kind)) {
      if (npkit_cupti_untimed(ev)) continue;
      gpu = 1;
      it.kind = gpu_kind(r, ev);
      it.group = ev->u.gpu.group;
      it.focus = local != 0 && ev->u.gpu.comm == local && ev->u.gpu.call_seq == tl->inst.seq &&
                 ev->func == tl->inst.fn;
    } else {
      continue;
    }
    if (place(tl, off, ev, &it) && push(l, gpu, &it) != 0) {
      rc = -1;
      break;
    }
  }
  if (k < 0 && rc > 0) rc = npkit_job_warn(&rep->job, "%s", why) == 0 ? 0 : -1; /* keeps what was read */
  mark_group_kernels(l);
  return rc;
}

int npkit_timeline_build(npkit_report *rep, char *err, size_t errlen) {
  npkit_timeline *tl = &rep->timeline;
  memset(tl, 0, sizeof *tl);
  const npkit_strag_instance *in = choose(rep, &tl->straggler);
  if (in == NULL || in->comm >= rep->job.n_comms) return 0;
  const npkit_job_comm *c = &rep->job.comms[in->comm];
  uint32_t *ids = malloc((c->n_members ? c->n_members : 1) * sizeof *ids);
  npkit_inst_entry *e = malloc((c->n_members ? c->n_members : 1) * sizeof *e);
  tl->lanes = calloc(rep->job.n_logs ? rep->job.n_logs : 1, sizeof *tl->lanes);
  if (ids == NULL || e == NULL || tl->lanes == NULL) goto oom;
  find_ctx f = {.seq = in->seq, .out = e};
  size_t n = npkit_job_comm_members(c, ids);
  if (npkit_inst_join(rep->job.inst, ids, n, find_instance, &f) < 0) goto oom;
  if (f.n == 0) { /* the store always holds what the straggler analysis compared */
    free(ids);
    free(e);
    return 0;
  }
  tl->found = 1;
  tl->inst = *in;
  tl->comm_id = c->comm_id;
  tl->n_lanes = rep->job.n_logs;
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    tl->lanes[i].log = (uint32_t)i;
    tl->gpu |= rep->logs[i].has_gpu;
  }
  /* the instance on the reference clock: earliest arrival, latest arrival, latest end */
  int64_t first = 0, last = 0, end = 0;
  for (size_t i = 0; i < f.n; i++) {
    uint32_t log = rep->job.members[e[i].member].log;
    int64_t a, b;
    /* absurd stamps (a damaged or hostile log) leave no strip to draw */
    if (__builtin_add_overflow((int64_t)e[i].start_ns, host_offset(rep, log), &a) ||
        __builtin_add_overflow((int64_t)e[i].end_ns, host_offset(rep, log), &b))
      goto absurd;
    if (i == 0 || a < first) first = a;
    if (i == 0 || a > last) last = a;
    if (i == 0 || b > end) end = b;
  }
  if (end < last) end = last;
  int64_t width;
  if (__builtin_sub_overflow(end, first, &width) || width > INT64_MAX / 4 || first < INT64_MIN / 2)
    goto absurd;
  int64_t pad = width / 2 > 20000 ? width / 2 : 20000;
  tl->t0_ns = (uint64_t)(first - pad);
  tl->span_ns = end - first + 2 * pad;
  tl->last_arrival_ns = last - (int64_t)tl->t0_ns;
  for (size_t i = 0; i < f.n; i++) {
    uint32_t log = rep->job.members[e[i].member].log;
    npkit_tl_lane *l = &tl->lanes[log];
    l->in_instance = 1;
    l->arrival_ns = (int64_t)(e[i].start_ns - tl->t0_ns) + host_offset(rep, log);
    l->end_ns = (int64_t)(e[i].end_ns - tl->t0_ns) + host_offset(rep, log);
  }
  free(ids);
  free(e);
  ids = NULL;
  e = NULL;
  for (size_t i = 0; i < tl->n_lanes; i++)
    if (read_lane(rep, tl, &tl->lanes[i]) < 0) goto oom;
  return 0;
absurd:
  free(ids);
  free(e);
  npkit_timeline_free(tl);
  return 0;
oom:
  free(ids);
  free(e);
  npkit_timeline_free(tl);
  snprintf(err, errlen, "out of memory while drawing the timeline");
  return -1;
}

void npkit_timeline_free(npkit_timeline *tl) {
  for (size_t i = 0; tl->lanes != NULL && i < tl->n_lanes; i++) {
    free(tl->lanes[i].calls);
    free(tl->lanes[i].gpu);
  }
  free(tl->lanes);
  memset(tl, 0, sizeof *tl);
}
