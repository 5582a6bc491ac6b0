/* Cost of one wrapped NCCL call.  Run the same binary with and without LD_PRELOAD of the library
 * (bench/run_overhead.sh does both in one run) against the fake NCCL in no-op mode, so the time per
 * call is the dispatch alone and the difference is what the library adds.
 *
 *   overhead [--calls N] [--repeats R] [--threads T] [--pause-ms P]
 * Between repeats the threads sleep P ms (not timed), so that the library's writer thread can
 * stream the previous repeat to disk instead of competing with the measured loop for the cores.
 * prints one line: threads=T calls=N repeats=R median_ns_per_call=X min_ns_per_call=Y
 * sorted_ns_per_call=... other_cpu_ns_per_call=Z machine_cpu_ns=M, where Z is the CPU time of the
 * process's other threads (the library's writer thread) per call made, measured after a final
 * pause that lets them finish the last repeat, and M the CPU time of the library's machine thread
 * ("npkit-machine", NPKIT_GPU_SAMPLE_RATE), 0 without one (bench/sampling_bench.sh). */
#define _GNU_SOURCE
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>

static long calls = 1000000, repeats = 7;
static int nthreads = 1;
static long pause_ms = 0;
static ncclComm_t comms[64];
static pthread_barrier_t barrier;
static double per_call_ns[64][64];
static double worker_cpu_ns[64];

static double cpu_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *worker(void *arg) {
  int id = (int)(long)arg;
  float buf[4] = {1, 2, 3, 4};
  for (long r = 0; r < repeats; r++) {
    if (pause_ms > 0) {
      struct timespec ts = {pause_ms / 1000, pause_ms % 1000 * 1000000L};
      nanosleep(&ts, NULL);
    }
    pthread_barrier_wait(&barrier);
    double t0 = now_ns();
    for (long i = 0; i < calls; i++)
      if (ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comms[id], 0) != ncclSuccess) {
        fprintf(stderr, "overhead: ncclAllReduce failed\n");
        exit(1);
      }
    per_call_ns[id][r] = (now_ns() - t0) / (double)calls;
  }
  worker_cpu_ns[id] = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  return NULL;
}

/* CPU ns of the threads of this process named `name` (/proc/self/task/T/comm), from their
 * schedstat (ns on the CPU, exact where the tick-based utime is not). */
static double named_threads_cpu_ns(const char *name) {
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return 0;
  double total = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char path[300], comm[64] = "";
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    if (fgets(comm, sizeof comm, f) == NULL) comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    if (strcmp(comm, name) != 0) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
    unsigned long long run = 0;
    if ((f = fopen(path, "r")) != NULL) {
      if (fscanf(f, "%llu", &run) != 1) run = 0;
      fclose(f);
    }
    total += (double)run;
  }
  closedir(d);
  return total;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--calls")) calls = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--repeats")) repeats = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) nthreads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--pause-ms")) pause_ms = atol(argv[i + 1]);
    else {
      fprintf(stderr, "usage: overhead [--calls N] [--repeats R] [--threads T] [--pause-ms P]\n");
      return 2;
    }
  }
  if (calls < 1 || repeats < 1 || repeats > 64 || nthreads < 1 || nthreads > 64) {
    fprintf(stderr, "overhead: calls >= 1, 1 <= repeats <= 64, 1 <= threads <= 64\n");
    return 2;
  }
  if (ncclCommInitAll(comms, nthreads, NULL) != ncclSuccess) {
    fprintf(stderr, "overhead: ncclCommInitAll failed\n");
    return 1;
  }
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
  pthread_t th[64];
  for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, (void *)(long)t);
  for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
  if (pause_ms > 0) {
    struct timespec ts = {pause_ms / 1000, pause_ms % 1000 * 1000000L};
    nanosleep(&ts, NULL);
  }
  double others = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  for (int t = 0; t < nthreads; t++) others -= worker_cpu_ns[t];
  /* Per repeat, the slowest thread; then the median and minimum over repeats. */
  double worst[64];
  for (long r = 0; r < repeats; r++) {
    worst[r] = 0;
    for (int t = 0; t < nthreads; t++)
      if (per_call_ns[t][r] > worst[r]) worst[r] = per_call_ns[t][r];
  }
  qsort(worst, (size_t)repeats, sizeof worst[0], cmp);
  printf("threads=%d calls=%ld repeats=%ld median_ns_per_call=%.2f min_ns_per_call=%.2f", nthreads,
         calls, repeats, worst[repeats / 2], worst[0]);
  printf(" sorted_ns_per_call=");
  for (long r = 0; r < repeats; r++) printf("%s%.1f", r ? "," : "", worst[r]);
  printf(" other_cpu_ns_per_call=%.2f machine_cpu_ns=%.0f\n", others / ((double)calls * (double)repeats * nthreads),
         named_threads_cpu_ns("npkit-machine"));
  for (int t = 0; t < nthreads; t++) ncclCommDestroy(comms[t]);
  return 0;
}
