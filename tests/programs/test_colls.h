/* Issues NCCL data calls with known contents, journals them, and verifies what arrived.
 *
 * Every call fills its send buffer from test_data's pattern (rank, call number, index), so the
 * expected receive buffer is computed here from first principles rather than from another run.
 * Calls made between npkit_test_group_start and npkit_test_group_end complete only at the end of
 * the outermost group, so their checks are deferred until then. */
#ifndef NPKIT_TEST_COLLS_H
#define NPKIT_TEST_COLLS_H

#include <nccl.h>
#include <stdint.h>
#include <stdio.h>

#include "test_journal.h"

typedef struct npkit_test_comm {
  ncclComm_t comm;
  const char *label; /* journal name: "world", "split", "c0"; "null" for a NULL communicator */
  int rank;          /* this caller's rank in it */
  int nranks;
} npkit_test_comm;

typedef enum npkit_test_fn {
  NPKIT_TEST_ALLREDUCE,
  NPKIT_TEST_BROADCAST,
  NPKIT_TEST_BCAST,
  NPKIT_TEST_REDUCE,
  NPKIT_TEST_ALLGATHER,
  NPKIT_TEST_REDUCESCATTER,
  NPKIT_TEST_ALLTOALL,
  NPKIT_TEST_GATHER,
  NPKIT_TEST_SCATTER,
  NPKIT_TEST_SEND,
  NPKIT_TEST_RECV,
} npkit_test_fn;

typedef struct npkit_test_pending npkit_test_pending;

typedef struct npkit_test_ctx {
  FILE *journal;          /* NULL: no journal */
  FILE *results;          /* NULL: no checksums */
  int check;              /* verify every received buffer */
  double premul_scalar;   /* scalar of the PreMulSum operator passed as `op`, if any */
  unsigned long mismatches; /* calls whose received data was wrong */
  unsigned long failures;   /* calls that did not return ncclSuccess */
  int group_depth;
  int npending, cap_pending;
  npkit_test_pending **pending;
} npkit_test_ctx;

void npkit_test_ctx_init(npkit_test_ctx *ctx);
/* Checks and frees whatever is still pending. */
void npkit_test_ctx_finish(npkit_test_ctx *ctx);

/* One data call.  `root` is the root for rooted collectives and the peer for Send/Recv, and is
 * ignored otherwise; `op` is ignored by non-reducing calls.  `call` numbers the call: it selects
 * the data and must be the same on every rank for the same collective (and on both sides of a
 * Send/Recv pair). */
ncclResult_t npkit_test_coll(npkit_test_ctx *ctx, npkit_test_fn fn, const npkit_test_comm *comm,
                             size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
                             unsigned call);

/* The same call through its nccl*Config entry point (NCCL 2.31+, not for Bcast, Send and Recv),
 * with `tag` as the config's user profiler tag.  The entry point is looked up at run time:
 * NPKIT_TEST_UNRESOLVED, with nothing called or journaled, when no library of the process has it. */
#define NPKIT_TEST_UNRESOLVED ((ncclResult_t)-2)
ncclResult_t npkit_test_coll_config(npkit_test_ctx *ctx, npkit_test_fn fn,
                                    const npkit_test_comm *comm, size_t count,
                                    ncclDataType_t datatype, ncclRedOp_t op, int root,
                                    unsigned call, uint64_t tag);
ncclResult_t npkit_test_group_start(npkit_test_ctx *ctx);
ncclResult_t npkit_test_group_end(npkit_test_ctx *ctx);

/* The journal's description of a call of fn on comm (none when NULL) that returned result,
 * every other field absent. */
npkit_test_call npkit_test_call_on(const char *fn, const npkit_test_comm *comm, int result);

/* The NCCL function name of fn ("ncclAllReduce"). */
const char *npkit_test_fn_name(npkit_test_fn fn);

#endif
