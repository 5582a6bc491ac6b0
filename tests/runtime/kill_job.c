/* kill_job: a one-rank NCCL job that dies by SIGKILL after a known number of calls, for the tests
 * of what a killed process leaves (test_kill.py).
 *
 *   kill_job --calls N [--threads T] [--marks] [--ready FILE] [--wait | --exit | --arm FILE | --abort | --end HOW]
 *
 * Each of T threads (1 by default) makes N ncclAllReduce calls on a communicator of its own
 * (ncclCommInitAll), with --marks a npkit mark around each.  Then the process writes the number of
 * calls it made into FILE (whole, by rename) and, with --wait, sleeps until it is killed from
 * outside; with --exit it returns from main (status 0); with --arm it first creates FILE (which
 * arms writev_kill_shim, so the library's last write of events at exit is where it dies), then
 * returns from main; with --abort it calls abort() (a crash: SIGABRT's default action, no exit
 * handler); with --end it ends as HOW says (below); else it sends itself SIGKILL at once.
 *
 * --end HOW, the ways a process ends without returning from main:
 *   _exit, _Exit   that function, status 7 (no exit handler runs)
 *   exit           exit(7)
 *   handler        a SIGUSR2 handler that calls _exit(9), the signal raised
 *   atexit         exit(0), and an exit handler registered before the first NCCL call (so it runs
 *                  after the library's) calls _exit(4)
 *   fork, vfork    a child that calls _exit(3) at once; the parent waits for it, then exit(7)
 *   thread         _exit(7) from a second thread while the main thread sleeps
 *   quick_exit     quick_exit(7), an at_quick_exit handler registered before the first NCCL call
 *   nccl_thread    the main thread goes on calling ncclAllReduce on a communicator of one rank, a
 *                  second thread calls _exit(7) once it made 200 more; with --count FILE the
 *                  extra calls completed are counted in FILE, mapped shared (word 0: completed,
 *                  word 1: completed when _exit was called), so that the test reads them after
 *                  the process is gone
 *   kill_thread    as nccl_thread, but the second thread sends the process SIGKILL instead
 *   early_thread   as nccl_thread, but the second thread is created before the first NCCL call (as
 *                  Open MPI's progress thread is, in MPI_Init) and learns the count without
 *                  synchronising with the main thread (relaxed loads), as that thread learns that
 *                  mpirun is gone: what it may see of the library's state is only what the library
 *                  itself orders
 * Exit status 2 on bad arguments, 1 when NCCL fails. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static long calls = 1000;
static int marks;
static ncclComm_t comms[16];

/* npkit_preload.h's marks, looked up so that the job also runs without the library */
static void (*mark_begin)(const char *);
static void (*mark_end)(const char *);

static void *caller(void *arg) {
  ncclComm_t comm = comms[(intptr_t)arg];
  float buf[16] = {0};
  for (long i = 0; i < calls; i++) {
    if (marks && mark_begin != NULL) mark_begin("step");
    if (ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, comm, 0) != ncclSuccess) return (void *)1;
    if (marks && mark_end != NULL) mark_end("step");
  }
  return NULL;
}

static _Atomic int64_t *extra; /* nccl_thread: [0] calls completed, [1] of them when _exit was called */
static int64_t extra_private[2];

static void exit_handler_ends(void) { _exit(4); }
static void quick_handler(void) {
  static const char said[] = "kill_job: at_quick_exit handler\n";
  if (write(2, said, sizeof said - 1) < 0) _exit(1);
}
static void *exit_amid_calls(void *arg) {
  while (extra[0] < 200) usleep(100);
  extra[1] = extra[0];
  if (arg != NULL) kill(getpid(), SIGKILL);
  _exit(7);
}
static void *exit_from_early_thread(void *arg) {
  (void)arg;
  while (atomic_load_explicit(&extra[0], memory_order_relaxed) < 200) usleep(100);
  atomic_store_explicit(&extra[1], atomic_load_explicit(&extra[0], memory_order_relaxed), memory_order_relaxed);
  _exit(7);
}
static void handler_ends(int sig) {
  (void)sig;
  _exit(9);
}
static void *thread_ends(void *arg) {
  (void)arg;
  _exit(7);
}

static void end_as(const char *how) {
  if (!strcmp(how, "_exit")) _exit(7);
  if (!strcmp(how, "_Exit")) _Exit(7);
  if (!strcmp(how, "exit")) exit(7);
  if (!strcmp(how, "atexit")) exit(0);
  if (!strcmp(how, "handler")) {
    signal(SIGUSR2, handler_ends);
    raise(SIGUSR2);
  }
  if (!strcmp(how, "fork") || !strcmp(how, "vfork")) {
    pid_t child = !strcmp(how, "fork") ? fork() : vfork();
    if (child == 0) _exit(3);
    int st;
    if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 3) exit(1);
    exit(7);
  }
  if (!strcmp(how, "quick_exit")) quick_exit(7);
  if (!strcmp(how, "nccl_thread") || !strcmp(how, "kill_thread") || !strcmp(how, "early_thread")) {
    pthread_t t;
    float buf[16] = {0};
    ncclComm_t solo; /* of one rank: the threads' communicators need all of theirs in each call */
    if (ncclCommInitAll(&solo, 1, NULL) != ncclSuccess) exit(1);
    if (strcmp(how, "early_thread") != 0 &&
        pthread_create(&t, NULL, exit_amid_calls, !strcmp(how, "kill_thread") ? (void *)1 : NULL) != 0)
      exit(1);
    for (;;) {
      if (ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, solo, 0) != ncclSuccess) exit(1);
      extra[0]++;
    }
  }
  if (!strcmp(how, "thread")) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_ends, NULL) == 0)
      for (;;) pause();
  }
  fprintf(stderr, "kill_job: unknown --end %s\n", how);
  exit(2);
}

int main(int argc, char **argv) {
  const char *ready = NULL, *arm = NULL, *how = NULL, *count = NULL;
  int threads = 1, wait = 0, clean = 0, crash = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atol(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ready") && i + 1 < argc) ready = argv[++i];
    else if (!strcmp(argv[i], "--marks")) marks = 1;
    else if (!strcmp(argv[i], "--wait")) wait = 1;
    else if (!strcmp(argv[i], "--exit")) clean = 1;
    else if (!strcmp(argv[i], "--abort")) crash = 1;
    else if (!strcmp(argv[i], "--end") && i + 1 < argc) how = argv[++i];
    else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = argv[++i];
    else if (!strcmp(argv[i], "--arm") && i + 1 < argc) arm = argv[++i], clean = 1;
    else {
      fprintf(stderr, "usage: kill_job --calls N [--threads T] [--marks] [--ready FILE] [--wait | --exit | --arm FILE | --abort | --end HOW] [--count FILE]\n");
      return 2;
    }
  }
  if (threads < 1 || threads > 16 || calls < 0 || (wait && ready == NULL)) return 2;
  if (how != NULL && !strcmp(how, "atexit")) atexit(exit_handler_ends);
  if (how != NULL && !strcmp(how, "quick_exit")) at_quick_exit(quick_handler);
  extra = (_Atomic int64_t *)extra_private;
  if (count != NULL) {
    int fd = open(count, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) return 1;
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (page == MAP_FAILED) return 1;
    extra = page;
    close(fd);
  }
  if (how != NULL && !strcmp(how, "early_thread")) {
    pthread_t t;
    if (pthread_create(&t, NULL, exit_from_early_thread, NULL) != 0) return 1;
  }
  mark_begin = (void (*)(const char *))dlsym(RTLD_DEFAULT, "npkit_mark_begin");
  mark_end = (void (*)(const char *))dlsym(RTLD_DEFAULT, "npkit_mark_end");
  if (ncclCommInitAll(comms, threads, NULL) != ncclSuccess) {
    fprintf(stderr, "kill_job: NCCL init failed\n");
    return 1;
  }
  pthread_t th[16];
  for (int t = 0; t < threads; t++)
    if (pthread_create(&th[t], NULL, caller, (void *)(intptr_t)t) != 0) return 1;
  for (int t = 0; t < threads; t++) {
    void *rc;
    pthread_join(th[t], &rc);
    if (rc != NULL) return 1;
  }
  if (ready != NULL) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", ready);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) return 1;
    fprintf(f, "%ld\n", calls * threads);
    if (fclose(f) != 0 || rename(tmp, ready) != 0) return 1;
  }
  if (arm != NULL) {
    FILE *f = fopen(arm, "w");
    if (f == NULL || fclose(f) != 0) return 1;
  }
  if (clean) return 0;
  if (crash) abort();
  if (how != NULL) end_as(how);
  if (wait)
    for (;;) pause();
  raise(SIGKILL);
  return 1;
}
