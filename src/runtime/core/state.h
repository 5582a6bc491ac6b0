/* The state every part of the library reads: whether the process records, and its settings.
 * Both are set by the life cycle (lifecycle.h) when it starts; the settings are read-only from
 * then on. */
#ifndef NPKIT_STATE_H
#define NPKIT_STATE_H

#include <stdatomic.h>

#include "config.h"

/* NEW until the start, ON while recording, OFF for good (disabled, a failure, a fork, the end). */
enum { NPKIT_STATE_NEW = 0, NPKIT_STATE_ON = 1, NPKIT_STATE_OFF = 2 };
extern _Atomic int npkit_state;
extern npkit_config npkit_cfg;

static inline int npkit_state_on(void) {
  return atomic_load_explicit(&npkit_state, memory_order_acquire) == NPKIT_STATE_ON;
}

#endif
