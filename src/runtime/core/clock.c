#include "clock.h"

#include <pthread.h>
#if NPKIT_HAVE_TSC
#include <cpuid.h>
#endif
#include <stdio.h>
#include <string.h>

npkit_clock_map npkit_clock_pub;
_Atomic int npkit_clock_tsc_on;

/* The model is updated by the writer thread and read at finish: a lock, never on the hot path. */
static pthread_mutex_t model_lock = PTHREAD_MUTEX_INITIALIZER;
static npkit_tsc_model model;
static void (*on_fallback)(const char *why);
static uint64_t source_read_ns; /* CLOCK_MONOTONIC of the last look at the kernel's clocksource */

#if NPKIT_HAVE_TSC
/* A (tick, ns) pair: the reading of CLOCK_REALTIME between the two counter readings closest
 * together of a few tries, so that an interrupt in the middle does not skew it. */
static int read_pair(uint64_t *tsc, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 5; i++) {
    _mm_lfence();
    uint64_t a = __rdtsc();
    _mm_lfence();
    uint64_t r = npkit_realtime_ns();
    _mm_lfence();
    uint64_t b = __rdtsc();
    if (b > a && b - a < best) {
      best = b - a;
      *tsc = a + (b - a) / 2;
      *ns = r;
    }
  }
  return best == UINT64_MAX ? -1 : 0; /* the counter never advanced across one reading */
}

static void publish(const npkit_tsc_segment *s) {
  uint64_t g = atomic_load_explicit(&npkit_clock_pub.gen, memory_order_relaxed);
  unsigned i = (unsigned)((g + 1) & 1);
  /* Release stores: a reader that sees one of them also sees the previous publication, i.e. that
   * gen moved on from the value it started with, and retries. */
  atomic_store_explicit(&npkit_clock_pub.tsc[i], s->tsc, memory_order_release);
  atomic_store_explicit(&npkit_clock_pub.ns[i], s->ns, memory_order_release);
  atomic_store_explicit(&npkit_clock_pub.mult[i], s->mult, memory_order_release);
  atomic_store_explicit(&npkit_clock_pub.corr[i], s->corr, memory_order_release);
  atomic_store_explicit(&npkit_clock_pub.span[i], s->span, memory_order_release);
  atomic_store_explicit(&npkit_clock_pub.gen, g + 1, memory_order_release);
}

/* Whether the CPU says its counter is invariant: it runs at one rate whatever the power state
 * (CPUID 0x80000007, EDX bit 8; Linux's flags constant_tsc and nonstop_tsc). */
static int counter_is_invariant(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000007u, &a, &b, &c, &d)) return 0;
  return (d >> 8) & 1u;
}

static const char clocksource_path[] = "/sys/devices/system/clocksource/clocksource0/current_clocksource";

/* 1: the kernel keeps time with the counter; 0: with something else; -1: cannot tell (the file
 * cannot be read: no sysfs in a container, out of file descriptors...). */
static int kernel_uses_tsc(char *why, size_t whylen) {
  const char *path = clocksource_path;
  FILE *f = fopen(path, "r");
  char name[64] = "";
  if (f == NULL) {
    snprintf(why, whylen, "cannot read %s", path);
    return -1;
  }
  if (fgets(name, sizeof name, f) == NULL) name[0] = '\0';
  fclose(f);
  name[strcspn(name, "\n")] = '\0';
  if (name[0] == '\0') {
    snprintf(why, whylen, "%s is empty", path);
    return -1;
  }
  if (strcmp(name, "tsc") == 0) return 1;
  /* A KVM guest keeps time with kvm-clock, which is the counter too: the host publishes a scale
   * and an offset and the vDSO computes the time from the guest's counter with them (pvclock).
   * Where the counter is invariant, mapping it here is as exact as on a host with clocksource
   * tsc, and the comparisons with CLOCK_REALTIME follow whatever the host changes; a reading of
   * kvm-clock through clock_gettime costs 30 ns on such a guest against 13 for the counter
   * (bench/RESULTS.md), twice per recorded call. */
  if (strcmp(name, "kvm-clock") == 0 && counter_is_invariant()) return 1;
  snprintf(why, whylen, "the kernel's clocksource is '%s', not 'tsc'", name);
  return 0;
}
#endif

int npkit_clock_start(int allow_tsc, void (*fallback)(const char *why), char *why, size_t whylen) {
  on_fallback = fallback;
  snprintf(why, whylen, "NPKIT_CLOCK=realtime");
  if (!allow_tsc) return 0;
#if NPKIT_HAVE_TSC
  if (kernel_uses_tsc(why, whylen) != 1) return 0;
  uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
  int read_ok = read_pair(&t0, &n0) == 0;
  struct timespec pause = {0, 1000000};
  while (nanosleep(&pause, &pause) != 0) {
  }
  read_ok = read_ok && read_pair(&t1, &n1) == 0;
  pthread_mutex_lock(&model_lock);
  int ok = read_ok && npkit_tsc_model_init(&model, t0, n0, t1, n1) == 0;
  if (ok) publish(&model.seg);
  pthread_mutex_unlock(&model_lock);
  if (!ok) {
    snprintf(why, whylen, "the time-stamp counter did not advance with CLOCK_REALTIME");
    return 0;
  }
  atomic_store_explicit(&npkit_clock_tsc_on, 1, memory_order_release);
  why[0] = '\0';
  return 1;
#else
  snprintf(why, whylen, "no time-stamp counter support on this architecture");
  return 0;
#endif
}

void npkit_clock_stop_tsc(void) { atomic_store_explicit(&npkit_clock_tsc_on, 0, memory_order_release); }

void npkit_clock_check(uint64_t horizon_ns) {
#if NPKIT_HAVE_TSC
  if (!atomic_load_explicit(&npkit_clock_tsc_on, memory_order_acquire)) return;
  /* The kernel gives up the counter when its watchdog finds it unstable (or an administrator
   * switches): from then on the counter is no longer trusted here either. */
  char why[160];
  uint64_t mono = npkit_mono_ns();
  if (mono - source_read_ns >= 1000000000ull) { /* a file read: once a second is enough */
    source_read_ns = mono;
    if (kernel_uses_tsc(why, sizeof why) == 0) {
      npkit_clock_stop_tsc();
      if (on_fallback != NULL) on_fallback(why);
      return;
    }
  }
  uint64_t tsc, ns;
  if (read_pair(&tsc, &ns) != 0) return; /* no usable reading this time */
  pthread_mutex_lock(&model_lock);
  npkit_tsc_segment prev = model.seg;
  uint32_t steps = model.steps;
  npkit_tsc_model_update(&model, tsc, ns, horizon_ns);
  /* Until the new segment is published, threads use the old one: start it now, where the old
   * one is, so that no thread sees time go back. */
  if (model.steps == steps) npkit_tsc_model_restart_at(&model, &prev, __rdtsc());
  publish(&model.seg);
  pthread_mutex_unlock(&model_lock);
#else
  (void)horizon_ns;
#endif
}

void npkit_clock_quality_get(npkit_clock_quality *q) {
  pthread_mutex_lock(&model_lock);
  q->checks = model.checks;
  q->steps = model.steps;
  q->max_error_ns = model.max_error_ns;
  pthread_mutex_unlock(&model_lock);
}
