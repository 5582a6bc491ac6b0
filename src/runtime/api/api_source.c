#include "api_source.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "api_call.h"
#include "comm_registry.h"
#include "nccl_names.h"
#include "nccl_resolve.h"
#include "notes.h"
#include "recorder.h"

/* 1: named when it was called, 2: to be named at the finish. */
static _Atomic int missing_warned[NPKIT_FN_COUNT];
static _Atomic int missing_any;

void npkit_api_missing(unsigned fn) {
  int first_fn = atomic_exchange(&missing_any, 1) == 0;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&missing_warned[fn], &expected, first_fn ? 1 : 2)) return;
  if (!first_fn) return; /* the finish names it */
  char have[32], need[32];
  npkit_nccl_release_string(npkit_nccl_version(), have, sizeof have);
  npkit_nccl_release_string(npkit_fn_since(fn), need, sizeof need);
  npkit_note(NPKIT_LEVEL_WARN,
             "%s is not in the loaded NCCL (version %s; it needs %s or later): the call returns "
             "ncclInvalidUsage (other such functions are listed at exit)",
             npkit_fn_name(fn), have, need);
}

static void missing_summary(void) {
  char list[400], have[32], need[32];
  size_t len = 0;
  unsigned n = 0, shown = 0;
  list[0] = '\0';
  for (unsigned fn = 1; fn < NPKIT_FN_COUNT; fn++) {
    if (atomic_load(&missing_warned[fn]) != 2) continue;
    n++;
    npkit_nccl_release_string(npkit_fn_since(fn), need, sizeof need);
    char item[96];
    int w = snprintf(item, sizeof item, "%s%s (%s)", shown ? ", " : "", npkit_fn_name(fn), need);
    if (w > 0 && (size_t)w < sizeof list - len) {
      memcpy(list + len, item, (size_t)w + 1);
      len += (size_t)w;
      shown++;
    }
  }
  if (n == 0) return;
  npkit_nccl_release_string(npkit_nccl_version(), have, sizeof have);
  npkit_note(NPKIT_LEVEL_WARN,
             "%u more functions the loaded NCCL (version %s) lacks were called and answered "
             "ncclInvalidUsage: %s%s",
             n, have, list, shown < n ? ", ..." : "");
}

static void configure(const npkit_config *cfg) { npkit_nccl_set_library(cfg->nccl_library); }

/* After the stacks and the window have started (sources.c lists this source after them). */
static void attach(const npkit_source_log *at) {
  npkit_comms_attach_log(at->log);
  npkit_call_extras_setup();
}

static void finish(npkit_source_totals *totals) {
  (void)totals; /* the wrapped calls go through the recorder, which counts them */
  missing_summary();
}

/* Threads inside a wrapped call (recorder.h: the words each publishes when a call starts): the
 * collective's sequence number is the one its communicator hands out next, which the call takes
 * when it returns (one thread drives a communicator at a time, as NCCL requires). */
static void inflight(npkit_inflight_sink *sink) {
  for (npkit_thread *t = npkit_recorder_threads(); t != NULL; t = t->next) {
    uint64_t call_no, start, what;
    if (!npkit_thread_in_call(t, &call_no, &start, &what)) continue;
    npkit_event *ev = npkit_inflight_add(sink, NPKIT_INFL_CALL, (uint16_t)(what & 0xffff), start);
    if (ev == NULL) return;
    ev->thread = t->index;
    const npkit_comm *c = npkit_comm_by_id((uint32_t)(what >> 16));
    if (c == NULL) continue;
    npkit_ev_inflight *f = &ev->u.inflight;
    npkit_inflight_set_comm(f, c->local_id, c->comm_id, c->rank, c->nranks);
    if (npkit_fn_class_of(ev->func) == NPKIT_CLASS_coll)
      f->seq = atomic_load_explicit(&c->coll_seq, memory_order_relaxed);
  }
}

const npkit_source_ops npkit_source_api = {"api", configure, attach, finish, NULL, NULL, inflight};
