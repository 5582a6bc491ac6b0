/* The words for work in flight (NPKIT_EV_INFLIGHT events), shared by the library's hang line on
 * stderr and the report's diagnosis, so that both say the same thing the same way. */
#ifndef NPKIT_INFLIGHT_TEXT_H
#define NPKIT_INFLIGHT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"

/* How a communicator is named: the upper half of its id in hex, as the report's labels. */
#define NPKIT_COMM_SHORT(comm_id) ((unsigned long long)((comm_id) >> 32))

/* The operation an item belongs to: "AllReduce #14 of comm 3f2a0b1c (rank 0 of 3)"; without a
 * sequence number "Send of comm ..."; without a communicator "AllReduce of an unknown
 * communicator".  Returns buf. */
char *npkit_inflight_what(const npkit_event *ev, char *buf, size_t len);

/* Where it is, as a clause: "its kernel started on channel 1 and has not finished", "the call has
 * not returned", "network receive step 3 from rank 2 on channel 0 is posted, waiting for the
 * data".  Returns buf. */
char *npkit_inflight_where(const npkit_event *ev, char *buf, size_t len);

/* A proxy step's phase in words ("waits for the network to finish"), "" when none. */
const char *npkit_inflight_phase_name(int is_send, int phase);

#endif /* NPKIT_INFLIGHT_TEXT_H */
