/* The one clock of every event: CLOCK_REALTIME in ns (CUPTI's default, NCCL's %globaltimer-based
 * stamps and NPKit's CPU stamps are epoch ns too).
 *
 * Reading CLOCK_REALTIME costs ~20-35 ns even through the vDSO, and every wrapped call takes two
 * readings.  Where the kernel itself keeps time with the time-stamp counter (clocksource "tsc":
 * invariant and synchronised across CPUs, checked by the kernel), npkit_now_ns reads the counter
 * instead (~10 ns) and maps it onto CLOCK_REALTIME with the map of tsc_model.h, which the writer
 * thread compares against CLOCK_REALTIME every flush period (npkit_clock_check).  NPKIT_CLOCK=realtime
 * turns this off. */
#ifndef NPKIT_CLOCK_H
#define NPKIT_CLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "tsc_model.h"

#if defined(__x86_64__) && !defined(NPKIT_NO_TSC)
#include <x86intrin.h>
#define NPKIT_HAVE_TSC 1
#else
#define NPKIT_HAVE_TSC 0
#endif

static inline uint64_t npkit_realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t npkit_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The published map: two slots, `gen` names the current one.  A new map goes into the other slot
 * before `gen` moves, so a reader never waits for the writer (a seqlock reader would spin while a
 * preempted writer sat inside its update); it retries only if `gen` moved while it read. */
typedef struct npkit_clock_map {
  _Atomic uint64_t gen;
  _Atomic uint64_t tsc[2], ns[2], mult[2], span[2];
  _Atomic int64_t corr[2];
} npkit_clock_map;
extern npkit_clock_map npkit_clock_pub;
extern _Atomic int npkit_clock_tsc_on;

#if NPKIT_HAVE_TSC
static inline uint64_t npkit_clock_tsc_ns(uint64_t tsc) {
  npkit_tsc_segment s;
  uint64_t g;
  do {
    g = atomic_load_explicit(&npkit_clock_pub.gen, memory_order_acquire);
    unsigned i = (unsigned)(g & 1);
    /* Acquire loads (plain loads on x86): the check of gen below cannot move before them, and
     * a value from a newer update brings that update's gen with it. */
    s.tsc = atomic_load_explicit(&npkit_clock_pub.tsc[i], memory_order_acquire);
    s.ns = atomic_load_explicit(&npkit_clock_pub.ns[i], memory_order_acquire);
    s.mult = atomic_load_explicit(&npkit_clock_pub.mult[i], memory_order_acquire);
    s.corr = atomic_load_explicit(&npkit_clock_pub.corr[i], memory_order_acquire);
    s.span = atomic_load_explicit(&npkit_clock_pub.span[i], memory_order_acquire);
  } while (atomic_load_explicit(&npkit_clock_pub.gen, memory_order_relaxed) != g);
  return npkit_tsc_segment_ns(&s, tsc);
}
#endif

/* Now, in CLOCK_REALTIME ns.  Async-signal-safe. */
static inline uint64_t npkit_now_ns(void) {
#if NPKIT_HAVE_TSC
  if (__builtin_expect(atomic_load_explicit(&npkit_clock_tsc_on, memory_order_acquire), 1))
    return npkit_clock_tsc_ns(__rdtsc());
#endif
  return npkit_realtime_ns();
}

/* Chooses the clock: the counter when `allow_tsc` and the kernel keeps time with it (and the
 * first calibration, ~1 ms, succeeds), else CLOCK_REALTIME.  1 when the counter is used;
 * `why` says why not otherwise.  Should the kernel give the counter up later (its clocksource
 * changes), npkit_clock_check goes back to CLOCK_REALTIME and tells `fallback` why. */
int npkit_clock_start(int allow_tsc, void (*fallback)(const char *why), char *why, size_t whylen);
/* From then on CLOCK_REALTIME only (no writer thread left to keep the map honest). */
void npkit_clock_stop_tsc(void);
/* One comparison with CLOCK_REALTIME, publishing a new map; `horizon_ns`: time to the next one. */
void npkit_clock_check(uint64_t horizon_ns);

typedef struct npkit_clock_quality {
  uint32_t checks, steps;
  uint64_t max_error_ns;
} npkit_clock_quality;
void npkit_clock_quality_get(npkit_clock_quality *q);

#endif
