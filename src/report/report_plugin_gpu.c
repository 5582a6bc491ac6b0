#include "report_plugin_gpu.h"

#include <stdlib.h>

#include "job_instances.h"
#include "report_table.h"
#include "trace_plugin.h"
#include "trace_plugin_api.h"

typedef struct task_span {
  uint64_t id;         /* 0: empty */
  uint64_t api;
  uint64_t start, stop; /* GPU-timed channels, mapped onto the host clock */
  uint32_t seen, nch;   /* channels seen, and reported (0: kernel-channel events off) */
  uint16_t fn;
  uint8_t have_task;
} task_span;

struct npkit_plugin_gpu {
  npkit_report *rep;
  npkit_plugin_api_table *apis;
  task_span *spans;
};

npkit_plugin_gpu *npkit_plugin_gpu_new(npkit_report *rep) {
  npkit_plugin_gpu *g = calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  g->rep = rep;
  g->apis = npkit_plugin_api_new();
  g->spans = calloc(NPKIT_PLUGIN_TASKS, sizeof *g->spans);
  if (g->apis == NULL || g->spans == NULL) {
    npkit_plugin_gpu_free(g);
    return NULL;
  }
  return g;
}

void npkit_plugin_gpu_free(npkit_plugin_gpu *g) {
  if (g == NULL) return;
  npkit_plugin_api_free(g->apis);
  free(g->spans);
  free(g);
}

static int settle(npkit_plugin_gpu *g, task_span *t) {
  int rc = 0;
  const npkit_plugin_api *api = t->have_task ? npkit_plugin_api_find(g->apis, t->api) : NULL;
  if (api != NULL && api->type == NPKIT_PAPI_COLL && t->seen > 0 && t->stop >= t->start) {
    if (api->flags & NPKIT_PAPI_GRAPH) {
      if (api->row != UINT32_MAX && api->row < g->rep->table.n) {
        npkit_table_row *row = &g->rep->table.rows[api->row];
        row->replays++;
        if (npkit_quantile_add(&row->gpu, t->stop - t->start) != 0) rc = -1;
      }
    } else if (api->member != UINT32_MAX && api->call_seq != NPKIT_NO_SEQ) {
      if (npkit_inst_put_gpu(g->rep->job.inst, api->member, api->call_seq, api->fn, t->start, t->stop) < 0)
        rc = -1;
    }
  }
  t->id = 0;
  return rc;
}

/* Settled as soon as it is complete and its call (or capture) is known, while NCCL's API record is
 * surely still in the table. */
static int maybe_settle(npkit_plugin_gpu *g, task_span *t) {
  if (!t->have_task || t->nch == 0 || t->seen < t->nch) return 0;
  const npkit_plugin_api *api = npkit_plugin_api_find(g->apis, t->api);
  if (api == NULL || (!(api->flags & NPKIT_PAPI_GRAPH) && api->member == UINT32_MAX) ||
      ((api->flags & NPKIT_PAPI_GRAPH) && api->row == UINT32_MAX))
    return 0;
  return settle(g, t);
}

/* The span of task id, made when absent; an older task in its slot is settled first. */
static task_span *span_of(npkit_plugin_gpu *g, uint64_t id, int *rc) {
  task_span *t = &g->spans[id % NPKIT_PLUGIN_TASKS];
  if (t->id == id) return t;
  if (t->id > id) return NULL; /* too late: that slot holds a newer task */
  if (t->id != 0 && settle(g, t) != 0) *rc = -1;
  *t = (task_span){.id = id};
  return t;
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
  if (g == NULL || ev->u.plugin_task.task == 0 || ev->u.plugin_task.api == 0) return 0;
  int rc = 0;
  task_span *t = span_of(g, ev->u.plugin_task.task, &rc);
  if (t != NULL) {
    t->api = ev->u.plugin_task.api;
    t->fn = ev->func;
    t->have_task = 1;
    t->nch = (ev->u.plugin_task.flags & NPKIT_PTASK_KERNEL_CH) ? ev->u.plugin_task.nchannels : 0;
    if (maybe_settle(g, t) != 0) rc = -1;
  }
  return rc;
}

int npkit_plugin_gpu_channel(npkit_plugin_gpu *g, const npkit_event *ev) {
  const npkit_ev_kernel_ch *k = &ev->u.kernel_ch;
  unsigned mapped = NPKIT_PKCH_GPU_TIMER | NPKIT_PKCH_MAPPED;
  if (g == NULL || k->task == 0 || (k->flags & mapped) != mapped || ev->end_ns < ev->start_ns) return 0;
  int rc = 0;
  task_span *t = span_of(g, k->task, &rc);
  if (t != NULL) {
    if (t->seen == 0 || ev->start_ns < t->start) t->start = ev->start_ns;
    if (t->seen == 0 || ev->end_ns > t->stop) t->stop = ev->end_ns;
    t->seen++;
    if (maybe_settle(g, t) != 0) rc = -1;
  }
  return rc;
}

int npkit_plugin_gpu_finish(npkit_plugin_gpu *g) {
  if (g == NULL) return 0;
  int rc = 0;
  for (uint32_t i = 0; i < NPKIT_PLUGIN_TASKS; i++)
    if (g->spans[i].id != 0 && settle(g, &g->spans[i]) != 0) rc = -1;
  return rc;
}
