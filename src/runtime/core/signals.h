/* SIGTERM and SIGINT (how mpirun, Slurm, torchrun and Ctrl-C stop ranks) still leave a complete
 * trace, whichever thread of the process the kernel hands the signal to: the application's, NCCL's,
 * MPI's, or the library's own writer and CUPTI threads.
 *
 * The handler does nothing but remember the signal (its siginfo) and ask for the trace to be
 * finished by the writer thread; it returns at once, so that the interrupted thread keeps running
 * and releases whatever locks it holds (a handler that waited there could wait for itself).  Once
 * the log is closed and the trace rendered, the signal is delivered again, with the application's
 * handler or the default action restored: the process ends the way it would have without the
 * library (same exit status), or runs the handler the application installed.  Signals the job
 * ignores stay ignored; more stop signals while the trace is finished are delivered after it.
 * A watchdog delivers them after NPKIT_SIGNAL_DEADLINE_MS whatever happens, so a stop signal is
 * never lost. */
#ifndef NPKIT_SIGNALS_H
#define NPKIT_SIGNALS_H

#include <signal.h>

/* Longest a stop signal is held back: far longer than an ordinary finish takes (docs/faults.md),
 * shorter than Slurm's and torchrun's default grace periods (30 s). */
#define NPKIT_SIGNAL_DEADLINE_MS 20000u

/* Installs the handlers.  `request` runs inside the handler (it must be async-signal-safe) at the
 * first stop signal: it has the trace finished elsewhere and returns 0, or returns -1 when nobody
 * can (the signal then takes its effect at once).  The finisher ends with npkit_signals_redeliver. */
void npkit_signals_install(int (*request)(void));

/* For the library's own threads, at their start: blocks every signal but the stop signals, whose
 * handler is the library's (the job's other signals are not ours to receive, but a stop signal
 * aimed at one of our threads must still stop the process). */
void npkit_signals_mask_thread(void);

/* Gives the stop signals that arrived so far their effect, with the handlers the application had
 * (or the default action) back in place: called by whoever finished the trace.  Idempotent; from
 * then on stop signals take effect at once. */
void npkit_signals_redeliver(void);

/* The first stop signal held back so far (SIGTERM, SIGINT), 0 if none. */
int npkit_signals_held(void);

/* Calls the handler `old` describes when it is a function of the application's (SIG_DFL and
 * SIG_IGN: nothing): how the library's handlers of signals it shares pass them on. */
void npkit_signals_call_old(const struct sigaction *old, int sig, siginfo_t *info, void *uc);

/* Starts a thread that calls npkit_signals_redeliver after timeout_ms; without one (no thread could
 * be started) the finish itself is the only bound. */
void npkit_signals_deadline(unsigned timeout_ms);

#endif
