/* Dumps: what the library writes when something happened, and the triggers that ask for them.
 *
 * A dump takes a snapshot of the work in flight (NPKIT_EV_INFLIGHT events, from every source's
 * `inflight` entry, source.h), appends it and an NPKIT_EV_FLIGHT event saying why, and with the
 * flight recorder (NPKIT_RING_MB) writes the ring as the log (log_ring.h); a streamed log is on
 * disk already and just gets the snapshot.  A dump runs on the writer thread, as its task
 * (recorder.h), right after the writer appended what the threads recorded: it holds every event
 * recorded before the trigger, and the thread that triggered goes on at once.
 *
 * Triggers: the end of the process (npkit_flight_finish, on the finishing thread), NPKIT_DUMP_SIGNAL
 * (the job goes on), the hang watchdog (watchdog.h), an NCCL error or ncclCommAbort (the first of
 * each), and with a ring the fatal signals SIGSEGV, SIGBUS and SIGABRT: their handler writes the
 * raw ring itself, with async-signal-safe calls only and no snapshot, then lets the signal take
 * its effect as if the library were not there. */
#ifndef NPKIT_FLIGHT_H
#define NPKIT_FLIGHT_H

#include <stdint.h>

#include "config.h"
#include "inflight.h"
#include "log_writer.h"

/* Asks every source for its work in flight. */
typedef void (*npkit_flight_collect_fn)(npkit_inflight_sink *sink);

/* Once the recorder runs: the dump task, the dump signal's handler, the fatal signals' handlers
 * (with a ring).  `path` is the log's. */
void npkit_flight_start(const npkit_config *cfg, npkit_log_writer *log, const char *path,
                        npkit_flight_collect_fn collect);

/* Asks for a dump (NPKIT_FLIGHT_SIGNAL, _HANG, _ERROR, _ABORT) from any thread; ERROR and ABORT are
 * taken once per process.  `reason` (copied; may be NULL) says what happened, `key` names the
 * stuck operation of a HANG (npkit_inflight_key: its items are flagged NPKIT_INFL_F_HANG).
 * Async-signal-safe when reason is NULL. */
void npkit_flight_request(uint32_t trigger, int signal, int result, const char *reason, uint64_t key);

/* The finish's dump: its snapshot and FLIGHT event (signal: the stop signal that ended the job, 0),
 * on the finishing thread while the log still takes events; the log's close writes a ring. */
void npkit_flight_finish(int signal);

/* Dumps so far. */
uint32_t npkit_flight_dumps(void);

#endif
