/* When a launcher stops a job, the ranks of one host finish their traces together.
 *
 * Open MPI (4.x: orte/mca/odls/base/odls_base_default_fns.c, orte_odls_base_default_kill_local_procs)
 * sends SIGCONT, sleep(odls_base_sigkill_timeout), SIGTERM, sleep(...) again, then SIGKILL to all
 * its local ranks; sleep() returns early when a child's SIGCHLD arrives, so the first rank to die
 * brings the SIGKILL to every other one at once.  A rank that finished its trace quickly would cut
 * the others' short.  So each rank, after its own finish, waits until every rank of its job on
 * this host that is stopping too has finished (or died), through a small file in /dev/shm named
 * after the job: one slot per local rank with when it began and ended its finish.
 *
 * Bounded everywhere: ranks that have not begun stopping NPKIT_STOP_JOIN_MS after this one are not
 * waited for (a rank stopped on its own), a rank that began is waited for until the deadline, a
 * rank whose process is gone is not.  Without a job name or a local size from the launcher, or
 * without /dev/shm, there is no barrier. */
#ifndef NPKIT_STOP_BARRIER_H
#define NPKIT_STOP_BARRIER_H

#include <stdint.h>

/* How long after this rank's start of stopping the others may begin theirs. */
#define NPKIT_STOP_JOIN_MS 300u

/* This rank begins stopping.  0 when it joined a barrier, -1 when there is none. */
int npkit_stop_barrier_arrive(const char *job, int local_rank, int local_size);
/* This rank has finished: waits until the other stopping ranks have, or until deadline_ns
 * (CLOCK_MONOTONIC); then leaves (the last one out removes the file).  Returns the ranks waited
 * for that had not finished by the deadline. */
int npkit_stop_barrier_leave(uint64_t deadline_ns);

#endif
