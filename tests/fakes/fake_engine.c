/* Operations, groups and the progress loop.
 *
 * An operation is a list of transfers (send len bytes to a peer, receive len bytes from a peer),
 * split into phases, with a step run after each phase (a reduction, a wait).  Transfers are
 * appended to a per-ring queue in the order operations are issued, and a transfer only moves while
 * it is at the head of its queue, so both ends of a ring see the same order.  Every rank issues a
 * communicator's operations in the same order and a phase only depends on earlier phases and
 * earlier operations, so the oldest unfinished phase can always move: running all queued
 * operations together, without blocking on any single one, cannot deadlock however many
 * communicators, groups or messages larger than a ring are involved.
 *
 * Outside a group an operation runs to completion before the call returns; inside
 * ncclGroupStart/End it is queued (per thread, like NCCL) and the outermost ncclGroupEnd runs all
 * of them together.  Calls of one group therefore overlap, even on one communicator: as with
 * NCCL, a call must not read a buffer that an earlier call of the same group writes. */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct group_state {
  int depth;
  npkit_fake_op *head, *tail;
  ncclResult_t error;
} group_state;

static _Thread_local group_state group;

const char *npkit_fake_kind_name(unsigned kind) {
  static const char *const names[] = {
      [NPKIT_FAKE_K_ALLREDUCE] = "AllReduce",   [NPKIT_FAKE_K_BROADCAST] = "Broadcast",
      [NPKIT_FAKE_K_REDUCE] = "Reduce",         [NPKIT_FAKE_K_ALLGATHER] = "AllGather",
      [NPKIT_FAKE_K_REDUCESCATTER] = "ReduceScatter", [NPKIT_FAKE_K_ALLTOALL] = "AlltoAll",
      [NPKIT_FAKE_K_GATHER] = "Gather",         [NPKIT_FAKE_K_SCATTER] = "Scatter",
      [NPKIT_FAKE_K_SEND] = "Send",             [NPKIT_FAKE_K_RECV] = "Recv",
      [NPKIT_FAKE_K_INIT] = "CommInitRank",     [NPKIT_FAKE_K_SPLIT] = "CommSplit",
      [NPKIT_FAKE_K_SHRINK] = "CommShrink",
  };
  return kind < sizeof names / sizeof names[0] ? names[kind] : NULL;
}

static const char *kind_name(unsigned kind) {
  const char *name = npkit_fake_kind_name(kind);
  return name != NULL ? name : "unknown call";
}

npkit_fake_op *npkit_fake_op_new(ncclComm_t comm, npkit_fake_kind kind, const char *name) {
  npkit_fake_op *op = calloc(1, sizeof *op);
  if (op == NULL) return NULL;
  op->comm = comm;
  op->kind = kind;
  op->name = name;
  op->root = -1;
  return op;
}

void npkit_fake_op_free(npkit_fake_op *op) {
  if (op == NULL) return;
  if (op->child != NULL) npkit_fake_comm_free(op->child);
  free(op->xfers);
  free(op->tmp);
  free(op);
}

ncclResult_t npkit_fake_op_xfer(npkit_fake_op *op, int phase, int chan, bool is_send, int peer,
                                const void *buf, size_t len) {
  if (phase + 1 > op->nphases) op->nphases = phase + 1;
  if (len == 0) return ncclSuccess; /* both ends compute the same sizes and skip it alike */
  if (op->nxfers == op->cap_xfers) {
    int cap = op->cap_xfers ? 2 * op->cap_xfers : 8;
    npkit_fake_xfer *x = realloc(op->xfers, (size_t)cap * sizeof *x);
    if (x == NULL) return npkit_fake_fail(ncclSystemError, "%s: out of memory", op->name);
    op->xfers = x;
    op->cap_xfers = cap;
  }
  npkit_fake_xfer *x = &op->xfers[op->nxfers++];
  memset(x, 0, sizeof *x);
  x->buf = (unsigned char *)(uintptr_t)buf; /* only written through when receiving */
  x->len = len;
  x->peer = peer;
  x->chan = (unsigned char)chan;
  x->is_send = is_send;
  x->phase = (unsigned char)phase;
  return ncclSuccess;
}

static size_t qidx(ncclComm_t c, const npkit_fake_xfer *x) {
  return ((size_t)x->chan * 2 + x->is_send) * (size_t)c->nranks + (size_t)x->peer;
}

static bool is_collective(npkit_fake_kind k) {
  return k != NPKIT_FAKE_K_SEND && k != NPKIT_FAKE_K_RECV && k != NPKIT_FAKE_K_INIT &&
         k != NPKIT_FAKE_K_SHRINK;
}

/* Appends the transfers to their rings' queues and numbers them.  Done when the operation starts
 * running rather than when it is issued, so that a group that is dropped consumes no numbers. */
static void post(npkit_fake_op *op) {
  ncclComm_t c = op->comm;
  if (c == NULL) return;
  uint32_t seq = is_collective(op->kind) ? c->coll_seq++ : 0;
  /* Both ends of a send/recv pair expect the tag of the Send. */
  uint32_t kind = op->kind == NPKIT_FAKE_K_RECV ? NPKIT_FAKE_K_SEND : op->kind;
  for (int i = 0; i < op->nxfers; i++) {
    npkit_fake_xfer *x = &op->xfers[i];
    x->op = op;
    x->hdr.tag = kind << 8 | x->phase;
    x->hdr.len = x->len;
    if (x->chan == NPKIT_FAKE_CHAN_P2P)
      x->hdr.seq = x->is_send ? c->p2p_send_seq[x->peer]++ : c->p2p_recv_seq[x->peer]++;
    else
      x->hdr.seq = seq;
    size_t q = qidx(c, x);
    if (c->qtail[q] != NULL)
      c->qtail[q]->qnext = x;
    else
      c->qhead[q] = x;
    c->qtail[q] = x;
  }
}

static ncclResult_t check_header(npkit_fake_op *op, const npkit_fake_xfer *x) {
  const npkit_fake_hdr *e = &x->hdr, *g = &x->got;
  if (e->tag == g->tag && e->seq == g->seq && e->len == g->len) return ncclSuccess;
  if (e->tag == g->tag && e->seq == g->seq)
    return npkit_fake_fail(ncclInvalidUsage,
                           "%s: rank %d sent %llu bytes but rank %d expects %llu (the ranks "
                           "passed different counts or datatypes)",
                           op->name, x->peer, (unsigned long long)g->len, op->comm->rank,
                           (unsigned long long)e->len);
  return npkit_fake_fail(ncclInvalidUsage,
                         "ranks called different operations: rank %d expects data of %s #%u "
                         "from rank %d but received data of %s #%u",
                         op->comm->rank, kind_name(e->tag >> 8), e->seq, x->peer,
                         kind_name(g->tag >> 8), g->seq);
}

static ncclResult_t xfer_progress(npkit_fake_op *op, npkit_fake_xfer *x, bool *moved) {
  ncclComm_t c = op->comm;
  size_t q = qidx(c, x);
  if (c->qhead[q] != x) return ncclSuccess; /* an earlier transfer on the ring goes first */
  const size_t hlen = sizeof(npkit_fake_hdr), total = hlen + x->len;
  while (x->pos < total) {
    size_t n;
    if (x->is_send) {
      const unsigned char *from = x->pos < hlen ? (const unsigned char *)&x->hdr + x->pos
                                                : x->buf + (x->pos - hlen);
      size_t want = x->pos < hlen ? hlen - x->pos : total - x->pos;
      n = npkit_fake_ring_write(c->seg, x->chan, c->rank, x->peer, from, want);
    } else {
      unsigned char *to = x->pos < hlen ? (unsigned char *)&x->got + x->pos
                                        : x->buf + (x->pos - hlen);
      size_t want = x->pos < hlen ? hlen - x->pos : total - x->pos;
      n = npkit_fake_ring_read(c->seg, x->chan, x->peer, c->rank, to, want);
    }
    if (n == 0) break;
    x->pos += n;
    *moved = true;
    if (!x->is_send && x->pos == hlen) {
      ncclResult_t r = check_header(op, x);
      if (r != ncclSuccess) return r;
    }
  }
  if (x->pos == total) {
    x->done = 1;
    c->qhead[q] = x->qnext;
    if (c->qhead[q] == NULL) c->qtail[q] = NULL;
  }
  return ncclSuccess;
}

static ncclResult_t op_progress(npkit_fake_op *op, bool *moved) {
  ncclComm_t c = op->comm;
  if (c != NULL && atomic_load_explicit(&c->aborted, memory_order_relaxed))
    return npkit_fake_fail(ncclInvalidUsage, "%s: the communicator was aborted", op->name);
  if (c != NULL && atomic_load_explicit(&c->revoked, memory_order_relaxed))
    return npkit_fake_fail(ncclInvalidUsage, "%s: the communicator was revoked", op->name);
  if (op->needs_ready && !c->ready) return ncclSuccess; /* joined later in the same group */
  if (!op->started) {
    op->started = true;
    *moved = true;
    bool again = false;
    if (op->start != NULL) {
      ncclResult_t r = op->start(op, -1, &again);
      if (r != ncclSuccess) return r;
    }
  }
  while (op->phase < op->nphases) {
    bool all = true;
    int i = op->cursor;
    for (; i < op->nxfers && op->xfers[i].phase == op->phase; i++) {
      npkit_fake_xfer *x = &op->xfers[i];
      if (x->done) continue;
      ncclResult_t r = xfer_progress(op, x, moved);
      if (r != ncclSuccess) return r;
      if (!x->done) all = false;
    }
    if (!all) return ncclSuccess;
    if (op->finish != NULL) {
      bool again = false;
      ncclResult_t r = op->finish(op, op->phase, &again);
      if (r != ncclSuccess) return r;
      if (again) return ncclSuccess;
    }
    op->cursor = i;
    op->phase++;
    *moved = true;
  }
  op->done = true;
  if (op->out != NULL) {
    *op->out = op->child;
    op->child = NULL;
  }
  return ncclSuccess;
}

/* Names what the oldest unfinished operation is waiting for. */
static ncclResult_t timeout_error(npkit_fake_op *list, double waited) {
  for (npkit_fake_op *op = list; op != NULL; op = op->next) {
    if (op->done) continue;
    ncclComm_t c = op->comm;
    for (int i = op->cursor; i < op->nxfers && op->xfers[i].phase == op->phase; i++) {
      const npkit_fake_xfer *x = &op->xfers[i];
      if (x->done) continue;
      return npkit_fake_fail(ncclSystemError,
                             "%s timed out after %.1f s without progress (FAKE_NCCL_TIMEOUT_S): "
                             "rank %d of %d is waiting to %s %zu bytes %s rank %d, which has not "
                             "made the matching call",
                             op->name, waited, c->rank, c->nranks, x->is_send ? "send" : "receive",
                             x->len, x->is_send ? "to" : "from", x->peer);
    }
    ncclComm_t w = op->child != NULL ? op->child : c;
    return npkit_fake_fail(ncclSystemError,
                           "%s timed out after %.1f s without progress (FAKE_NCCL_TIMEOUT_S): "
                           "rank %d is waiting for the other %d ranks to join communicator %s",
                           op->name, waited, w ? w->rank : -1, w ? w->nranks - 1 : 0,
                           w ? w->name : "?");
  }
  return npkit_fake_fail(ncclInternalError, "timed out with nothing pending");
}

/* Called when nothing moved: a peer whose call failed, or whose process is gone, will never send
 * what this rank waits for.  Checking only then lets calls whose data is already there finish. */
static ncclResult_t stuck_error(npkit_fake_op *list, bool check_pids) {
  for (npkit_fake_op *op = list; op != NULL; op = op->next) {
    ncclComm_t c = op->comm;
    if (op->done || c == NULL || c->seg == NULL) continue;
    ncclResult_t code;
    int failed = npkit_fake_seg_failed(c->seg, &code);
    if (failed >= 0 && failed != c->rank)
      return npkit_fake_fail(ncclRemoteError,
                             "%s: rank %d of %d cannot complete the call because rank %d failed "
                             "(error %d)",
                             op->name, c->rank, c->nranks, failed, (int)code);
    for (int i = op->cursor; check_pids && i < op->nxfers && op->xfers[i].phase == op->phase; i++)
      if (!op->xfers[i].done && !npkit_fake_seg_rank_alive(c->seg, op->xfers[i].peer))
        return npkit_fake_fail(ncclRemoteError, "%s: rank %d of %d waits for rank %d, whose "
                               "process has exited", op->name, c->rank, c->nranks,
                               op->xfers[i].peer);
  }
  return ncclSuccess;
}

/* Set while the calling thread runs a single call outside a group (npkit_fake_submit): the only
 * launch FAKE_NCCL_STALL stops (fake_stall.c). */
static _Thread_local bool single_call;

ncclResult_t npkit_fake_run(npkit_fake_op *list) { return npkit_fake_run_group(list, NULL, false); }

ncclResult_t npkit_fake_run_group(npkit_fake_op *list, void *group_api, bool stop_group) {
  uint64_t gpu_t0 = npkit_fake_gpu_now();
  for (npkit_fake_op *op = list; op != NULL; op = op->next) {
    post(op);
    if (op->comm != NULL) atomic_fetch_add(&op->comm->busy, 1);
  }
  bool stalled = npkit_fake_stall_mark(list, single_call);
  /* a replay's kernels are the graph's, launched by the application's cudaGraphLaunch */
  npkit_fake_kernels *kernels = list != NULL && list->replay ? NULL : npkit_fake_gpu_plan(list);
  void *prof = npkit_fake_prof_launch(list, kernels, group_api);
  if (stop_group) npkit_fake_prof_group_done(group_api); /* blocking: once launched (grp.cc:754) */
  if (stalled) { /* NCCL's launch returns; this kernel never finishes (fake_stall.c) */
    npkit_fake_prof_abandon(prof);
    for (npkit_fake_op *op = list; op != NULL; op = op->next)
      if (op->comm != NULL) atomic_fetch_sub(&op->comm->busy, 1);
    return ncclSuccess;
  }
  /* Work queued before the kernel on its stream: on a GPU NCCL's call returns at once and the
   * kernel starts when the stream gets to it (an H200 with NCCL 2.28.9 started kernels 2-44 ms
   * after their launch, device check of 2026-12-04); here the call waits for it, so that the data
   * moves, and the stamps are written, after the kernel's start. */
  if (kernels != NULL && npkit_fake_cfg()->queue_s > 0) npkit_fake_sleep_until(npkit_fake_now() + npkit_fake_cfg()->queue_s);

  const double timeout = npkit_fake_cfg()->timeout_s;
  npkit_fake_backoff backoff = {0};
  double last = npkit_fake_now(), next_pid_check = last + 0.1;
  ncclResult_t res = ncclSuccess;
  for (;;) {
    bool moved = false, pending = false;
    for (npkit_fake_op *op = list; op != NULL && res == ncclSuccess; op = op->next) {
      if (op->done) continue;
      res = op_progress(op, &moved);
      pending |= !op->done;
    }
    if (res != ncclSuccess || !pending) break;
    if (moved) {
      backoff.idle = 0;
      last = npkit_fake_now();
      continue;
    }
    double t = npkit_fake_now(), waited = t - last;
    res = stuck_error(list, t >= next_pid_check);
    if (res != ncclSuccess) break;
    if (t >= next_pid_check) next_pid_check = t + 0.25;
    if (waited > timeout) {
      res = timeout_error(list, waited);
      break;
    }
    npkit_fake_backoff_wait(&backoff);
  }
  if (res != ncclSuccess) {
    /* The rings of these communicators are now out of step with the peers: later calls fail. */
    for (npkit_fake_op *op = list; op != NULL; op = op->next) {
      ncclComm_t c = op->comm;
      if (op->done || c == NULL) continue;
      int expected = ncclSuccess;
      atomic_compare_exchange_strong(&c->async_error, &expected, (int)res);
      if (c->seg != NULL) npkit_fake_seg_set_failed(c->seg, c->rank, res);
      size_t nq = (size_t)NPKIT_FAKE_NCHAN * 2 * (size_t)c->nranks;
      memset(c->qhead, 0, nq * sizeof *c->qhead);
      memset(c->qtail, 0, nq * sizeof *c->qtail);
    }
  }
  npkit_fake_prof_complete(prof, res);
  if (res == ncclSuccess) npkit_fake_npkit_record(list, gpu_t0); /* while comm cannot go away */
  for (npkit_fake_op *op = list; op != NULL; op = op->next)
    if (op->comm != NULL) atomic_fetch_sub(&op->comm->busy, 1);
  npkit_fake_gpu_complete(kernels, res);
  return res;
}

static void free_list(npkit_fake_op *list) {
  while (list != NULL) {
    npkit_fake_op *next = list->next;
    npkit_fake_op_free(list);
    list = next;
  }
}

ncclResult_t npkit_fake_submit(npkit_fake_op *op, double t_call) {
  npkit_fake_prof_call(op);
  /* A one-rank collective is copied when it is called, in a group too (enqueue.cc taskAppend). */
  if (op->timed && op->comm != NULL && op->comm->nranks == 1 && op->kind != NPKIT_FAKE_K_SEND &&
      op->kind != NPKIT_FAKE_K_RECV)
    npkit_fake_gpu_one_rank_copy(op, npkit_fake_gpu_now());
  if (group.depth > 0) {
    if (group.tail != NULL)
      group.tail->next = op;
    else
      group.head = op;
    group.tail = op;
    return ncclSuccess;
  }
  double until = op->timed ? t_call + npkit_fake_cfg()->lat_s + op->sim_s : 0;
  if (op->comm != NULL && op->comm->nonblocking)
    return npkit_fake_async_launch(op, npkit_fake_prof_take_group(), NULL, until);
  single_call = true;
  ncclResult_t res = npkit_fake_run_group(op, npkit_fake_prof_take_group(), true);
  single_call = false;
  if (op->stall != NPKIT_FAKE_STALL_NONE) { /* its transfers stay queued: never freed */
    npkit_fake_stall_keep(op);
    return res;
  }
  npkit_fake_op_free(op);
  if (res == ncclSuccess) npkit_fake_sleep_until(until);
  return res;
}

bool npkit_fake_in_group(void) { return group.depth > 0; }

ncclResult_t npkit_fake_group_error(ncclResult_t res) {
  if (group.depth > 0 && group.error == ncclSuccess) group.error = res;
  return res;
}

ncclResult_t npkit_fake_group_start(void) {
  group.depth++;
  return ncclSuccess;
}

void npkit_fake_group_forget(ncclComm_t comm) {
  npkit_fake_op **p = &group.head;
  group.tail = NULL;
  while (*p != NULL) {
    npkit_fake_op *op = *p;
    if (op->comm == comm) {
      *p = op->next;
      npkit_fake_op_free(op);
    } else {
      group.tail = op;
      p = &op->next;
    }
  }
}

/* Operations on different communicators run side by side; those on one communicator one after
 * another, each paying the bandwidth part but the group paying the latency once. */
static double group_seconds(npkit_fake_op *list) {
  double lat = npkit_fake_cfg()->lat_s, longest = 0;
  for (npkit_fake_op *op = list; op != NULL; op = op->next)
    if (op->timed) op->comm->group_acc = 0;
  for (npkit_fake_op *op = list; op != NULL; op = op->next)
    if (op->timed) op->comm->group_acc += op->sim_s;
  for (npkit_fake_op *op = list; op != NULL; op = op->next)
    if (op->timed && lat + op->comm->group_acc > longest) longest = lat + op->comm->group_acc;
  return longest;
}

ncclResult_t npkit_fake_group_end(ncclSimInfo_t *sim) {
  const char *fn = sim != NULL ? "ncclGroupSimulateEnd" : "ncclGroupEnd";
  if (group.depth == 0) return npkit_fake_fail(ncclInvalidUsage, "%s: not in a group call.", fn);
  if (--group.depth > 0) return ncclSuccess;
  npkit_fake_op *list = group.head;
  ncclResult_t err = group.error;
  group.head = group.tail = NULL;
  group.error = ncclSuccess;
  if (err != ncclSuccess) {
    /* NCCL drops the whole group when one of its calls failed. */
    for (npkit_fake_op *op = list; op != NULL; op = op->next)
      if (op->kind == NPKIT_FAKE_K_INIT) atomic_store(&op->comm->async_error, (int)err);
    free_list(list);
    return err;
  }
  if (sim != NULL) {
    sim->estimatedTime = (float)(group_seconds(list) * 1e6);
    free_list(list);
    return ncclSuccess;
  }
  double t0 = npkit_fake_now();
  int nb = 0, b = 0;
  for (npkit_fake_op *op = list; op != NULL; op = op->next)
    if (op->comm != NULL) *(op->comm->nonblocking ? &nb : &b) += 1;
  if (nb > 0 && b > 0) {
    free_list(list);
    return npkit_fake_fail(ncclInvalidArgument, "%s: blocking and non-blocking communicators in "
                           "one group", fn);
  }
  double until = t0 + group_seconds(list);
  if (nb > 0) return npkit_fake_async_launch(list, npkit_fake_prof_take_group(), NULL, until);
  ncclResult_t res = npkit_fake_run_group(list, npkit_fake_prof_take_group(), true);
  free_list(list);
  if (res == ncclSuccess) npkit_fake_sleep_until(until);
  return res;
}
