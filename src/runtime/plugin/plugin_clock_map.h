/* The map from a GPU's clock onto the host clock, for NCCL's kernel-channel stamps.
 *
 * NCCL's kernel-channel events carry the raw %globaltimer of the GPU (NVIDIA/nccl v2.28.9-1
 * src/device/common.h, src/transport/profiler.cc; ext-profiler/README.md asks the plugin to
 * convert them).  That timer runs on the GPU's own oscillator: near epoch nanoseconds, but off by
 * microseconds to milliseconds and drifting by tens of ppm.  Nothing pairs a GPU stamp with a host
 * time exactly, but every event bounds the offset (host - GPU) from both sides:
 *  - from above: NCCL reports a stamp only after the GPU wrote it, so the host time of the report
 *    minus the stamp is at least the offset (for the start and for the stop);
 *  - from below: a host time known to come before the kernel started (the launch, or the host
 *    callback that precedes a graph's kernel) minus the start stamp is at most the offset.
 * The bounds of a window of 10 ms are kept, and those of the windows before it (up to 64, within
 * 2 s of GPU time) still bound the offset, loosened by the drift they may hide: every estimate
 * uses the tightest bounds of that whole history (its envelope).  The two sides are not alike.
 * A kernel often starts long after its launch (it waits for the work queued before it on its
 * stream: on an H200, launches came 2 to 44 ms before their kernels, device check of 2026-12-04),
 * so a lower bound is tight only now and then; NCCL's proxy thread reports a stamp within tens of
 * microseconds of the GPU writing it (18 us there), so the upper bounds are tight nearly always.
 * The offset is therefore taken NPKIT_PLUGIN_CLOCK_REPORT_NS below the upper bound (in the middle
 * when the interval is narrower than twice that), never outside the interval; the error reported
 * with every mapped event is the larger distance from the estimate to the interval's ends.  The
 * drift is the least-squares slope of the middles of the windows bounded on both sides by their own
 * events, over the last few hundred milliseconds, each weighted by its half width, and is applied once its own uncertainty is below
 * NPKIT_PLUGIN_CLOCK_SLOPE_PPB: a slope fitted to loose bounds (a loaded host reports stamps late)
 * would stretch every duration by more than the drift it removes.  A window that has only one
 * kind of bound leans on the prediction of the previous ones.  Bounds that contradict each other
 * (the GPU clock jumped, or a wrong lower bound) restart the window from the newest event, and a
 * history that contradicts the open window is dropped.
 *
 * Pure arithmetic, no clock reading and no locking: the caller serialises the calls per map. */
#ifndef NPKIT_PLUGIN_CLOCK_MAP_H
#define NPKIT_PLUGIN_CLOCK_MAP_H

#include <stdint.h>

#include "npkit/event_log.h"

#define NPKIT_PLUGIN_CLOCK_WINDOW_NS 10000000ull /* host time per estimation window */
#define NPKIT_PLUGIN_CLOCK_HISTORY 64            /* window estimates the drift is fitted to */
#define NPKIT_PLUGIN_CLOCK_ERRORS 1024           /* half widths kept for the median */
#define NPKIT_PLUGIN_CLOCK_SLOPE_PPB 10000       /* uncertainty a fitted drift must be below to be applied */
#define NPKIT_PLUGIN_CLOCK_DRIFT_PPB 100000      /* drift allowed for while none is fitted: beyond any oscillator's */
#define NPKIT_PLUGIN_CLOCK_HORIZON_NS 2000000000ll /* GPU time over which closed windows still bound the offset */
#define NPKIT_PLUGIN_CLOCK_REPORT_NS 20000       /* the estimate's distance below a wide interval's upper end */

typedef struct npkit_plugin_clock_point {
  uint64_t gpu;          /* GPU time the window's bounds and estimate apply at */
  int64_t lo, hi;        /* its own bounds on host - GPU there (has_lo, has_hi) */
  int64_t offset;        /* its estimate (with the history's bounds) */
  int64_t error;         /* the estimate's error, -1 when one-sided */
  uint8_t has_lo, has_hi;
} npkit_plugin_clock_point;

typedef struct npkit_plugin_clock_map {
  /* the open window: bounds on the offset at gref, drift removed with `slope` */
  uint64_t w_host0;     /* host time of its first sample */
  uint64_t gref;
  int64_t lo, hi;
  int has_lo, has_hi, open;
  /* the closed windows, and the fit of their two-sided estimates */
  double slope;         /* d(offset)/d(gpu time) */
  int fitted;           /* slope comes from a fit (else 0 and DRIFT_PPB is allowed for) */
  npkit_plugin_clock_point hist[NPKIT_PLUGIN_CLOCK_HISTORY];
  uint32_t nhist, hhead;
  /* the closed windows' bounds at gref: fixed while a window is open (gref, slope and history
   * change only when one opens), so taken once then rather than at every event */
  int64_t h_lo, h_hi;
  int h_has_lo, h_has_hi;
  /* statistics */
  uint64_t samples;
  uint32_t windows, inconsistent, one_sided;
  int64_t last_offset;
  uint64_t last_gpu;
  int64_t max_error;
  int64_t errors[NPKIT_PLUGIN_CLOCK_ERRORS];
  uint32_t nerrors, ehead;
} npkit_plugin_clock_map;

void npkit_plugin_clock_map_init(npkit_plugin_clock_map *m);

/* An estimate taken once and used for several events: the channels of one task are mapped with
 * the same one, so that their relative times (and the task's GPU time) are the GPU's exactly. */
typedef struct npkit_plugin_clock_fix {
  int valid;
  int64_t offset;
  uint64_t gref;
  double slope;
  int64_t error;
} npkit_plugin_clock_fix;

/* One kernel-channel event: GPU stamps g0 <= g1 of its start and stop, host times h0, h1 at which
 * NCCL reported them, and lb, a host time before the kernel started (0: none known).  Its bounds
 * refine the map; the host times of g0 and g1 and the error bound (-1: the estimate had only one
 * kind of bound) come from *fix when it is valid (NULL: none), else from the map's estimate,
 * which is then stored in *fix. */
void npkit_plugin_clock_map_add(npkit_plugin_clock_map *m, uint64_t g0, uint64_t g1, uint64_t h0, uint64_t h1,
                   uint64_t lb, npkit_plugin_clock_fix *fix, uint64_t *out0, uint64_t *out1,
                   int64_t *error_ns);

/* The map's state as a log record (ctx left to the caller). */
void npkit_plugin_clock_map_stats(const npkit_plugin_clock_map *m, npkit_ev_plugin_clock *out);

#endif
