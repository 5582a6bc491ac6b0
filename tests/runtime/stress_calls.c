/* Many threads hammering the wrapped API: T threads, each with its own communicator from
 * ncclCommInitAll, each making N ncclAllReduce calls.  Writes "calls <total>" to the file given, so
 * the test can compare with what the log counted (recorded + dropped). */
#define _GNU_SOURCE
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long per_thread = 1000;
static ncclComm_t comms[64];
static long made[64];

static void *worker(void *arg) {
  int id = (int)(long)arg;
  float x[4] = {0};
  for (long i = 0; i < per_thread; i++)
    if (ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comms[id], 0) == ncclSuccess) made[id]++;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: stress_calls THREADS CALLS_PER_THREAD OUT_FILE\n");
    return 2;
  }
  int threads = atoi(argv[1]);
  per_thread = atol(argv[2]);
  if (threads < 1 || threads > 64 || per_thread < 1) return 2;
  if (ncclCommInitAll(comms, threads, NULL) != ncclSuccess) return 1;
  pthread_t th[64];
  for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, worker, (void *)(long)t);
  long total = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(th[t], NULL);
    total += made[t];
  }
  for (int t = 0; t < threads; t++) ncclCommDestroy(comms[t]);
  FILE *f = fopen(argv[3], "w");
  if (f == NULL) return 1;
  /* Every NCCL call the program made: InitAll, the all-reduces, one Destroy per communicator. */
  fprintf(f, "calls %ld allreduce %ld\n", total + 1 + threads, total);
  fclose(f);
  return total == threads * per_thread ? 0 : 1;
}
