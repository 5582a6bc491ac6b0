#include "metrics_plugin_gpu.h"

#include <stdlib.h>

#include "trace_plugin_api.h"

#define NO_COMM UINT32_MAX

typedef struct task_span {
  uint64_t id;          /* 0: empty */
  uint64_t api;
  uint64_t start, stop; /* GPU-timed channels, mapped onto the host clock */
  uint32_t seen, nch;   /* channels seen, and announced (0: kernel-channel events off) */
  uint8_t have_task;
} task_span;

struct npkit_mpgpu {
  npkit_plugin_api_table *apis; /* once the call is read: member its communicator (local id),
                                   row and call_seq the kind and id of its operation's key */
  task_span *spans;             /* NPKIT_PLUGIN_TASKS, slot = id mod the size */
  npkit_mpgpu_put_fn put;
  void *ctx;
};

npkit_mpgpu *npkit_mpgpu_new(npkit_mpgpu_put_fn put, void *ctx) {
  npkit_mpgpu *g = calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  g->apis = npkit_plugin_api_new();
  g->spans = calloc(NPKIT_PLUGIN_TASKS, sizeof *g->spans);
  g->put = put;
  g->ctx = ctx;
  if (g->apis == NULL || g->spans == NULL) {
    npkit_mpgpu_free(g);
    return NULL;
  }
  return g;
}

void npkit_mpgpu_free(npkit_mpgpu *g) {
  if (g == NULL) return;
  npkit_plugin_api_free(g->apis);
  free(g->spans);
  free(g);
}

/* The task's call, when NCCL named it and it was read (a CUDA graph's replays are not calls). */
static const npkit_plugin_api *call_of(npkit_mpgpu *g, const task_span *t) {
  const npkit_plugin_api *api = t->have_task ? npkit_plugin_api_find(g->apis, t->api) : NULL;
  if (api == NULL || (api->type != NPKIT_PAPI_COLL && api->type != NPKIT_PAPI_P2P) || (api->flags & NPKIT_PAPI_GRAPH) ||
      api->member == NO_COMM)
    return NULL;
  return api;
}

static int settle(npkit_mpgpu *g, task_span *t) {
  const npkit_plugin_api *api = call_of(g, t);
  int rc = 0;
  if (api != NULL && t->seen > 0 && t->stop >= t->start) rc = g->put(g->ctx, api->member, api->row, api->call_seq, t->start, t->stop);
  t->id = 0;
  return rc;
}

static int complete(npkit_mpgpu *g, const task_span *t) {
  return t->id != 0 && t->have_task && t->nch > 0 && t->seen >= t->nch && call_of(g, t) != NULL;
}

/* The span of task id, made when absent; an older task in its slot is settled first. */
static task_span *span_of(npkit_mpgpu *g, uint64_t id, int *rc) {
  task_span *t = &g->spans[id % NPKIT_PLUGIN_TASKS];
  if (t->id == id) return t;
  if (t->id > id) return NULL; /* too late: that slot holds a newer task */
  if (t->id != 0 && settle(g, t) != 0) *rc = -1;
  *t = (task_span){.id = id};
  return t;
}

int npkit_mpgpu_event(npkit_mpgpu *g, const npkit_event *ev) {
  int rc = 0;
  task_span *t = NULL;
  if (ev->kind == NPKIT_EV_PLUGIN_API) {
    npkit_plugin_api_record(g->apis, ev); /* a new entry has member NO_COMM, call_seq NPKIT_NO_SEQ */
    return 0;
  }
  if (ev->kind == NPKIT_EV_PLUGIN_TASK) {
    const npkit_ev_plugin_task *k = &ev->u.plugin_task;
    if (k->task == 0 || k->api == 0) return 0;
    if ((t = span_of(g, k->task, &rc)) == NULL) return rc;
    t->api = k->api;
    t->have_task = 1;
    t->nch = (k->flags & NPKIT_PTASK_KERNEL_CH) ? k->nchannels : 0;
  } else if (ev->kind == NPKIT_EV_PLUGIN_KERNEL_CH) {
    const npkit_ev_kernel_ch *k = &ev->u.kernel_ch;
    unsigned mapped = NPKIT_PKCH_GPU_TIMER | NPKIT_PKCH_MAPPED;
    if (k->task == 0 || (k->flags & mapped) != mapped || ev->end_ns < ev->start_ns) return 0;
    if ((t = span_of(g, k->task, &rc)) == NULL) return rc;
    if (t->seen == 0 || ev->start_ns < t->start) t->start = ev->start_ns;
    if (t->seen == 0 || ev->end_ns > t->stop) t->stop = ev->end_ns;
    t->seen++;
  } else {
    return 0;
  }
  if (complete(g, t) && settle(g, t) != 0) rc = -1;
  return rc;
}

void npkit_mpgpu_call(npkit_mpgpu *g, const npkit_event *ev, uint32_t kind, uint64_t id) {
  if (ev->u.api.call_no == 0) return;
  npkit_plugin_api *api = npkit_plugin_api_of_call(g->apis, ev->thread, ev->u.api.call_no);
  if (api == NULL) return;
  api->member = ev->u.api.comm;
  api->row = kind;
  api->call_seq = id;
  api->fn = ev->func;
}

int npkit_mpgpu_settle(npkit_mpgpu *g, uint64_t before, int final) {
  int rc = 0;
  for (uint32_t i = 0; i < NPKIT_PLUGIN_TASKS; i++) {
    task_span *t = &g->spans[i];
    if (t->id == 0) continue;
    /* a channel that never reports a GPU stop (NPKIT_PKCH_NO_STOP) leaves its task incomplete:
     * what the others timed counts once they are old, as the report counts it at the end */
    int old = t->seen > 0 && t->stop < before && call_of(g, t) != NULL;
    if ((final || complete(g, t) || old) && settle(g, t) != 0) rc = -1;
  }
  return rc;
}
