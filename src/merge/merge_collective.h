/*
 * `npkit merge --collective COMM:SEQ[-SEQ]`: the instances of some collectives on every member
 * rank, with a margin of context.  The communicator is named as the report names it
 * (npkit_job_comm_ref); the instances come from the job's instance store (job_instances.h), so
 * their times are those the report's stragglers and timeline use: GPU times when the log has
 * them, else the calls' CPU times.
 */
#ifndef NPKIT_MERGE_COLLECTIVE_H
#define NPKIT_MERGE_COLLECTIVE_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* The earliest start and latest end, on the aligned clock (log time + its host's offset), of the
 * instances of `comm` with sequence numbers in [seq_lo, seq_hi] on every member whose log is
 * selected (sel[log]) and recorded one.  Returns the number of entries found (0: none), or -1 when
 * memory is short. */
int64_t npkit_merge_collective_span(const npkit_job *job, uint32_t comm, const unsigned char *sel, uint64_t seq_lo,
                                    uint64_t seq_hi, int64_t *first_ns, int64_t *last_ns);

/* 1 when log `log` holds a member of `comm`. */
int npkit_merge_log_in_comm(const npkit_job *job, uint32_t comm, size_t log);

#endif /* NPKIT_MERGE_COLLECTIVE_H */
