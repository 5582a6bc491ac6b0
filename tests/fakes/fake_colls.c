/* Argument checks and the transfer plan of every collective and of send/recv.
 *
 * Reductions are direct: rank p owns slice p of the buffer, receives every other rank's slice p,
 * reduces the contributions in rank order 0..n-1 (so every rank gets bit-identical results, the
 * same as a sequential computation in rank order) and sends the result back to everybody.  Each
 * rank sends and receives about 2x the buffer, like a ring algorithm, and needs one buffer of
 * scratch. */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct plan_ctx {
  npkit_fake_op *op;
  int n, me;
  size_t bytes; /* count * esize */
} plan_ctx;

static bool reduces(npkit_fake_kind k) {
  return k == NPKIT_FAKE_K_ALLREDUCE || k == NPKIT_FAKE_K_REDUCE ||
         k == NPKIT_FAKE_K_REDUCESCATTER;
}

static bool rooted(npkit_fake_kind k) {
  return k == NPKIT_FAKE_K_BROADCAST || k == NPKIT_FAKE_K_REDUCE || k == NPKIT_FAKE_K_GATHER ||
         k == NPKIT_FAKE_K_SCATTER;
}

/* Whether this rank reads sendbuff (send) or writes recvbuff (!send) in the call. */
static bool uses_buffer(const npkit_fake_call *c, int me, bool send) {
  switch (c->kind) {
  case NPKIT_FAKE_K_BROADCAST:
  case NPKIT_FAKE_K_SCATTER: return !send || me == c->root;
  case NPKIT_FAKE_K_REDUCE:
  case NPKIT_FAKE_K_GATHER: return send || me == c->root;
  case NPKIT_FAKE_K_SEND: return send;
  case NPKIT_FAKE_K_RECV: return !send;
  default: return true;
  }
}

/* Turns ncclRedOp_t into what the plan does.  ncclAvg follows NCCL: integers are summed and then
 * divided by nranks; floating types are pre-multiplied by 1/nranks (rounded to the type) and then
 * summed. */
static ncclResult_t resolve_red(ncclComm_t c, const npkit_fake_call *call, npkit_fake_red *red) {
  memset(red, 0, sizeof *red);
  ncclRedOp_t op = call->op;
  ncclDataType_t dt = call->dt;
  bool integer = dt <= ncclUint64;
  switch (op) {
  case ncclSum: red->op = NPKIT_FAKE_SUM; break;
  case ncclProd: red->op = NPKIT_FAKE_PROD; break;
  case ncclMax: red->op = NPKIT_FAKE_MAX; break;
  case ncclMin: red->op = NPKIT_FAKE_MIN; break;
  case ncclAvg:
    red->op = NPKIT_FAKE_SUM;
    if (integer) {
      red->divide_by = c->nranks;
    } else {
      red->premul = true;
      npkit_fake_scalar_from_double(dt, 1.0 / c->nranks, red->scalar);
    }
    break;
  default: {
    long idx = (long)op - (long)ncclNumOps;
    if (op < ncclNumOps || idx >= c->nredops || !c->redops[idx].used)
      return npkit_fake_fail(ncclInvalidArgument, "%s : invalid reduction operation %d",
                             call->name, (int)op);
    const npkit_fake_redop *r = &c->redops[idx];
    if (r->dt != dt)
      return npkit_fake_fail(ncclInvalidArgument,
                             "%s : reduction operation %d was created for datatype %d, not %d",
                             call->name, (int)op, (int)r->dt, (int)dt);
    red->op = NPKIT_FAKE_SUM;
    red->premul = true;
    if (r->residence == ncclScalarDevice) {
      red->scalar_is_ptr = true;
      red->scalar_ptr = r->ptr;
    } else {
      memcpy(red->scalar, r->value, sizeof red->scalar);
    }
  }
  }
  return ncclSuccess;
}

static ncclResult_t check(const npkit_fake_call *call, size_t *esize, npkit_fake_red *red) {
  ncclComm_t c = call->comm;
  if (c == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "%s : comm argument is NULL", call->name);
  ncclResult_t r = npkit_fake_comm_usable(c, call->name);
  if (r != ncclSuccess) return r;
  *esize = npkit_fake_type_size(call->dt);
  if (*esize == 0)
    return npkit_fake_fail(ncclInvalidArgument, "%s : invalid type %d", call->name, (int)call->dt);
  if (reduces(call->kind)) {
    if (!npkit_fake_type_reducible(call->dt))
      return npkit_fake_fail(ncclInvalidArgument,
                             "%s : reductions on fp8 type %d are not supported by this library",
                             call->name, (int)call->dt);
    r = resolve_red(c, call, red);
    if (r != ncclSuccess) return r;
  }
  if (rooted(call->kind) && (call->root < 0 || call->root >= c->nranks))
    return npkit_fake_fail(ncclInvalidArgument,
                           "%s : invalid root %d (root should be in the 0..%d range)", call->name,
                           call->root, c->nranks);
  if ((call->kind == NPKIT_FAKE_K_SEND || call->kind == NPKIT_FAKE_K_RECV) &&
      (call->root < 0 || call->root >= c->nranks))
    return npkit_fake_fail(ncclInvalidArgument,
                           "%s : invalid peer %d (peer should be in the 0..%d range)", call->name,
                           call->root, c->nranks);
  if (call->count > 0 && uses_buffer(call, c->rank, true) && call->sendbuff == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "%s : sendbuff argument is NULL", call->name);
  if (call->count > 0 && uses_buffer(call, c->rank, false) && call->recvbuff == NULL)
    return npkit_fake_fail(ncclInvalidArgument, "%s : recvbuff argument is NULL", call->name);
  if (call->count > SIZE_MAX / *esize / (size_t)c->nranks / 2)
    return npkit_fake_fail(ncclInvalidArgument, "%s : count %zu is too large", call->name,
                           call->count);
  return ncclSuccess;
}

/* ------------------------------------------------------------------ steps */

static void slice(size_t count, int n, int p, size_t *off, size_t *cnt) {
  size_t base = count / (size_t)n, rem = count % (size_t)n;
  *cnt = base + ((size_t)p < rem);
  *off = (size_t)p * base + ((size_t)p < rem ? (size_t)p : rem);
}

static unsigned char *slot(npkit_fake_op *op, int p) {
  int me = op->comm->rank;
  return op->slots + (size_t)(p < me ? p : p - 1) * op->slot_bytes;
}

/* Pre-multiplies this rank's contribution (PreMulSum, floating ncclAvg). */
static ncclResult_t start_premul(npkit_fake_op *op, int phase, bool *again) {
  npkit_fake_red *red = &op->red;
  if (!red->premul) return ncclSuccess;
  if (red->scalar_is_ptr) memcpy(red->scalar, red->scalar_ptr, op->esize);
  size_t n = op->kind == NPKIT_FAKE_K_REDUCESCATTER ? op->count * (size_t)op->comm->nranks
                                                   : op->count;
  npkit_fake_premul((void *)(uintptr_t)op->src, op->sendbuff, n, op->dt, red->scalar);
  return ncclSuccess;
}

/* Reduces the slice this rank owns from its own contribution and the received ones. */
static void reduce_into(npkit_fake_op *op, void *out, const unsigned char *own, size_t cnt) {
  int n = op->comm->nranks, me = op->comm->rank;
  for (int r = 0; r < n; r++) op->inputs[r] = r == me ? own : slot(op, r);
  npkit_fake_reduce(out, op->inputs, n, cnt, op->dt, op->red.op);
  if (op->red.divide_by) npkit_fake_divide(out, cnt, op->dt, op->red.divide_by);
}

static ncclResult_t finish_allreduce(npkit_fake_op *op, int phase, bool *again) {
  if (phase != 0) return ncclSuccess;
  size_t off, cnt;
  slice(op->count, op->comm->nranks, op->comm->rank, &off, &cnt);
  reduce_into(op, (unsigned char *)op->recvbuff + off * op->esize, op->src + off * op->esize, cnt);
  return ncclSuccess;
}

static ncclResult_t finish_reduce(npkit_fake_op *op, int phase, bool *again) {
  if (op->comm->rank == op->root) reduce_into(op, op->recvbuff, op->src, op->count);
  return ncclSuccess;
}

static ncclResult_t finish_reducescatter(npkit_fake_op *op, int phase, bool *again) {
  size_t bytes = op->count * op->esize;
  reduce_into(op, op->recvbuff, op->src + (size_t)op->comm->rank * bytes, op->count);
  return ncclSuccess;
}

/* The local part of data movement: this rank's own block. */
static ncclResult_t start_copy_own(npkit_fake_op *op, int phase, bool *again) {
  int me = op->comm->rank;
  size_t bytes = op->count * op->esize;
  const unsigned char *from = NULL;
  unsigned char *to = NULL;
  switch (op->kind) {
  case NPKIT_FAKE_K_BROADCAST:
    if (me == op->root) from = op->sendbuff, to = op->recvbuff;
    break;
  case NPKIT_FAKE_K_ALLGATHER:
    from = op->sendbuff, to = (unsigned char *)op->recvbuff + (size_t)me * bytes;
    break;
  case NPKIT_FAKE_K_GATHER:
    if (me == op->root) from = op->sendbuff, to = (unsigned char *)op->recvbuff + (size_t)me * bytes;
    break;
  case NPKIT_FAKE_K_SCATTER:
    if (me == op->root) from = (const unsigned char *)op->sendbuff + (size_t)me * bytes, to = op->recvbuff;
    break;
  case NPKIT_FAKE_K_ALLTOALL:
    if (op->tmp != NULL) memcpy(op->tmp, op->sendbuff, bytes * (size_t)op->comm->nranks);
    from = op->src + (size_t)me * bytes, to = (unsigned char *)op->recvbuff + (size_t)me * bytes;
    break;
  default: break;
  }
  if (from != NULL && from != to) memmove(to, from, bytes);
  return ncclSuccess;
}

/* ------------------------------------------------------------------ plans */

static ncclResult_t xs(plan_ctx *p, int phase, int peer, const void *buf, size_t len) {
  return npkit_fake_op_xfer(p->op, phase, NPKIT_FAKE_CHAN_COLL, true, peer, buf, len);
}

static ncclResult_t xr(plan_ctx *p, int phase, int peer, void *buf, size_t len) {
  return npkit_fake_op_xfer(p->op, phase, NPKIT_FAKE_CHAN_COLL, false, peer, buf, len);
}

/* Scratch of a reduction: the list of inputs, `premul` bytes for the pre-multiplied
 * contribution, then n-1 slots for the received ones. */
static ncclResult_t alloc_scratch(npkit_fake_op *op, size_t premul, size_t slot_bytes) {
  int n = op->comm->nranks;
  size_t ptrs = (size_t)n * sizeof(void *); /* keeps what follows 8-byte aligned */
  size_t total = ptrs + premul + (size_t)(n - 1) * slot_bytes;
  op->tmp = malloc(total);
  if (op->tmp == NULL)
    return npkit_fake_fail(ncclSystemError, "%s: cannot allocate %zu bytes of scratch", op->name,
                           total);
  op->inputs = op->tmp;
  op->slot_bytes = slot_bytes;
  op->src = premul ? (unsigned char *)op->tmp + ptrs : op->sendbuff;
  op->slots = (unsigned char *)op->tmp + ptrs + premul;
  return ncclSuccess;
}

#define TRY(x)                                                                                    \
  do {                                                                                            \
    ncclResult_t r_ = (x);                                                                        \
    if (r_ != ncclSuccess) return r_;                                                             \
  } while (0)

static ncclResult_t plan_allreduce(plan_ctx *p) {
  npkit_fake_op *op = p->op;
  size_t es = op->esize, off_me, cnt_me;
  slice(op->count, p->n, p->me, &off_me, &cnt_me);
  TRY(alloc_scratch(op, op->red.premul ? p->bytes : 0, cnt_me * es));
  op->start = start_premul;
  op->finish = finish_allreduce;
  unsigned char *recv = op->recvbuff;
  for (int q = 0; q < p->n; q++) {
    if (q == p->me) continue;
    size_t off, cnt;
    slice(op->count, p->n, q, &off, &cnt);
    TRY(xs(p, 0, q, op->src + off * es, cnt * es));
    TRY(xr(p, 0, q, slot(op, q), cnt_me * es));
  }
  for (int q = 0; q < p->n; q++) {
    if (q == p->me) continue;
    size_t off, cnt;
    slice(op->count, p->n, q, &off, &cnt);
    TRY(xs(p, 1, q, recv + off_me * es, cnt_me * es));
    TRY(xr(p, 1, q, recv + off * es, cnt * es));
  }
  op->nphases = 2;
  return ncclSuccess;
}

/* Where a transfer with peer q reads or writes: nowhere, the whole buffer, its block q, or the
 * scratch slot of q (reductions). */
typedef enum place { NOWHERE, WHOLE, BLOCK_Q, SLOT_Q } place;

static unsigned char *place_of(plan_ctx *p, place how, const void *buf, int q) {
  unsigned char *b = (unsigned char *)(uintptr_t)buf;
  return how == BLOCK_Q ? b + (size_t)q * p->bytes : how == SLOT_Q ? slot(p->op, q) : b;
}

/* With every other rank q, in rank order: the send of p->bytes from `send` (unless NOWHERE), then
 * the receive of p->bytes into `recv` (unless NOWHERE). */
static ncclResult_t with_peers(plan_ctx *p, place s, const void *send, place r, void *recv) {
  for (int q = 0; q < p->n; q++) {
    if (q == p->me) continue;
    if (s != NOWHERE) TRY(xs(p, 0, q, place_of(p, s, send, q), p->bytes));
    if (r != NOWHERE) TRY(xr(p, 0, q, place_of(p, r, recv, q), p->bytes));
  }
  return ncclSuccess;
}

static ncclResult_t plan_reduce(plan_ctx *p) {
  npkit_fake_op *op = p->op;
  bool root = p->me == op->root;
  TRY(alloc_scratch(op, op->red.premul ? p->bytes : 0, root ? p->bytes : 0));
  op->start = start_premul;
  op->finish = finish_reduce;
  if (!root) return xs(p, 0, op->root, op->src, p->bytes);
  return with_peers(p, NOWHERE, NULL, SLOT_Q, NULL);
}

static ncclResult_t plan_reducescatter(plan_ctx *p) {
  npkit_fake_op *op = p->op;
  TRY(alloc_scratch(op, op->red.premul ? p->bytes * (size_t)p->n : 0, p->bytes));
  op->start = start_premul;
  op->finish = finish_reducescatter;
  return with_peers(p, BLOCK_Q, op->src, SLOT_Q, NULL);
}

/* Broadcast (the root sends its whole buffer) and Scatter (block q to rank q). */
static ncclResult_t plan_from_root(plan_ctx *p, place s) {
  npkit_fake_op *op = p->op;
  op->start = start_copy_own;
  if (p->me != op->root) return xr(p, 0, op->root, op->recvbuff, p->bytes);
  return with_peers(p, s, op->sendbuff, NOWHERE, NULL);
}

static ncclResult_t plan_allgather(plan_ctx *p) {
  p->op->start = start_copy_own;
  return with_peers(p, WHOLE, p->op->sendbuff, BLOCK_Q, p->op->recvbuff);
}

static bool overlap(const void *a, const void *b, size_t len) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x < y + len && y < x + len;
}

static ncclResult_t plan_alltoall(plan_ctx *p) {
  npkit_fake_op *op = p->op;
  size_t total = p->bytes * (size_t)p->n;
  op->src = op->sendbuff;
  if (overlap(op->sendbuff, op->recvbuff, total)) {
    /* Received blocks would overwrite blocks not sent yet: send from a snapshot. */
    op->tmp = malloc(total);
    if (op->tmp == NULL)
      return npkit_fake_fail(ncclSystemError, "%s: cannot allocate %zu bytes of scratch",
                             op->name, total);
    op->src = op->tmp;
  }
  op->start = start_copy_own;
  return with_peers(p, BLOCK_Q, op->src, BLOCK_Q, op->recvbuff);
}

static ncclResult_t plan_gather(plan_ctx *p) {
  npkit_fake_op *op = p->op;
  op->start = start_copy_own;
  if (p->me != op->root) return xs(p, 0, op->root, op->sendbuff, p->bytes);
  return with_peers(p, NOWHERE, NULL, BLOCK_Q, op->recvbuff);
}

static ncclResult_t plan(plan_ctx *p) {
  npkit_fake_op *op = p->op;
  op->nphases = 1;
  switch (op->kind) {
  case NPKIT_FAKE_K_ALLREDUCE: return plan_allreduce(p);
  case NPKIT_FAKE_K_REDUCE: return plan_reduce(p);
  case NPKIT_FAKE_K_REDUCESCATTER: return plan_reducescatter(p);
  case NPKIT_FAKE_K_BROADCAST: return plan_from_root(p, WHOLE);
  case NPKIT_FAKE_K_ALLGATHER: return plan_allgather(p);
  case NPKIT_FAKE_K_ALLTOALL: return plan_alltoall(p);
  case NPKIT_FAKE_K_GATHER: return plan_gather(p);
  case NPKIT_FAKE_K_SCATTER: return plan_from_root(p, BLOCK_Q);
  case NPKIT_FAKE_K_SEND:
    return npkit_fake_op_xfer(op, 0, NPKIT_FAKE_CHAN_P2P, true, op->root, op->sendbuff, p->bytes);
  case NPKIT_FAKE_K_RECV:
    return npkit_fake_op_xfer(op, 0, NPKIT_FAKE_CHAN_P2P, false, op->root, op->recvbuff, p->bytes);
  default: return npkit_fake_fail(ncclInternalError, "%s: not a data operation", op->name);
  }
}

/* Seconds the bandwidth part of the call takes, with nccl-tests' message size and bus factor. */
static double sim_seconds(npkit_fake_kind k, size_t bytes, int n) {
  double s = (double)bytes, f = 1.0;
  switch (k) {
  case NPKIT_FAKE_K_ALLREDUCE: f = 2.0 * (n - 1) / n; break;
  case NPKIT_FAKE_K_ALLGATHER:
  case NPKIT_FAKE_K_REDUCESCATTER:
  case NPKIT_FAKE_K_ALLTOALL:
  case NPKIT_FAKE_K_GATHER:
  case NPKIT_FAKE_K_SCATTER:
    s *= n;
    f = (double)(n - 1) / n;
    break;
  default: break;
  }
  return s * f / npkit_fake_cfg()->bw_bytes_s;
}

ncclResult_t npkit_fake_make_op(const npkit_fake_call *call, npkit_fake_op **out) {
  *out = NULL;
  size_t esize = 0;
  npkit_fake_red red;
  memset(&red, 0, sizeof red);
  ncclResult_t r = check(call, &esize, &red);
  if (r != ncclSuccess) return r;
  ncclComm_t c = call->comm;
  npkit_fake_op *op = npkit_fake_op_new(c, call->kind, call->name);
  if (op == NULL) return npkit_fake_fail(ncclSystemError, "%s: out of memory", call->name);
  op->sendbuff = call->sendbuff;
  op->recvbuff = call->recvbuff;
  op->count = call->count;
  op->esize = esize;
  op->dt = call->dt;
  op->red = red;
  op->root = call->root;
  op->stream = call->stream;
  op->user_tag = call->user_tag;
  op->needs_ready = true;
  op->timed = true;
  op->sim_s = sim_seconds(call->kind, call->count * esize, c->nranks);
  plan_ctx p = {op, c->nranks, c->rank, call->count * esize};
  r = plan(&p);
  if (r != ncclSuccess) {
    npkit_fake_op_free(op);
    return r;
  }
  *out = op;
  return ncclSuccess;
}

ncclResult_t npkit_fake_collective(const npkit_fake_call *call) {
  const npkit_fake_settings *cfg = npkit_fake_cfg();
  double t_call = cfg->noop ? 0 : npkit_fake_now();
  if (cfg->noop || call->count == 0) {
    size_t esize = 0;
    npkit_fake_red red;
    memset(&red, 0, sizeof red);
    return npkit_fake_group_error(check(call, &esize, &red));
  }
  /* after NCCL's argument check of the communicator itself (CommCheck) */
  ncclResult_t r = ncclSuccess;
  if (call->comm != NULL && call->comm->magic == NPKIT_FAKE_COMM_MAGIC)
    r = npkit_fake_ensure_ready(call->comm, call->name);
  if (r != ncclSuccess) return npkit_fake_group_error(r);
  npkit_fake_op *op;
  r = npkit_fake_make_op(call, &op);
  if (r != ncclSuccess) return npkit_fake_group_error(r);
  if (npkit_fake_graph_capture(call, op)) return ncclSuccess;
  return npkit_fake_submit(op, t_call);
}
