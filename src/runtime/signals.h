/* SIGTERM and SIGINT (how mpirun, Slurm and Ctrl-C stop ranks) still leave a complete trace: the
 * handler has the writer thread finish the log and the trace, then lets the signal take its normal
 * effect — the application's own handler if it had one, else the default action, so the exit status
 * is the one the job would have had.  Signals the job ignores stay ignored. */
#ifndef NPKIT_SIGNALS_H
#define NPKIT_SIGNALS_H

/* Installs the handlers; `finish` is run on the writer thread when a signal arrives. */
void npkit_signals_install(void (*finish)(void));

#endif
