#include "metrics_plugin_gpu.h"

#include <stdlib.h>

#include "trace_plugin_api.h"
#include "trace_plugin_spans.h"

#define NO_COMM UINT32_MAX

struct npkit_mpgpu {
  npkit_plugin_api_table *apis; /* once the call is read: member its communicator (local id),
                                   row and call_seq the kind and id of its operation's key */
  npkit_task_spans spans;
  npkit_mpgpu_put_fn put;
  void *ctx;
};

/* The task's call, when NCCL named it and it was read (a CUDA graph's replays are not calls). */
static const npkit_plugin_api *call_of(npkit_mpgpu *g, const npkit_task_span *t) {
  const npkit_plugin_api *api = t->have_task ? npkit_plugin_api_find(g->apis, t->api) : NULL;
  if (api == NULL || (api->type != NPKIT_PAPI_COLL && api->type != NPKIT_PAPI_P2P) || (api->flags & NPKIT_PAPI_GRAPH) ||
      api->member == NO_COMM)
    return NULL;
  return api;
}

static int settle(void *ctx, const npkit_task_span *t) {
  npkit_mpgpu *g = ctx;
  const npkit_plugin_api *api = call_of(g, t);
  if (api == NULL || t->seen == 0 || t->stop < t->start) return 0;
  return g->put(g->ctx, api->member, api->row, api->call_seq, t->start, t->stop);
}

static int ready(void *ctx, const npkit_task_span *t) { return call_of(ctx, t) != NULL; }

npkit_mpgpu *npkit_mpgpu_new(npkit_mpgpu_put_fn put, void *ctx) {
  npkit_mpgpu *g = calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  g->apis = npkit_plugin_api_new();
  g->put = put;
  g->ctx = ctx;
  if (g->apis == NULL || npkit_task_spans_init(&g->spans, settle, ready, g) != 0) {
    npkit_mpgpu_free(g);
    return NULL;
  }
  return g;
}

void npkit_mpgpu_free(npkit_mpgpu *g) {
  if (g == NULL) return;
  npkit_plugin_api_free(g->apis);
  npkit_task_spans_free(&g->spans);
  free(g);
}

int npkit_mpgpu_event(npkit_mpgpu *g, const npkit_event *ev) {
  if (ev->kind == NPKIT_EV_PLUGIN_API) {
    npkit_plugin_api_record(g->apis, ev); /* a new entry has member NO_COMM, call_seq NPKIT_NO_SEQ */
    return 0;
  }
  return npkit_task_spans_event(&g->spans, ev);
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
    npkit_task_span *t = &g->spans.spans[i];
    if (t->id == 0) continue;
    /* a channel that never reports a GPU stop (NPKIT_PKCH_NO_STOP) leaves its task incomplete:
     * what the others timed counts once they are old, as the report counts it at the end */
    int old = t->seen > 0 && t->stop < before && call_of(g, t) != NULL;
    if ((final || old || npkit_task_spans_complete(&g->spans, t)) && npkit_task_spans_settle(&g->spans, t) != 0) rc = -1;
  }
  return rc;
}
