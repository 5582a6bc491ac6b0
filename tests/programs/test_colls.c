#include "test_colls.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_data.h"
#include "test_journal.h"
#include "test_names.h"
#include "test_newer_api.h"

struct npkit_test_pending {
  npkit_test_fn fn;
  npkit_test_comm comm;
  size_t count;
  ncclDataType_t datatype;
  ncclRedOp_t op;
  int root;
  unsigned call;
  npkit_test_pattern_kind kind;
  void *send, *recv;
  size_t recv_elems; /* elements of recv that hold a result on this rank; 0 if none */
  void *config_fn;   /* the nccl*Config entry point to call instead, NULL: the plain one */
  npkit_test_coll_cfg config;
};

/* Each function's name, and that of its nccl*Config variant (2.31.2: none for Bcast, Send, Recv). */
static const struct {
  const char *name, *config;
} fns[] = {
  [NPKIT_TEST_ALLREDUCE] = {"ncclAllReduce", "ncclAllReduceConfig"},
  [NPKIT_TEST_BROADCAST] = {"ncclBroadcast", "ncclBroadcastConfig"},
  [NPKIT_TEST_BCAST] = {"ncclBcast", NULL},
  [NPKIT_TEST_REDUCE] = {"ncclReduce", "ncclReduceConfig"},
  [NPKIT_TEST_ALLGATHER] = {"ncclAllGather", "ncclAllGatherConfig"},
  [NPKIT_TEST_REDUCESCATTER] = {"ncclReduceScatter", "ncclReduceScatterConfig"},
  [NPKIT_TEST_ALLTOALL] = {"ncclAlltoAll", "ncclAlltoAllConfig"},
  [NPKIT_TEST_GATHER] = {"ncclGather", "ncclGatherConfig"},
  [NPKIT_TEST_SCATTER] = {"ncclScatter", "ncclScatterConfig"},
  [NPKIT_TEST_SEND] = {"ncclSend", NULL},
  [NPKIT_TEST_RECV] = {"ncclRecv", NULL},
};

const char *npkit_test_fn_name(npkit_test_fn fn) {
  return fns[fn].name;
}

npkit_test_call npkit_test_call_on(const char *fn, const npkit_test_comm *comm, int result) {
  npkit_test_call c = npkit_test_call_make(fn, result);
  if (comm != NULL) {
    c.comm = comm->label;
    c.nranks = comm->nranks;
  }
  return c;
}

void npkit_test_ctx_init(npkit_test_ctx *ctx) {
  memset(ctx, 0, sizeof *ctx);
  ctx->premul_scalar = 1.0;
}

static int is_reduction(npkit_test_fn fn) {
  return fn == NPKIT_TEST_ALLREDUCE || fn == NPKIT_TEST_REDUCE || fn == NPKIT_TEST_REDUCESCATTER;
}

static int is_rooted(npkit_test_fn fn) {
  return fn == NPKIT_TEST_BROADCAST || fn == NPKIT_TEST_BCAST || fn == NPKIT_TEST_REDUCE ||
         fn == NPKIT_TEST_GATHER || fn == NPKIT_TEST_SCATTER;
}

/* Products would overflow small types with wide values, and max/min need spread-out values to
 * tell ranks apart, hence one pattern per operator. */
static npkit_test_pattern_kind pattern_for(npkit_test_fn fn, ncclRedOp_t op) {
  if (!is_reduction(fn)) return NPKIT_TEST_PAT_SMALL;
  if (op == ncclProd) return NPKIT_TEST_PAT_BINARY;
  if (op == ncclMax || op == ncclMin) return NPKIT_TEST_PAT_WIDE;
  return NPKIT_TEST_PAT_SMALL;
}

static double contribution(const npkit_test_pending *p, int rank, size_t i) {
  return npkit_test_quantize(p->datatype,
                             npkit_test_pattern(p->kind, p->datatype, rank, p->call, i));
}

/* The value NCCL should produce when reducing element i of every rank's send buffer. */
static double reduced(const npkit_test_pending *p, size_t i, double premul) {
  int n = p->comm.nranks;
  double acc = contribution(p, 0, i);
  if (p->op >= ncclNumOps) acc *= premul;
  for (int r = 1; r < n; r++) {
    double v = contribution(p, r, i);
    switch ((int)p->op) {
    case ncclProd: acc *= v; break;
    case ncclMax: acc = v > acc ? v : acc; break;
    case ncclMin: acc = v < acc ? v : acc; break;
    default: acc += p->op >= ncclNumOps ? v * premul : v; break;
    }
  }
  if (p->op == ncclAvg) acc /= n;
  return acc;
}

static double expected(const npkit_test_pending *p, size_t j, double premul) {
  size_t c = p->count;
  int me = p->comm.rank;
  switch (p->fn) {
  case NPKIT_TEST_ALLREDUCE:
  case NPKIT_TEST_REDUCE: return reduced(p, j, premul);
  case NPKIT_TEST_REDUCESCATTER: return reduced(p, (size_t)me * c + j, premul);
  case NPKIT_TEST_BROADCAST:
  case NPKIT_TEST_BCAST: return contribution(p, p->root, j);
  case NPKIT_TEST_ALLGATHER:
  case NPKIT_TEST_GATHER: return contribution(p, (int)(j / c), j % c);
  case NPKIT_TEST_ALLTOALL: return contribution(p, (int)(j / c), (size_t)me * c + j % c);
  case NPKIT_TEST_SCATTER: return contribution(p, p->root, (size_t)me * c + j);
  case NPKIT_TEST_RECV: return contribution(p, p->root, j);
  case NPKIT_TEST_SEND: break;
  }
  return NAN;
}

static int close_enough(int datatype, double got, double want) {
  if (!npkit_test_dtype_is_float(datatype)) return got == want;
  /* Only averages and pre-multiplied sums can be inexact; allow the type's rounding. */
  double tol = (datatype == ncclFloat16 || datatype == ncclBfloat16) ? 1e-2
               : datatype == ncclFloat32                              ? 1e-6
                                                                      : 1e-12;
  double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
  return fabs(got - want) <= tol * scale;
}

static void verify(npkit_test_ctx *ctx, const npkit_test_pending *p) {
  if (!p->recv_elems) return;
  if (ctx->check) {
    for (size_t j = 0; j < p->recv_elems; j++) {
      double got = npkit_test_load(p->recv, p->datatype, j);
      double want = npkit_test_quantize(p->datatype, expected(p, j, ctx->premul_scalar));
      if (!close_enough(p->datatype, got, want)) {
        fprintf(stderr,
                "check failed: %s on %s (rank %d/%d) call %u count %zu %s: element %zu is %g, "
                "expected %g\n",
                fns[p->fn].name, p->comm.label, p->comm.rank, p->comm.nranks, p->call, p->count,
                npkit_test_dtype_name(p->datatype), j, got, want);
        ctx->mismatches++;
        break;
      }
    }
  }
  if (ctx->results) {
    size_t bytes = p->recv_elems * npkit_test_dtype_size(p->datatype);
    fprintf(ctx->results, "%s %s call=%u count=%zu %016" PRIx64 "\n", fns[p->fn].name,
            p->comm.label, p->call, p->count,
            npkit_test_fnv1a(p->recv, bytes, NPKIT_TEST_FNV_INIT));
  }
}

static void release(npkit_test_pending *p) {
  if (p->recv != p->send) free(p->recv);
  free(p->send);
  free(p);
}

static void settle(npkit_test_ctx *ctx, int completed) {
  for (int i = 0; i < ctx->npending; i++) {
    if (completed) verify(ctx, ctx->pending[i]);
    release(ctx->pending[i]);
  }
  ctx->npending = 0;
}

void npkit_test_ctx_finish(npkit_test_ctx *ctx) {
  settle(ctx, 1);
  free(ctx->pending);
  ctx->pending = NULL;
  ctx->cap_pending = 0;
}

static int keep(npkit_test_ctx *ctx, npkit_test_pending *p) {
  if (ctx->npending == ctx->cap_pending) {
    int cap = ctx->cap_pending ? 2 * ctx->cap_pending : 16;
    npkit_test_pending **grown = realloc(ctx->pending, (size_t)cap * sizeof *grown);
    if (!grown) return -1;
    ctx->pending = grown;
    ctx->cap_pending = cap;
  }
  ctx->pending[ctx->npending++] = p;
  return 0;
}

/* Element counts of the send and receive buffers, and how much of recv holds a result here. */
static void buffer_shape(const npkit_test_pending *p, size_t *send_elems, size_t *recv_elems,
                         size_t *result_elems) {
  size_t c = p->count, n = (size_t)p->comm.nranks;
  int is_root = p->comm.rank == p->root;
  *send_elems = c;
  *recv_elems = c;
  *result_elems = c;
  switch (p->fn) {
  case NPKIT_TEST_REDUCESCATTER: *send_elems = c * n; break;
  case NPKIT_TEST_ALLGATHER: *recv_elems = *result_elems = c * n; break;
  case NPKIT_TEST_ALLTOALL: *send_elems = *recv_elems = *result_elems = c * n; break;
  case NPKIT_TEST_GATHER:
    *recv_elems = c * n;
    *result_elems = is_root ? c * n : 0;
    break;
  case NPKIT_TEST_SCATTER: *send_elems = c * n; break;
  case NPKIT_TEST_REDUCE: *result_elems = is_root ? c : 0; break;
  case NPKIT_TEST_SEND: *recv_elems = *result_elems = 0; break;
  case NPKIT_TEST_RECV: *send_elems = 0; break;
  default: break;
  }
}

static npkit_test_pending *prepare(npkit_test_fn fn, const npkit_test_comm *comm, size_t count,
                                   ncclDataType_t datatype, ncclRedOp_t op, int root,
                                   unsigned call) {
  npkit_test_pending *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  *p = (npkit_test_pending){.fn = fn, .comm = *comm, .count = count, .datatype = datatype,
                            .op = op, .root = root, .call = call, .kind = pattern_for(fn, op)};
  if (p->comm.nranks < 1) p->comm.nranks = 1; /* a NULL communicator: buffers for one rank */
  size_t send_elems, recv_elems, esize = npkit_test_dtype_size(datatype);
  buffer_shape(p, &send_elems, &recv_elems, &p->recv_elems);
  /* +1 so that a zero count still yields distinct, valid pointers */
  p->send = malloc(send_elems * esize + 1);
  p->recv = fn == NPKIT_TEST_BCAST ? p->send : malloc(recv_elems * esize + 1);
  if (!p->send || !p->recv) {
    release(p);
    return NULL;
  }
  /* A recognisable filler: a call that writes nothing cannot match any expected value. */
  if (p->recv != p->send) memset(p->recv, 0xa5, recv_elems * esize);
  int me = p->comm.rank;
  if (fn == NPKIT_TEST_BCAST && me != root) {
    memset(p->send, 0xa5, send_elems * esize);
  } else {
    for (size_t i = 0; i < send_elems; i++)
      npkit_test_store(p->send, datatype, i, contribution(p, me, i));
  }
  return p;
}

typedef ncclResult_t (*cfg_reduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t, const npkit_test_coll_cfg *);
typedef ncclResult_t (*cfg_rooted_fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                                     cudaStream_t, const npkit_test_coll_cfg *);
typedef ncclResult_t (*cfg_reduce_rooted_fn)(const void *, void *, size_t, ncclDataType_t,
                                            ncclRedOp_t, int, ncclComm_t, cudaStream_t,
                                            const npkit_test_coll_cfg *);
typedef ncclResult_t (*cfg_plain_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                                    cudaStream_t, const npkit_test_coll_cfg *);

/* The nccl*Config variants take the plain call's arguments and the config (2.31.2 nccl.h.in). */
static ncclResult_t issue_config(const npkit_test_pending *p) {
  ncclComm_t c = p->comm.comm;
  size_t n = p->count;
  ncclDataType_t t = p->datatype;
  const npkit_test_coll_cfg *cfg = &p->config;
  switch (p->fn) {
  case NPKIT_TEST_ALLREDUCE:
  case NPKIT_TEST_REDUCESCATTER:
    return ((cfg_reduce_fn)p->config_fn)(p->send, p->recv, n, t, p->op, c, 0, cfg);
  case NPKIT_TEST_BROADCAST:
  case NPKIT_TEST_GATHER:
  case NPKIT_TEST_SCATTER:
    return ((cfg_rooted_fn)p->config_fn)(p->send, p->recv, n, t, p->root, c, 0, cfg);
  case NPKIT_TEST_REDUCE:
    return ((cfg_reduce_rooted_fn)p->config_fn)(p->send, p->recv, n, t, p->op, p->root, c, 0, cfg);
  case NPKIT_TEST_ALLGATHER:
  case NPKIT_TEST_ALLTOALL:
    return ((cfg_plain_fn)p->config_fn)(p->send, p->recv, n, t, c, 0, cfg);
  default: return ncclInvalidArgument;
  }
}

static inline __attribute__((always_inline)) ncclResult_t issue(const npkit_test_pending *p) {
  ncclComm_t c = p->comm.comm;
  size_t n = p->count;
  ncclDataType_t t = p->datatype;
  if (p->config_fn != NULL) return issue_config(p);
  switch (p->fn) {
  case NPKIT_TEST_ALLREDUCE: return ncclAllReduce(p->send, p->recv, n, t, p->op, c, 0);
  case NPKIT_TEST_BROADCAST: return ncclBroadcast(p->send, p->recv, n, t, p->root, c, 0);
  case NPKIT_TEST_BCAST: return ncclBcast(p->send, n, t, p->root, c, 0);
  case NPKIT_TEST_REDUCE: return ncclReduce(p->send, p->recv, n, t, p->op, p->root, c, 0);
  case NPKIT_TEST_ALLGATHER: return ncclAllGather(p->send, p->recv, n, t, c, 0);
  case NPKIT_TEST_REDUCESCATTER: return ncclReduceScatter(p->send, p->recv, n, t, p->op, c, 0);
  case NPKIT_TEST_ALLTOALL: return ncclAlltoAll(p->send, p->recv, n, t, c, 0);
  case NPKIT_TEST_GATHER: return ncclGather(p->send, p->recv, n, t, p->root, c, 0);
  case NPKIT_TEST_SCATTER: return ncclScatter(p->send, p->recv, n, t, p->root, c, 0);
  case NPKIT_TEST_SEND: return ncclSend(p->send, n, t, p->root, c, 0);
  case NPKIT_TEST_RECV: return ncclRecv(p->recv, n, t, p->root, c, 0);
  }
  return ncclInvalidArgument;
}

static void journal(const npkit_test_ctx *ctx, const npkit_test_pending *p, ncclResult_t res) {
  npkit_test_fn fn = p->fn;
  const npkit_test_comm *comm = &p->comm;
  size_t count = p->count;
  ncclDataType_t datatype = p->datatype;
  ncclRedOp_t op = p->op;
  int root = p->root;
  npkit_test_call c = npkit_test_call_on(p->config_fn ? fns[fn].config : fns[fn].name, comm, res);
  if (p->config_fn) {
    c.has_tag = 1;
    c.tag = p->config.userProfilerTag;
  }
  c.count = (long long)count;
  c.datatype = datatype;
  if (is_reduction(fn)) c.op = op;
  if (is_rooted(fn)) c.root = root;
  if (fn == NPKIT_TEST_SEND || fn == NPKIT_TEST_RECV) c.peer = root;
  npkit_test_journal_write(ctx->journal, &c);
}

/* Inlined: the call-site tests expect npkit_test_coll itself to be NCCL's caller. */
static inline __attribute__((always_inline)) ncclResult_t run_call(npkit_test_ctx *ctx, npkit_test_fn fn, const npkit_test_comm *comm,
                             size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
                             unsigned call, void *config_fn, uint64_t tag) {
  npkit_test_pending *p = prepare(fn, comm, count, datatype, op, root, call);
  if (!p) {
    fprintf(stderr, "out of memory for %s of %zu elements\n", fns[fn].name, count);
    ctx->failures++;
    return ncclSystemError;
  }
  p->config_fn = config_fn;
  p->config = npkit_test_coll_cfg_make(tag);
  ncclResult_t res = issue(p);
  journal(ctx, p, res);
  if (res != ncclSuccess) {
    ctx->failures++;
    release(p);
    return res;
  }
  if (keep(ctx, p) != 0) {
    /* cannot defer the check: the data may still be in flight inside a group, so keep the
     * buffers alive rather than free them under NCCL */
    ctx->failures++;
    return res;
  }
  if (ctx->group_depth == 0) settle(ctx, 1);
  return res;
}

ncclResult_t npkit_test_coll(npkit_test_ctx *ctx, npkit_test_fn fn, const npkit_test_comm *comm,
                             size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
                             unsigned call) {
  return run_call(ctx, fn, comm, count, datatype, op, root, call, NULL, 0);
}

ncclResult_t npkit_test_coll_config(npkit_test_ctx *ctx, npkit_test_fn fn,
                                    const npkit_test_comm *comm, size_t count,
                                    ncclDataType_t datatype, ncclRedOp_t op, int root,
                                    unsigned call, uint64_t tag) {
  void *f = fn < sizeof fns / sizeof fns[0] && fns[fn].config != NULL ? npkit_test_sym(fns[fn].config)
                                                                       : NULL;
  if (f == NULL) return NPKIT_TEST_UNRESOLVED;
  return run_call(ctx, fn, comm, count, datatype, op, root, call, f, tag);
}

ncclResult_t npkit_test_group_start(npkit_test_ctx *ctx) {
  ncclResult_t res = ncclGroupStart();
  npkit_test_call c = npkit_test_call_make("ncclGroupStart", res);
  npkit_test_journal_write(ctx->journal, &c);
  if (res == ncclSuccess)
    ctx->group_depth++;
  else
    ctx->failures++;
  return res;
}

ncclResult_t npkit_test_group_end(npkit_test_ctx *ctx) {
  ncclResult_t res = ncclGroupEnd();
  npkit_test_call c = npkit_test_call_make("ncclGroupEnd", res);
  npkit_test_journal_write(ctx->journal, &c);
  if (res != ncclSuccess) ctx->failures++;
  if (ctx->group_depth > 0) ctx->group_depth--;
  if (ctx->group_depth == 0) settle(ctx, res == ncclSuccess);
  return res;
}
