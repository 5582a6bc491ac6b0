/*
 * make_big_log OUT N [THREADS]: writes a log of N NCCL API events quickly, to time `npkit json` and
 * measure its memory on large inputs.  The calls look like a training loop: AllReduce and
 * AllGather on one communicator, and every tenth step a group of Send/Recv; THREADS host threads
 * (default 2) take turns.
 */
#include <stdio.h>
#include <stdlib.h>

#include "log_builder.h"
#include "nccl_names.h"

#define BLOCK_EVENTS 4096

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: make_big_log OUT N [THREADS]\n");
    return 2;
  }
  unsigned long long n = strtoull(argv[2], NULL, 10);
  unsigned threads = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 2;
  if (threads == 0) threads = 1;
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  npkit_lb *b = npkit_lb_create(argv[1], &o);
  if (b == NULL) {
    perror(argv[1]);
    return 1;
  }
  npkit_comm_rec comm = {1, 0, 0x1f2e3d4c5b6a7988ull, 0x7f0000001000ull, 3, 4, 3, NPKIT_FN_CommInitRank, 0,
                         o.clock_base_ns + 1000, "world"};
  npkit_lb_comms(b, &comm, 1);
  for (unsigned t = 1; t <= threads; t++) {
    npkit_thread_rec tr = {t, (int32_t)(10000 + t), "python"};
    npkit_lb_threads(b, &tr, 1);
  }
  npkit_event *ev = malloc(BLOCK_EVENTS * sizeof(*ev));
  if (ev == NULL) return 1;
  uint64_t t = o.clock_base_ns + 1000000, seq = 0, group = 0, p2pseq = 0;
  size_t k = 0;
  for (unsigned long long i = 0; i < n; i++) {
    uint32_t thread = 1 + (uint32_t)((i / 64) % threads);
    unsigned step = (unsigned)(i % 20);
    unsigned fn;
    if (step == 16) fn = NPKIT_FN_GroupStart;
    else if (step == 17) fn = NPKIT_FN_Send;
    else if (step == 18) fn = NPKIT_FN_Recv;
    else if (step == 19) fn = NPKIT_FN_GroupEnd;
    else fn = step % 4 == 3 ? NPKIT_FN_AllGather : NPKIT_FN_AllReduce;
    /* a group must stay on one thread */
    if (step >= 16) thread = 1;
    npkit_event *e = &ev[k++];
    *e = npkit_lb_api_event(fn, thread, t, t + 1500 + i % 1000);
    npkit_ev_api *a = &e->u.api;
    if (fn == NPKIT_FN_GroupStart) {
      a->group = ++group;
    } else if (fn == NPKIT_FN_GroupEnd) {
      a->group = group;
    } else {
      a->comm = 1;
      a->count = 1024u << (i % 8);
      a->datatype = 7; /* float32 */
      a->stream = 0x7f00deadbe00ull;
      if (fn == NPKIT_FN_Send || fn == NPKIT_FN_Recv) {
        a->peer = 2;
        a->seq = p2pseq;
        a->group = group;
        a->flags = NPKIT_API_IN_GROUP | (fn == NPKIT_FN_Send ? NPKIT_API_P2P_SEND : NPKIT_API_P2P_RECV);
        if (fn == NPKIT_FN_Recv) p2pseq++;
      } else {
        a->redop = fn == NPKIT_FN_AllReduce ? 0 : -1;
        a->seq = seq++;
      }
      a->bytes = npkit_message_bytes(fn, a->count, a->datatype, 4);
    }
    t += 2000 + i % 1000;
    if (k == BLOCK_EVENTS) {
      if (npkit_lb_events(b, ev, k) != 0) break;
      k = 0;
    }
  }
  if (k > 0) npkit_lb_events(b, ev, k);
  npkit_counter_rec c = {0, NPKIT_SRC_API, n, 0};
  npkit_lb_counters(b, &c, 1);
  npkit_end_rec end = {.end_ns = t, .events_recorded = n};
  npkit_lb_end(b, &end);
  free(ev);
  if (npkit_lb_close(b) != 0) {
    perror(argv[1]);
    return 1;
  }
  return 0;
}
