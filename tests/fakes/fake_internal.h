/* Internal interfaces of the fake libnccl.so.2 (see README.md in this folder).
 *
 * The library is split by responsibility:
 *   fake_config.c  settings from the environment, clocks, waiting, the last-error message
 *   fake_shm.c     shared-memory segments (one per communicator) and the byte rings inside them
 *   fake_reduce.c  datatypes and element-wise arithmetic (sum/prod/max/min, pre-multiply, divide)
 *   fake_engine.c  operations made of transfers, the per-thread group queue, the progress loop
 *   fake_colls.c   argument checks and the transfer plan of every collective and send/recv
 *   fake_comm.c    communicator life cycle, queries, memory, reduction operators
 *   fake_api.c     the exported NCCL entry points (pnccl* and their nccl* aliases)
 *   fake_bcast.c   ncclBcast, which calls the exported ncclBroadcast like NCCL does
 * Nothing here is exported: the library is built with hidden visibility and only the NCCL API is
 * marked for export. */
#ifndef NPKIT_FAKE_INTERNAL_H
#define NPKIT_FAKE_INTERNAL_H

#include <nccl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef FAKE_NCCL_OLD
#define FAKE_NCCL_OLD 0
#endif
/* FAKE_NCCL_NEW=1: plays NCCL 2.31.2, with the functions of 2.29-2.31 (fake_newer.c). */
#ifndef FAKE_NCCL_NEW
#define FAKE_NCCL_NEW 0
#endif

#define NPKIT_FAKE_EXPORT __attribute__((visibility("default")))
/* NCCL defines the real functions as pnccl* and the public names as weak aliases of them, so that
 * a profiler can override nccl* and still reach pnccl*.  The alias must live in the same file as
 * its target. */
#define NPKIT_FAKE_ALIAS(name)                                                                  \
  extern __typeof__(p##name) name __attribute__((weak, alias("p" #name), visibility("default")));

/* ---------------------------------------------------------------- settings (fake_config.c) */
typedef struct npkit_fake_settings {
  double timeout_s;      /* FAKE_NCCL_TIMEOUT_S: longest wait without progress (60) */
  double lat_s;          /* FAKE_NCCL_LAT_US: simulated latency per call (8 us) */
  double bw_bytes_s;     /* FAKE_NCCL_BW_GBPS: simulated bus bandwidth (20 GB/s) */
  int noop;              /* FAKE_NCCL_NOOP=1: data calls only check their arguments */
  int device;            /* FAKE_NCCL_DEVICE, or -1 */
  int ndev;              /* FAKE_NCCL_NDEV: devices per node for rank -> device (8) */
  int version;           /* FAKE_NCCL_VERSION */
  size_t ring_bytes;     /* FAKE_NCCL_RING_BYTES: capacity of one ring (power of two) */
  double gpu_offset_ns;  /* FAKE_NCCL_GPU_OFFSET_US: the GPU clock minus CLOCK_REALTIME (+7 ms) */
  double gpu_drift;      /* FAKE_NCCL_GPU_DRIFT_PPM: its rate error (20 ppm) */
  double launch_s;       /* FAKE_NCCL_LAUNCH_US: from cuLaunchKernelEx to the kernel's start (4 us) */
  double queue_s;        /* FAKE_NCCL_QUEUE_US: earlier work on the stream the kernel waits for (0) */
} npkit_fake_settings;

/* Read once, on first use. */
const npkit_fake_settings *npkit_fake_cfg(void);
/* NCCL's initEnv: its configuration files into the environment, once (fake_env.c). */
void npkit_fake_init_env(void);
/* FAKE_NCCL_DEBUG=1; re-read by ncclResetDebugInit. */
bool npkit_fake_debug(void);
void npkit_fake_reread_debug(void);

double npkit_fake_now(void); /* CLOCK_MONOTONIC, seconds */
void npkit_fake_sleep_until(double t);

/* Waiting for another rank: yields first, then sleeps a little longer each time, so that ranks
 * sharing few cores leave the CPU to the one that must make progress. */
typedef struct npkit_fake_backoff {
  unsigned idle;
} npkit_fake_backoff;
void npkit_fake_backoff_wait(npkit_fake_backoff *b);

/* Stores the message for ncclGetLastError (per thread), prints it with FAKE_NCCL_DEBUG=1, and
 * returns res. */
ncclResult_t npkit_fake_fail(ncclResult_t res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *npkit_fake_last_error(void);
void npkit_fake_debug_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---------------------------------------------------------------- shared memory (fake_shm.c) */
#define NPKIT_FAKE_NAME_MAX 48
#define NPKIT_FAKE_ID_MAGIC "FAKENCCL"
#define NPKIT_FAKE_MAX_RANKS 4096

enum { NPKIT_FAKE_CHAN_COLL = 0, NPKIT_FAKE_CHAN_P2P = 1, NPKIT_FAKE_NCHAN = 2 };

typedef struct npkit_fake_seg npkit_fake_seg;

/* Writes a fresh random segment name ("/fnccl-<pid>-<hex>") into name. */
void npkit_fake_new_name(char name[NPKIT_FAKE_NAME_MAX]);
/* A name derived from a parent name and a few integers, the same in every process. */
void npkit_fake_derived_name(char name[NPKIT_FAKE_NAME_MAX], const char *parent, const int64_t *v,
                             int nv);

/* One step of joining segment `name` as `rank` of `nranks`: creates it or maps the one another
 * rank created, then claims the rank.  *again = true when the segment is not there yet. */
ncclResult_t npkit_fake_seg_attach(const char *name, int nranks, int rank, npkit_fake_seg **seg,
                                   bool *again);
/* True once all ranks have joined (and the name is unlinked). */
bool npkit_fake_seg_complete(const npkit_fake_seg *seg);
void npkit_fake_seg_release(npkit_fake_seg *seg);
/* Records that rank's call failed (the first failure wins). */
void npkit_fake_seg_set_failed(npkit_fake_seg *seg, int rank, ncclResult_t code);
/* The rank whose call failed, or -1; *code: its error. */
int npkit_fake_seg_failed(const npkit_fake_seg *seg, ncclResult_t *code);
/* False once the process that joined as rank has exited. */
bool npkit_fake_seg_rank_alive(const npkit_fake_seg *seg, int rank);

/* Non-blocking transfer through the ring from rank src to rank dst: moves what fits now. */
size_t npkit_fake_ring_write(npkit_fake_seg *seg, int chan, int src, int dst, const void *buf,
                             size_t len);
size_t npkit_fake_ring_read(npkit_fake_seg *seg, int chan, int src, int dst, void *buf, size_t len);

/* ---------------------------------------------------------------- arithmetic (fake_reduce.c) */
enum { NPKIT_FAKE_SUM = 0, NPKIT_FAKE_PROD, NPKIT_FAKE_MAX, NPKIT_FAKE_MIN };

/* 0 for an invalid datatype. */
size_t npkit_fake_type_size(ncclDataType_t dt);
bool npkit_fake_type_reducible(ncclDataType_t dt);
/* out[i] = in[0][i] op in[1][i] op ... in order (bit-identical on every rank).  out may be one of
 * the inputs. */
void npkit_fake_reduce(void *out, const void *const *in, int nin, size_t count, ncclDataType_t dt,
                       int op);
/* dst[i] = src[i] * scalar, scalar being one element of type dt. */
void npkit_fake_premul(void *dst, const void *src, size_t count, ncclDataType_t dt,
                       const void *scalar);
/* buf[i] /= n for integer types (ncclAvg on integers). */
void npkit_fake_divide(void *buf, size_t count, ncclDataType_t dt, int n);
/* The element of type dt closest to v (only for floating types). */
void npkit_fake_scalar_from_double(ncclDataType_t dt, double v, void *out);
uint16_t npkit_fake_float_to_half(float f);
float npkit_fake_half_to_float(uint16_t h);
uint16_t npkit_fake_float_to_bf16(float f);
float npkit_fake_bf16_to_float(uint16_t h);

/* ---------------------------------------------------------------- communicators (fake_comm.c) */
typedef struct npkit_fake_xfer npkit_fake_xfer;
typedef struct npkit_fake_op npkit_fake_op;
typedef struct npkit_fake_kernels npkit_fake_kernels; /* fake_gpu.c */

typedef struct npkit_fake_redop {
  bool used;
  ncclDataType_t dt;
  ncclScalarResidence_t residence;
  unsigned char value[8]; /* ncclScalarHostImmediate: the scalar, copied at creation */
  const void *ptr;        /* ncclScalarDevice: read when the operation runs */
} npkit_fake_redop;

#define NPKIT_FAKE_COMM_MAGIC 0x46414b45434f4d4dull

struct ncclComm {
  uint64_t magic;
  int rank, nranks, device;
  char name[NPKIT_FAKE_NAME_MAX]; /* shared-memory segment */
  npkit_fake_seg *seg;            /* NULL until the first attach step succeeds */
  bool ready;                     /* every rank joined */
  /* Pending transfers per ring, in the order they were issued: index
   * ((chan * 2) + is_send) * nranks + peer. */
  npkit_fake_xfer **qhead, **qtail;
  uint32_t coll_seq;              /* tags collectives so that mismatched calls are detected */
  uint32_t *p2p_send_seq, *p2p_recv_seq;
  int64_t split_seq, shrink_seq;  /* make the names of child segments unique */
  npkit_fake_redop *redops;
  int nredops;
  double group_acc;               /* scratch of the group timing estimate */
  bool finalized;
  _Atomic int async_error;        /* ncclResult_t; set when a transfer failed */
  _Atomic bool aborted, revoked;
  _Atomic int busy;               /* operations being progressed right now */
  bool nonblocking;               /* ncclConfig_t.blocking = 0 (fake_async.c) */
  _Atomic bool suspended;         /* ncclCommSuspend (2.29.7) until ncclCommResume */
  _Atomic int pending;            /* non-blocking work still running */
  struct npkit_fake_prof_comm *prof; /* the profiler plugin's view, NULL without one */
  struct npkit_fake_npkit_comm *npkit; /* its NPKit state (fake_npkit.c), NULL before NpKit::Init */
  uint64_t data_calls;            /* data collectives run so far (FAKE_NCCL_STALL counts them) */
  bool stalled;                   /* its GPU work stopped (fake_stall.c): later work queues behind */
};

/* A communicator object, not yet joined to its segment. */
ncclResult_t npkit_fake_comm_new(const char *name, int nranks, int rank, int device,
                                 ncclComm_t *out);
/* The same without the profiler plugin's init (which the caller does later, on another thread). */
ncclResult_t npkit_fake_comm_alloc(const char *name, int nranks, int rank, int device,
                                   ncclComm_t *out);
void npkit_fake_comm_free(ncclComm_t comm);
/* Destroyed, aborted, revoked, finalized or failed communicators: the error to return (with the
 * message set), else ncclSuccess.  comm must not be NULL. */
ncclResult_t npkit_fake_comm_usable(ncclComm_t comm, const char *fn);
ncclResult_t npkit_fake_get_unique_id(ncclUniqueId *id);
ncclResult_t npkit_fake_init_rank(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank,
                                  const ncclConfig_t *config, const char *fn);
ncclResult_t npkit_fake_init_all(ncclComm_t *comms, int ndev, const int *devlist);
ncclResult_t npkit_fake_split(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                              const ncclConfig_t *config);
ncclResult_t npkit_fake_shrink(ncclComm_t comm, const int *exclude, int nexclude,
                               ncclComm_t *newcomm, const ncclConfig_t *config, int flags);
ncclResult_t npkit_fake_finalize(ncclComm_t comm);
/* Destroy, or abort (which also stops a call blocked on comm in another thread). */
ncclResult_t npkit_fake_destroy(ncclComm_t comm, bool abort);
ncclResult_t npkit_fake_revoke(ncclComm_t comm, int flags);
ncclResult_t npkit_fake_redop_create(ncclRedOp_t *op, void *scalar, ncclDataType_t dt,
                                     ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t npkit_fake_redop_destroy(ncclRedOp_t op, ncclComm_t comm);

/* ---------------------------------------------------------------- engine (fake_engine.c) */
/* What a transfer carries in front of its payload: identifies the operation so that ranks that
 * called different operations fail with a clear message instead of exchanging garbage. */
typedef struct npkit_fake_hdr {
  uint32_t tag; /* kind << 8 | phase */
  uint32_t seq;
  uint64_t len;
} npkit_fake_hdr;

struct npkit_fake_xfer {
  npkit_fake_xfer *qnext;
  npkit_fake_op *op;
  unsigned char *buf;
  size_t len, pos; /* pos counts the header too */
  npkit_fake_hdr hdr; /* sent, or expected */
  npkit_fake_hdr got; /* received */
  int peer;
  unsigned char chan, is_send, phase, done;
};

typedef enum npkit_fake_kind {
  NPKIT_FAKE_K_ALLREDUCE = 1,
  NPKIT_FAKE_K_BROADCAST,
  NPKIT_FAKE_K_REDUCE,
  NPKIT_FAKE_K_ALLGATHER,
  NPKIT_FAKE_K_REDUCESCATTER,
  NPKIT_FAKE_K_ALLTOALL,
  NPKIT_FAKE_K_GATHER,
  NPKIT_FAKE_K_SCATTER,
  NPKIT_FAKE_K_SEND,
  NPKIT_FAKE_K_RECV,
  NPKIT_FAKE_K_INIT,
  NPKIT_FAKE_K_SPLIT,
  NPKIT_FAKE_K_SHRINK,
} npkit_fake_kind;

/* Runs when all transfers of `phase` are done; sets *again to be called again later (a wait). */
typedef ncclResult_t (*npkit_fake_step)(npkit_fake_op *op, int phase, bool *again);

/* The resolved reduction: op on (optionally pre-multiplied) inputs, then an optional division. */
typedef struct npkit_fake_red {
  int op;             /* NPKIT_FAKE_SUM ... */
  bool premul;
  bool scalar_is_ptr; /* ncclScalarDevice: read through ptr when the operation starts */
  unsigned char scalar[8];
  const void *scalar_ptr;
  int divide_by;      /* 0 or nranks */
} npkit_fake_red;

struct npkit_fake_op {
  npkit_fake_op *next;
  ncclComm_t comm;
  npkit_fake_kind kind;
  const char *name; /* "AllReduce", for messages */
  /* arguments */
  const void *sendbuff;
  void *recvbuff;
  size_t count, esize;
  ncclDataType_t dt;
  npkit_fake_red red;
  int root;
  /* plan */
  npkit_fake_xfer *xfers;
  int nxfers, cap_xfers;
  int nphases, phase, cursor;
  npkit_fake_step start;  /* once, before any transfer */
  npkit_fake_step finish; /* after each phase */
  void *tmp;              /* scratch owned by the operation */
  const unsigned char *src; /* the data this rank contributes (sendbuff or pre-multiplied tmp) */
  unsigned char *slots;     /* received contributions, (nranks - 1) slots */
  const void **inputs;      /* the nranks contributions of a reduction, in rank order */
  size_t slot_bytes;
  /* communicator creation */
  ncclComm_t child;   /* being joined */
  ncclComm_t *out;    /* where the new communicator is stored at the end */
  int32_t mine[2];    /* split: this rank's color and key */
  int64_t serial;     /* split: its number on the parent, part of the child's name */
  /* timing */
  double sim_s;       /* bytes / bandwidth part of the simulated duration */
  bool timed;         /* data operations: sleep until the simulated duration is over */
  bool started, done, needs_ready;
  cudaStream_t stream; /* data operations: the call's stream (fake_gpu.c) */
  void *prof_api;     /* its CollApi/P2pApi profiler event (parent of its tasks) */
  bool captured;      /* issued on a stream that captures a CUDA graph (fake_graph.c) */
  uint64_t user_tag;  /* its profiler tag (nccl*Config, NCCL 2.31) */
  bool replay;        /* run by a replay of such a graph */
  uint8_t stall;      /* NPKIT_FAKE_STALL_* (fake_stall.c): its kernel never finishes */
};

/* NCCL's name of the call ("AllReduce", "CommShrink"); NULL for a value that is no kind. */
const char *npkit_fake_kind_name(unsigned kind);
npkit_fake_op *npkit_fake_op_new(ncclComm_t comm, npkit_fake_kind kind, const char *name);
void npkit_fake_op_free(npkit_fake_op *op);
/* Adds a transfer of len bytes to or from peer (skipped when len is 0). */
ncclResult_t npkit_fake_op_xfer(npkit_fake_op *op, int phase, int chan, bool is_send, int peer,
                                const void *buf, size_t len);
/* Outside a group: runs op to completion (and frees it).  Inside one: queues it. */
ncclResult_t npkit_fake_submit(npkit_fake_op *op, double t_call);
/* Runs ops (a list) together until all are done; frees nothing. */
ncclResult_t npkit_fake_run(npkit_fake_op *list);
/* The same for the launch of a group whose GroupApi profiler event is group_api (stopped once the
 * kernels are launched when stop_group). */
ncclResult_t npkit_fake_run_group(npkit_fake_op *list, void *group_api, bool stop_group);
bool npkit_fake_in_group(void);
/* Remembers an error raised inside a group: ncclGroupEnd then returns it and drops the group. */
ncclResult_t npkit_fake_group_error(ncclResult_t res);
ncclResult_t npkit_fake_group_start(void);
/* Drops the calling thread's queued calls on comm (it is being destroyed). */
void npkit_fake_group_forget(ncclComm_t comm);
ncclResult_t npkit_fake_group_end(ncclSimInfo_t *sim);

/* ---------------------------------------------------------------- collectives (fake_colls.c) */
typedef struct npkit_fake_call {
  npkit_fake_kind kind;
  const char *name;
  const void *sendbuff;
  void *recvbuff;
  size_t count;
  ncclDataType_t dt;
  ncclRedOp_t op;
  int root; /* or peer */
  ncclComm_t comm;
  cudaStream_t stream; /* where the call's kernel runs (fake_gpu.c) */
  uint64_t user_tag;   /* nccl*Config (2.31): ncclCollConfig_t.userProfilerTag */
} npkit_fake_call;

ncclResult_t npkit_fake_collective(const npkit_fake_call *call);
/* The operation of an accepted call, planned; the call's error otherwise (message set). */
ncclResult_t npkit_fake_make_op(const npkit_fake_call *call, npkit_fake_op **out);

/* ---------------------------------------------------------------- non-blocking (fake_async.c) */
/* Runs list (and, when init is not NULL, the creation of init first) on a thread of the fake's
 * own; the communicators say ncclInProgress until it is done.  Returns ncclInProgress. */
ncclResult_t npkit_fake_async_launch(npkit_fake_op *list, void *group_api, ncclComm_t init, double until);
/* Waits until the communicator's non-blocking work is done. */
void npkit_fake_async_wait(ncclComm_t comm);

/* ---------------------------------------------------------------- NCCL calling itself (fake_plt.c) */
/* ncclCommEnsureReady: through the exported ncclCommGetAsyncError. */
ncclResult_t npkit_fake_ensure_ready(ncclComm_t comm, const char *fn);
/* fillInfo's ncclGetVersion, through the exported name. */
void npkit_fake_init_version(void);

/* ---------------------------------------------------------------- CUDA graphs (fake_graph.c) */
/* A call on a stream that captures: recorded into the graph (its API and launch events now, its
 * tasks at the replays) instead of run; true when it was (op is then freed). */
bool npkit_fake_graph_capture(const npkit_fake_call *call, npkit_fake_op *op);

/* ---------------------------------------------------------------- GPU-side hangs (fake_stall.c) */
enum {
  NPKIT_FAKE_STALL_NONE = 0,
  NPKIT_FAKE_STALL_KERNEL, /* its kernel never starts (the stream is held by earlier work) */
  NPKIT_FAKE_STALL_PROXY,  /* its kernel starts and waits for a network send that never completes */
  NPKIT_FAKE_STALL_BEHIND, /* queued on a stream whose earlier kernel never finished */
};
/* Counts the data collectives of a launch and marks those FAKE_NCCL_STALL stops (op->stall): only
 * the single call of a blocking communicator outside a group (single_call) stalls.  True when the
 * launch stalls: it then returns at once, as NCCL's asynchronous launch does, and its ops are
 * never freed (their transfers stay queued, so the comm's later work waits behind them). */
bool npkit_fake_stall_mark(npkit_fake_op *list, bool single_call);
/* Keeps the ops of a stalled launch (they are never freed). */
void npkit_fake_stall_keep(npkit_fake_op *list);

/* ---------------------------------------------------------------- profiler plugin (fake_profiler.c) */
/* Loads the plugin (first communicator) and initialises it for comm; finalizes it. */
void npkit_fake_prof_comm_init(ncclComm_t comm);
void npkit_fake_prof_comm_fini(ncclComm_t comm);
/* A data call was accepted: its API-level events. */
void npkit_fake_prof_call(npkit_fake_op *op);
/* The launch of the calling thread's outermost group: GroupEndApiStart, and the GroupApi event
 * leaves the thread; stopped with npkit_fake_prof_group_done at the end of ncclGroupEnd. */
void *npkit_fake_prof_take_group(void);
void npkit_fake_prof_group_done(void *group);
/* The ops of list start running: their kernels' launch (KernelLaunch events around it, parent
 * `group`), then their task events, and the proxy's reports of the channels' starts.  Returns
 * what complete needs. */
void *npkit_fake_prof_launch(npkit_fake_op *list, npkit_fake_kernels *kernels, void *group);
/* The launch of ops captured into a CUDA graph (they do not run). */
void npkit_fake_prof_capture(npkit_fake_op *list, npkit_fake_kernels *kernels, void *group);
/* They finished (or failed): kernel-channel and proxy events, from the proxy thread. */
void npkit_fake_prof_complete(void *launch, ncclResult_t res);
/* They never finish (fake_stall.c): what was started stays so. */
void npkit_fake_prof_abandon(void *launch);

/* ---------------------------------------------------------------- GPU activity (fake_gpu.c) */
/* CLOCK_REALTIME ns. */
uint64_t npkit_fake_gpu_now(void);
/* The GPU's %globaltimer at host time host_ns: its own oscillator, off by FAKE_NCCL_GPU_OFFSET_US
 * and drifting by FAKE_NCCL_GPU_DRIFT_PPM (NCCL's kernel-channel stamps, v2.28.9-1
 * src/device/common.h, read %globaltimer). */
uint64_t npkit_fake_gpu_timer(uint64_t host_ns);
/* The kernels a run of operations launches: one per communicator and stream, named as NCCL 2.28
 * names them, reported to a loaded fake libcupti (nothing without one). */
npkit_fake_kernels *npkit_fake_gpu_plan(const npkit_fake_op *list);
/* cuLaunchKernelEx of the kernels of comm, on the calling thread (CUPTI's API record, correlated
 * with what the thread has pushed); host time of the launch in *t_ns. */
void npkit_fake_gpu_launch_comm(npkit_fake_kernels *k, ncclComm_t comm, uint64_t *t_ns);
/* When the kernels of comm start on the GPU (host clock): launch + FAKE_NCCL_LAUNCH_US +
 * FAKE_NCCL_QUEUE_US. */
uint64_t npkit_fake_gpu_start_of(const npkit_fake_kernels *k, ncclComm_t comm);
/* The run is over (res): the kernels' activity records (start..now), and frees k. */
void npkit_fake_gpu_complete(npkit_fake_kernels *k, ncclResult_t res);
/* A one-rank collective: NCCL copies with cudaMemcpyAsync on the stream, no kernel, no profiler
 * event (v2.28.9-1 src/enqueue.cc taskAppend, src/device/onerank.cu ncclLaunchOneRank). */
void npkit_fake_gpu_one_rank_copy(const npkit_fake_op *op, uint64_t t0_ns);
/* The kernels of a captured plan become nodes of the graph the fake CUPTI captures. */
void npkit_fake_gpu_capture(npkit_fake_kernels *k);
/* The fake CUPTI's stream capture and graph launch, when it is loaded (0 otherwise). */
uint32_t npkit_fake_gpu_capture_begin(cudaStream_t stream);
uint32_t npkit_fake_gpu_capture_end(cudaStream_t stream); /* the instantiated graph */
void npkit_fake_gpu_graph_launch(uint32_t exec, cudaStream_t stream);
/* A communicator's streams are gone (ncclCommDestroy/Abort): told to a loaded fake CUPTI. */
void npkit_fake_gpu_streams_destroyed(void);

/* ---------------------------------------------------------------- NPKit dumps (fake_npkit.c) */
/* A run of operations that started at t0_ns has finished: their NPKit events are kept
 * (FAKE_NCCL_NPKIT set). */
void npkit_fake_npkit_record(const npkit_fake_op *list, uint64_t t0_ns);
/* All ranks of comm joined: NpKit::Init (FAKE_NCCL_NPKIT set). */
void npkit_fake_npkit_init(ncclComm_t comm);
/* ncclCommFinalize, and ncclCommDestroy or ncclCommAbort (aborted_or_failed: aborted, or the
 * communicator has an error) of comm: NCCL's commDestroySync and commReclaim, which dump. */
void npkit_fake_npkit_finalized(ncclComm_t comm);
void npkit_fake_npkit_reclaimed(ncclComm_t comm, bool aborted_or_failed);
/* Frees what was kept for comm. */
void npkit_fake_npkit_free(ncclComm_t comm);

#endif
