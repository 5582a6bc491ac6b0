/* A one-rank NCCL job that makes a known number of calls, announces it through a file, and waits to
 * be stopped.  --handler: installs its own SIGTERM handler that exits with status 3 (the library
 * must keep it working).  --threads N: N extra threads keep calling NCCL while the signal arrives. */
#define _GNU_SOURCE
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ncclComm_t comm;
static _Atomic int busy_calls;

static void app_handler(int sig) {
  (void)sig;
  _exit(3);
}

static void *busy(void *arg) {
  ncclComm_t *c = arg;
  float x = 1;
  for (;;) {
    ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, *c, 0);
    atomic_fetch_add(&busy_calls, 1);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const char *ready = NULL;
  int calls = 100, handler = 0, threads = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--ready") && i + 1 < argc) ready = argv[++i];
    else if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--handler")) handler = 1;
    else {
      fprintf(stderr, "usage: signal_victim --ready FILE [--calls N] [--threads N] [--handler]\n");
      return 2;
    }
  }
  if (ready == NULL) return 2;
  if (handler) signal(SIGTERM, app_handler);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
    fprintf(stderr, "signal_victim: NCCL init failed\n");
    return 1;
  }
  float buf[16] = {0};
  for (int i = 0; i < calls; i++)
    if (ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, comm, 0) != ncclSuccess) return 1;
  ncclComm_t extra[16];
  pthread_t th[16];
  if (threads > 16) threads = 16;
  if (threads > 0 && ncclCommInitAll(extra, threads, NULL) != ncclSuccess) return 1;
  for (int t = 0; t < threads; t++) {
    pthread_create(&th[t], NULL, busy, &extra[t]);
    pthread_setname_np(th[t], "victim-busy"); /* for the tests that signal one kind of thread */
  }
  while (threads > 0 && atomic_load(&busy_calls) < 1000) usleep(1000);
  FILE *f = fopen(ready, "w");
  if (f == NULL) return 1;
  fputs("ready\n", f);
  fclose(f);
  for (;;) pause();
}
