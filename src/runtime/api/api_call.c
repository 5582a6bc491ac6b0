#include "api_call.h"

#include <stdio.h>

#include "flight.h"
#include "inflight_text.h"
#include "stack_capture.h"

int npkit_call_extras_on;

void npkit_call_extras_setup(void) { npkit_call_extras_on = npkit_window_active() || npkit_stack_depth > 0; }

int npkit_call_extras(npkit_thread *t, npkit_event *ev, int paused) {
  paused = npkit_window_apply(t, ev, paused);
  if (npkit_stack_depth > 0 && !paused && npkit_fn_set_has(&npkit_rec_ops, ev->func))
    ev->u.api.stack_id = npkit_stack_capture();
  return paused;
}

int npkit_call_job_error(int result) { return result == 1 || result == 2 || result == 3 || result == 5 || result == 6; }

void npkit_call_failed(npkit_call *c) {
  npkit_ev_api *a = &c->ev.u.api;
  if (c->comm != NULL && npkit_fn_class_of(c->ev.func) == NPKIT_CLASS_coll) {
    a->aux = atomic_load_explicit(&c->comm->coll_seq, memory_order_relaxed);
    a->flags |= NPKIT_API_SEQ_AT;
  }
  if (!npkit_call_job_error(a->result) || (a->flags & NPKIT_API_MISSING)) return;
  char reason[48];
  if (c->comm != NULL)
    snprintf(reason, sizeof reason, "%s of comm %08llx: %s", npkit_fn_short_name(c->ev.func),
             NPKIT_COMM_SHORT(c->comm->comm_id), npkit_result_name(a->result));
  else
    snprintf(reason, sizeof reason, "%s: %s", npkit_fn_short_name(c->ev.func), npkit_result_name(a->result));
  npkit_flight_request(NPKIT_FLIGHT_ERROR, 0, a->result, reason, 0);
}
