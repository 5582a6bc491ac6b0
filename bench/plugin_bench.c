/* plugin_bench: what the profiler-plugin path costs the thread NCCL reports on.
 *
 * Loads the library as NCCL loads its profiler plugin (dlopen, dlsym of ncclProfiler_v5 or _v4)
 * and drives its table with the events NCCL 2.28.9 emits for one collective (v2.28.9-1
 * src/plugin/profiler.cc; order of src/enqueue.cc and src/group.cc):
 *   v5: GroupApi (+GroupStartApiStop, GroupEndApiStart), CollApi, KernelLaunch, Group, Coll, and
 *       per channel a KernelCh with its GPU start, KernelChStop and stop;
 *   v4 (NCCL 2.27): Group, Coll and the KernelCh events, no API-level event.
 * An event is one start..stop (the states in between included).  All on one thread: NCCL spreads
 * them over the user's, the launching and the proxy thread, each of which pays its share.
 *   plugin_bench LIBRARY [--abi 4|5] [--collectives N] [--channels C] [--repeats R]
 * Prints on stdout: abi=A channels=C events_per_collective=E ns_per_collective=X ns_per_event=Y
 * (CPU time of the calling thread, medians over the repeats) other_cpu_ns_per_event=Z (the
 * library's writer thread). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin_abi.h"

static double clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  long n = 200000, reps = 5, abi = 5, nch = 16;
  if (argc < 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: plugin_bench LIBRARY [--abi 4|5] [--collectives N] [--channels C] [--repeats R]\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    long v = atol(argv[i + 1]);
    if (!strcmp(argv[i], "--abi")) abi = v;
    else if (!strcmp(argv[i], "--collectives")) n = v;
    else if (!strcmp(argv[i], "--channels")) nch = v;
    else if (!strcmp(argv[i], "--repeats")) reps = v;
    else return 2;
  }
  if ((abi != 4 && abi != 5) || n < 1 || nch < 1 || nch > 64 || reps < 1 || reps > 64) return 2;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "plugin_bench: %s\n", dlerror());
    return 1;
  }
  npkit_abi_table_v5 *t5 = abi == 5 ? dlsym(lib, "ncclProfiler_v5") : NULL;
  npkit_abi_table_v4 *t4 = abi == 4 ? dlsym(lib, "ncclProfiler_v4") : NULL;
  if (t5 == NULL && t4 == NULL) {
    fprintf(stderr, "plugin_bench: no ncclProfiler_v%ld in %s\n", abi, argv[1]);
    return 1;
  }
  int mask = 0;
  void *ctx = NULL;
  if (t5 != NULL) t5->init(&ctx, 0x1234, &mask, "bench", 1, 8, 0, NULL);
  else t4->init(&ctx, &mask, "bench", 0x1234, 1, 8, 0, NULL);
  if (ctx == NULL) {
    fprintf(stderr, "plugin_bench: the plugin did not initialise (NPKIT_DISABLE or NPKIT_PLUGIN=0?)\n");
    return 1;
  }
  double per_coll[64];
  uint64_t gpu = 1700000000000000000ull;
  long events = abi == 5 ? 5 + nch : 2 + nch;
  double other0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - clock_ns(CLOCK_THREAD_CPUTIME_ID);
  for (long r = 0; r < reps; r++) {
    double t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID); /* the thread's own CPU: other load stays out */
    for (long i = 0; i < n; i++) {
      void *gapi = NULL, *capi = NULL, *kl = NULL, *grp = NULL, *coll = NULL;
      npkit_abi_v5_descr d5;
      npkit_abi_v4_descr d4;
      npkit_abi_v4_state_args a;
      memset(&a, 0, sizeof a);
      if (t5 != NULL) {
        memset(&d5, 0, sizeof d5);
        d5.type = NPKIT_NCCL_EV_GROUP_API;
        d5.u.group_api.group_depth = 1;
        t5->start_event(ctx, &gapi, &d5);
        t5->record_event_state(gapi, NPKIT_NCCL_ST_GROUP_START_API_STOP, NULL);
        memset(&d5, 0, sizeof d5);
        d5.type = NPKIT_NCCL_EV_COLL_API;
        d5.parent = gapi;
        d5.u.coll_api.func = "AllReduce";
        d5.u.coll_api.count = 262144;
        d5.u.coll_api.datatype = "ncclFloat32";
        t5->start_event(ctx, &capi, &d5);
        t5->stop_event(capi);
        t5->record_event_state(gapi, NPKIT_NCCL_ST_GROUP_END_API_START, NULL);
        memset(&d5, 0, sizeof d5);
        d5.type = NPKIT_NCCL_EV_KERNEL_LAUNCH;
        d5.parent = gapi;
        t5->start_event(ctx, &kl, &d5);
        t5->stop_event(kl);
        memset(&d5, 0, sizeof d5);
        d5.type = NPKIT_NCCL_EV_GROUP;
        t5->start_event(ctx, &grp, &d5);
        memset(&d5, 0, sizeof d5);
        d5.type = NPKIT_NCCL_EV_COLL;
        d5.parent = capi;
        d5.u.coll.v4 = (npkit_abi_v4_coll){(uint64_t)i, "AllReduce", NULL, NULL, 262144, 0,
                                           "ncclFloat32", (uint8_t)nch, 16, "RING", "SIMPLE"};
        d5.u.coll.parent_group = grp;
        t5->start_event(ctx, &coll, &d5);
        t5->stop_event(coll);
        t5->stop_event(grp);
        t5->stop_event(gapi);
      } else {
        memset(&d4, 0, sizeof d4);
        d4.type = NPKIT_NCCL_EV_GROUP;
        t4->start_event(ctx, &grp, &d4);
        memset(&d4, 0, sizeof d4);
        d4.type = NPKIT_NCCL_EV_COLL;
        d4.parent = grp;
        d4.u.coll = (npkit_abi_v4_coll){(uint64_t)i, "AllReduce", NULL, NULL, 262144, 0,
                                        "ncclFloat32", (uint8_t)nch, 16, "RING", "SIMPLE"};
        t4->start_event(ctx, &coll, &d4);
        t4->stop_event(coll);
        t4->stop_event(grp);
      }
      for (long c = 0; c < nch; c++) { /* the proxy thread's part */
        void *h = NULL;
        if (t5 != NULL) {
          memset(&d5, 0, sizeof d5);
          d5.type = NPKIT_NCCL_EV_KERNEL_CH;
          d5.parent = coll;
          d5.u.kernel_ch.channel = (uint8_t)c;
          d5.u.kernel_ch.ptimer = gpu + 1000;
          t5->start_event(ctx, &h, &d5);
        } else {
          memset(&d4, 0, sizeof d4);
          d4.type = NPKIT_NCCL_EV_KERNEL_CH;
          d4.parent = coll;
          d4.u.kernel_ch.channel = (uint8_t)c;
          d4.u.kernel_ch.ptimer = gpu + 1000;
          t4->start_event(ctx, &h, &d4);
        }
        a.kernel_ch.ptimer = gpu + 50000;
        if (t5 != NULL) {
          t5->record_event_state(h, NPKIT_NCCL_ST_KERNEL_CH_STOP, &a);
          t5->stop_event(h);
        } else {
          t4->record_event_state(h, NPKIT_NCCL_ST_KERNEL_CH_STOP, &a);
          t4->stop_event(h);
        }
      }
      gpu += 100000;
    }
    per_coll[r] = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)n;
    struct timespec pause = {1, 500000000}; /* the writer streams the repeat to disk */
    nanosleep(&pause, NULL);
  }
  double other = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - clock_ns(CLOCK_THREAD_CPUTIME_ID) - other0;
  qsort(per_coll, (size_t)reps, sizeof per_coll[0], cmp);
  double med = per_coll[reps / 2];
  printf("abi=%ld channels=%ld events_per_collective=%ld ns_per_collective=%.1f ns_per_event=%.1f "
         "other_cpu_ns_per_event=%.1f\n",
         abi, nch, events, med, med / (double)events, other / (double)(n * reps * events));
  if (t5 != NULL) t5->finalize(ctx);
  else t4->finalize(ctx);
  return 0;
}
