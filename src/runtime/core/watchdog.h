/* The hang watchdog (NPKIT_HANG_TIMEOUT): a thread that looks at the work in flight (inflight.h)
 * every quarter of the timeout (at most every second, at least every 10 ms).  When an item has not
 * moved for the timeout, one line on stderr names its operation, where it is and how long it has
 * been stuck ("npkit: hang: AllReduce #14 of comm 3f2a0b1c (rank 0 of 3) has not completed for
 * 3.0 s: ..."), and a dump is asked for (flight.h) whose snapshot flags the stuck operation's items.
 *
 * What it names is the earliest stuck collective of the communicator whose work waited longest: a
 * communicator's collectives complete in order, so later ones queued behind it are not the cause.
 * Once per stuck operation (npkit_inflight_key): the same one is named again only after it moved
 * (or nothing was stuck in between), another one as soon as it is stuck.  It reads only what the
 * sources publish with atomics, so it sees a thread blocked inside NCCL as well as a GPU that stopped
 * after every call returned (NCCL's launches are asynchronous: the stuck collective shows only in
 * the profiler plugin's kernel-channel and proxy events). */
#ifndef NPKIT_WATCHDOG_H
#define NPKIT_WATCHDOG_H

#include <stdint.h>

#include "flight.h"

/* Starts the thread; 0, or -1 with a warning said (the job goes on without it). */
int npkit_watchdog_start(uint64_t timeout_ns, npkit_flight_collect_fn collect);
/* Stops and joins it (at the finish); harmless when it never ran. */
void npkit_watchdog_stop(void);

/* One look (the thread's, exposed for tests): the key of the stuck operation it named, or 0. */
uint64_t npkit_watchdog_check(uint64_t now_ns);

#endif
