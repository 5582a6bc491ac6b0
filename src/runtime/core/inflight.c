#include "inflight.h"

#include <string.h>

#include "hash.h"

npkit_event *npkit_inflight_add(npkit_inflight_sink *s, uint8_t what, uint16_t fn, uint64_t since_ns) {
  if (s->n == s->cap) {
    s->omitted++;
    return NULL;
  }
  npkit_event *ev = &s->ev[s->n++];
  memset(ev, 0, sizeof *ev);
  ev->kind = NPKIT_EV_INFLIGHT;
  ev->func = fn;
  ev->start_ns = since_ns;
  ev->end_ns = s->now_ns;
  npkit_ev_inflight *f = &ev->u.inflight;
  f->seq = f->nccl_seq = NPKIT_NO_SEQ;
  f->rank = f->nranks = f->channel = f->peer = f->step = f->nsteps = -1;
  f->phase = 0xff;
  f->what = what;
  return ev;
}

uint64_t npkit_inflight_key(const npkit_event *ev) {
  const npkit_ev_inflight *f = &ev->u.inflight;
  uint64_t h = NPKIT_HASH_SEED;
  if (f->comm_id != 0 && f->seq != NPKIT_NO_SEQ) {
    h = npkit_hash64(h, "coll", 4);
    h = npkit_hash64(h, &f->comm_id, sizeof f->comm_id);
    h = npkit_hash64(h, &f->seq, sizeof f->seq);
    h = npkit_hash64(h, &ev->func, sizeof ev->func);
  } else if (f->task != 0) {
    h = npkit_hash64(h, "task", 4);
    h = npkit_hash64(h, &f->task, sizeof f->task);
  } else {
    h = npkit_hash64(h, "item", 4);
    h = npkit_hash64(h, &ev->thread, sizeof ev->thread);
    h = npkit_hash64(h, &ev->start_ns, sizeof ev->start_ns);
  }
  return h != 0 ? h : 1;
}
