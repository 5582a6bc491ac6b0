#include "api_call.h"

#include "stack_capture.h"

int npkit_call_extras_on;

void npkit_call_extras_setup(void) { npkit_call_extras_on = npkit_window_active() || npkit_stack_depth > 0; }

int npkit_call_extras(npkit_thread *t, npkit_event *ev, int paused) {
  paused = npkit_window_apply(t, ev, paused);
  if (npkit_stack_depth > 0 && !paused && npkit_fn_set_has(&npkit_rec_ops, ev->func))
    ev->u.api.stack_id = npkit_stack_capture();
  return paused;
}
