/*
 * npkit-preload event log: the on-disk format shared by the preloaded library (writer) and the
 * `npkit` tool (reader).  It is the single source of truth; every Chrome trace is a view of it.
 *
 * Layout:  npkit_log_header  then a sequence of blocks, each  npkit_block_header + payload.
 *  - Everything is little endian, naturally aligned, and every payload is padded to 8 bytes.
 *  - Blocks are appended while the job runs, so a log cut short by SIGKILL or a crash is still
 *    readable up to its last complete block; a clean close ends with an NPKIT_BLOCK_END block.
 *  - From version 2 on, a CHECK block follows every block: a reader skips a corrupt block to the
 *    next intact one instead of losing the rest of the log (docs/trace-format.md).
 *  - Readers must skip block types they do not know (their size is in the header) and must use
 *    header_size / record_size from the file, so that later versions can append fields.
 *
 * Versions (npkit_log_header.version).  Each one only adds to the one before, so that a reader of
 * an earlier version still reads a later log, without what it does not know:
 *  1  npkit-preload 0.1 and 0.2.
 *  2  every block is followed by a CHECK block holding the CRC32C of that block (header and
 *     payload), so that a reader finds a corrupt block, skips to the next valid one and goes on;
 *     the header flag NPKIT_LOG_F_JSON_AT_EXIT.  Readers of version 1 skip CHECK blocks as a
 *     type they do not know.
 *  3  the machine the process ran on: MACHINE blocks (a text snapshot of the host, its GPUs, its
 *     network ports and the NCCL settings, taken once at the start, and the GPU the process uses,
 *     once its first communicator names it) and the counters sampled every NPKIT_GPU_SAMPLE_RATE
 *     (NPKIT_EV_MACHINE_* events, COUNTERS of source NPKIT_SRC_MACHINE).  Readers of version 2
 *     skip both, as a block type and event kinds they do not know.
 *  4  the flight recorder and the hang watchdog: the work in flight at a dump and the dump itself
 *     (NPKIT_EV_INFLIGHT, NPKIT_EV_FLIGHT), the header flag NPKIT_LOG_F_RING (a log written whole
 *     from the in-memory ring), and a collective NCCL did not accept says the sequence number it
 *     was made at (NPKIT_API_SEQ_AT, in aux).  Readers of version 3 skip the event kinds and
 *     ignore the flags.
 *  5  events are written as EVENTS_PACKED blocks: each event as its difference from the previous
 *     event of its kind in the block, about a tenth of the bytes (src/format/event_pack.h has the
 *     encoding, docs/trace-format.md an example).  The writer's thread moved every byte of a
 *     128-byte event through the kernel's write path and the checksum, which cost more CPU than
 *     the call it recorded (bench/RESULTS.md).  EVENTS blocks stay valid; readers of versions 2
 *     to 4 skip the packed blocks as a type they do not know, and so see no events.
 *  6  a process that kept its event pool in a file (include/npkit/pool_file.h, NPKIT_POOL_DIR)
 *     names it in a POOL block, the first after the header; when the process dies without
 *     closing its log (SIGKILL), a reader appends the events the pool still held and a RECOVERED
 *     block that says so.  Readers of version 5 skip both block types and read the recovered
 *     events as any other.
 */
#ifndef NPKIT_EVENT_LOG_H
#define NPKIT_EVENT_LOG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPKIT_LOG_MAGIC "NPKITLOG" /* 8 bytes, no terminating NUL in the file */
#define NPKIT_LOG_VERSION 6u
#define NPKIT_LOG_VERSION_PACKED 5u /* the first version whose EVENTS_PACKED blocks hold events */
#define NPKIT_LOG_ENDIAN_TAG 0x01020304u
#define NPKIT_BLOCK_MAGIC 0x424b504eu /* "NPKB" read as little endian */
#define NPKIT_LOG_SUFFIX ".npkit"

/* Sequence numbers that do not apply (a failed call, a non-collective) are stored as this. */
#define NPKIT_NO_SEQ UINT64_MAX

typedef struct npkit_log_header {
  char magic[8];              /* NPKIT_LOG_MAGIC */
  uint32_t version;           /* NPKIT_LOG_VERSION */
  uint32_t header_size;       /* sizeof(npkit_log_header) of the writer */
  uint32_t record_size;       /* sizeof(npkit_event) of the writer */
  uint32_t endian;            /* NPKIT_LOG_ENDIAN_TAG */
  uint64_t clock_base_ns;     /* CLOCK_REALTIME when the log was opened; traces are relative to it */
  uint64_t mono_base_ns;      /* CLOCK_MONOTONIC at the same instant */
  int32_t pid;
  int32_t rank;               /* global rank from the launcher, -1 if unknown (see PROCESS blocks) */
  int32_t world_size;         /* -1 if unknown */
  int32_t local_rank;         /* -1 if unknown */
  uint32_t nccl_header_version; /* NCCL_VERSION_CODE of the nccl.h the library was built with */
  uint32_t flags;             /* NPKIT_LOG_F_* */
  char host[64];              /* NUL terminated */
  char launcher[16];          /* where the rank came from: "ompi", "pmix", "pmi", "slurm", "torchrun", "" */
  char library_version[16];   /* npkit-preload version that wrote the log */
  uint8_t reserved[96];
} npkit_log_header;           /* 256 bytes */

/* npkit_log_header.flags */
#define NPKIT_LOG_F_TSC_CLOCK 0x1u /* times were read from the CPU's time-stamp counter and mapped
                                      onto CLOCK_REALTIME (see npkit_end_rec.clock_*); without it,
                                      every time is a CLOCK_REALTIME reading */
#define NPKIT_LOG_F_SIMULATED 0x2u /* NPKIT_SIMULATED was set: the job ran against stand-ins for NCCL
                                      and CUPTI (the test suite's fakes, as in scripts/demo.sh), so
                                      GPU activity and NCCL's events are simulated, not measured */
#define NPKIT_LOG_F_JSON_AT_EXIT 0x4u /* since version 2: the process meant to render its Chrome
                                         trace at exit (NPKIT_JSON=1), so a log without one next
                                         to it lost it to a kill (docs/faults.md) */
#define NPKIT_LOG_F_PERFETTO_AT_EXIT 0x10u /* the process meant to render Perfetto's trace
                                             (.pftrace) at exit (NPKIT_TRACE_FORMAT=perfetto or
                                             both): with JSON_AT_EXIT, both traces; a reader that
                                             does not know the flag ignores it */
#define NPKIT_LOG_F_RING 0x8u /* written by the flight recorder (NPKIT_RING_MB): the events the
                                 in-memory ring still held at a dump; older ones were overwritten
                                 (NPKIT_EV_FLIGHT says how many).  The log is rewritten whole at
                                 every dump */

typedef enum npkit_block_type {
  NPKIT_BLOCK_EVENTS = 1,   /* payload: count × npkit_event (record_size each) */
  NPKIT_BLOCK_EVENTS_PACKED = 10, /* since version 5: count events of record_size bytes, packed
                                     (src/format/event_pack.h), padded with zeros to 8 bytes */
  NPKIT_BLOCK_COMM = 2,     /* payload: count × npkit_comm_rec */
  NPKIT_BLOCK_THREAD = 3,   /* payload: count × npkit_thread_rec */
  NPKIT_BLOCK_PROCESS = 4,  /* payload: 1 × npkit_process_rec (identity learnt after the header) */
  NPKIT_BLOCK_COUNTERS = 5, /* payload: count × npkit_counter_rec (per thread, cumulative) */
  NPKIT_BLOCK_STRING = 6,   /* payload: count × (npkit_string_rec + bytes, padded to 8) */
  NPKIT_BLOCK_NOTE = 7,     /* payload: 1 × npkit_note_rec + text: warnings worth keeping in the trace */
  NPKIT_BLOCK_STACK = 8,    /* payload: count × (npkit_stack_rec + depth × uint32 frame string ids,
                               padded to 8): the call sites of NPKIT_STACK_DEPTH, written at exit */
  NPKIT_BLOCK_MACHINE = 9,  /* since version 3: count 0, payload: text (the machine snapshot, see
                               "The MACHINE block" below), padded with NULs to 8 bytes */
  NPKIT_BLOCK_POOL = 11,    /* since version 6: payload 1 × npkit_pool_rec (pool_file.h): where the
                               process kept its event pool, so that a reader can recover the events
                               of a killed process from it */
  NPKIT_BLOCK_RECOVERED = 12, /* since version 6: payload 1 × npkit_recovered_rec (pool_file.h):
                               the events before it were recovered from the pool of a process that
                               died without closing its log */
  NPKIT_BLOCK_CHECK = 14,   /* since version 2: payload 1 × npkit_check_rec, right after every
                               other block: its checksum */
  NPKIT_BLOCK_END = 15,     /* payload: 1 × npkit_end_rec; written last on a clean close */
} npkit_block_type;

typedef struct npkit_block_header {
  uint32_t magic;   /* NPKIT_BLOCK_MAGIC */
  uint16_t type;    /* npkit_block_type */
  uint16_t flags;   /* reserved, 0 */
  uint32_t count;   /* number of items in the payload */
  uint32_t size;    /* payload bytes that follow, a multiple of 8 */
} npkit_block_header;

/* NPKIT_BLOCK_CHECK (version 2): the block just before it is intact when its 16-byte header and
 * its payload give this CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected, initial value 0 and
 * final value inverted as in iSCSI: "123456789" gives 0xE3069283).  A CHECK block covers no other
 * CHECK block. */
typedef struct npkit_check_rec {
  uint32_t crc32c;
  uint32_t reserved;  /* 0 */
} npkit_check_rec;    /* 8 bytes */

/* What an event is; decides which member of npkit_event.u is valid. */
typedef enum npkit_event_kind {
  NPKIT_EV_API = 1,   /* one call of a public NCCL function (u.api) */
  NPKIT_EV_CUPTI_KERNEL = 2, /* a kernel that ran on a GPU, from CUPTI (u.gpu) */
  NPKIT_EV_CUPTI_MEMCPY = 3, /* a copy on a GPU stream, peer copies included (u.gpu) */
  NPKIT_EV_CUPTI_MEMSET = 4, /* a memset on a GPU stream (u.gpu) */
  /* NCCL's own events through the profiler plugin interface (NCCL 2.23+); see
   * src/runtime/profiler_plugin.h.  ctx numbers a communicator as the plugin saw it. */
  NPKIT_EV_PLUGIN_INIT = 16,       /* NCCL initialised the plugin for a communicator (u.plugin_comm) */
  NPKIT_EV_PLUGIN_FINALIZE = 17,   /* ... and finalized it (u.plugin_comm, only ctx is set) */
  NPKIT_EV_PLUGIN_TASK = 18,       /* a Coll or P2p task NCCL launched (u.plugin_task) */
  NPKIT_EV_PLUGIN_KERNEL_CH = 19,  /* one channel of a task's kernel ran (u.kernel_ch) */
  NPKIT_EV_PLUGIN_PROXY_OP = 20,   /* a proxy (network) operation of one channel (u.proxy_op) */
  NPKIT_EV_PLUGIN_PROXY_STEP = 21, /* one network transfer of a proxy operation (u.proxy_step) */
  NPKIT_EV_PLUGIN_PROXY_CTRL = 22, /* a proxy thread state (u.proxy_ctrl) */
  NPKIT_EV_PLUGIN_STATS = 23,      /* the plugin's own counters, cumulative (u.plugin_stats) */
  NPKIT_EV_PLUGIN_API = 24,        /* an API-level event of NCCL 2.28+ (ABI v5+): GroupApi,
                                      CollApi, P2pApi, KernelLaunch (u.plugin_api) */
  NPKIT_EV_PLUGIN_CLOCK = 25,      /* how a communicator's GPU clock was mapped onto the host
                                      clock, cumulative (u.plugin_clock) */
  NPKIT_EV_PLUGIN_KERNEL_PHASE = 26, /* a phase of one channel of a task's kernel (ABI v7, NCCL
                                        2.31+; NPKIT_PLUGIN_EVENTS=phase): u.kernel_phase */
  NPKIT_EV_PLUGIN_LAST = 26,       /* the highest plugin kind */
  /* The application's own marks (include/npkit_preload.h) and recording windows; start_ns = end_ns. */
  NPKIT_EV_MARK_BEGIN = 32,        /* npkit_mark_begin(name) on this thread (u.mark) */
  NPKIT_EV_MARK_END = 33,          /* npkit_mark_end(name): closes the latest open range of name */
  NPKIT_EV_MARK_INSTANT = 34,      /* npkit_mark_instant(name) (u.mark) */
  NPKIT_EV_RECORDING = 35,         /* recording paused or resumed (u.recording) */
  /* The flight recorder and the hang watchdog (docs/trace-format.md). */
  NPKIT_EV_INFLIGHT = 36,          /* work not finished when a dump was taken: start_ns = since
                                      when, end_ns = the snapshot (u.inflight) */
  NPKIT_EV_FLIGHT = 37,            /* a dump: why and when it was taken, what the ring lost
                                      (u.flight); start_ns = end_ns */
  /* NPKit dump files of NCCL builds with the NPKit patch, read from NPKIT_DUMP_DIR after
   * ncclCommDestroy and at exit (src/runtime/npkit_source.h). */
  NPKIT_EV_NPKIT_DUMP_SLICE = 48,       /* one NPKit event or ENTRY/EXIT pair (u.npkit), thread 0 */
  NPKIT_EV_NPKIT_DUMP_READ = 49,        /* one reading of the dump folder: what it gave (u.npkit_read) */
  /* Since version 3: counters of the machine, sampled every NPKIT_GPU_SAMPLE_RATE µs (the process's
   * CPU time every NPKIT_CPU_SAMPLE_INTERVAL ns) on a thread of the library's own
   * (src/runtime/machine); thread 0, start_ns..end_ns = the reading. */
  NPKIT_EV_MACHINE_GPU = 64,     /* one GPU through NVML (u.machine_gpu) */
  NPKIT_EV_MACHINE_PORT = 65,    /* the byte counters of one network port (u.machine_port) */
  NPKIT_EV_MACHINE_CPU = 66,     /* the process's CPU time (u.machine_cpu) */
  NPKIT_EV_MACHINE_LAST = 66,
} npkit_event_kind;

/* npkit_ev_api.flags */
#define NPKIT_API_IN_GROUP 0x1u   /* issued between ncclGroupStart and ncclGroupEnd */
#define NPKIT_API_P2P_SEND 0x2u   /* p2p sequence counts sends to `peer` */
#define NPKIT_API_P2P_RECV 0x4u   /* p2p sequence counts receives from `peer` */
#define NPKIT_API_ASYNC 0x8u      /* returned ncclInProgress (non-blocking communicator) */
#define NPKIT_API_GROUP_OUTER 0x10u /* the ncclGroupStart that opened / the ncclGroupEnd that closed
                                       the outermost group (nested Start/End pairs lack it) */
#define NPKIT_API_MISSING 0x20u   /* the loaded NCCL lacks the function; result is from npkit */
#define NPKIT_API_CONFIG 0x40u    /* called as the nccl*Config variant of the collective in func
                                     (NCCL 2.31+): user_tag is the call's profiler tag */
#define NPKIT_API_FROM_PLUGIN 0x80u /* no wrapper saw the call (NCCL called through pointers of the
                                       application's own): taken from NCCL's CollApi/P2pApi event
                                       (NCCL 2.28+); redop and the p2p peer are unknown */
#define NPKIT_API_SEQ_AT 0x100u   /* a collective NCCL did not accept (seq is NPKIT_NO_SEQ): aux holds
                                     the sequence number it was made at, which it did not consume */

typedef struct npkit_ev_api {
  uint64_t count;     /* element count as passed to NCCL */
  uint64_t bytes;     /* message size S of the nccl-tests definition (see metrics.md), 0 if none */
  uint64_t stream;    /* cudaStream_t value */
  uint64_t seq;       /* collectives: per-communicator sequence, identical on every rank for the same
                         collective; send/recv: per (communicator, peer, direction) sequence, so the
                         n-th send to p matches p's n-th receive from us; else NPKIT_NO_SEQ */
  uint64_t group;     /* process-unique id of the enclosing outermost group, 0 if none */
  uint64_t aux;       /* function specific: the communicator created by init/split/shrink (local id),
                         bytes for MemAlloc/CommRegister/WindowRegister, version for GetVersion */
  uint32_t comm;      /* process-local communicator id (npkit_comm_rec.local_id), 0 if none */
  int32_t peer;       /* root or peer rank, -1 if none */
  int32_t datatype;   /* ncclDataType_t, -1 if none */
  int32_t redop;      /* ncclRedOp_t, -1 if none */
  int32_t result;     /* ncclResult_t returned to the caller */
  uint32_t flags;     /* NPKIT_API_* */
  uint64_t corr_id;   /* external correlation id pushed to the GPU tracer around the call, 0 if none:
                         GPU activity carrying the same id was launched by this call */
  uint64_t stack_id;  /* call-site id (npkit_stack_rec.id), 0 if stacks are off */
  uint64_t call_no;   /* the call's number on its thread, from 1 (0 in logs before 0.3): NCCL's
                         API-level events name the call they came from by (thread, call_no) */
  uint64_t user_tag;  /* NPKIT_API_CONFIG: ncclCollConfig_t.userProfilerTag, 0 if untagged */
} npkit_ev_api;       /* 104 bytes */

/* npkit_ev_gpu.flags */
#define NPKIT_GPU_UNTIMED 0x1u     /* CUPTI could not time it (start or end is 0): counted, not drawn */
#define NPKIT_GPU_CALL_RECORDED 0x2u /* the launching call is an event of this log: draw an arrow */
#define NPKIT_GPU_VIA_GROUP 0x4u   /* launched by ncclGroupEnd; attributed to the group's only call
                                      when npkit_event.func is not GroupEnd */
#define NPKIT_GPU_GRAPH 0x8u       /* replayed from a CUDA graph: attributed through the graph node
                                      captured inside the call (call_ns then is the capture time) */
#define NPKIT_GPU_CALL_LOST 0x10u  /* ext_id is known but the call's description was overwritten */
#define NPKIT_GPU_PEER 0x20u       /* memcpy between two devices (src_device, dst_device valid) */

/* GPU activity (kernel, memcpy, memset) from CUPTI.  npkit_event.func is the NCCL function the
 * activity is attributed to (NPKIT_FN_NONE for compute kernels and copies of the application) and
 * npkit_event.thread the host thread of the call that launched it (0 if none). */
typedef struct npkit_ev_gpu {
  uint64_t ext_id;      /* external correlation id of the launching call (npkit_ev_api.corr_id), 0 */
  uint64_t call_bytes;  /* the attributed call's bytes; for a group, the sum over its calls */
  uint64_t call_seq;    /* the attributed call's seq, NPKIT_NO_SEQ if none */
  uint64_t group;       /* group id of the launching call, 0 if none */
  uint64_t graph_node;  /* CUPTI graph node id, 0 if not launched from a CUDA graph */
  uint64_t call_ns;     /* midpoint of the launching call (where its arrow starts), 0 if unknown */
  uint32_t correlation; /* CUPTI correlation id of the launch */
  uint32_t device;      /* CUDA device id */
  uint32_t stream;      /* CUPTI stream id */
  uint32_t graph_id;    /* CUPTI graph id, 0 if none */
  uint32_t comm;        /* the attributed call's communicator (local id), 0 if none */
  uint16_t flags;       /* NPKIT_GPU_* */
  uint16_t group_calls; /* coll/p2p calls in the launching group (saturates at 65535), 0 if none */
  union {
    struct {
      uint32_t name;      /* string id of the readable kernel name (from NPKIT_STRING_ID_GPU_BASE), 0 */
      uint32_t grid_x;
      uint16_t grid_y, grid_z;
      uint16_t block_x, block_y, block_z;
      uint16_t registers; /* per thread */
      int32_t static_shared;  /* bytes */
      int32_t dynamic_shared; /* bytes */
      uint32_t reserved;
    } kernel;           /* NPKIT_EV_CUPTI_KERNEL */
    struct {
      uint64_t bytes;
      uint8_t copy_kind;  /* CUpti_ActivityMemcpyKind (memcpy), 0 */
      uint8_t src_kind;   /* CUpti_ActivityMemoryKind */
      uint8_t dst_kind;   /* CUpti_ActivityMemoryKind (memset: the memory set) */
      uint8_t reserved;
      uint32_t value;     /* memset: the value */
      uint32_t src_device, dst_device; /* NPKIT_GPU_PEER copies */
      uint64_t reserved2;
    } copy;             /* NPKIT_EV_CUPTI_MEMCPY, NPKIT_EV_CUPTI_MEMSET */
  } x;
} npkit_ev_gpu;         /* 104 bytes */

/* NPKIT_EV_PLUGIN_INIT / _FINALIZE.  start_ns = end_ns = when NCCL called the plugin. */
typedef struct npkit_ev_plugin_comm {
  uint64_t nccl_comm_id; /* NCCL's commId (ABI v5+) or commHash (v4), 0 if NCCL does not pass it */
  uint32_t ctx;          /* plugin context, from 1, process unique */
  int32_t rank;          /* -1 when NCCL does not pass it (ABI v1-v3) */
  int32_t nranks;        /* -1 likewise */
  int32_t nnodes;        /* -1 likewise */
  uint32_t abi;          /* profiler ABI version NCCL loaded, 1..7 */
  uint32_t mask;         /* NCCL event mask the plugin asked for (ncclProfile* bits) */
  char name[72];         /* ncclConfig_t.commName, NUL terminated, "" if none */
} npkit_ev_plugin_comm; /* 104 bytes */

/* npkit_ev_plugin_task.flags */
#define NPKIT_PTASK_P2P 0x1u       /* a P2p task (Send/Recv), not a Coll */
#define NPKIT_PTASK_KERNEL_CH 0x2u /* kernel-channel events were enabled: one per channel follows */
#define NPKIT_PTASK_SYMMETRIC 0x4u /* ABI v7: a symmetric-memory kernel (isSymColl); algo holds the
                                      tail of its variant ("AGxLL_R" of "AllReduce_AGxLL_R") */

/* NPKIT_EV_PLUGIN_TASK: start_ns = end_ns = when NCCL started the task's event (at launch).
 * npkit_event.func is the npkit_fn of NCCL's function name (AllReduce, Send, ...), NPKIT_FN_NONE
 * if this build does not know it. */
typedef struct npkit_ev_plugin_task {
  uint64_t task;       /* plugin task id, process unique, from 1: children refer to it */
  uint64_t nccl_seq;   /* Coll: NCCL's seqNumber, counted per communicator and function;
                          P2p: NPKIT_NO_SEQ */
  uint64_t count;      /* elements as NCCL holds them (AllGather/Broadcast: bytes, as int8) */
  uint64_t comm_hash;  /* ABI v1-v3 pass NCCL's commHash with every task; else 0 */
  uint32_t ctx;
  int32_t rank;
  int32_t root;        /* Coll: root; P2p: peer */
  int32_t datatype;    /* ncclDataType_t, -1 if unknown */
  uint8_t nchannels;   /* channels NCCL chose (ABI v1-v3: nMaxChannels) */
  uint8_t nwarps;      /* Coll only */
  uint16_t flags;      /* NPKIT_PTASK_* */
  uint32_t reserved0;
  char algo[16];       /* "RING", "TREE", ... as NCCL names it, NUL terminated, "" for P2p */
  char proto[8];       /* "LL", "LL128", "SIMPLE" */
  char func[16];       /* NCCL's function name as given */
  uint64_t api;        /* ABI v5+: the CollApi/P2pApi event NCCL names as the task's parent
                          (npkit_ev_plugin_api.api), 0 if none */
} npkit_ev_plugin_task; /* 104 bytes */

/* npkit_ev_kernel_ch.flags */
#define NPKIT_PKCH_GPU_TIMER 0x1u /* start_ns/end_ns are the GPU's %globaltimer stamps (ABI v4+);
                                     else the CPU times at which NCCL reported start and stop */
#define NPKIT_PKCH_NO_STOP 0x2u   /* the stop time never came: end_ns = the CPU time of stopEvent */
#define NPKIT_PKCH_MAPPED 0x4u    /* with GPU_TIMER: start_ns/end_ns are the GPU stamps mapped onto
                                     the host clock (raw stamps in gpu_start/gpu_stop); logs before
                                     0.3 stored the raw %globaltimer values there */

/* NPKIT_EV_PLUGIN_KERNEL_CH: one channel of one task, start_ns..end_ns on the GPU. */
typedef struct npkit_ev_kernel_ch {
  uint64_t task;         /* 0 when the parent is unknown */
  uint64_t cpu_start_ns; /* when NCCL's proxy thread reported the start */
  uint64_t cpu_stop_ns;  /* ... and the stop */
  uint32_t ctx;
  uint8_t channel;
  uint8_t flags;         /* NPKIT_PKCH_* */
  uint16_t reserved0;
  uint64_t gpu_start;    /* the GPU's %globaltimer at the start and stop (NPKIT_PKCH_MAPPED), 0 */
  uint64_t gpu_stop;
  int64_t map_error_ns;  /* how far the mapped times may be off: from the estimate to the farther
                            end of the interval the host-side bounds left for the clock offset
                            (in earlier logs: half its width), plus the drift since the estimate;
                            -1 when one side was unbounded */
  uint64_t reserved[6];
} npkit_ev_kernel_ch; /* 104 bytes */

/* NPKIT_EV_PLUGIN_KERNEL_PHASE: one phase of one channel of one task, start_ns..end_ns on the GPU:
 * its stamps mapped onto the host clock with the estimate the task's channels use (flags as
 * npkit_ev_kernel_ch's), so that phases and channel line up exactly. */
typedef struct npkit_ev_kernel_phase {
  uint64_t task;         /* the task of the parent channel, 0 when unknown */
  uint64_t cpu_start_ns; /* when NCCL reported the phase (its start and stop come together) */
  uint64_t cpu_stop_ns;
  uint32_t ctx;
  uint8_t channel;
  uint8_t flags;         /* NPKIT_PKCH_* */
  uint8_t phase;         /* NCCL's phaseId: 0 initial_sync, 1 compute, 2 final_sync */
  uint8_t reserved0;
  uint64_t gpu_start;    /* the GPU's %globaltimer at the phase's start and stop */
  uint64_t gpu_stop;
  int64_t map_error_ns;  /* as npkit_ev_kernel_ch's */
  char name[16];         /* NCCL's phaseName, NUL terminated */
  uint64_t reserved[4];
} npkit_ev_kernel_phase; /* 104 bytes */

/* NPKIT_EV_PLUGIN_PROXY_OP: start_ns..end_ns = startEvent..stopEvent on the proxy thread. */
typedef struct npkit_ev_proxy_op {
  uint64_t task;         /* 0 when unknown (or the op belongs to another process) */
  uint64_t bytes;        /* ABI v4+: the sum of its steps' sizes; v1-v3: the last transSize */
  uint64_t progress_ns;  /* first "in progress" state (ABI v4+), 0 if none */
  uint32_t ctx;
  int32_t peer;
  int32_t nsteps;
  int32_t chunk_size;
  uint32_t steps_done;   /* steps that stopped */
  int32_t pid;           /* the process NCCL says the op came from */
  uint8_t channel;
  uint8_t is_send;
  uint16_t flags;
  uint32_t reserved0;
  uint64_t reserved[6];
} npkit_ev_proxy_op; /* 104 bytes */

/* NPKIT_EV_PLUGIN_PROXY_STEP: one network transfer, start_ns..end_ns on the proxy thread.
 * phase_ns[i] = when the step entered phase i, 0 if it never did:
 *   send: 0 waiting for the GPU's data, 1 waiting for the peer, 2 waiting for the network to finish
 *   recv: 0 receive posted, 1 data received (flushing), 2 waiting for the GPU to consume it */
typedef struct npkit_ev_proxy_step {
  uint64_t task;
  uint64_t size;         /* bytes moved (ABI v4+), 0 if NCCL did not say */
  uint64_t phase_ns[3];
  uint32_t ctx;
  int32_t peer;
  int32_t step;
  uint8_t channel;
  uint8_t is_send;
  uint16_t flags;
  uint64_t reserved[6];
} npkit_ev_proxy_step; /* 104 bytes */

/* NPKIT_EV_PLUGIN_PROXY_CTRL: a proxy thread state, start_ns..end_ns. */
typedef struct npkit_ev_proxy_ctrl {
  uint32_t ctx;
  uint32_t state;        /* the last ncclProfilerProxyCtrl* state recorded (13..18), 0 if none */
  int32_t appended;      /* appendedProxyOps of that state */
  uint32_t reserved0;
  uint64_t reserved[11];
} npkit_ev_proxy_ctrl; /* 104 bytes */

/* NPKIT_EV_PLUGIN_STATS: what the plugin could not record, totals since the process started. */
typedef struct npkit_ev_plugin_stats {
  uint64_t lost;         /* events not recorded: no memory for their state, or no recorder on
                            the thread that reported them */
  uint64_t late;         /* states or stops for events already stopped or never started: ignored */
  uint64_t foreign;      /* proxy ops of another process: recorded without their task */
  uint64_t unknown;      /* event types this build does not record: ignored */
  uint64_t reserved[9];
} npkit_ev_plugin_stats; /* 104 bytes */

/* npkit_ev_plugin_api.type */
#define NPKIT_PAPI_GROUP 1   /* ncclProfileGroupApi: from the first call of a group to its end */
#define NPKIT_PAPI_COLL 2    /* ncclProfileCollApi: inside the collective's call */
#define NPKIT_PAPI_P2P 3     /* ncclProfileP2pApi: inside a Send/Recv (and per part of AlltoAll...) */
#define NPKIT_PAPI_LAUNCH 4  /* ncclProfileKernelLaunch: around cuLaunchKernelEx */
/* npkit_ev_plugin_api.flags */
#define NPKIT_PAPI_GRAPH 0x1u      /* NCCL said graphCaptured: the call was captured into a CUDA
                                      graph; its tasks run at each replay */
#define NPKIT_PAPI_IN_CALL 0x2u    /* a wrapped call was running on the thread (call_no names it,
                                      0 when that call was not stored) */
#define NPKIT_PAPI_SYNTH 0x8u      /* with IN_CALL: the call was made from this event (no wrapper
                                      saw it, NPKIT_API_FROM_PLUGIN) */
#define NPKIT_PAPI_PUSHED 0x4u     /* KernelLaunch on a thread of NCCL's own: the library pushed
                                      the launching call's correlation id around it */

/* NPKIT_EV_PLUGIN_API: start_ns..end_ns = NCCL's start and stop of the event; thread = the thread
 * NCCL reported it on; func = npkit_fn of NCCL's function name (coll/p2p). */
typedef struct npkit_ev_plugin_api {
  uint64_t api;          /* id, process unique, from 1; tasks refer to it */
  uint64_t parent;       /* the GroupApi of a CollApi, P2pApi or KernelLaunch, 0 */
  uint64_t count;        /* coll/p2p: elements as the caller passed them */
  uint64_t stream;       /* cudaStream_t value, 0 */
  uint64_t call_no;      /* NPKIT_PAPI_IN_CALL: npkit_ev_api.call_no of that call on `thread` */
  uint64_t user_tag;     /* ABI v7: the call's profiler tag, 0 */
  uint32_t ctx;
  int32_t root;          /* CollApi: root; else -1 */
  int32_t datatype;      /* ncclDataType_t, -1 */
  int32_t group_depth;   /* GroupApi: NCCL's group depth at the start (1: a call outside a group) */
  uint8_t type;          /* NPKIT_PAPI_* */
  uint8_t flags;         /* NPKIT_PAPI_* */
  uint16_t reserved0;
  uint32_t reserved1;
  char func[16];         /* NCCL's function name, NUL terminated */
  uint64_t reserved[2];
} npkit_ev_plugin_api;   /* 104 bytes */

/* NPKIT_EV_PLUGIN_CLOCK: the map from a communicator's GPU clock (%globaltimer) onto the host
 * clock (src/runtime/gpu_clock_map.h), totals since its first kernel-channel event.  The offset is
 * host time minus GPU time at gpu_ref_ns. */
typedef struct npkit_ev_plugin_clock {
  uint64_t samples;      /* kernel-channel events that gave bounds */
  int64_t offset_ns;     /* the latest estimate */
  uint64_t gpu_ref_ns;   /* the GPU time it applies at */
  int64_t drift_ppb;     /* the GPU clock's rate against the host's, parts per billion (host
                            clock runs faster when positive) */
  int64_t max_error_ns;  /* largest half width of a two-sided estimate used, -1 if none */
  int64_t median_error_ns; /* median of those half widths (over the last 1024), -1 */
  uint32_t ctx;
  uint32_t windows;      /* estimation windows closed */
  uint32_t inconsistent; /* samples whose bounds contradicted the estimate (a clock jump): the
                            map restarted from them */
  uint32_t one_sided;    /* events mapped with only an upper or only a lower bound */
  uint64_t reserved[5];
} npkit_ev_plugin_clock; /* 104 bytes */

/* NPKIT_EV_MARK_*: the name is a STRING, stored once per distinct name. */
typedef struct npkit_ev_mark {
  uint64_t name;         /* string id */
  uint64_t reserved[12];
} npkit_ev_mark;         /* 104 bytes */

/* npkit_ev_recording.reason: what paused or resumed recording */
#define NPKIT_REC_START_AFTER 1u /* NPKIT_START_AFTER reached (or, at start, not yet reached) */
#define NPKIT_REC_STOP_AFTER 2u  /* NPKIT_STOP_AFTER reached */
#define NPKIT_REC_API 3u         /* npkit_pause() / npkit_resume() */
#define NPKIT_REC_SIGNAL 4u      /* NPKIT_TOGGLE_SIGNAL received */

/* NPKIT_EV_RECORDING.  While paused, wrapped calls keep their sequence numbers (seq stays the same
 * on every rank) but are not stored; marks are not stored either. */
typedef struct npkit_ev_recording {
  uint32_t recording;    /* 1: resumed, 0: paused */
  uint32_t reason;       /* NPKIT_REC_* */
  uint64_t collectives;  /* collectives the process had issued by then */
  int32_t signal;        /* NPKIT_REC_SIGNAL: the signal's number, else 0 */
  uint32_t reserved0;
  uint64_t reserved[10];
} npkit_ev_recording;    /* 104 bytes */

/* npkit_ev_inflight.what: a kind of work in flight */
#define NPKIT_INFL_CALL 1       /* a wrapped NCCL call that has not returned: a thread inside NCCL */
#define NPKIT_INFL_QUEUED 2     /* a task NCCL launched whose kernel has started on none of its
                                   channels (the stream still runs earlier work) */
#define NPKIT_INFL_KERNEL_CH 3  /* one channel of a task's kernel started on the GPU, not stopped */
#define NPKIT_INFL_PROXY_OP 4   /* a proxy (network) operation of one channel, not done */
#define NPKIT_INFL_PROXY_STEP 5 /* one network transfer of a proxy operation, not done */
/* npkit_ev_inflight.flags */
#define NPKIT_INFL_F_HANG 0x1u  /* the work the watchdog found stuck (NPKIT_FLIGHT_HANG) */
#define NPKIT_INFL_F_GPU_TIMER 0x2u /* KERNEL_CH: start_ns is the GPU's start stamp mapped onto the
                                       host clock; else when NCCL reported the start */

/* NPKIT_EV_INFLIGHT: one item of the in-flight snapshot taken before a dump (every item of one
 * snapshot has the same end_ns and dump).  npkit_event.func is the NCCL function (npkit_fn),
 * npkit_event.thread the calling thread of a CALL, else 0. */
typedef struct npkit_ev_inflight {
  uint64_t comm_id;      /* npkit_comm_rec.comm_id of the communicator (the same on every rank), 0
                            if unknown */
  uint64_t seq;          /* the collective's sequence number on it (npkit_ev_api.seq; for a CALL:
                            the one it will get), NPKIT_NO_SEQ if unknown or not a collective */
  uint64_t nccl_seq;     /* tasks: NCCL's seqNumber (per communicator and function), NPKIT_NO_SEQ */
  uint64_t task;         /* the plugin task (npkit_ev_plugin_task.task), 0 */
  uint64_t progress_ns;  /* PROXY_OP: when its last step finished; PROXY_STEP: when it entered
                            its phase; 0 */
  uint64_t count;        /* CALL: element count; tasks: NCCL's count; 0 */
  uint32_t comm;         /* local communicator id (npkit_comm_rec.local_id), 0 if unknown */
  uint32_t ctx;          /* plugin context, 0 */
  uint32_t dump;         /* the dump of the snapshot (npkit_ev_flight.dump) */
  int32_t rank, nranks;  /* the process's rank in the communicator and its size, -1 if unknown */
  int32_t channel;       /* KERNEL_CH, PROXY_*: the channel; else -1 */
  int32_t peer;          /* PROXY_*: the peer; CALL: root or peer; else -1 */
  int32_t step;          /* PROXY_STEP: the step; PROXY_OP: steps done; else -1 */
  int32_t nsteps;        /* PROXY_OP: steps; QUEUED: channels; else -1 */
  uint8_t what;          /* NPKIT_INFL_* */
  uint8_t is_send;       /* PROXY_*: 1 send, 0 receive */
  uint8_t phase;         /* PROXY_STEP: the phase it is in (npkit_ev_proxy_step.phase_ns index:
                            send 0 waiting for the GPU's data, 1 for the peer, 2 for the network;
                            recv 0 posted, 1 data received, 2 waiting for the GPU), 0xff none */
  uint8_t flags;         /* NPKIT_INFL_F_* */
  uint64_t reserved[2];
} npkit_ev_inflight;     /* 104 bytes */

/* npkit_ev_flight.trigger: what made the library dump */
#define NPKIT_FLIGHT_EXIT 1   /* the process finished: exit, or a stop signal (signal set) */
#define NPKIT_FLIGHT_SIGNAL 2 /* NPKIT_DUMP_SIGNAL arrived: the job goes on */
#define NPKIT_FLIGHT_HANG 3   /* the hang watchdog found work older than NPKIT_HANG_TIMEOUT */
#define NPKIT_FLIGHT_ERROR 4  /* an NCCL call failed with an error of the job (result) */
#define NPKIT_FLIGHT_ABORT 5  /* ncclCommAbort was called */
#define NPKIT_FLIGHT_FATAL 6  /* SIGSEGV, SIGBUS or SIGABRT: the raw ring, written from the signal
                                 handler; no snapshot */

/* NPKIT_EV_FLIGHT: the last event of a dump's snapshot.  Without a ring (NPKIT_RING_MB unset) the
 * log holds everything anyway: the event marks the moment and carries the snapshot's count. */
typedef struct npkit_ev_flight {
  uint64_t ring_bytes;         /* NPKIT_RING_MB in bytes, 0 without a ring */
  uint64_t events_kept;        /* ring: events it held at the dump (this one excluded) */
  uint64_t events_overwritten; /* ring: events overwritten since the start: lost */
  uint64_t meta_lost;          /* ring: non-event blocks (names, threads, notes) it had no room for */
  uint32_t trigger;            /* NPKIT_FLIGHT_* */
  int32_t signal;              /* EXIT on a stop signal, SIGNAL, FATAL: the signal; else 0 */
  int32_t result;              /* ERROR: the ncclResult_t; else 0 */
  uint32_t dump;               /* the dump's number in the process, from 1 */
  uint32_t inflight;           /* INFLIGHT events of its snapshot (with this dump number) */
  uint32_t inflight_omitted;   /* in-flight work left out of the snapshot (too much of it) */
  char reason[48];             /* HANG, ERROR, ABORT: what ("AllReduce #14 of comm 3f2a0b1c"),
                                  NUL terminated; "" */
} npkit_ev_flight;             /* 104 bytes */

/* npkit_ev_npkit.type (the NPKit dump source's slices: NPKIT_DUMP_SLICE_*; the values are those
 * of every log written so far) */
#define NPKIT_DUMP_SLICE_PAIR 0           /* an ENTRY and its EXIT: start_ns..end_ns */
#define NPKIT_DUMP_SLICE_UNPAIRED_ENTRY 1 /* an ENTRY whose EXIT is not in the dump (start_ns = end_ns) */
#define NPKIT_DUMP_SLICE_UNPAIRED_EXIT 2  /* an EXIT without an open ENTRY (start_ns = end_ns) */
#define NPKIT_DUMP_SLICE_POINT 3          /* an event that is neither ENTRY nor EXIT (start_ns = end_ns) */
/* npkit_ev_npkit.source */
#define NPKIT_DUMP_SLICE_GPU 0            /* gpu_events_rank_<r>_buf_<buffer> */
#define NPKIT_DUMP_SLICE_CPU 1            /* cpu_events_rank_<r>_channel_<buffer> (network proxy) */
/* npkit_ev_npkit.flags */
#define NPKIT_DUMP_SLICE_UNALIGNED 0x1u   /* the GPU buffer had no TIME_SYNC_CPU event: the times are
                                             the log's clock_base_ns + ns since the rank's first GPU
                                             event, not real times */

/* NPKIT_EV_NPKIT_DUMP_SLICE: times are CLOCK_REALTIME ns converted exactly from the dump's clocks
 * (docs/npkit-convert.md); ENTRY/EXIT are paired per GPU buffer and kind, per CPU channel and slot. */
typedef struct npkit_ev_npkit {
  uint64_t seq;         /* PAIR: n-th pair of this kind on this buffer in its file, from 0 */
  uint32_t read;        /* the NPKIT_EV_NPKIT_DUMP_READ that stored it (its `read`) */
  uint32_t rank;        /* NPKit rank: the number in the file names */
  uint32_t buffer;      /* GPU buffer or CPU channel */
  uint32_t lane;        /* slices of one lane of one buffer nest properly (CPU: never overlap) */
  uint32_t size;        /* bytes of the EXIT (or of the single event) */
  uint32_t rsvd;        /* GPU: rsvd of the EXIT (NPKit puts data-process cycles there); CPU: slot */
  uint32_t entry_size;  /* PAIR: size of the ENTRY */
  uint32_t entry_rsvd;  /* PAIR, GPU: rsvd of the ENTRY */
  uint32_t name;        /* string id: the kind ("ALL_REDUCE_RING") of a PAIR, else the event's
                           name ("NET_SEND_EXIT"); 0 when the string table was full */
  uint8_t source;       /* NPKIT_DUMP_SLICE_GPU / _CPU */
  uint8_t type;         /* NPKIT_DUMP_SLICE_PAIR ... */
  uint8_t id;           /* NPKit event id: of the ENTRY for PAIR and UNPAIRED_ENTRY */
  uint8_t flags;        /* NPKIT_DUMP_SLICE_UNALIGNED */
  uint64_t reserved[7];
} npkit_ev_npkit;       /* 104 bytes */

/* npkit_ev_npkit_read.trigger (the source's readings: NPKIT_DUMP_READ_*; values unchanged) */
#define NPKIT_DUMP_READ_AFTER_DESTROY 1 /* ncclCommDestroy returned (NCCL dumps there) */
#define NPKIT_DUMP_READ_AT_EXIT 2       /* the process exits */
#define NPKIT_DUMP_READ_AFTER_ABORT 3   /* ncclCommAbort returned (NCCL dumps there too) */
/* npkit_ev_npkit_read.flags */
#define NPKIT_DUMP_READ_SHARED 0x1u     /* the process held more than one communicator at once since
                                           its NPKit state was last fresh: NPKit keeps one state per
                                           process, so the dump may mix or lack communicators */

/* NPKIT_EV_NPKIT_DUMP_READ: start_ns..end_ns = the reading (on the thread of the ncclCommDestroy or
 * ncclCommAbort that triggered it, thread 0 at exit).  Written when files were read or something failed.  Counts
 * saturate at UINT32_MAX. */
typedef struct npkit_ev_npkit_read {
  uint64_t bytes;            /* of events read */
  uint64_t events;           /* 16-byte records read */
  uint64_t pairs;            /* ENTRY/EXIT pairs stored */
  uint32_t read;             /* number of this reading in the process, from 1 */
  uint16_t trigger;          /* NPKIT_DUMP_READ_AFTER_DESTROY / _AT_EXIT / _AFTER_ABORT */
  uint16_t flags;            /* NPKIT_DUMP_READ_SHARED; earlier writers stored trigger in 32 bits, so
                                their logs read as 0 here */
  uint32_t comm;             /* the destroyed or aborted communicator (local id), 0 at exit */
  uint32_t files;            /* non-empty event files read */
  uint32_t unpaired_entries;
  uint32_t unpaired_exits;
  uint32_t point_events;
  uint32_t unknown_ids;      /* records with ids the event table lacks: not stored */
  uint32_t invalid_events;   /* NPKIT_EVENT_INVALID records: not stored */
  uint32_t bad_times;        /* records whose time does not fit: not stored */
  uint32_t out_of_order;     /* records earlier than the one before them in their buffer */
  uint32_t time_sync_cpu, time_sync_gpu;
  uint32_t unaligned_events; /* GPU records without a TIME_SYNC_CPU base (NPKIT_DUMP_SLICE_UNALIGNED) */
  uint32_t truncated_files;  /* sizes not a multiple of 16 bytes */
  uint32_t unreadable_files;
  uint32_t skipped_ranks;    /* ranks whose clock files are missing or implausible */
  uint32_t not_stored;       /* converted events the log did not take */
  uint32_t files_over_limit; /* files left unread: NPKIT_DUMP_MAX_MB reached */
  uint32_t dir;              /* string id of the dump folder, 0 if unknown */
} npkit_ev_npkit_read;       /* 104 bytes */

/* npkit_ev_machine_gpu.valid: the readings NVML gave (a GPU without NVLink has no NVLINK, one
 * whose PCIe counters NVML does not support no PCIE; PCIE also needs a period of 100 ms or more) */
#define NPKIT_MGPU_CLOCKS 0x1u /* sm_mhz, mem_mhz: nvmlDeviceGetClockInfo (SM, MEM) */
#define NPKIT_MGPU_UTIL 0x2u   /* util_gpu, util_mem: nvmlDeviceGetUtilizationRates */
#define NPKIT_MGPU_POWER 0x4u  /* power_mw: nvmlDeviceGetPowerUsage */
#define NPKIT_MGPU_TEMP 0x8u   /* temp_c: nvmlDeviceGetTemperature (GPU) */
#define NPKIT_MGPU_PCIE 0x10u  /* pcie_*_kbs: nvmlDeviceGetPcieThroughput (TX, RX) */
#define NPKIT_MGPU_NVLINK 0x20u /* nvlink_*_kib: nvmlDeviceGetFieldValues, NVLink data counters */

/* NPKIT_EV_MACHINE_GPU: one GPU (the process's, once known; see the MACHINE block's `bind`). */
typedef struct npkit_ev_machine_gpu {
  uint64_t nvlink_tx_kib; /* NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX summed over the links (scope
                             UINT_MAX): KiB sent since the driver started, cumulative */
  uint64_t nvlink_rx_kib; /* ..._DATA_RX */
  uint32_t gpu;           /* NVML index (the MACHINE block's gpu index=) */
  uint32_t valid;         /* NPKIT_MGPU_* */
  uint32_t sm_mhz, mem_mhz;
  uint32_t util_gpu, util_mem; /* percent of NVML's last sample period */
  uint32_t power_mw;
  uint32_t temp_c;
  uint32_t pcie_tx_kbs, pcie_rx_kbs; /* KB/s over the 20 ms NVML measures inside the call */
  uint64_t reserved[6];
} npkit_ev_machine_gpu;   /* 104 bytes */

/* npkit_ev_machine_port.flags */
#define NPKIT_MPORT_IB 0x1u     /* an InfiniBand port: counters/port_{xmit,rcv}_data × 4 (the
                                   counters count 4-byte words); else statistics/{tx,rx}_bytes */
#define NPKIT_MPORT_TX_BAD 0x2u /* tx_bytes could not be read */
#define NPKIT_MPORT_RX_BAD 0x4u /* rx_bytes could not be read */

/* NPKIT_EV_MACHINE_PORT: the byte counters of one network port of the host. */
typedef struct npkit_ev_machine_port {
  uint64_t tx_bytes;      /* cumulative, since the port came up */
  uint64_t rx_bytes;
  uint32_t port;          /* position of the port among the MACHINE block's `port` records, from 0 */
  uint32_t flags;         /* NPKIT_MPORT_* */
  char name[32];          /* "mlx5_0/1" (device/port) or "eth0", NUL terminated */
  uint64_t reserved[6];
} npkit_ev_machine_port;  /* 104 bytes */

/* NPKIT_EV_MACHINE_CPU: the CPU time the process has used (getrusage(RUSAGE_SELF)); the CPU use
 * of a period is the difference of two samples over the time between them. */
typedef struct npkit_ev_machine_cpu {
  uint64_t user_ns;
  uint64_t system_ns;
  uint64_t reserved[11];
} npkit_ev_machine_cpu;   /* 104 bytes */

typedef struct npkit_event {
  uint64_t start_ns;  /* CLOCK_REALTIME nanoseconds */
  uint64_t end_ns;
  uint16_t kind;      /* npkit_event_kind */
  uint16_t func;      /* NPKIT_API events: npkit_fn (see nccl_api.def) */
  uint32_t thread;    /* process thread index (npkit_thread_rec.index) */
  union {
    npkit_ev_api api;
    npkit_ev_gpu gpu;
    npkit_ev_plugin_comm plugin_comm;
    npkit_ev_plugin_task plugin_task;
    npkit_ev_kernel_ch kernel_ch;
    npkit_ev_kernel_phase kernel_phase;
    npkit_ev_proxy_op proxy_op;
    npkit_ev_proxy_step proxy_step;
    npkit_ev_proxy_ctrl proxy_ctrl;
    npkit_ev_plugin_stats plugin_stats;
    npkit_ev_plugin_api plugin_api;
    npkit_ev_plugin_clock plugin_clock;
    npkit_ev_mark mark;
    npkit_ev_recording recording;
    npkit_ev_inflight inflight;
    npkit_ev_flight flight;
    npkit_ev_npkit npkit;
    npkit_ev_npkit_read npkit_read;
    npkit_ev_machine_gpu machine_gpu;
    npkit_ev_machine_port machine_port;
    npkit_ev_machine_cpu machine_cpu;
    uint8_t raw[104];
  } u;
} npkit_event;        /* 128 bytes */

typedef struct npkit_comm_rec {
  uint32_t local_id;  /* > 0, referenced by events; never reused within a process */
  uint32_t parent;    /* local id of the parent for split/shrink, 0 if none */
  uint64_t comm_id;   /* identical on every rank of the communicator: a hash of the unique id,
                         or of the parent's id and the split's color and ordinal */
  uint64_t handle;    /* ncclComm_t value in this process */
  int32_t rank;       /* rank in the communicator */
  int32_t nranks;
  int32_t device;     /* CUDA device from ncclCommCuDevice, -1 if unknown */
  uint16_t created_by;/* npkit_fn of the call that created it */
  uint16_t reserved;
  uint64_t create_ns;
  char name[32];      /* ncclConfig_t.commName when given, NUL terminated */
} npkit_comm_rec;     /* 80 bytes */

typedef struct npkit_thread_rec {
  uint32_t index;     /* process thread index used by events, from 1 */
  int32_t os_tid;     /* gettid() */
  char name[24];      /* pthread name at registration, NUL terminated */
} npkit_thread_rec;   /* 32 bytes */

typedef struct npkit_process_rec {
  int32_t rank;
  int32_t world_size;
  int32_t local_rank;
  int32_t device;     /* CUDA device of the first communicator, -1 if unknown */
  char source[16];    /* "ompi", "slurm", ..., or "comm" when taken from the first communicator */
} npkit_process_rec; /* 32 bytes */

typedef struct npkit_counter_rec {
  uint32_t thread;    /* process thread index, 0 for process-wide counters */
  uint32_t source;    /* npkit_source: which producer the counts belong to */
  uint64_t recorded;  /* events stored */
  uint64_t dropped;   /* events lost because the pool was exhausted or recording failed */
} npkit_counter_rec;  /* 24 bytes */

typedef enum npkit_source {
  NPKIT_SRC_API = 1,
  NPKIT_SRC_CUPTI = 2, /* GPU activity (thread 0): records stored, records CUPTI or npkit lost */
  NPKIT_SRC_NPKIT_DUMP = 3, /* NPKit dump events (thread 0): stored, converted but not stored */
  NPKIT_SRC_MACHINE = 4,  /* since version 3: sampled counters (thread 0): stored, refused by the log */
} npkit_source;

/* String ids are process unique; the GPU source numbers the kernel names it stores from this base
 * up, so that it never collides with ids other sources hand out from 1. */
#define NPKIT_STRING_ID_GPU_BASE 0x40000000u

typedef struct npkit_string_rec {
  uint32_t id;
  uint32_t length;    /* bytes that follow, without NUL; the next record starts 8-aligned */
} npkit_string_rec;

/* NPKIT_BLOCK_STACK: one call site.  Each frame is a STRING "function+0xOFF (library+0xOFF)",
 * optionally followed by " file:line"; parts that are unknown are left out ("?? (library+0xOFF)",
 * or "0xADDR" for an address outside every library).  Frames of all stacks are shared strings. */
typedef struct npkit_stack_rec {
  uint32_t id;        /* npkit_ev_api.stack_id of the calls issued here, from 1 */
  uint32_t depth;     /* frame string ids that follow, innermost first: the caller of the NCCL
                         function, then its caller... */
} npkit_stack_rec;    /* 8 bytes, then depth × uint32_t, then padding to 8 */

typedef struct npkit_note_rec {
  uint64_t time_ns;
  uint32_t level;     /* 1 error, 2 warning, 3 info */
  uint32_t length;    /* text bytes that follow, without NUL */
} npkit_note_rec;

typedef struct npkit_end_rec {
  uint64_t end_ns;          /* CLOCK_REALTIME at close */
  uint64_t events_recorded; /* all sources */
  uint64_t events_dropped;
  uint64_t blocks_written;
  /* Since 0.2 (earlier writers stop here: readers take NPKIT_END_REC_V1_SIZE bytes as complete and
   * read the fields below as 0).  With NPKIT_LOG_F_TSC_CLOCK, how well the time-stamp counter
   * tracked CLOCK_REALTIME: the writer thread compared the two every flush period. */
  uint32_t clock_checks;       /* comparisons made */
  uint32_t clock_steps;        /* comparisons that found CLOCK_REALTIME had jumped (set by hand,
                                  NTP step) and followed it with a jump of their own */
  uint64_t clock_max_error_ns; /* largest |CLOCK_REALTIME - trace clock| found by a comparison,
                                  jumps excluded: times in the log are this close to the system
                                  clock (plus the ~20 ns uncertainty of one comparison) */
} npkit_end_rec;
#define NPKIT_END_REC_V1_SIZE 32u

/* The MACHINE block (version 3): what the machine was doing, as text, one record per line:
 *
 *     KIND key=value key=value ...\n
 *
 * KIND and keys are lower-case words; a value is any bytes with '%', the bytes up to and including
 * the space (0x00-0x20) and 0x7f written as %XX (two upper-case hex digits), so that a line splits
 * at spaces and a value at its first '='.  Readers skip kinds and keys they do not know, and a
 * record or value that is missing is unknown (never zero).  The first block is written once per
 * process, soon after the start; later blocks add records (`bind` and `nccl` once the first
 * communicator is known).  The records (src/runtime/machine writes them, src/format/machine_info.c
 * reads them):
 *   snapshot  taken= (CLOCK_REALTIME ns) sysfs_root= (NPKIT_SYSFS_ROOT) gpu_sample_us= cpu_sample_ns=
 *             (the sampling periods, 0 = off) pcie= (yes/no: PCIe throughput sampled)
 *   host      name= (gethostname) resolves= (yes/no: getaddrinfo found it) addr= (the first
 *             address it found) error= (gai_strerror when it did not)
 *   system    cpu= (the CPU's model name) cpus= (online CPUs) kernel= (uname release and version)
 *             machine= nofile_soft= nofile_hard= (RLIMIT_NOFILE; "unlimited")
 *   nvml      status= (ok / absent / error) error= (why not ok) library= driver= (NVML's driver
 *             version) gpus= (nvmlDeviceGetCount)
 *   gpu       index= (NVML index) name= uuid= bus_id= (NVML's PCI bus id) nvlinks= (links NVML
 *             answers for; 0 when NVLink is not supported) error= (a query that failed)
 *   nvlink    gpu= link= active= (yes/no: nvmlDeviceGetNvLinkState) version= (nvmlNvlinkVersion_t:
 *             4 = NVLink 3.0, 6 = 4.0, 7 = 5.0)
 *   port      type=ib dev= port= rate= state= phys_state= link_layer= (the files of
 *             /sys/class/infiniband/DEV/ports/PORT, as read, without the newline)
 *   port      type=eth dev= speed= (Mb/s; -1 when the driver does not know) duplex= operstate= mtu=
 *             physical= (yes: the interface has a device, i.e. is not virtual) arp_type= (ARPHRD_*)
 *             and for a file that could not be read KEY_error= (its errno, e.g. speed_error=22 for
 *             the EINVAL of a down interface)
 *   env       name= value= set_by= (npkit: the library set it for self-registration)
 *             every NCCL_* and NPKIT_* variable of the environment at the start
 *   conf      name= value= file= applied= (no: the environment already sets it, NCCL keeps that)
 *             what NCCL takes from NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf
 *   nccl      version= (ncclGetVersion)
 *   bind      cuda_device= (ncclCommCuDevice of the first communicator) gpu= (NVML index, -1 when
 *             no GPU matched) how= (pci_bus_id: the CUDA driver's bus id of the device;
 *             cuda_visible_devices: its entry of CUDA_VISIBLE_DEVICES; index: the CUDA index as NVML
 *             index) bus_id= (the CUDA driver's) error= */

#ifndef __cplusplus
_Static_assert(sizeof(npkit_log_header) == 256, "log header layout");
_Static_assert(sizeof(npkit_block_header) == 16, "block header layout");
_Static_assert(sizeof(npkit_check_rec) == 8, "check record layout");
_Static_assert(sizeof(npkit_event) == 128, "event layout");
_Static_assert(sizeof(npkit_ev_gpu) == 104, "GPU event layout");
_Static_assert(sizeof(npkit_ev_plugin_comm) == 104, "plugin comm event layout");
_Static_assert(sizeof(npkit_ev_plugin_task) == 104, "plugin task event layout");
_Static_assert(sizeof(npkit_ev_kernel_ch) == 104, "kernel channel event layout");
_Static_assert(sizeof(npkit_ev_kernel_phase) == 104, "kernel phase event layout");
_Static_assert(sizeof(npkit_ev_proxy_op) == 104, "proxy op event layout");
_Static_assert(sizeof(npkit_ev_proxy_step) == 104, "proxy step event layout");
_Static_assert(sizeof(npkit_ev_proxy_ctrl) == 104, "proxy ctrl event layout");
_Static_assert(sizeof(npkit_ev_plugin_stats) == 104, "plugin stats event layout");
_Static_assert(sizeof(npkit_ev_plugin_api) == 104, "plugin API event layout");
_Static_assert(sizeof(npkit_ev_plugin_clock) == 104, "plugin clock event layout");
_Static_assert(sizeof(npkit_ev_mark) == 104, "mark event layout");
_Static_assert(sizeof(npkit_ev_recording) == 104, "recording event layout");
_Static_assert(sizeof(npkit_ev_inflight) == 104, "in-flight event layout");
_Static_assert(sizeof(npkit_ev_flight) == 104, "flight dump event layout");
_Static_assert(sizeof(npkit_ev_npkit) == 104, "NPKit dump event layout");
_Static_assert(sizeof(npkit_ev_npkit_read) == 104, "NPKit dump reading layout");
_Static_assert(sizeof(npkit_ev_machine_gpu) == 104, "machine GPU sample layout");
_Static_assert(sizeof(npkit_ev_machine_port) == 104, "machine port sample layout");
_Static_assert(sizeof(npkit_ev_machine_cpu) == 104, "machine CPU sample layout");
_Static_assert(sizeof(npkit_comm_rec) == 80, "comm record layout");
_Static_assert(sizeof(npkit_thread_rec) == 32, "thread record layout");
_Static_assert(sizeof(npkit_process_rec) == 32, "process record layout");
_Static_assert(sizeof(npkit_counter_rec) == 24, "counter record layout");
#endif

#ifdef __cplusplus
}
#endif
#endif /* NPKIT_EVENT_LOG_H */
