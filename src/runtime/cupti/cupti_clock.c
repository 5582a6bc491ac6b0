#include "cupti_clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cupti_clock_map.h"
#include "cupti_loader.h"

/* Farther than this from CLOCK_REALTIME is another clock. */
#define OTHER_CLOCK_NS (86400ull * 1000000000ull)
/* Between the first two readings of another clock: long enough that the rate they give, used
 * for the stamps before the first one, is not spoilt by the uncertainty of a reading. */
#define CALIBRATION_NS 20000000ull

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static npkit_cclock map;
static npkit_cupti_clock_stats stats;
/* CLOCK_REALTIME at the latest reading: the stamps a drain reads are near it when they are in
 * CLOCK_REALTIME (one clock reading per drain, not one per record). */
static _Atomic uint64_t read_at;

static uint64_t distance(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

/* CUPTI's clock c and CLOCK_REALTIME r at about the same moment (the best of three tries);
 * 0 when CUPTI cannot say. */
static int reading(uint64_t *c, uint64_t *r) {
  if (npkit_cupti.GetTimestamp == NULL) return 0;
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; i++) {
    uint64_t v = 0, a = npkit_realtime_ns();
    if (npkit_cupti.GetTimestamp(&v) != CUPTI_SUCCESS) return 0;
    uint64_t b = npkit_realtime_ns();
    if (b - a < best) {
      best = b - a;
      *c = v;
      *r = a + (b - a) / 2;
    }
  }
  return 1;
}

/* 1 when this reading is the first to show another clock. */
static int read_locked(void) {
  atomic_store_explicit(&read_at, npkit_realtime_ns(), memory_order_relaxed);
  uint64_t c, r;
  if (!reading(&c, &r) || distance(c, r) <= OTHER_CLOCK_NS) return 0;
  npkit_cclock_add(&map, c, r);
  if (stats.foreign) return 0;
  stats.foreign = 1;
  struct timespec ts = {0, (long)CALIBRATION_NS};
  nanosleep(&ts, NULL);
  if (reading(&c, &r) && distance(c, r) > OTHER_CLOCK_NS) npkit_cclock_add(&map, c, r);
  return 1;
}

int npkit_cupti_clock_start(void) {
  pthread_mutex_lock(&lock);
  npkit_cclock_init(&map);
  memset(&stats, 0, sizeof stats);
  int first = read_locked();
  pthread_mutex_unlock(&lock);
  return first;
}

int npkit_cupti_clock_read(void) {
  pthread_mutex_lock(&lock);
  int first = read_locked();
  pthread_mutex_unlock(&lock);
  return first;
}

/* One stamp: 1 when it is CLOCK_REALTIME now (kept or mapped). */
static int fix_one(uint64_t *t, uint64_t now, int *mapped) {
  if (*t == 0 || distance(*t, now) <= OTHER_CLOCK_NS) return 1;
  if (!npkit_cclock_map(&map, *t, t)) return 0;
  *mapped = 1;
  return 1;
}

int npkit_cupti_clock_fix(uint64_t *start, uint64_t *end) {
  uint64_t now = atomic_load_explicit(&read_at, memory_order_relaxed);
  if (now == 0) return 1; /* no reading taken: CUPTI's own clock */
  if ((*start == 0 || distance(*start, now) <= OTHER_CLOCK_NS) &&
      (*end == 0 || distance(*end, now) <= OTHER_CLOCK_NS))
    return 1; /* CUPTI's own clock: the common case, without the lock */
  pthread_mutex_lock(&lock);
  int mapped = 0, ok = fix_one(start, now, &mapped) && fix_one(end, now, &mapped);
  if (!ok) {
    *start = *end = 0;
    stats.unmapped++;
  } else if (mapped) {
    stats.mapped++;
  }
  pthread_mutex_unlock(&lock);
  return ok;
}

void npkit_cupti_clock_stats_get(npkit_cupti_clock_stats *s) {
  pthread_mutex_lock(&lock);
  *s = stats;
  pthread_mutex_unlock(&lock);
}
