/* The core that owns the life cycle: starts everything at the first NCCL call of a process, or
 * when the CUDA driver initialises the GPU source (InitializeInjection, cupti_source.c) — never in
 * a constructor: the library is also preloaded into mpirun, shells and tools that never call NCCL
 * or CUDA, and must leave no file behind there — finishes at exit, and turns recording off for
 * good when something fails or the process forks. */
#ifndef NPKIT_LIFECYCLE_H
#define NPKIT_LIFECYCLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "config.h"

enum { NPKIT_STATE_NEW = 0, NPKIT_STATE_ON = 1, NPKIT_STATE_OFF = 2 };
extern _Atomic int npkit_state;
extern npkit_config npkit_cfg;

/* Runs the one-time start (idempotent, thread safe) and returns the resulting state. */
int npkit_start(void);

static inline int npkit_recording(void) {
  int s = atomic_load_explicit(&npkit_state, memory_order_acquire);
  return s == NPKIT_STATE_NEW ? npkit_start() == NPKIT_STATE_ON : s == NPKIT_STATE_ON;
}

/* A communicator was created: the process's rank (if no launcher told it) and GPU come from the
 * first one. */
void npkit_identity_from_comm(int rank, int nranks, int device);

/* A warning kept in the trace as well as printed. */
void npkit_note(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Registers fn to run once at the finish, while the log is still open (its npkit_note lines go
 * into the trace): a module that has something to sum up at the end says so without the core
 * knowing it.  -1 when the table (8 entries) is full. */
int npkit_at_finish(void (*fn)(void));

/* Writes everything and renders the trace; called at exit (atexit) and safe to call again. */
void npkit_finish(void);

#endif
