/* plugin_events: how many records NCCL's profiler-plugin events become per collective.
 *
 *   plugin_events job --ranks R --bytes B --iters N
 *       One process, R ranks as communicators of ncclCommInitAll (the fake NCCL runs them on
 *       threads of their own), N in-place float AllReduces of B bytes issued on all ranks inside
 *       one group, then the communicators destroyed.  Run with the library preloaded.
 *   plugin_events count LOG
 *       Reads a log and prints, per event kind of the plugin, its records: kind=name records=K.
 * bench/plugin_events.sh runs both and divides by ranks and collectives. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_reader.h"

static const char *kind_name(unsigned k) {
  switch (k) {
  case NPKIT_EV_API: return "api_call";
  case NPKIT_EV_PLUGIN_INIT: return "plugin_init";
  case NPKIT_EV_PLUGIN_FINALIZE: return "plugin_finalize";
  case NPKIT_EV_PLUGIN_TASK: return "task";
  case NPKIT_EV_PLUGIN_KERNEL_CH: return "kernel_ch";
  case NPKIT_EV_PLUGIN_PROXY_OP: return "proxy_op";
  case NPKIT_EV_PLUGIN_PROXY_STEP: return "proxy_step";
  case NPKIT_EV_PLUGIN_PROXY_CTRL: return "proxy_ctrl";
  case NPKIT_EV_PLUGIN_STATS: return "plugin_stats";
  case NPKIT_EV_PLUGIN_API: return "nccl_api_event";
  case NPKIT_EV_PLUGIN_CLOCK: return "gpu_clock_map";
  case NPKIT_EV_PLUGIN_KERNEL_PHASE: return "kernel_phase";
  default: return NULL;
  }
}

static int count(const char *path) {
  char err[256];
  npkit_log_reader *r;
  if (npkit_reader_open(path, &r, err, sizeof err) != 0) {
    fprintf(stderr, "plugin_events: %s\n", err);
    return 1;
  }
  uint64_t n[NPKIT_EV_PLUGIN_LAST + 1] = {0};
  const npkit_event *ev;
  int k;
  while ((k = npkit_reader_next(r, &ev, err, sizeof err)) == 1)
    if (ev->kind <= NPKIT_EV_PLUGIN_LAST) n[ev->kind]++;
  npkit_reader_close(r);
  if (k < 0) {
    fprintf(stderr, "plugin_events: %s\n", err);
    return 1;
  }
  for (unsigned i = 0; i <= NPKIT_EV_PLUGIN_LAST; i++)
    if (n[i] > 0 && kind_name(i) != NULL) printf("kind=%s records=%llu\n", kind_name(i), (unsigned long long)n[i]);
  return 0;
}

static int job(int ranks, size_t bytes, long iters) {
  ncclComm_t comms[64];
  float *buf[64];
  size_t count = bytes / sizeof(float);
  if (ncclCommInitAll(comms, ranks, NULL) != ncclSuccess) return 1;
  for (int r = 0; r < ranks; r++) {
    buf[r] = calloc(count, sizeof(float));
    if (buf[r] == NULL) return 1;
  }
  for (long i = 0; i < iters; i++) {
    ncclGroupStart();
    for (int r = 0; r < ranks; r++)
      ncclAllReduce(buf[r], buf[r], count, ncclFloat32, ncclSum, comms[r], (cudaStream_t)0);
    if (ncclGroupEnd() != ncclSuccess) return 1;
  }
  for (int r = 0; r < ranks; r++) {
    ncclCommDestroy(comms[r]);
    free(buf[r]);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "count")) return count(argv[2]);
  int ranks = 8;
  size_t bytes = 1 << 20;
  long iters = 4;
  if (argc < 2 || strcmp(argv[1], "job") != 0) {
    fprintf(stderr, "usage: plugin_events job [--ranks R] [--bytes B] [--iters N] | plugin_events count LOG\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--ranks")) ranks = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bytes")) bytes = (size_t)atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atol(argv[i + 1]);
    else return 2;
  }
  if (ranks < 1 || ranks > 64 || bytes < sizeof(float) || iters < 1) return 2;
  return job(ranks, bytes, iters);
}
