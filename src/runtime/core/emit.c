#include "emit.h"

#include "clock.h"
#include "state.h"

void npkit_event_now(npkit_event *ev, uint16_t kind) {
  uint64_t now = npkit_now_ns();
  npkit_event_init(ev, kind, now, now);
}

int npkit_emit(npkit_event *ev) {
  if (!npkit_state_on()) return 0;
  npkit_thread *t = npkit_thread_self();
  if (t == NULL) return -1;
  npkit_emit_on(t, ev);
  return 1;
}
