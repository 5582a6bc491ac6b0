/* nccl_mix: an MPI job that drives NCCL like a data-parallel training step does.
 *
 * Rank 0 creates the unique id, MPI broadcasts it, every rank joins the world communicator and
 * an even/odd split of it, then each iteration runs: gradient-bucket AllReduces of several sizes
 * and types, a ZeRO-style ReduceScatter + AllGather, Broadcast / Reduce / Bcast, AlltoAll /
 * Gather / Scatter, a Send/Recv ring exchange in a group, a group of fused AllReduces, and
 * collectives on the split communicator.
 *
 * With --compute-us, each iteration also runs "GPU computation" where the fake libcupti of
 * tests/fakes_cupti is loaded (nothing happens under a real CUPTI or none): a forward kernel the
 * host waits for, then a backward kernel that the gradient AllReduces overlap, as data-parallel
 * training does.  With --marks the phases are marked (npkit_preload.h): forward, backward,
 * optimizer.
 *
 * Prints nothing on stdout.  --journal, --results and --check make the run checkable: see usage().
 * Exit status: 0 on success, 1 when an NCCL call failed or (with --check) data was wrong, 2 on a
 * usage error. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <npkit_preload.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../fakes_cupti/fake_cupti_hooks.h"
#include "test_colls.h"
#include "test_journal.h"
#include "test_opts.h"

typedef struct mix_options {
  long iters;
  long delay_rank, delay_us;
  long compute_us;
  int check, small, medium, new_api, marks;
  const char *results, *journal;
  const char *end; /* how the job ends: destroy, finalize-first, abort, none */
} mix_options;

/* Element counts of every call of an iteration. */
typedef struct mix_sizes {
  size_t bucket[4], shard, broadcast, reduce, bcast, alltoall, gather, scatter, ring, fused[4],
      split_allreduce, split_broadcast;
} mix_sizes;

/* Gradient buckets from 4 KB to 8 MB, as a real model's backward pass produces them. */
static const mix_sizes full_sizes = {
  .bucket = {1024, 131072, 262144, 2097152}, .shard = 65536, .broadcast = 262144,
  .reduce = 4096, .bcast = 100000, .alltoall = 16384, .gather = 8192, .scatter = 8192,
  .ring = 65536, .fused = {1000, 2000, 500, 3000}, .split_allreduce = 4096,
  .split_broadcast = 1000,
};
/* An eighth of the full sizes (4 KB to 1 MB): what the demo runs, so that filling and moving the
 * buffers on host memory stays small beside the delays it shows on a laptop's few cores. */
static const mix_sizes medium_sizes = {
  .bucket = {1024, 16384, 32768, 262144}, .shard = 8192, .broadcast = 32768, .reduce = 1024,
  .bcast = 12500, .alltoall = 2048, .gather = 1024, .scatter = 1024, .ring = 8192,
  .fused = {1000, 2000, 500, 3000}, .split_allreduce = 4096, .split_broadcast = 1000,
};
/* Odd, tiny counts: fast, and they catch size arithmetic that only works for round numbers. */
static const mix_sizes small_sizes = {
  .bucket = {17, 64, 33, 1000}, .shard = 24, .broadcast = 50, .reduce = 10, .bcast = 77,
  .alltoall = 8, .gather = 5, .scatter = 6, .ring = 12, .fused = {7, 9, 3, 11},
  .split_allreduce = 13, .split_broadcast = 11,
};

static void usage(void) {
  fprintf(stderr,
          "usage: nccl_mix [--iters N] [--small|--medium] [--no-new-api] [--check] [--results FILE]\n"
          "                [--journal FILE] [--delay-rank R --delay-us U] [--end MODE]\n"
          "                [--compute-us U] [--marks]\n"
          "  --iters N        iterations of the training-like mix (default 5)\n"
          "  --small          tiny message sizes, for fast tests\n"
          "  --medium         an eighth of the default sizes (4 KB to 1 MB)\n"
          "  --no-new-api     skip AlltoAll, Gather and Scatter (NCCL older than 2.28)\n"
          "  --check          verify every received buffer; exit 1 on a mismatch\n"
          "  --results FILE   write checksums of all received buffers to FILE.rank<R>\n"
          "  --journal FILE   write every NCCL call made, in order, to FILE.rank<R>\n"
          "  --end MODE       destroy (default: ncclCommFinalize/Destroy, then MPI_Finalize),\n"
          "                   finalize-first (MPI_Finalize before the NCCL teardown),\n"
          "                   abort (ncclCommAbort instead of destroy), none (no teardown)\n"
          "  --delay-rank R --delay-us U\n"
          "                   rank R sleeps U microseconds before every AllReduce of the\n"
          "                   iterations after the first\n"
          "  --compute-us U   per iteration a forward kernel of U us that the host waits for and a\n"
          "                   backward kernel of U us beside the gradient AllReduces (only with the\n"
          "                   fake libcupti of the tests loaded; nothing otherwise)\n"
          "  --marks          mark the phases forward, backward and optimizer (npkit_preload.h)\n");
}

static int parse_options(int argc, char **argv, mix_options *o) {
  *o = (mix_options){.iters = 5, .delay_rank = -1, .delay_us = 0, .new_api = 1, .end = "destroy"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--iters")) {
      if (npkit_test_parse_long("--iters", v, 0, 1000000, &o->iters)) return -1;
      i++;
    } else if (!strcmp(a, "--delay-rank")) {
      if (npkit_test_parse_long("--delay-rank", v, 0, 1 << 20, &o->delay_rank)) return -1;
      i++;
    } else if (!strcmp(a, "--delay-us")) {
      if (npkit_test_parse_long("--delay-us", v, 0, 60000000, &o->delay_us)) return -1;
      i++;
    } else if (!strcmp(a, "--results") || !strcmp(a, "--journal")) {
      if (!v) {
        fprintf(stderr, "%s needs a file name\n", a);
        return -1;
      }
      if (a[2] == 'r')
        o->results = v;
      else
        o->journal = v;
      i++;
    } else if (!strcmp(a, "--compute-us")) {
      if (npkit_test_parse_long("--compute-us", v, 0, 10000000, &o->compute_us)) return -1;
      i++;
    } else if (!strcmp(a, "--marks")) {
      o->marks = 1;
    } else if (!strcmp(a, "--check")) {
      o->check = 1;
    } else if (!strcmp(a, "--small")) {
      o->small = 1;
    } else if (!strcmp(a, "--medium")) {
      o->medium = 1;
    } else if (!strcmp(a, "--no-new-api")) {
      o->new_api = 0;
    } else if (!strcmp(a, "--end") && v != NULL &&
               (!strcmp(v, "destroy") || !strcmp(v, "finalize-first") || !strcmp(v, "abort") ||
                !strcmp(v, "none"))) {
      o->end = v;
      i++;
    } else {
      fprintf(stderr, "unknown option '%s'\n", a);
      return -1;
    }
  }
  if ((o->delay_rank >= 0) != (o->delay_us > 0)) {
    fprintf(stderr, "--delay-rank and --delay-us go together\n");
    return -1;
  }
  return 0;
}

typedef struct mix_job {
  const mix_options *opt;
  const mix_sizes *sz;
  npkit_test_ctx ctx;
  npkit_test_comm world, split;
  int rank;
  int device;                    /* the world communicator's CUDA device */
  npkit_fake_kernel_fn kernel;   /* the fake libcupti's launch hook, NULL without it */
} mix_job;

/* The stream the computation runs on, apart from NCCL's (the legacy default stream). */
#define COMPUTE_STREAM 0x2000u

static void sleep_us(long us) {
  struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* The fake libcupti's launch hook, if the process has it loaded (the profiler loads it when it
 * starts GPU timing, at the first communicator). */
static npkit_fake_kernel_fn find_kernel_hook(void) {
  void *lib = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == NULL) return NULL;
  npkit_fake_kernel_fn f;
  *(void **)(&f) = dlsym(lib, NPKIT_FAKE_CUPTI_KERNEL);
  dlclose(lib); /* drops only the reference RTLD_NOLOAD took */
  return f;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A compute kernel of us microseconds from now on the compute stream. */
static void compute(const mix_job *job, const char *name, long us) {
  if (job->kernel == NULL || us <= 0) return;
  uint64_t t = now_ns();
  npkit_fake_kernel k = {.name = name, .device = (uint32_t)job->device, .stream = COMPUTE_STREAM,
                         .start_ns = t, .end_ns = t + (uint64_t)us * 1000u, .grid = {1024, 1, 1},
                         .block = {256, 1, 1}, .registers = 64, .static_shared = 16384};
  job->kernel(&k);
}

static void mark_begin(const mix_job *job, const char *name) {
  if (job->opt->marks) npkit_mark_begin(name);
}

static void mark_end(const mix_job *job, const char *name) {
  if (job->opt->marks) npkit_mark_end(name);
}

/* The straggler: a rank that arrives late at every AllReduce makes the others wait in it. */
static void allreduce(mix_job *job, long it, const npkit_test_comm *c, size_t count,
                      ncclDataType_t t, ncclRedOp_t op, unsigned call) {
  if (it >= 1 && job->rank == job->opt->delay_rank) sleep_us(job->opt->delay_us);
  npkit_test_coll(&job->ctx, NPKIT_TEST_ALLREDUCE, c, count, t, op, -1, call);
}

static void run_iteration(mix_job *job, long it) {
  npkit_test_ctx *ctx = &job->ctx;
  const mix_sizes *s = job->sz;
  const npkit_test_comm *w = &job->world;
  int n = w->nranks, me = w->rank;
  unsigned k = (unsigned)it * 100u;

  /* forward pass: the host waits for its result (a loss read back, say) */
  mark_begin(job, "forward");
  if (job->kernel != NULL && job->opt->compute_us > 0) {
    compute(job, "_Z14forward_layersPKfPfi", job->opt->compute_us);
    sleep_us(job->opt->compute_us);
  }
  mark_end(job, "forward");

  /* backward pass: gradient buckets, largest last as the first layers finish last; their
   * AllReduces run beside the backward kernel */
  mark_begin(job, "backward");
  compute(job, "_Z15backward_layersPKfPfi", job->opt->compute_us);
  allreduce(job, it, w, s->bucket[0], ncclFloat32, ncclSum, k + 1);
  allreduce(job, it, w, s->bucket[1], ncclBfloat16, ncclSum, k + 2);
  allreduce(job, it, w, s->bucket[2], ncclInt32, ncclMax, k + 3);
  allreduce(job, it, w, s->bucket[3], ncclFloat32, ncclSum, k + 4);
  mark_end(job, "backward");
  mark_begin(job, "optimizer");

  /* ZeRO: reduce-scatter the gradients, all-gather the updated parameters */
  npkit_test_coll(ctx, NPKIT_TEST_REDUCESCATTER, w, s->shard, ncclFloat32, ncclSum, -1, k + 5);
  npkit_test_coll(ctx, NPKIT_TEST_ALLGATHER, w, s->shard, ncclFloat32, ncclSum, -1, k + 6);

  npkit_test_coll(ctx, NPKIT_TEST_BROADCAST, w, s->broadcast, ncclFloat32, ncclSum,
                  (int)(it % n), k + 7);
  npkit_test_coll(ctx, NPKIT_TEST_REDUCE, w, s->reduce, ncclInt32, ncclProd,
                  (int)((it + 1) % n), k + 8);
  npkit_test_coll(ctx, NPKIT_TEST_BCAST, w, s->bcast, ncclUint8, ncclSum, (int)((it + 2) % n),
                  k + 9);
  if (job->opt->new_api) {
    npkit_test_coll(ctx, NPKIT_TEST_ALLTOALL, w, s->alltoall, ncclFloat32, ncclSum, -1, k + 10);
    npkit_test_coll(ctx, NPKIT_TEST_GATHER, w, s->gather, ncclInt32, ncclSum,
                    (int)((it + 3) % n), k + 11);
    npkit_test_coll(ctx, NPKIT_TEST_SCATTER, w, s->scatter, ncclFloat64, ncclSum, (int)(it % n),
                    k + 12);
  }

  /* pipeline-style ring exchange: send to the next rank, receive from the previous one; the
   * call number is shared by both ends of each pair */
  npkit_test_group_start(ctx);
  npkit_test_coll(ctx, NPKIT_TEST_SEND, w, s->ring, ncclFloat32, ncclSum, (me + 1) % n, k + 13);
  npkit_test_coll(ctx, NPKIT_TEST_RECV, w, s->ring, ncclFloat32, ncclSum, (me + n - 1) % n,
                  k + 13);
  npkit_test_group_end(ctx);

  /* small tensors fused into one launch */
  npkit_test_group_start(ctx);
  allreduce(job, it, w, s->fused[0], ncclFloat32, ncclSum, k + 14);
  allreduce(job, it, w, s->fused[1], ncclFloat32, ncclAvg, k + 15);
  allreduce(job, it, w, s->fused[2], ncclInt64, ncclSum, k + 16);
  allreduce(job, it, w, s->fused[3], ncclFloat16, ncclSum, k + 17);
  npkit_test_group_end(ctx);

  /* a sub-communicator, as tensor/pipeline parallel groups use */
  allreduce(job, it, &job->split, s->split_allreduce, ncclFloat32, ncclMin, k + 18);
  npkit_test_coll(ctx, NPKIT_TEST_BROADCAST, &job->split, s->split_broadcast, ncclInt64, ncclSum,
                  0, k + 19);
  mark_end(job, "optimizer");
}

static void journal_result(mix_job *job, const char *fn, const npkit_test_comm *c,
                           ncclResult_t res) {
  npkit_test_call call = npkit_test_call_on(fn, c, res);
  npkit_test_journal_write(job->ctx.journal, &call);
  if (res != ncclSuccess) {
    fprintf(stderr, "rank %d: %s failed: %s\n", job->rank, fn, ncclGetErrorString(res));
    job->ctx.failures++;
  }
}

/* World communicator, its queries, and the split.  0 when the job can go on. */
static int setup_comms(mix_job *job, int nranks) {
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (job->rank == 0) journal_result(job, "ncclGetUniqueId", NULL, ncclGetUniqueId(&id));
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);

  job->world = (npkit_test_comm){.label = "world", .rank = job->rank, .nranks = nranks};
  journal_result(job, "ncclCommInitRank", NULL,
                 ncclCommInitRank(&job->world.comm, nranks, id, job->rank));
  if (job->ctx.failures) return -1;

  int count = -1, user_rank = -1;
  journal_result(job, "ncclCommCount", &job->world, ncclCommCount(job->world.comm, &count));
  journal_result(job, "ncclCommUserRank", &job->world,
                 ncclCommUserRank(job->world.comm, &user_rank));
  if (count != nranks || user_rank != job->rank) {
    fprintf(stderr, "rank %d: NCCL reports rank %d of %d\n", job->rank, user_rank, count);
    job->ctx.failures++;
  }

  /* even and odd ranks, ordered by world rank */
  int color = job->rank % 2;
  job->split = (npkit_test_comm){.label = "split", .rank = job->rank / 2,
                                 .nranks = (nranks - color + 1) / 2};
  journal_result(job, "ncclCommSplit", &job->world,
                 ncclCommSplit(job->world.comm, color, job->rank, &job->split.comm, NULL));
  return job->ctx.failures ? -1 : 0;
}

static FILE *open_results(const char *base, int rank) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s.rank%d", base, rank) >= (int)sizeof path) return NULL;
  FILE *f = fopen(path, "w");
  if (!f) perror(path);
  return f;
}

int main(int argc, char **argv) {
  mix_options opt;
  if (parse_options(argc, argv, &opt) != 0) {
    usage();
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  mix_job job = {.opt = &opt, .sz = opt.small ? &small_sizes : opt.medium ? &medium_sizes : &full_sizes, .rank = rank};
  npkit_test_ctx_init(&job.ctx);
  job.ctx.check = opt.check;
  int io_error = 0, mpi_finalized = 0;
  if (opt.journal && !(job.ctx.journal = npkit_test_journal_open(opt.journal, "rank", rank)))
    io_error = 1;
  if (opt.results && !(job.ctx.results = open_results(opt.results, rank))) io_error = 1;

  /* all ranks or none: a rank that skipped the setup would leave the others waiting in NCCL */
  int any_io_error = 0;
  MPI_Allreduce(&io_error, &any_io_error, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!any_io_error && setup_comms(&job, nranks) == 0) {
    if (opt.compute_us > 0) { /* computation runs on the communicator's device */
      journal_result(&job, "ncclCommCuDevice", &job.world, ncclCommCuDevice(job.world.comm, &job.device));
      job.kernel = find_kernel_hook();
    }
    for (long it = 0; it < opt.iters; it++) run_iteration(&job, it);
    npkit_test_ctx_finish(&job.ctx);
    if (!strcmp(opt.end, "finalize-first")) {
      MPI_Finalize();
      mpi_finalized = 1;
    }
    if (!strcmp(opt.end, "abort")) {
      journal_result(&job, "ncclCommAbort", &job.split, ncclCommAbort(job.split.comm));
      journal_result(&job, "ncclCommAbort", &job.world, ncclCommAbort(job.world.comm));
    } else if (strcmp(opt.end, "none") != 0) {
      journal_result(&job, "ncclCommDestroy", &job.split, ncclCommDestroy(job.split.comm));
      journal_result(&job, "ncclCommFinalize", &job.world, ncclCommFinalize(job.world.comm));
      journal_result(&job, "ncclCommDestroy", &job.world, ncclCommDestroy(job.world.comm));
    }
  }
  npkit_test_ctx_finish(&job.ctx);
  if (npkit_test_journal_close(job.ctx.journal) != 0) io_error = 1;
  if (job.ctx.results && fclose(job.ctx.results) != 0) io_error = 1;

  int failed = io_error || job.ctx.failures || job.ctx.mismatches;
  if (job.ctx.failures || job.ctx.mismatches) /* I/O errors were reported where they happened */
    fprintf(stderr, "rank %d: %lu failed calls, %lu wrong results\n", rank, job.ctx.failures,
            job.ctx.mismatches);
  if (!mpi_finalized) MPI_Finalize();
  return failed ? 1 : 0;
}
