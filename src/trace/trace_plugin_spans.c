#include "trace_plugin_spans.h"

#include <stdlib.h>

#include "trace_plugin_api.h" /* NPKIT_PLUGIN_TASKS */

int npkit_task_spans_init(npkit_task_spans *s, int (*settle)(void *, const npkit_task_span *),
                          int (*ready)(void *, const npkit_task_span *), void *ctx) {
  s->spans = calloc(NPKIT_PLUGIN_TASKS, sizeof *s->spans);
  s->settle = settle;
  s->ready = ready;
  s->ctx = ctx;
  return s->spans != NULL ? 0 : -1;
}

void npkit_task_spans_free(npkit_task_spans *s) {
  free(s->spans);
  s->spans = NULL;
}

int npkit_task_spans_settle(npkit_task_spans *s, npkit_task_span *t) {
  int rc = s->settle(s->ctx, t);
  t->id = 0;
  return rc;
}

int npkit_task_spans_complete(const npkit_task_spans *s, const npkit_task_span *t) {
  return t->id != 0 && t->have_task && t->nch > 0 && t->seen >= t->nch && s->ready(s->ctx, t);
}

/* The span of task id, made when absent; an older task in its slot is settled first. */
static npkit_task_span *span_of(npkit_task_spans *s, uint64_t id, int *rc) {
  npkit_task_span *t = &s->spans[id % NPKIT_PLUGIN_TASKS];
  if (t->id == id) return t;
  if (t->id > id) return NULL; /* too late: that slot holds a newer task */
  if (t->id != 0 && npkit_task_spans_settle(s, t) != 0) *rc = -1;
  *t = (npkit_task_span){.id = id};
  return t;
}

int npkit_task_spans_event(npkit_task_spans *s, const npkit_event *ev) {
  int rc = 0;
  npkit_task_span *t;
  if (ev->kind == NPKIT_EV_PLUGIN_TASK) {
    const npkit_ev_plugin_task *k = &ev->u.plugin_task;
    if (k->task == 0 || k->api == 0 || (t = span_of(s, k->task, &rc)) == NULL) return rc;
    t->api = k->api;
    t->have_task = 1;
    t->nch = (k->flags & NPKIT_PTASK_KERNEL_CH) ? k->nchannels : 0;
  } else if (ev->kind == NPKIT_EV_PLUGIN_KERNEL_CH) {
    const npkit_ev_kernel_ch *k = &ev->u.kernel_ch;
    unsigned mapped = NPKIT_PKCH_GPU_TIMER | NPKIT_PKCH_MAPPED;
    if (k->task == 0 || (k->flags & mapped) != mapped || ev->end_ns < ev->start_ns ||
        (t = span_of(s, k->task, &rc)) == NULL)
      return rc;
    if (t->seen == 0 || ev->start_ns < t->start) t->start = ev->start_ns;
    if (t->seen == 0 || ev->end_ns > t->stop) t->stop = ev->end_ns;
    t->seen++;
  } else {
    return 0;
  }
  if (npkit_task_spans_complete(s, t) && npkit_task_spans_settle(s, t) != 0) rc = -1;
  return rc;
}
