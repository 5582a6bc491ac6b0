/*
 * The parts of a recorded event that no change of format or of the writer removes, measured on
 * this machine in one run, beside the library's own figures (bench/run_overhead.sh,
 * bench/run_plugin_overhead.sh):
 *   rdtsc          one reading of the time-stamp counter
 *   now_ns         npkit_now_ns: the counter and its map to CLOCK_REALTIME (src/runtime/core/clock.h),
 *                  the library's clock when the kernel keeps time with the counter
 *   realtime       clock_gettime(CLOCK_REALTIME), the clock otherwise (vDSO)
 *   store_event    one 128-byte event copied into a 64 MiB pool of 128 KiB chunks, filled one after
 *                  the other as a thread fills the recorder's chunks (src/runtime/core/recorder.h)
 *   store_event_handed  the same while another thread reads every chunk once it is full, as the
 *                  writer does: the cost of handing the events to another core
 *   locked_add     an uncontended atomic add (lock xadd)
 *   indirect_call  a call through a function pointer that the compiler cannot inline (how NCCL calls
 *                  the plugin's table, and the adapters call the core)
 * Prints one line of name=ns pairs (the median of --repeats runs of --n operations each), then the
 * floor of a recorded NCCL call (2 clock readings and one event) and of a proxy step of the plugin
 * path (5 callbacks: start, 3 states, stop; 5 clock readings, one event).
 *   build/bench/floor_bench [--n N] [--repeats R]
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "clock.h"
#include "npkit/event_log.h"

static double mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static volatile uint64_t sink;

static inline uint64_t read_counter(void) {
#if NPKIT_HAVE_TSC
  return __rdtsc();
#else
  return npkit_realtime_ns();
#endif
}

/* A loop of readings of clk, inlined with it (no call through the pointer in the loop). */
static inline __attribute__((always_inline)) double run_clock(long n, uint64_t (*clk)(void)) {
  uint64_t s = 0;
  double t0 = mono_ns();
  for (long i = 0; i < n; i++) s += clk();
  sink = s;
  return (mono_ns() - t0) / (double)n;
}

static double run_now(long n) { return run_clock(n, npkit_now_ns); }
static double run_realtime(long n) { return run_clock(n, npkit_realtime_ns); }
static double run_rdtsc(long n) { return run_clock(n, read_counter); }

#define POOL_BYTES (64ull << 20)
#define POOL_EVENTS (POOL_BYTES / sizeof(npkit_event))
static npkit_event *pool;

static double run_store(long n) {
  npkit_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = NPKIT_EV_API;
  uint64_t at = 0;
  double t0 = mono_ns();
  for (long i = 0; i < n; i++) {
    ev.start_ns = (uint64_t)i;
    pool[at] = ev;
    at = at + 1 == POOL_EVENTS ? 0 : at + 1;
  }
  sink = pool[n % POOL_EVENTS].start_ns;
  return (mono_ns() - t0) / (double)n;
}

/* The same stores when another thread reads each chunk once it is full, as the recorder's writer
 * does (its quick passes come back for finished chunks within milliseconds): the lines the thread
 * writes next were last read on the other core, so every store first takes them back.  The
 * calling thread's own CPU time per event. */
#define CHUNK_EVENTS 1024u
#define NCHUNKS (POOL_EVENTS / CHUNK_EVENTS)
static _Atomic uint32_t full[NCHUNKS];
static _Atomic int reader_stop;

static void *reader(void *arg) {
  (void)arg;
  uint64_t sum = 0;
  uint32_t c = 0;
  while (!atomic_load_explicit(&reader_stop, memory_order_acquire)) {
    if (!atomic_load_explicit(&full[c], memory_order_acquire)) {
      sched_yield();
      continue;
    }
    const npkit_event *e = &pool[(uint64_t)c * CHUNK_EVENTS];
    for (uint32_t i = 0; i < CHUNK_EVENTS; i++) sum += e[i].start_ns ^ e[i].u.api.bytes;
    atomic_store_explicit(&full[c], 0, memory_order_release);
    c = c + 1 == NCHUNKS ? 0 : c + 1;
  }
  sink = sum;
  return NULL;
}

static double thread_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double run_store_handed(long n) {
  for (uint32_t c = 0; c < NCHUNKS; c++) atomic_store(&full[c], 0);
  atomic_store(&reader_stop, 0);
  pthread_t th;
  if (pthread_create(&th, NULL, reader, NULL) != 0) return -1;
  npkit_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = NPKIT_EV_API;
  double t0 = thread_cpu_ns();
  uint64_t at = 0;
  for (long i = 0; i < n; i++) {
    uint32_t c = (uint32_t)(at / CHUNK_EVENTS);
    if (at % CHUNK_EVENTS == 0)
      while (atomic_load_explicit(&full[c], memory_order_acquire)) sched_yield(); /* not read yet */
    ev.start_ns = (uint64_t)i;
    pool[at] = ev;
    if (at % CHUNK_EVENTS == CHUNK_EVENTS - 1) atomic_store_explicit(&full[c], 1, memory_order_release);
    at = at + 1 == POOL_EVENTS ? 0 : at + 1;
  }
  double per = (thread_cpu_ns() - t0) / (double)n;
  atomic_store(&reader_stop, 1);
  pthread_join(th, NULL);
  return per;
}

static _Atomic uint64_t counter;

static double run_locked(long n) {
  double t0 = mono_ns();
  for (long i = 0; i < n; i++) atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
  sink = atomic_load(&counter);
  return (mono_ns() - t0) / (double)n;
}

__attribute__((noinline)) static uint64_t callee(uint64_t x) {
  __asm__ volatile("" ::: "memory");
  return x + 1;
}
static uint64_t (*volatile target)(uint64_t) = callee;

static double run_indirect(long n) {
  uint64_t s = 0;
  double t0 = mono_ns();
  for (long i = 0; i < n; i++) s = target(s);
  sink = s;
  return (mono_ns() - t0) / (double)n;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(double (*fn)(long), long n, int reps) {
  double v[64];
  for (int r = 0; r < reps; r++) v[r] = fn(n);
  qsort(v, (size_t)reps, sizeof v[0], cmp);
  return v[reps / 2];
}

static void fallback(const char *why) { fprintf(stderr, "floor_bench: clock: %s\n", why); }

int main(int argc, char **argv) {
  long n = 20000000;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--n")) n = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--repeats")) reps = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: floor_bench [--n N] [--repeats R]\n");
      return 2;
    }
  }
  if (n < 1000 || reps < 1 || reps > 64) {
    fprintf(stderr, "floor_bench: --n at least 1000, --repeats 1 to 64\n");
    return 2;
  }
  char why[160] = "";
  int tsc = npkit_clock_start(1, fallback, why, sizeof why);
  if (!tsc) fprintf(stderr, "floor_bench: no counter clock (%s): now_ns is CLOCK_REALTIME\n", why);
  pool = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pool == MAP_FAILED) {
    perror("floor_bench: mmap");
    return 1;
  }
  memset(pool, 0, POOL_BYTES); /* touched once, as the recorder's pool is after its first round */
  double rd = median_of(run_rdtsc, n, reps), now = median_of(run_now, n, reps),
         rt = median_of(run_realtime, n / 4, reps), st = median_of(run_store, n, reps),
         sh = median_of(run_store_handed, n, reps), lk = median_of(run_locked, n, reps),
         ic = median_of(run_indirect, n, reps);
  printf("clock=%s rdtsc=%.2f now_ns=%.2f realtime=%.2f store_event=%.2f store_event_handed=%.2f locked_add=%.2f "
         "indirect_call=%.2f\n",
         tsc ? "tsc" : "realtime", rd, now, rt, st, sh, lk, ic);
  printf("floor_api_call_ns=%.1f (2 now_ns + 1 store_event_handed + 1 indirect_call: the wrapper's call of NCCL)\n",
         2 * now + sh + ic);
  /* NCCL's five calls into the plugin are in plugin_bench's baseline (a plugin that does nothing),
   * so the floor of what the library adds to a step has only its clock readings and its store. */
  printf("floor_proxy_step_ns=%.1f (5 now_ns + 1 store_event_handed: start, 3 states, stop; NCCL's 5 calls "
         "into the plugin are plugin_bench's baseline)\n",
         5 * now + sh);
  munmap(pool, POOL_BYTES);
  return 0;
}
