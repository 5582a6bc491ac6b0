/* Recording windows: what decides, call by call, whether a wrapped NCCL call is stored.
 *
 * A tracked call always keeps its bookkeeping (sequence numbers stay identical on every rank); it
 * is stored when its function is in npkit_rec_ops (NPKIT_OPS) and recording is not paused
 * (npkit_rec_paused).  Recording is paused and resumed by:
 *  - NPKIT_START_AFTER / NPKIT_STOP_AFTER: a number of collectives issued by the process, or a time
 *    since the start (the first NCCL call), checked at every wrapped call;
 *  - npkit_pause() / npkit_resume() (include/npkit_preload.h);
 *  - NPKIT_TOGGLE_SIGNAL (e.g. SIGUSR2), which flips it.
 * The latest of these wins.  Each change is an NPKIT_EV_RECORDING event with its reason, so the
 * trace shows where recording stopped and started.
 *
 * The window's per-call work (its points, pending signal toggles) is done by npkit_window_apply,
 * which the wrappers call only when npkit_window_active() (api_call.h). */
#ifndef NPKIT_WINDOW_H
#define NPKIT_WINDOW_H

#include <stdatomic.h>
#include <stdint.h>

#include "config.h"
#include "fn_set.h"
#include "log_writer.h"
#include "recorder.h"

/* Functions stored while recording (NPKIT_OPS): set before recording starts, read-only after. */
extern npkit_fn_set npkit_rec_ops;
/* 1 while paused: the whole state of the window, flipped by one atomic operation (also from a
 * signal handler). */
extern _Atomic int npkit_rec_paused;

/* Sets up the mask, the window and the toggle signal from the settings; called once at start,
 * before recording is switched on. */
void npkit_window_start(const npkit_config *cfg);

/* 1 when a window or a toggle signal is set: npkit_window_apply must see every tracked call. */
int npkit_window_active(void);

/* Applies the window to a tracked call `ev` (a collective counts towards its points) and records
 * pending signal toggles on thread t.  Returns whether recording is paused now (`paused`: as the
 * caller read it). */
int npkit_window_apply(npkit_thread *t, const npkit_event *ev, int paused);

/* 1 while paused: marks are not stored either. */
int npkit_window_paused(void);

/* npkit_pause() / npkit_resume(): recording = 0 pauses, 1 resumes; `t` records the change. */
void npkit_window_set(npkit_thread *t, int recording, uint32_t reason);

/* Records toggles by signal that no call has recorded yet (on thread t). */
void npkit_window_drain(npkit_thread *t);

/* At exit, after the recorder stopped: writes the toggles still pending as an EVENTS block. */
void npkit_window_finish(npkit_log_writer *log);

#endif
