/* graph_job: an AllReduce captured into a CUDA graph and replayed between eager AllReduces of
 * the same shape, as training loops do (fake NCCL only: its test entry points of fake_graph.c).
 *
 *   AllReduce (eager)             E0
 *   capture: AllReduce on S_GRAPH (the captured call)
 *   AllReduce (eager)             E1
 *   N replays of the graph, from another thread (CUDA's host-callback thread replays NCCL's plan)
 *   AllReduce (eager) x 2         E2, E3
 *
 *   graph_job [--replays N]   (default 3)
 * Prints nothing on stdout; exit status 0, 1 when a call failed, 2 on a usage error. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_job.h"

#define S_EAGER ((cudaStream_t)(uintptr_t)0x1000)
#define S_GRAPH ((cudaStream_t)(uintptr_t)0x4000)
#define COUNT 65536


typedef int (*capture_begin_fn)(cudaStream_t);
typedef uint32_t (*capture_end_fn)(cudaStream_t);
typedef ncclResult_t (*graph_launch_fn)(uint32_t, cudaStream_t);

typedef struct replay {
  graph_launch_fn launch;
  uint32_t graph;
  long n;
} replay;

static void *replay_main(void *arg) {
  replay *r = arg;
  for (long i = 0; i < r->n; i++) NC(r->launch(r->graph, S_GRAPH));
  return NULL;
}

int main(int argc, char **argv) {
  long replays = 3;
  if (argc == 3 && strcmp(argv[1], "--replays") == 0) {
    replays = strtol(argv[2], NULL, 10);
    if (replays < 0 || replays > 1000) return 2;
  } else if (argc != 1) {
    fprintf(stderr, "usage: graph_job [--replays N]\n");
    return 2;
  }
  capture_begin_fn begin;
  capture_end_fn end;
  graph_launch_fn launch;
  *(void **)(&begin) = dlsym(RTLD_DEFAULT, "npkitFakeNcclCaptureBegin");
  *(void **)(&end) = dlsym(RTLD_DEFAULT, "npkitFakeNcclCaptureEnd");
  *(void **)(&launch) = dlsym(RTLD_DEFAULT, "npkitFakeNcclGraphLaunch");
  if (begin == NULL || end == NULL || launch == NULL) {
    fprintf(stderr, "graph_job: needs the fake NCCL (npkitFakeNccl* entry points)\n");
    return 2;
  }
  int rank, size;
  npkit_job_start(&argc, &argv, &rank, &size);
  ncclComm_t comm = npkit_job_world(rank, size);
  float *a = calloc(COUNT, sizeof *a), *b = calloc(COUNT, sizeof *b);
  if (a == NULL || b == NULL) return 1;

  NC(ncclAllReduce(a, b, COUNT, ncclFloat32, ncclSum, comm, S_EAGER));
  if (begin(S_GRAPH) != 0) npkit_job_failures++;
  NC(ncclAllReduce(a, b, COUNT, ncclFloat32, ncclSum, comm, S_GRAPH));
  replay r = {launch, end(S_GRAPH), replays};
  if (r.graph == 0) npkit_job_failures++;
  NC(ncclAllReduce(a, b, COUNT, ncclFloat32, ncclSum, comm, S_EAGER));
  pthread_t t;
  if (pthread_create(&t, NULL, replay_main, &r) != 0 || pthread_join(t, NULL) != 0) npkit_job_failures++;
  NC(ncclAllReduce(a, b, COUNT, ncclFloat32, ncclSum, comm, S_EAGER));
  NC(ncclAllReduce(a, b, COUNT, ncclFloat32, ncclSum, comm, S_EAGER));

  NC(ncclCommDestroy(comm));
  free(a);
  free(b);
  return npkit_job_end();
}
