/* nccl_threads: one process driving 4 communicators made by ncclCommInitAll, the way
 * single-process multi-GPU programs do.
 *   --threads  one thread per communicator, each running its own list of collectives and a
 *              Send/Recv ring step (threads rendezvous inside NCCL)
 *   --grouped  a single thread issuing the same call on all 4 communicators between
 *              ncclGroupStart and ncclGroupEnd
 * --journal FILE writes FILE.main (calls of the main thread) and, with --threads, FILE.thread<T>
 * per worker; --check verifies every received buffer.  Prints nothing on stdout.
 * Exit status: 0 on success, 1 on a failed call or wrong data, 2 on a usage error. */
#define _GNU_SOURCE
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "test_colls.h"
#include "test_journal.h"
#include "test_opts.h"

#define NDEV 4

typedef struct threads_options {
  int grouped;
  long iters;
  int check, small;
  const char *journal;
} threads_options;

typedef struct threads_sizes {
  size_t allreduce, broadcast, allgather, reducescatter, reduce, ring;
} threads_sizes;

static const threads_sizes full_sizes = {65536, 16384, 4096, 4096, 1024, 8192};
static const threads_sizes small_sizes = {19, 23, 5, 6, 7, 8};

typedef struct worker {
  const threads_options *opt;
  const threads_sizes *sz;
  npkit_test_comm comm;
  char label[8];
  npkit_test_ctx ctx;
  int io_error;
} worker;

static void usage(void) {
  fprintf(stderr, "usage: nccl_threads --threads|--grouped [--iters N] [--small] [--check]\n"
                  "                    [--journal FILE]\n");
}

static int parse_options(int argc, char **argv, threads_options *o) {
  *o = (threads_options){.grouped = -1, .iters = 3};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--threads") || !strcmp(a, "--grouped")) {
      o->grouped = a[2] == 'g';
    } else if (!strcmp(a, "--iters")) {
      if (npkit_test_parse_long("--iters", v, 0, 1000000, &o->iters)) return -1;
      i++;
    } else if (!strcmp(a, "--journal")) {
      if (!v) {
        fprintf(stderr, "--journal needs a file name\n");
        return -1;
      }
      o->journal = v;
      i++;
    } else if (!strcmp(a, "--check")) {
      o->check = 1;
    } else if (!strcmp(a, "--small")) {
      o->small = 1;
    } else {
      fprintf(stderr, "unknown option '%s'\n", a);
      return -1;
    }
  }
  if (o->grouped < 0) {
    fprintf(stderr, "choose --threads or --grouped\n");
    return -1;
  }
  return 0;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  npkit_test_ctx *ctx = &w->ctx;
  const threads_sizes *s = w->sz;
  const npkit_test_comm *c = &w->comm;
  int me = c->rank;
  if (w->opt->journal && !(ctx->journal = npkit_test_journal_open(w->opt->journal, "thread", me)))
    w->io_error = 1;
  for (long it = 0; !w->io_error && it < w->opt->iters; it++) {
    unsigned k = (unsigned)it * 100u;
    npkit_test_coll(ctx, NPKIT_TEST_ALLREDUCE, c, s->allreduce, ncclFloat32, ncclSum, -1, k + 1);
    npkit_test_coll(ctx, NPKIT_TEST_BROADCAST, c, s->broadcast, ncclFloat32, ncclSum,
                    (int)(it % NDEV), k + 2);
    npkit_test_coll(ctx, NPKIT_TEST_ALLGATHER, c, s->allgather, ncclFloat32, ncclSum, -1, k + 3);
    npkit_test_coll(ctx, NPKIT_TEST_REDUCESCATTER, c, s->reducescatter, ncclFloat32, ncclSum, -1,
                    k + 4);
    npkit_test_coll(ctx, NPKIT_TEST_REDUCE, c, s->reduce, ncclInt32, ncclMax,
                    (int)((it + 1) % NDEV), k + 5);
    npkit_test_group_start(ctx);
    npkit_test_coll(ctx, NPKIT_TEST_SEND, c, s->ring, ncclFloat32, ncclSum, (me + 1) % NDEV,
                    k + 6);
    npkit_test_coll(ctx, NPKIT_TEST_RECV, c, s->ring, ncclFloat32, ncclSum,
                    (me + NDEV - 1) % NDEV, k + 6);
    npkit_test_group_end(ctx);
  }
  npkit_test_ctx_finish(ctx);
  if (npkit_test_journal_close(ctx->journal) != 0) w->io_error = 1;
  return NULL;
}

/* One float32 call of fn on every device's communicator, in one group. */
static void on_every_device(npkit_test_ctx *ctx, const worker *ws, npkit_test_fn fn, size_t count,
                            int root, unsigned call) {
  npkit_test_group_start(ctx);
  for (int d = 0; d < NDEV; d++)
    npkit_test_coll(ctx, fn, &ws[d].comm, count, ncclFloat32, ncclSum, root, call);
  npkit_test_group_end(ctx);
}

/* Every call on all communicators at once, the single-thread multi-GPU idiom. */
static void run_grouped(npkit_test_ctx *ctx, const threads_options *opt, const threads_sizes *s,
                        const worker *ws) {
  for (long it = 0; it < opt->iters; it++) {
    unsigned k = (unsigned)it * 100u;
    on_every_device(ctx, ws, NPKIT_TEST_ALLREDUCE, s->allreduce, -1, k + 1);
    on_every_device(ctx, ws, NPKIT_TEST_BROADCAST, s->broadcast, (int)(it % NDEV), k + 2);
    on_every_device(ctx, ws, NPKIT_TEST_ALLGATHER, s->allgather, -1, k + 3);
    npkit_test_group_start(ctx);
    for (int d = 0; d < NDEV; d++) {
      npkit_test_coll(ctx, NPKIT_TEST_SEND, &ws[d].comm, s->ring, ncclFloat32, ncclSum,
                      (d + 1) % NDEV, k + 4);
      npkit_test_coll(ctx, NPKIT_TEST_RECV, &ws[d].comm, s->ring, ncclFloat32, ncclSum,
                      (d + NDEV - 1) % NDEV, k + 4);
    }
    npkit_test_group_end(ctx);
  }
}

static void journal_result(npkit_test_ctx *ctx, const char *fn, const npkit_test_comm *c,
                           ncclResult_t res) {
  npkit_test_call call = npkit_test_call_on(fn, c, res);
  npkit_test_journal_write(ctx->journal, &call);
  if (res != ncclSuccess) {
    fprintf(stderr, "%s failed: %s\n", fn, ncclGetErrorString(res));
    ctx->failures++;
  }
}

int main(int argc, char **argv) {
  threads_options opt;
  if (parse_options(argc, argv, &opt) != 0) {
    usage();
    return 2;
  }
  const threads_sizes *sz = opt.small ? &small_sizes : &full_sizes;
  npkit_test_ctx main_ctx;
  npkit_test_ctx_init(&main_ctx);
  main_ctx.check = opt.check;
  int io_error = 0;
  if (opt.journal) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s.main", opt.journal) >= (int)sizeof path ||
        !(main_ctx.journal = npkit_test_journal_open(path, NULL, 0)))
      return 1;
  }

  ncclComm_t comms[NDEV];
  worker ws[NDEV];
  memset(ws, 0, sizeof ws);
  ncclResult_t res = ncclCommInitAll(comms, NDEV, NULL);
  npkit_test_call init = npkit_test_call_make("ncclCommInitAll", res);
  npkit_test_journal_write(main_ctx.journal, &init);
  if (res != ncclSuccess) {
    fprintf(stderr, "ncclCommInitAll failed: %s\n", ncclGetErrorString(res));
    npkit_test_journal_close(main_ctx.journal);
    return 1;
  }
  for (int d = 0; d < NDEV; d++) {
    worker *w = &ws[d];
    snprintf(w->label, sizeof w->label, "c%d", d);
    w->opt = &opt;
    w->sz = sz;
    w->comm = (npkit_test_comm){.comm = comms[d], .label = w->label, .rank = d, .nranks = NDEV};
    npkit_test_ctx_init(&w->ctx);
    w->ctx.check = opt.check;
  }

  unsigned long failures = 0, mismatches = 0;
  if (opt.grouped) {
    run_grouped(&main_ctx, &opt, sz, ws);
  } else {
    pthread_t tids[NDEV];
    int started = 0;
    for (; started < NDEV; started++)
      if (pthread_create(&tids[started], NULL, worker_main, &ws[started]) != 0) break;
    for (int d = 0; d < started; d++) pthread_join(tids[d], NULL);
    if (started < NDEV) {
      /* the started workers cannot finish a collective without the others: they would hang */
      fprintf(stderr, "could not start the worker threads\n");
      return 1;
    }
    for (int d = 0; d < NDEV; d++) {
      failures += ws[d].ctx.failures;
      mismatches += ws[d].ctx.mismatches;
      io_error |= ws[d].io_error;
    }
  }
  npkit_test_ctx_finish(&main_ctx);
  for (int d = 0; d < NDEV; d++)
    journal_result(&main_ctx, "ncclCommDestroy", &ws[d].comm, ncclCommDestroy(comms[d]));
  failures += main_ctx.failures;
  mismatches += main_ctx.mismatches;
  if (npkit_test_journal_close(main_ctx.journal) != 0) io_error = 1;
  if (failures || mismatches)
    fprintf(stderr, "%lu failed calls, %lu wrong results\n", failures, mismatches);
  if (io_error || failures || mismatches) return 1;
  return 0;
}
