#include "report_plugin_gpu.h"

#include <stdlib.h>

#include "job_instances.h"
#include "report_table.h"
#include "trace_plugin.h"
#include "trace_plugin_api.h"
#include "trace_plugin_spans.h"

struct npkit_plugin_gpu {
  npkit_report *rep;
  npkit_plugin_api_table *apis;
  npkit_task_spans spans;
};

/* A task's span times its call's instance, or adds a replay's sample to a captured call's row. */
static int settle(void *ctx, const npkit_task_span *t) {
  npkit_plugin_gpu *g = ctx;
  const npkit_plugin_api *api = t->have_task ? npkit_plugin_api_find(g->apis, t->api) : NULL;
  if (api == NULL || api->type != NPKIT_PAPI_COLL || t->seen == 0 || t->stop < t->start) return 0;
  if (api->flags & NPKIT_PAPI_GRAPH) {
    if (api->row == UINT32_MAX || api->row >= g->rep->table.n) return 0;
    npkit_table_row *row = &g->rep->table.rows[api->row];
    row->replays++;
    return npkit_quantile_add(&row->gpu, t->stop - t->start) != 0 ? -1 : 0;
  }
  if (api->member == UINT32_MAX || api->call_seq == NPKIT_NO_SEQ) return 0;
  return npkit_inst_put_gpu(g->rep->job.inst, api->member, api->call_seq, api->fn, t->start, t->stop) < 0 ? -1 : 0;
}

/* Settled as soon as it is complete and its call (or capture) is known, while NCCL's API record is
 * surely still in the table. */
static int ready(void *ctx, const npkit_task_span *t) {
  npkit_plugin_gpu *g = ctx;
  const npkit_plugin_api *api = npkit_plugin_api_find(g->apis, t->api);
  return api != NULL && ((api->flags & NPKIT_PAPI_GRAPH) ? api->row != UINT32_MAX : api->member != UINT32_MAX);
}

npkit_plugin_gpu *npkit_plugin_gpu_new(npkit_report *rep) {
  npkit_plugin_gpu *g = calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  g->rep = rep;
  g->apis = npkit_plugin_api_new();
  if (g->apis == NULL || npkit_task_spans_init(&g->spans, settle, ready, g) != 0) {
    npkit_plugin_gpu_free(g);
    return NULL;
  }
  return g;
}

void npkit_plugin_gpu_free(npkit_plugin_gpu *g) {
  if (g == NULL) return;
  npkit_plugin_api_free(g->apis);
  npkit_task_spans_free(&g->spans);
  free(g);
}

int npkit_plugin_gpu_api(npkit_plugin_gpu *g, const npkit_event *ev) {
  if (g == NULL) return 0;
  npkit_plugin_api_record(g->apis, ev);
  return 0;
}

int npkit_plugin_gpu_call(npkit_plugin_gpu *g, const npkit_event *ev, uint32_t member, uint32_t row) {
  if (g == NULL || ev->u.api.call_no == 0) return 0;
  npkit_plugin_api *api = npkit_plugin_api_of_call(g->apis, ev->thread, ev->u.api.call_no);
  if (api == NULL) return 0;
  api->member = member;
  api->row = row;
  api->call_seq = ev->u.api.seq;
  api->fn = ev->func;
  return 0;
}

int npkit_plugin_gpu_task(npkit_plugin_gpu *g, const npkit_event *ev) {
  return g == NULL ? 0 : npkit_task_spans_event(&g->spans, ev);
}

int npkit_plugin_gpu_channel(npkit_plugin_gpu *g, const npkit_event *ev) {
  return g == NULL ? 0 : npkit_task_spans_event(&g->spans, ev);
}

int npkit_plugin_gpu_finish(npkit_plugin_gpu *g) {
  if (g == NULL) return 0;
  int rc = 0;
  for (uint32_t i = 0; i < NPKIT_PLUGIN_TASKS; i++)
    if (g->spans.spans[i].id != 0 && npkit_task_spans_settle(&g->spans, &g->spans.spans[i]) != 0) rc = -1;
  return rc;
}
