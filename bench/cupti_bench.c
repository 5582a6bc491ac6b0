/* cupti_bench: how fast the GPU source turns CUPTI kernel records into events of the log.
 *
 * The completion path of the library (cupti_buffers.c, cupti_drain.c, cupti_records.c,
 * cupti_names.c, gpu_corr.c, log_writer.c: compiled in) is driven by the fake libcupti exactly as
 * by CUPTI: the fake fills the library's activity buffers with CUDA 13 kernel records (Kernel10,
 * 216 bytes), hands them back through the completion callback, and the drain reads them, ties each
 * to its NCCL call through an EXTERNAL_CORRELATION record and the call ring (--attributed 1, the
 * default; 0 for compute kernels that belong to no call), and appends 128-byte events to a log.
 * Each launch is a traced cuLaunchKernelEx, as the library asks CUPTI for (cupti_launch_api.h):
 * its API record comes with the kernel record (and the correlation record before it), so a launch
 * costs three records; --api-records 0 leaves the API call untraced (one record per launch, no
 * correlation possible), the baseline for what the API records cost.
 *
 * Records are produced in chunks (a chunk is what a periodic flush finds: --chunk), and only the
 * drain of each chunk is timed; the fake's own cost of writing the records is reported apart.
 * Prints one result line per repetition and the best on stdout. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_buffers.h"
#include "cupti_drain.h"
#include "cupti_launch_api.h"
#include "cupti_loader.h"
#include "fake_cupti_hooks.h"
#include "cupti_corr.h"
#include "log_writer.h"
#include "nccl_names.h"

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
/* The drain runs on this thread, system calls included: its CPU time does not depend on what
 * else the machine runs, its wall time does. */
static double cpu_s(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }

static void usage(void) {
  fprintf(stderr,
          "usage: cupti_bench FAKE_LIBCUPTI [--records N] [--chunk C] [--attributed 0|1]\n"
          "                   [--api-records 0|1] [--reps R] [--log PATH]\n"
          "  FAKE_LIBCUPTI   build/tests/fakes/libcupti.so.13\n"
          "  --records N     kernel records per repetition (default 1000000)\n"
          "  --chunk C       records per flush and drain (default 50000, at most 60000)\n"
          "  --attributed B  1: every kernel belongs to an NCCL call (default); 0: none does\n"
          "  --api-records B 1: each launch's API record is traced, as the library has it\n"
          "                  (default); 0: untraced launches, one record each (needs\n"
          "                  --attributed 0: nothing can be correlated without them)\n"
          "  --reps R        repetitions (default 3)\n"
          "  --log PATH      the event log written (default $TMPDIR/cupti_bench_<pid>.npkit,\n"
          "                  removed at the end; /dev/null measures without the page cache)\n");
}

static int parse(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* Publishes n finished AllReduce calls and returns the external id of the first. */
static uint64_t publish_calls(uint64_t n) {
  uint64_t first = 0;
  for (uint64_t i = 0; i < n; i++) {
    npkit_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = NPKIT_EV_API;
    ev.func = NPKIT_FN_AllReduce;
    ev.thread = 1;
    ev.start_ns = 1000 + i * 10;
    ev.end_ns = ev.start_ns + 5;
    ev.u.api.bytes = 1 << 20;
    ev.u.api.seq = i;
    ev.u.api.comm = 1;
    ev.u.api.corr_id = npkit_cupti_corr_begin();
    npkit_cupti_corr_end();
    npkit_cupti_corr_publish(&ev, 1);
    if (i == 0) first = ev.u.api.corr_id;
  }
  return first;
}

int main(int argc, char **argv) {
  unsigned long long records = 1000000, chunk = 50000, attributed = 1, reps = 3, api_records = 1;
  const char *log_arg = NULL;
  if (argc < 2 || argv[1][0] == '-') {
    usage();
    return 2;
  }
  for (int i = 2; i < argc; i += 2) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    int bad = 0;
    if (!strcmp(argv[i], "--records")) bad = parse(v, 1, 100000000, &records);
    else if (!strcmp(argv[i], "--chunk")) bad = parse(v, 1, 60000, &chunk);
    else if (!strcmp(argv[i], "--attributed")) bad = parse(v, 0, 1, &attributed);
    else if (!strcmp(argv[i], "--api-records")) bad = parse(v, 0, 1, &api_records);
    else if (!strcmp(argv[i], "--reps")) bad = parse(v, 1, 100, &reps);
    else if (!strcmp(argv[i], "--log")) log_arg = v;
    else bad = -1;
    if (bad != 0 || v[0] == '\0') {
      usage();
      return 2;
    }
  }

  char why[512];
  if (npkit_cupti_load(argv[1], why, sizeof why) != 0) {
    fprintf(stderr, "cupti_bench: %s\n", why);
    return 1;
  }
  void *lib = npkit_cupti.handle;
  npkit_fake_burst_fn burst;
  *(void **)(&burst) = dlsym(lib, NPKIT_FAKE_CUPTI_BURST);
  if (burst == NULL) {
    fprintf(stderr, "cupti_bench: %s is not the fake libcupti (no %s)\n", argv[1], NPKIT_FAKE_CUPTI_BURST);
    return 1;
  }
  if (attributed && !api_records) {
    usage();
    return 2;
  }
  if (npkit_cupti_corr_init() != 0) return 1;
  /* As the library configures CUPTI: 4 MiB buffers, enough of them for one chunk. */
  npkit_cupti_bufs_config(4u << 20, 4096, 1, NULL);
  if (npkit_cupti.ActivityRegisterCallbacks(npkit_cupti_buffer_requested, npkit_cupti_buffer_completed) !=
          CUPTI_SUCCESS ||
      npkit_cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
      npkit_cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) != CUPTI_SUCCESS) {
    fprintf(stderr, "cupti_bench: the fake CUPTI refused the setup\n");
    return 1;
  }
  if (api_records && npkit_cupti_trace_launch_api(why, sizeof why) != NPKIT_LAUNCH_API_SELECTED) {
    fprintf(stderr, "cupti_bench: the fake CUPTI does not trace single API calls\n");
    return 1;
  }

  char path[1024];
  if (log_arg != NULL) {
    snprintf(path, sizeof path, "%s", log_arg);
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/cupti_bench_%d.npkit", tmp && *tmp ? tmp : "/tmp", (int)getpid());
  }
  npkit_log_header h;
  npkit_log_header_init(&h);
  h.rank = h.world_size = h.local_rank = -1;
  double best = 0;
  for (unsigned long long rep = 0; rep < reps; rep++) {
    npkit_log_writer *log = npkit_logw_open(path, &h, why, sizeof why);
    if (log == NULL) {
      fprintf(stderr, "cupti_bench: %s\n", why);
      return 1;
    }
    npkit_cupti_drain_attach(log);
    npkit_fake_kernel k = {.name = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
                           .api = {NPKIT_FAKE_API_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
                           .device = 0, .stream = 0x1000, .start_ns = 1700000000000000000ull,
                           .end_ns = 1700000000000010000ull, .grid = {2, 1, 1}, .block = {640, 1, 1},
                           .registers = 96, .static_shared = 0, .dynamic_shared = 8192};
    npkit_cupti_counts before;
    npkit_cupti_drain_counts(&before);
    double t_fill = 0, t_drain = 0, c_drain = 0;
    for (unsigned long long done = 0; done < records;) {
      uint64_t n = records - done < chunk ? records - done : chunk;
      uint64_t first_ext = attributed ? publish_calls(n) : 0;
      double t0 = now_s();
      if (burst(n, &k, first_ext) != n) {
        fprintf(stderr, "cupti_bench: the fake wrote fewer records than asked\n");
        if (log_arg == NULL) unlink(path);
        return 1;
      }
      /* what the library's periodic flush does */
      npkit_cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      double t1 = now_s(), c1 = cpu_s();
      npkit_cupti_drain(NPKIT_DRAIN_FLUSHED);
      double t2 = now_s(), c2 = cpu_s();
      t_fill += t1 - t0;
      t_drain += t2 - t1;
      c_drain += c2 - c1;
      k.start_ns += n * 10000;
      k.end_ns += n * 10000;
      done += n;
    }
    double t3 = now_s(), c3 = cpu_s();
    npkit_cupti_drain(NPKIT_DRAIN_FINAL);
    t_drain += now_s() - t3;
    c_drain += cpu_s() - c3;
    npkit_cupti_drain_attach(NULL);
    npkit_logw_close(log, NULL);
    npkit_cupti_counts after;
    npkit_cupti_drain_counts(&after);
    uint64_t stored = after.kernels - before.kernels;
    uint64_t tied = after.attributed - before.attributed;
    uint64_t api = after.api_records - before.api_records;
    if (stored != records || tied != (attributed ? records : 0) || after.cupti_dropped != 0 ||
        api != (api_records ? records : 0)) {
      fprintf(stderr, "cupti_bench: %llu records stored (%llu tied to calls, %llu dropped), want %llu\n",
              (unsigned long long)stored, (unsigned long long)tied,
              (unsigned long long)after.cupti_dropped, records);
      if (log_arg == NULL) unlink(path);
      return 1;
    }
    double rate = (double)records / c_drain;
    if (rate > best) best = rate;
    unsigned per_launch = 1u + (api_records ? 1u : 0u) + (attributed ? 1u : 0u);
    printf("rep %llu: %llu kernel records (%s), %u CUPTI records per launch, in chunks of %llu: "
           "drain %.3f s CPU = %.2f M launches/s, %.1f ns CPU per launch, %.1f ns per record "
           "(%.3f s wall = %.2f M/s); the fake wrote them in %.3f s\n",
           rep + 1, records, attributed ? "each tied to an NCCL call" : "no NCCL call", per_launch,
           chunk, c_drain, rate / 1e6, 1e9 / rate, 1e9 / rate / per_launch, t_drain,
           (double)records / t_drain / 1e6, t_fill);
  }
  if (log_arg == NULL) unlink(path);
  printf("best: %.2f M launches (kernel records) per CPU second through the completion path into %s "
         "= %.1f ns per launch\n", best / 1e6, log_arg ? log_arg : "a log file", 1e9 / best);
  return 0;
}
