/* nccl_everything: one process (no MPI, communicators of one rank) that calls every public
 * function of nccl.h at least once, error paths included, and journals each call with the code it
 * returned.  Calls that need the output of a call that failed (an older NCCL lacks some functions)
 * are skipped, so the program runs to the end against any NCCL.
 *
 * usage: nccl_everything [--journal FILE] [--check]
 * Prints nothing on stdout.  Exit status: 0, or 1 when --check found wrong data or the journal
 * could not be written, 2 on a usage error. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_colls.h"
#include "test_journal.h"

typedef struct everything {
  npkit_test_ctx ctx;
  npkit_test_comm c;    /* the main communicator */
} everything;

static ncclResult_t note(everything *e, const char *fn, const npkit_test_comm *comm,
                         ncclResult_t res) {
  npkit_test_call call = npkit_test_call_make(fn, res);
  if (comm) {
    call.comm = comm->label;
    call.nranks = comm->nranks;
  }
  npkit_test_journal_write(e->ctx.journal, &call);
  return res;
}

static ncclResult_t note_size(everything *e, const char *fn, const npkit_test_comm *comm,
                              size_t size, ncclResult_t res) {
  npkit_test_call call = npkit_test_call_make(fn, res);
  if (comm) {
    call.comm = comm->label;
    call.nranks = comm->nranks;
  }
  call.size = (long long)size;
  npkit_test_journal_write(e->ctx.journal, &call);
  return res;
}

static void note_void(everything *e, const char *fn, const npkit_test_comm *comm) {
  npkit_test_call call = npkit_test_call_make(fn, NPKIT_TEST_NO_RESULT);
  if (comm) {
    call.comm = comm->label;
    call.nranks = comm->nranks;
  }
  npkit_test_journal_write(e->ctx.journal, &call);
}

static npkit_test_comm one_rank(const char *label) {
  return (npkit_test_comm){.comm = NULL, .label = label, .rank = 0, .nranks = 1};
}

static void queries(everything *e) {
  const npkit_test_comm *c = &e->c;
  int version = 0, count = 0, device = 0, rank = 0;
  ncclResult_t async = ncclSuccess;
  note(e, "ncclGetVersion", NULL, ncclGetVersion(&version));
  note(e, "ncclCommCount", c, ncclCommCount(c->comm, &count));
  note(e, "ncclCommCuDevice", c, ncclCommCuDevice(c->comm, &device));
  note(e, "ncclCommUserRank", c, ncclCommUserRank(c->comm, &rank));
  note(e, "ncclCommGetAsyncError", c, ncclCommGetAsyncError(c->comm, &async));
}

static void collectives(everything *e) {
  npkit_test_ctx *ctx = &e->ctx;
  const npkit_test_comm *c = &e->c;
  npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, c, 31, ncclFloat32, ncclSum, -1, 1);
  npkit_test_coll(ctx, NPKIT_TEST_BROADCAST, c, 32, ncclInt32, ncclSum, 0, 2);
  npkit_test_coll(ctx, NPKIT_TEST_BCAST, c, 33, ncclUint8, ncclSum, 0, 3);
  npkit_test_coll(ctx, NPKIT_TEST_REDUCE, c, 34, ncclFloat64, ncclMax, 0, 4);
  npkit_test_coll(ctx, NPKIT_TEST_ALLGATHER, c, 35, ncclBfloat16, ncclSum, -1, 5);
  npkit_test_coll(ctx, NPKIT_TEST_REDUCESCATTER, c, 36, ncclFloat16, ncclSum, -1, 6);
  npkit_test_coll(ctx, NPKIT_TEST_ALLTOALL, c, 37, ncclInt64, ncclSum, -1, 7);
  npkit_test_coll(ctx, NPKIT_TEST_GATHER, c, 38, ncclUint32, ncclSum, 0, 8);
  npkit_test_coll(ctx, NPKIT_TEST_SCATTER, c, 39, ncclUint64, ncclSum, 0, 9);
  npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, c, 40, ncclInt8, ncclMin, -1, 10);
}

static void groups(everything *e) {
  npkit_test_ctx *ctx = &e->ctx;
  const npkit_test_comm *c = &e->c;
  /* a rank exchanging with itself */
  npkit_test_group_start(ctx);
  npkit_test_coll(ctx, NPKIT_TEST_SEND, c, 41, ncclFloat32, ncclSum, 0, 11);
  npkit_test_coll(ctx, NPKIT_TEST_RECV, c, 41, ncclFloat32, ncclSum, 0, 11);
  npkit_test_group_end(ctx);
  /* nested groups: only the outermost pair delimits the launch */
  npkit_test_group_start(ctx);
  npkit_test_group_start(ctx);
  npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, c, 42, ncclFloat32, ncclProd, -1, 12);
  npkit_test_group_end(ctx);
  npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, c, 43, ncclFloat32, ncclMax, -1, 13);
  npkit_test_group_end(ctx);

  /* A simulated group launches nothing; its buffers are static so that an NCCL that runs the
   * operation anyway cannot write into freed memory. */
  static float sim_send[64], sim_recv[64];
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  note(e, "ncclGroupStart", NULL, ncclGroupStart());
  npkit_test_call ar = npkit_test_call_make("ncclAllReduce", ncclSuccess);
  ar.result = ncclAllReduce(sim_send, sim_recv, 64, ncclFloat32, ncclSum, c->comm, 0);
  ar.comm = c->label;
  ar.nranks = c->nranks;
  ar.count = 64;
  ar.datatype = ncclFloat32;
  ar.op = ncclSum;
  npkit_test_journal_write(ctx->journal, &ar);
  if (note(e, "ncclGroupSimulateEnd", NULL, ncclGroupSimulateEnd(&sim)) != ncclSuccess)
    note(e, "ncclGroupEnd", NULL, ncclGroupEnd()); /* the group is still open: close it */
}

static void memory(everything *e) {
  const npkit_test_comm *c = &e->c;
  const size_t size = 1 << 16;
  void *p = NULL, *handle = NULL;
  ncclWindow_t win = NULL;
  if (note_size(e, "ncclMemAlloc", NULL, size, ncclMemAlloc(&p, size)) != ncclSuccess) return;
  if (note_size(e, "ncclCommRegister", c, size, ncclCommRegister(c->comm, p, size, &handle)) ==
      ncclSuccess)
    note(e, "ncclCommDeregister", c, ncclCommDeregister(c->comm, handle));
  if (note_size(e, "ncclCommWindowRegister", c, size,
                ncclCommWindowRegister(c->comm, p, size, &win, NCCL_WIN_DEFAULT)) == ncclSuccess)
    note(e, "ncclCommWindowDeregister", c, ncclCommWindowDeregister(c->comm, win));
  note(e, "ncclMemFree", NULL, ncclMemFree(p));
}

static void premulsum(everything *e) {
  const npkit_test_comm *c = &e->c;
  float scalar = 0.5f;
  ncclRedOp_t op;
  if (note(e, "ncclRedOpCreatePreMulSum", c,
           ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate,
                                    c->comm)) != ncclSuccess)
    return;
  e->ctx.premul_scalar = scalar;
  npkit_test_coll(&e->ctx, NPKIT_TEST_ALLREDUCE, c, 44, ncclFloat32, op, -1, 14);
  note(e, "ncclRedOpDestroy", c, ncclRedOpDestroy(op, c->comm));
}

static void errors(everything *e) {
  npkit_test_comm null_comm = {.comm = NULL, .label = "null", .rank = 0, .nranks = 0};
  int count = 0;
  npkit_test_coll(&e->ctx, NPKIT_TEST_ALLREDUCE, &null_comm, 8, ncclFloat32, ncclSum, -1, 15);
  note(e, "ncclCommCount", &null_comm, ncclCommCount(NULL, &count));
  (void)ncclGetLastError(e->c.comm);
  note_void(e, "ncclGetLastError", &e->c);
  (void)ncclGetErrorString(ncclInvalidArgument);
  note_void(e, "ncclGetErrorString", NULL);
  /* deprecated in nccl.h, yet still exported: applications may call it */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
  note_void(e, "ncclResetDebugInit", NULL);
}

/* Communicators derived from c (split, shrink) and the other ways to create one. */
static void lifecycle(everything *e) {
  npkit_test_ctx *ctx = &e->ctx;
  npkit_test_comm split = one_rank("split"), shrunk = one_rank("shrunk");
  npkit_test_comm cfg = one_rank("config"), scal = one_rank("scalable");
  npkit_test_comm all[2] = {{.label = "all0", .rank = 0, .nranks = 2},
                            {.label = "all1", .rank = 1, .nranks = 2}};
  ncclComm_t all_comms[2] = {NULL, NULL};
  ncclUniqueId id2, id3;

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "everything-config";
  if (note(e, "ncclGetUniqueId", NULL, ncclGetUniqueId(&id2)) == ncclSuccess)
    note(e, "ncclCommInitRankConfig", NULL, ncclCommInitRankConfig(&cfg.comm, 1, id2, 0, &config));
  if (note(e, "ncclGetUniqueId", NULL, ncclGetUniqueId(&id3)) == ncclSuccess)
    note(e, "ncclCommInitRankScalable", NULL,
         ncclCommInitRankScalable(&scal.comm, 1, 0, 1, &id3, NULL));
  if (note(e, "ncclCommInitAll", NULL, ncclCommInitAll(all_comms, 2, NULL)) == ncclSuccess) {
    all[0].comm = all_comms[0];
    all[1].comm = all_comms[1];
    npkit_test_group_start(ctx);
    npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, &all[0], 45, ncclFloat32, ncclSum, -1, 16);
    npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, &all[1], 45, ncclFloat32, ncclSum, -1, 16);
    npkit_test_group_end(ctx);
  }
  if (note(e, "ncclCommSplit", &e->c, ncclCommSplit(e->c.comm, 0, 0, &split.comm, NULL)) ==
      ncclSuccess)
    npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, &split, 46, ncclFloat32, ncclSum, -1, 17);
  if (note(e, "ncclCommShrink", &e->c,
           ncclCommShrink(e->c.comm, NULL, 0, &shrunk.comm, NULL, NCCL_SHRINK_DEFAULT)) ==
      ncclSuccess) {
    npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, &shrunk, 47, ncclFloat32, ncclSum, -1, 18);
    note(e, "ncclCommDestroy", &shrunk, ncclCommDestroy(shrunk.comm));
  }
  if (split.comm) {
    note(e, "ncclCommRevoke", &split, ncclCommRevoke(split.comm, NCCL_REVOKE_DEFAULT));
    note(e, "ncclCommDestroy", &split, ncclCommDestroy(split.comm));
  }
  if (cfg.comm) note(e, "ncclCommAbort", &cfg, ncclCommAbort(cfg.comm));
  if (scal.comm) note(e, "ncclCommDestroy", &scal, ncclCommDestroy(scal.comm));
  for (int d = 0; d < 2; d++)
    if (all[d].comm) note(e, "ncclCommDestroy", &all[d], ncclCommDestroy(all[d].comm));
}

int main(int argc, char **argv) {
  everything e;
  npkit_test_ctx_init(&e.ctx);
  e.c = one_rank("c");
  const char *journal = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--journal") && i + 1 < argc) {
      journal = argv[++i];
    } else if (!strcmp(argv[i], "--check")) {
      e.ctx.check = 1;
    } else {
      fprintf(stderr, "usage: nccl_everything [--journal FILE] [--check]\n");
      return 2;
    }
  }
  if (journal && !(e.ctx.journal = npkit_test_journal_open(journal, NULL, 0))) return 1;

  ncclUniqueId id;
  if (note(&e, "ncclGetUniqueId", NULL, ncclGetUniqueId(&id)) == ncclSuccess &&
      note(&e, "ncclCommInitRank", NULL, ncclCommInitRank(&e.c.comm, 1, id, 0)) == ncclSuccess) {
    queries(&e);
    collectives(&e);
    groups(&e);
    memory(&e);
    premulsum(&e);
    errors(&e);
    lifecycle(&e);
    note(&e, "ncclCommFinalize", &e.c, ncclCommFinalize(e.c.comm));
    note(&e, "ncclCommDestroy", &e.c, ncclCommDestroy(e.c.comm));
  } else {
    fprintf(stderr, "nccl_everything: no communicator, most calls skipped\n");
  }
  npkit_test_ctx_finish(&e.ctx);
  int bad = npkit_test_journal_close(e.ctx.journal) != 0 || e.ctx.mismatches;
  if (e.ctx.mismatches) fprintf(stderr, "nccl_everything: %lu wrong results\n", e.ctx.mismatches);
  return bad ? 1 : 0;
}
