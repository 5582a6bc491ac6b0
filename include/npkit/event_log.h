/*
 * npkit-preload event log: the on-disk format shared by the preloaded library (writer) and the
 * `npkit` tool (reader).  It is the single source of truth; every Chrome trace is a view of it.
 *
 * Layout:  npkit_log_header  then a sequence of blocks, each  npkit_block_header + payload.
 *  - Everything is little endian, naturally aligned, and every payload is padded to 8 bytes.
 *  - Blocks are appended while the job runs, so a log cut short by SIGKILL or a crash is still
 *    readable up to its last complete block; a clean close ends with an NPKIT_BLOCK_END block.
 *  - Readers must skip block types they do not know (their size is in the header) and must use
 *    header_size / record_size from the file, so that later versions can append fields.
 */
#ifndef NPKIT_EVENT_LOG_H
#define NPKIT_EVENT_LOG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPKIT_LOG_MAGIC "NPKITLOG" /* 8 bytes, no terminating NUL in the file */
#define NPKIT_LOG_VERSION 1u
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
  uint32_t flags;             /* reserved, 0 */
  char host[64];              /* NUL terminated */
  char launcher[16];          /* where the rank came from: "ompi", "pmix", "pmi", "slurm", "torchrun", "" */
  char library_version[16];   /* npkit-preload version that wrote the log */
  uint8_t reserved[96];
} npkit_log_header;           /* 256 bytes */

typedef enum npkit_block_type {
  NPKIT_BLOCK_EVENTS = 1,   /* payload: count × npkit_event (record_size each) */
  NPKIT_BLOCK_COMM = 2,     /* payload: count × npkit_comm_rec */
  NPKIT_BLOCK_THREAD = 3,   /* payload: count × npkit_thread_rec */
  NPKIT_BLOCK_PROCESS = 4,  /* payload: 1 × npkit_process_rec (identity learnt after the header) */
  NPKIT_BLOCK_COUNTERS = 5, /* payload: count × npkit_counter_rec (per thread, cumulative) */
  NPKIT_BLOCK_STRING = 6,   /* payload: count × (npkit_string_rec + bytes, padded to 8) */
  NPKIT_BLOCK_NOTE = 7,     /* payload: 1 × npkit_note_rec + text: warnings worth keeping in the trace */
  NPKIT_BLOCK_END = 15,     /* payload: 1 × npkit_end_rec; written last on a clean close */
} npkit_block_type;

typedef struct npkit_block_header {
  uint32_t magic;   /* NPKIT_BLOCK_MAGIC */
  uint16_t type;    /* npkit_block_type */
  uint16_t flags;   /* reserved, 0 */
  uint32_t count;   /* number of items in the payload */
  uint32_t size;    /* payload bytes that follow, a multiple of 8 */
} npkit_block_header;

/* What an event is; decides which member of npkit_event.u is valid. */
typedef enum npkit_event_kind {
  NPKIT_EV_API = 1,   /* one call of a public NCCL function (u.api) */
} npkit_event_kind;

/* npkit_ev_api.flags */
#define NPKIT_API_IN_GROUP 0x1u   /* issued between ncclGroupStart and ncclGroupEnd */
#define NPKIT_API_P2P_SEND 0x2u   /* p2p sequence counts sends to `peer` */
#define NPKIT_API_P2P_RECV 0x4u   /* p2p sequence counts receives from `peer` */
#define NPKIT_API_ASYNC 0x8u      /* returned ncclInProgress (non-blocking communicator) */
#define NPKIT_API_GROUP_OUTER 0x10u /* the ncclGroupStart that opened / the ncclGroupEnd that closed
                                       the outermost group (nested Start/End pairs lack it) */
#define NPKIT_API_MISSING 0x20u   /* the loaded NCCL lacks the function; result is from npkit */

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
  uint64_t stack_id;  /* call-site id (string table), 0 if stacks are off */
  uint64_t reserved[2];
} npkit_ev_api;       /* 104 bytes */

typedef struct npkit_event {
  uint64_t start_ns;  /* CLOCK_REALTIME nanoseconds */
  uint64_t end_ns;
  uint16_t kind;      /* npkit_event_kind */
  uint16_t func;      /* NPKIT_API events: npkit_fn (see nccl_api.def) */
  uint32_t thread;    /* process thread index (npkit_thread_rec.index) */
  union {
    npkit_ev_api api;
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
} npkit_source;

typedef struct npkit_string_rec {
  uint32_t id;
  uint32_t length;    /* bytes that follow, without NUL; the next record starts 8-aligned */
} npkit_string_rec;

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
} npkit_end_rec;

#ifndef __cplusplus
_Static_assert(sizeof(npkit_log_header) == 256, "log header layout");
_Static_assert(sizeof(npkit_block_header) == 16, "block header layout");
_Static_assert(sizeof(npkit_event) == 128, "event layout");
_Static_assert(sizeof(npkit_comm_rec) == 80, "comm record layout");
_Static_assert(sizeof(npkit_thread_rec) == 32, "thread record layout");
_Static_assert(sizeof(npkit_process_rec) == 32, "process record layout");
_Static_assert(sizeof(npkit_counter_rec) == 24, "counter record layout");
#endif

#ifdef __cplusplus
}
#endif
#endif /* NPKIT_EVENT_LOG_H */
