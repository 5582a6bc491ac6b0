/*
 * npkit-preload event pool file: the preloaded library's event pool kept in a file mapped shared
 * (NPKIT_POOL_DIR: /dev/shm by default, or the trace folder beside the log) instead of private
 * memory, so that a process killed with SIGKILL (the OOM killer, `scancel --signal=KILL`, a
 * launcher's last word) leaves the events it had recorded but not yet appended to its log behind
 * it.  Shared by the library (which writes it while it records) and every reader that recovers
 * such events into the log: the `npkit` tool and the library of a later process on the same host
 * (src/format/pool_recover.h).
 *
 * Why a memory file system by default: the kernel keeps a file's pages when the process that
 * mapped it dies, and a tmpfs file is never written back to a disk, so a store into the pool never
 * takes a page fault after the mapping was populated.  A page of a file on disk is write-protected
 * again after every writeback, and the next store into it faults (bench/RESULTS.md measures it);
 * on a network file system the writeback goes over the network, so a trace folder there keeps its
 * pools in /dev/shm.  The file is reserved whole (fallocate) before it is mapped, so a full file
 * system can never turn a store into SIGBUS.
 *
 * Layout (all little endian):
 *   npkit_pool_header          at offset 0, header_size bytes
 *   chunk records              nchunks × chunk_record_size at chunks_offset (npkit_pool_chunk)
 *   thread slots               max_threads × thread_slot_size at threads_offset: the recorder's
 *                              per-thread state, of which a reader uses only the four fields at
 *                              the offsets the header gives (index 0: slot not used)
 *   events                     nchunks × chunk_events × record_size at data_offset (npkit_event)
 *
 * Each chunk is filled by one thread (owner), in the order of its serial numbers; the writer
 * thread appends events [written, used) of a chunk to the log as one block, and moves `written`
 * up once the block is in the log.  So what a dead process had recorded but not written is, per
 * chunk, [written, used): in owner order of serial, then position.  A write that was under way
 * when the process died is described by write_to and write_off: the block for [written, write_to)
 * starts at write_off in the log (UINT64_MAX: not known yet); when the log holds a complete block
 * there, those events are in the log already.
 *
 * Who may recover: the owner holds a POSIX record lock (fcntl F_SETLK, F_WRLCK) on the first byte
 * of the file for as long as it lives; the kernel drops it when the process dies, whatever kills
 * it, and a child of fork() does not inherit it.  A reader that obtains the same lock without
 * waiting knows the owner is gone.  `state` says whether the pool still has to be recovered.
 */
#ifndef NPKIT_POOL_FILE_H
#define NPKIT_POOL_FILE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPKIT_POOL_MAGIC "NPKPOOL1" /* 8 bytes, no NUL in the file */
#define NPKIT_POOL_VERSION 1u
/* Name of a pool file in its folder: this prefix, the user id, the log's host and pid, its clock
 * base (npkit-pool-1000-node7-4242-1764671234000000000). */
#define NPKIT_POOL_PREFIX "npkit-pool-"
#define NPKIT_POOL_NO_OFFSET UINT64_MAX

/* npkit_pool_header.state */
#define NPKIT_POOL_RECORDING 0u /* the owner records, or died while it did */
#define NPKIT_POOL_CLOSED 1u    /* the owner closed its log: nothing to recover */
#define NPKIT_POOL_RECOVERED 2u /* a reader recovered the events into the log */

typedef struct npkit_pool_header {
  char magic[8];              /* NPKIT_POOL_MAGIC */
  uint32_t version;           /* NPKIT_POOL_VERSION */
  uint32_t header_size;       /* bytes of the header area (a page) */
  uint32_t record_size;       /* sizeof(npkit_event) of the writer */
  uint32_t chunk_events;      /* events per chunk */
  uint32_t nchunks;
  uint32_t chunk_record_size; /* sizeof(npkit_pool_chunk) of the writer */
  uint32_t max_threads;       /* thread slots */
  uint32_t thread_slot_size;
  uint32_t thread_index_offset;    /* uint32: process thread index (npkit_event.thread), 0: unused */
  uint32_t thread_tid_offset;      /* int32: gettid() */
  uint32_t thread_recorded_offset; /* uint64: events the thread recorded, cumulative */
  uint32_t thread_dropped_offset;  /* uint64: events it lost (pool exhausted), cumulative */
  uint64_t chunks_offset;
  uint64_t threads_offset;
  uint64_t data_offset;       /* page aligned */
  uint64_t file_size;
  uint32_t state;             /* NPKIT_POOL_* */
  int32_t pid;                /* the owner */
  uint32_t uid;
  uint32_t reserved0;
  uint64_t log_clock_base_ns; /* the log's npkit_log_header.clock_base_ns: which log it belongs to */
  uint64_t created_ns;        /* CLOCK_REALTIME */
  char host[64];              /* the log header's host, NUL terminated */
  char log_path[1024];        /* the log, as the owner opened it (absolute when it could tell) */
  char boot_id[40];           /* at offset 1208: the host's boot (/proc/sys/kernel/random/boot_id)
                                 when the pool was made, NUL terminated, "" unknown.  A pool on a
                                 disk outlives a restart with only what writeback had reached, its
                                 chunks and their records from different moments: not recovered */
  uint8_t reserved[1824];
} npkit_pool_header;          /* 3072 bytes */

typedef struct npkit_pool_chunk {
  uint32_t used;       /* events filled (the owner publishes it with a release store) */
  uint32_t next;       /* the owner's next chunk once this one is finished */
  uint32_t finished;   /* the owner moved on */
  uint32_t written;    /* events already in the log */
  uint32_t owner;      /* process thread index of the thread filling it, 0: never handed out */
  uint32_t write_to;   /* a write of events [written, write_to) to the log is under way */
  uint64_t write_off;  /* where its block starts in the log, NPKIT_POOL_NO_OFFSET until known */
  uint64_t serial;     /* this chunk is the owner's serial-th, from 0 */
  uint8_t reserved[24];
} npkit_pool_chunk;    /* 64 bytes: one cache line, as the owner stores `used` for every event */

/* NPKIT_BLOCK_POOL (event log version 6): the first block of a log whose process kept its event
 * pool in a file, so that a reader can find it. */
typedef struct npkit_pool_rec {
  uint64_t bytes;      /* of the pool file */
  char path[248];      /* the pool file, NUL terminated */
} npkit_pool_rec;      /* 256 bytes */

/* NPKIT_BLOCK_RECOVERED (event log version 6): written after the events a reader recovered from
 * the pool of a process that died without closing its log. */
typedef struct npkit_recovered_rec {
  uint64_t time_ns;        /* CLOCK_REALTIME of the recovery */
  uint64_t events;         /* events recovered from the pool */
  uint64_t chunks;         /* chunks they came from */
  uint64_t cut_bytes;      /* an incomplete block at the log's end, removed first */
  uint32_t threads;        /* threads whose events were recovered */
  int32_t pid;             /* the process that recovered them */
  char by[16];             /* "npkit" (the tool) or "library" (a later process's) */
  char host[64];
  uint64_t reserved;
} npkit_recovered_rec;     /* 128 bytes */

#ifdef __cplusplus
}
#endif

#endif /* NPKIT_POOL_FILE_H */
