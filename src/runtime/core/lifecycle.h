/* The life cycle: starts recording at the first NCCL call of a process, or when the CUDA driver
 * initialises the GPU source (InitializeInjection) — never in a constructor: the library is also
 * preloaded into mpirun, shells and tools that never call NCCL or CUDA, and must leave no file
 * behind there — finishes at exit or on a stop signal, and turns recording off for good when
 * something fails or the process forks.
 *
 * It owns the log and the core's parts (recorder, notes, string table, recording windows) and
 * drives the sources through the table of source.h, in the order of the list the library hands
 * it (npkit_lifecycle_sources). */
#ifndef NPKIT_LIFECYCLE_H
#define NPKIT_LIFECYCLE_H

#include <stddef.h>

#include "source.h"
#include "state.h"

/* The sources, in the order they are attached and finished; set once, at load time, before any
 * entry point of the library can start recording. */
void npkit_lifecycle_sources(const npkit_source_ops *const *sources, size_t n);

/* Runs the one-time start (idempotent, thread safe) and returns the resulting state (NEW while
 * the library's sources are not known yet: nothing is started then). */
int npkit_start(void);

static inline int npkit_recording(void) {
  int s = atomic_load_explicit(&npkit_state, memory_order_acquire);
  return s == NPKIT_STATE_NEW ? npkit_start() == NPKIT_STATE_ON : s == NPKIT_STATE_ON;
}

/* A communicator was created: the process's rank (if no launcher told it) and GPU come from the
 * first one. */
void npkit_identity_from_comm(int rank, int nranks, int device);

/* Writes everything and renders the trace; called at exit (atexit) and safe to call again. */
void npkit_finish(void);

/* The process calls _exit or _Exit (exit_calls.c), which run no exit handler: the writer thread
 * finishes as for a stop signal, the ranks of the host together, and this returns when it is
 * done or NPKIT_SIGNAL_DEADLINE_MS (+1 s) after the call.  Does nothing in a process that is not
 * the log's owner (a child of fork or vfork), inside the finish, or after it.  Async-signal-safe:
 * applications call _exit from their signal handlers. */
void npkit_finish_before_exit_call(void);

/* An NCCL call found recording off: while a stop signal's or _exit's finish runs (npkit_stopping,
 * state.h), waits for it, bounded as the finish is, and after it, while the process ends, is held
 * (one second at most: an application's own handler may let it go on); at once otherwise, and on
 * the library's own threads or the finishing one. */
void npkit_wait_for_stop(void);

#endif
