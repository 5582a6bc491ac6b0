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

/* 1 while a stop signal's or an _exit's finish runs (lifecycle.c): the process ends right after
 * it.  A call that begins or ends once the finish turned recording off waits for the finish
 * (npkit_wait_for_stop) and so is still in flight for the finish's snapshot: the log holds every
 * call the process completed, and the one it was inside as in flight, nothing the application
 * did not see return. */
extern _Atomic int npkit_stopping;

/* The library's own threads (writer, watchdog, CUPTI flusher, machine sampler, stop deadline)
 * mark themselves at their start: an _exit on one of them, or an NCCL call, goes straight
 * through, never waiting for a finish that may wait for them. */
extern __thread int npkit_own_thread __attribute__((tls_model("initial-exec")));
static inline void npkit_own_thread_mark(void) { npkit_own_thread = 1; }

static inline int npkit_state_on(void) {
  return atomic_load_explicit(&npkit_state, memory_order_acquire) == NPKIT_STATE_ON;
}

#endif
