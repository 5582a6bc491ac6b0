/* The clock of CUPTI's records.
 *
 * CUPTI stamps its records in CLOCK_REALTIME ns on Linux, the clock of every npkit event, unless
 * a client registers a timestamp callback (cupti_activity.h of CUDA 13, lines 8111-8150).  The
 * callback is process-wide: PyTorch's profiler registers one at every trace start that returns
 * raw time-stamp-counter ticks (pytorch/kineto libkineto/src/CuptiTimestamp.cpp
 * configureCuptiTimestampSource, ApproximateClock.h getApproximateTime), and npkit's records
 * carry that clock from then on; records written before keep theirs (lines 8138-8142).
 *
 * cuptiGetTimestamp gives the clock of the records (lines 7271-7283).  The GPU source reads it
 * next to CLOCK_REALTIME when it starts and at every drain.  A reading more than a day away
 * from CLOCK_REALTIME shows another clock: from then on the readings of it map stamps onto
 * CLOCK_REALTIME (cupti_clock_map.h); the GPU source says so once, in one `npkit:` line.  A stamp within a day of
 * CLOCK_REALTIME is CUPTI's own (taken before the callback came); the counters and clocks
 * callbacks return (ticks or ns since boot) are decades away from it.  A stamp in another clock
 * that no reading shows (the CUPTI lacks cuptiGetTimestamp) cannot be mapped: the record is
 * counted and kept untimed. */
#ifndef NPKIT_CUPTI_CLOCK_H
#define NPKIT_CUPTI_CLOCK_H

#include <stdint.h>

/* The GPU source starts (npkit_cupti is loaded): forgets earlier readings, takes one.  Returns 1
 * when it shows another clock (the caller says so, once). */
int npkit_cupti_clock_start(void);
/* A reading, at each drain once it has taken its buffers; 1 when it is the first to show another
 * clock.  The first two readings of another clock are taken 20 ms apart. */
int npkit_cupti_clock_read(void);
/* The start and end stamps of one record onto CLOCK_REALTIME, in place (0 stays 0: not timed).
 * 0 when they are in another clock that cannot be mapped: both are set to 0 then.  Before any
 * reading (a program that drains without the GPU source) stamps are kept as they are. */
int npkit_cupti_clock_fix(uint64_t *start, uint64_t *end);

typedef struct npkit_cupti_clock_stats {
  int foreign;       /* CUPTI's clock was another than CLOCK_REALTIME at some point */
  uint64_t mapped;   /* records whose stamps were mapped */
  uint64_t unmapped; /* records in another clock that could not be mapped */
} npkit_cupti_clock_stats;
void npkit_cupti_clock_stats_get(npkit_cupti_clock_stats *s);

#endif
