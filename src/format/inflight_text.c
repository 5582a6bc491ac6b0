#include "inflight_text.h"

#include <inttypes.h>
#include <stdio.h>

#include "nccl_names.h"

/* The phases of npkit_ev_proxy_step.phase_ns (NCCL's ncclProfilerProxyStep* states). */
const char *npkit_inflight_phase_name(int is_send, int phase) {
  static const char *const send[] = {"waits for the GPU's data", "waits for the peer to be ready",
                                     "waits for the network to finish"};
  static const char *const recv[] = {"is posted, waiting for the data", "has received the data and flushes it",
                                     "waits for the GPU to take the data"};
  if (phase < 0 || phase > 2) return "";
  return is_send ? send[phase] : recv[phase];
}

char *npkit_inflight_what(const npkit_event *ev, char *buf, size_t len) {
  const npkit_ev_inflight *f = &ev->u.inflight;
  const char *op = ev->func != 0 ? npkit_fn_short_name(ev->func) : "an NCCL operation";
  char seq[32] = "", ranks[48] = "";
  if (f->seq != NPKIT_NO_SEQ) snprintf(seq, sizeof seq, " #%" PRIu64, f->seq);
  if (f->rank >= 0 && f->nranks > 0) snprintf(ranks, sizeof ranks, " (rank %d of %d)", (int)f->rank, (int)f->nranks);
  if (f->comm_id != 0)
    snprintf(buf, len, "%s%s of comm %08llx%s", op, seq, NPKIT_COMM_SHORT(f->comm_id), ranks);
  else
    snprintf(buf, len, "%s%s of an unknown communicator%s", op, seq, ranks);
  return buf;
}

char *npkit_inflight_where(const npkit_event *ev, char *buf, size_t len) {
  const npkit_ev_inflight *f = &ev->u.inflight;
  const char *dir = f->is_send ? "send" : "receive", *to = f->is_send ? "to" : "from";
  switch (f->what) {
  case NPKIT_INFL_CALL:
    snprintf(buf, len, "the call has not returned (thread %u is inside NCCL)", (unsigned)ev->thread);
    break;
  case NPKIT_INFL_QUEUED:
    snprintf(buf, len, "NCCL launched it but its kernel has not started on the GPU");
    break;
  case NPKIT_INFL_KERNEL_CH:
    snprintf(buf, len, "its kernel started on channel %d and has not finished", (int)f->channel);
    break;
  case NPKIT_INFL_PROXY_OP:
    snprintf(buf, len, "network %s %s rank %d on channel %d: %d of %d steps done", dir, to, (int)f->peer,
             (int)f->channel, (int)f->step, (int)f->nsteps);
    break;
  case NPKIT_INFL_PROXY_STEP: {
    const char *phase = npkit_inflight_phase_name(f->is_send, f->phase == 0xff ? -1 : f->phase);
    snprintf(buf, len, "network %s step %d %s rank %d on channel %d %s", dir, (int)f->step, to, (int)f->peer,
             (int)f->channel, phase[0] ? phase : "has not begun");
    break;
  }
  default: snprintf(buf, len, "unfinished work of an unknown kind (%u)", (unsigned)f->what); break;
  }
  return buf;
}
