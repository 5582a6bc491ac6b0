#ifndef NPKIT_CLOCK_H
#define NPKIT_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_REALTIME in ns: the one clock of every source (CUPTI's default, NCCL's %globaltimer-based
 * stamps and NPKit's CPU stamps are epoch ns too).  Served by the vDSO: no system call. */
static inline uint64_t npkit_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t npkit_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
