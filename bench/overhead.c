/* Cost of one wrapped NCCL call.  Run the same binary with and without LD_PRELOAD of the library
 * (bench/run_overhead.sh does both in one run) against the fake NCCL in no-op mode, so the time per
 * call is the dispatch alone and the difference is what the library adds.
 *
 *   overhead [--calls N] [--repeats R] [--threads T] [--pause-ms P] [--paired B]
 * Between repeats the threads sleep P ms (not timed), so that the library's writer thread can
 * stream the previous repeat to disk instead of competing with the measured loop for the cores.
 * prints one line: threads=T calls=N repeats=R median_ns_per_call=X min_ns_per_call=Y
 * sorted_ns_per_call=... median_cpu_ns_per_call=C sorted_cpu_ns_per_call=... other_cpu_ns_per_call=Z
 * machine_cpu_ns=M: X and Y are wall-clock times, C the calling threads' own CPU time per call
 * (CLOCK_THREAD_CPUTIME_ID: what other load on the machine takes from them stays out), each the
 * slowest thread of a repeat; Z is the CPU time of the process's other threads (the library's
 * writer thread) per call made, measured after a final pause that lets them finish the last
 * repeat, and M the CPU time of the library's machine thread ("npkit-machine",
 * NPKIT_GPU_SAMPLE_RATE), 0 without one (bench/sampling_bench.sh).
 *
 * --paired B measures the library's added time inside one process, so that the speed of the machine
 * at the moment (a VM's share of its host changes from second to second) is the same for both
 * sides: each repeat alternates blocks of B calls through ncclAllReduce as the program links it (the
 * library's wrapper when it is preloaded) with blocks of B calls straight into libnccl's own
 * definition (dlsym on libnccl.so.2's handle, which the preload does not reach), and takes the
 * calling thread's CPU time of each block.  The line's figures are then those of the wrapped blocks
 * (the calls the library records: CALLS per repeat and thread, as without --paired), and it adds
 * paired_direct_cpu_ns=D paired_wrapped_cpu_ns=W paired_added_cpu_ns=A sorted_paired_added_cpu_ns=...
 * paired_blocks=K: per call, medians over the repeats of the direct blocks' CPU, the wrapped
 * blocks' and their difference (each over the whole repeat, the slower thread's), K the block pairs
 * of thread 0.  Without the library both kinds of block call the same code and A is about 0.
 * --print-blocks 1 writes every block pair's CPU per call to stderr.  --spin S paces the calls as a job
 * does: S iterations of an empty loop on registers after every call of both kinds of block (about
 * S/3 ns here), the same work on both sides, so that it cancels in A; what changes is the rate at
 * which the library's writer must stream the events (back to back, 128 bytes every 50 ns: 2.5 GB/s). */
#define _GNU_SOURCE
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <dirent.h>
#include <dlfcn.h>

static long calls = 1000000, repeats = 7;
static int nthreads = 1;
static long pause_ms = 0;
static ncclComm_t comms[64];
static pthread_barrier_t barrier;
static double per_call_ns[64][64];
static double per_call_cpu_ns[64][64]; /* the thread's own CPU time: preemption by other load stays out */
static double worker_cpu_ns[64];

typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                     cudaStream_t);
static long paired_block = 0;
static allreduce_fn direct_allreduce; /* libnccl's own definition, past any preloaded wrapper */
#define MAX_PAIRS 4096
static double pair_direct[64][MAX_PAIRS], pair_wrapped[64][MAX_PAIRS];
static long pairs_done[64];
static double direct_cpu_ns[64][64]; /* per repeat: the direct blocks' CPU per call */
static long print_blocks = 0;
static long spin = 0; /* --spin S: S iterations of an empty register loop after each call */

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

static void call_block(allreduce_fn fn, long n, float *buf, int id) {
  for (long i = 0; i < n; i++) {
    if (fn(buf, buf, 4, ncclFloat32, ncclSum, comms[id], 0) != ncclSuccess) {
      fprintf(stderr, "overhead: ncclAllReduce failed\n");
      exit(1);
    }
    /* --spin: the job's own work between two calls, registers only, the same in both kinds of
     * block (it cancels in their difference) */
    for (long k = 0, x = 0; k < spin; k++) __asm__ volatile("" : "+r"(x));
  }
}

/* One repeat of --paired: blocks of the wrapped and of the direct call in turn (which goes first
 * alternates too), each block's CPU time per call kept. */
static void paired_repeat(int id, long r, float *buf) {
  double wall = 0, cpu = 0, direct = 0;
  for (long done = 0; done < calls; done += paired_block) {
    long k = pairs_done[id]++;
    for (int half = 0; half < 2; half++) {
      int wrapped = (half == 0) == (k % 2 == 0);
      double c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID), t0 = now_ns();
      call_block(wrapped ? ncclAllReduce : direct_allreduce, paired_block, buf, id);
      double c = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0, t = now_ns() - t0;
      if (wrapped) {
        pair_wrapped[id][k] = c / (double)paired_block;
        cpu += c;
        wall += t;
      } else {
        pair_direct[id][k] = c / (double)paired_block;
        direct += c;
      }
    }
  }
  if (print_blocks) {
    flockfile(stderr);
    fprintf(stderr, "thread %d repeat %ld, wrapped/direct CPU ns per call of each block pair:", id, r);
    for (long k = pairs_done[id] - calls / paired_block; k < pairs_done[id]; k++)
      fprintf(stderr, " %.0f/%.0f", pair_wrapped[id][k], pair_direct[id][k]);
    fprintf(stderr, "\n");
    funlockfile(stderr);
  }
  /* The repeat's figures are its wrapped blocks' (the recorded calls). */
  per_call_ns[id][r] = wall / (double)calls;
  per_call_cpu_ns[id][r] = cpu / (double)calls;
  direct_cpu_ns[id][r] = direct / (double)calls;
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
    if (paired_block > 0) {
      paired_repeat(id, r, buf);
      continue;
    }
    double c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID), t0 = now_ns();
    call_block(ncclAllReduce, calls, buf, id);
    per_call_ns[id][r] = (now_ns() - t0) / (double)calls;
    per_call_cpu_ns[id][r] = (cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)calls;
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

static double median_of(double *v, long n) {
  qsort(v, (size_t)n, sizeof v[0], cmp);
  return n > 0 ? v[n / 2] : 0;
}

/* Per repeat, the slower thread's direct and wrapped CPU per call and its added CPU (wrapped -
 * direct, both over the whole repeat: the rare expensive block, a chunk hand-over that waits, counts
 * as it does for the job); printed: the medians over the repeats. */
static void print_paired(void) {
  double d[64], w[64], a[64];
  for (long r = 0; r < repeats; r++) {
    d[r] = w[r] = a[r] = 0;
    for (int t = 0; t < nthreads; t++) {
      if (direct_cpu_ns[t][r] > d[r]) d[r] = direct_cpu_ns[t][r];
      if (per_call_cpu_ns[t][r] > w[r]) w[r] = per_call_cpu_ns[t][r];
      if (per_call_cpu_ns[t][r] - direct_cpu_ns[t][r] > a[r]) a[r] = per_call_cpu_ns[t][r] - direct_cpu_ns[t][r];
    }
  }
  printf(" paired_direct_cpu_ns=%.2f paired_wrapped_cpu_ns=%.2f paired_added_cpu_ns=%.2f", median_of(d, repeats),
         median_of(w, repeats), median_of(a, repeats));
  printf(" sorted_paired_added_cpu_ns=");
  for (long r = 0; r < repeats; r++) printf("%s%.1f", r ? "," : "", a[r]);
  printf(" paired_blocks=%ld", pairs_done[0]);
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--calls")) calls = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--repeats")) repeats = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) nthreads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--pause-ms")) pause_ms = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--paired")) paired_block = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--print-blocks")) print_blocks = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--spin")) spin = atol(argv[i + 1]);
    else {
      fprintf(stderr, "usage: overhead [--calls N] [--repeats R] [--threads T] [--pause-ms P] [--paired B [--print-blocks 1] [--spin S]]\n");
      return 2;
    }
  }
  if (calls < 1 || repeats < 1 || repeats > 64 || nthreads < 1 || nthreads > 64) {
    fprintf(stderr, "overhead: calls >= 1, 1 <= repeats <= 64, 1 <= threads <= 64\n");
    return 2;
  }
  if (paired_block < 0 ||
      (paired_block > 0 && (calls % paired_block != 0 || calls / paired_block * repeats > MAX_PAIRS))) {
    fprintf(stderr, "overhead: --paired B needs B to divide the calls, and at most %d blocks in all\n", MAX_PAIRS);
    return 2;
  }
  if (spin < 0 || (spin > 0 && paired_block == 0)) {
    fprintf(stderr, "overhead: --spin S needs S >= 0 and --paired\n");
    return 2;
  }
  if (paired_block > 0) {
    void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (nccl != NULL) direct_allreduce = (allreduce_fn)dlsym(nccl, "ncclAllReduce");
    if (direct_allreduce == NULL) {
      fprintf(stderr, "overhead: --paired: libnccl.so.2's ncclAllReduce not found\n");
      return 1;
    }
  }
  if (ncclCommInitAll(comms, nthreads, NULL) != ncclSuccess) {
    fprintf(stderr, "overhead: ncclCommInitAll failed\n");
    return 1;
  }
  /* Page faults of the whole process (callers and the library's threads) while the repeats run: the
   * library starts at the first call above, so its pool is mapped and populated already. */
  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
  pthread_t th[64];
  for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, (void *)(long)t);
  for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
  if (pause_ms > 0) {
    struct timespec ts = {pause_ms / 1000, pause_ms % 1000 * 1000000L};
    nanosleep(&ts, NULL);
  }
  getrusage(RUSAGE_SELF, &ru1);
  double others = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  for (int t = 0; t < nthreads; t++) others -= worker_cpu_ns[t];
  /* Per repeat, the slowest thread; then the median and minimum over repeats. */
  double worst[64], worst_cpu[64];
  for (long r = 0; r < repeats; r++) {
    worst[r] = worst_cpu[r] = 0;
    for (int t = 0; t < nthreads; t++) {
      if (per_call_ns[t][r] > worst[r]) worst[r] = per_call_ns[t][r];
      if (per_call_cpu_ns[t][r] > worst_cpu[r]) worst_cpu[r] = per_call_cpu_ns[t][r];
    }
  }
  qsort(worst, (size_t)repeats, sizeof worst[0], cmp);
  qsort(worst_cpu, (size_t)repeats, sizeof worst_cpu[0], cmp);
  printf("threads=%d calls=%ld repeats=%ld median_ns_per_call=%.2f min_ns_per_call=%.2f", nthreads,
         calls, repeats, worst[repeats / 2], worst[0]);
  printf(" sorted_ns_per_call=");
  for (long r = 0; r < repeats; r++) printf("%s%.1f", r ? "," : "", worst[r]);
  printf(" median_cpu_ns_per_call=%.2f sorted_cpu_ns_per_call=", worst_cpu[repeats / 2]);
  for (long r = 0; r < repeats; r++) printf("%s%.1f", r ? "," : "", worst_cpu[r]);
  printf(" other_cpu_ns_per_call=%.2f machine_cpu_ns=%.0f", others / ((double)calls * (double)repeats * nthreads),
         named_threads_cpu_ns("npkit-machine"));
  printf(" minor_faults=%ld major_faults=%ld", ru1.ru_minflt - ru0.ru_minflt, ru1.ru_majflt - ru0.ru_majflt);
  if (paired_block > 0) print_paired();
  printf("\n");
  for (int t = 0; t < nthreads; t++) ncclCommDestroy(comms[t]);
  return 0;
}
