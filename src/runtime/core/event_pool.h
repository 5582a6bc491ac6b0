/* The recorder's memory in a pool file (include/npkit/pool_file.h): the chunks, their records and
 * the threads' counters in a file mapped shared, so that what a killed process had recorded
 * outlives it and a reader recovers it into the log (src/format/pool_recover.h).
 *
 * The file is reserved whole before it is mapped (a full file system cannot turn a store into
 * SIGBUS) and the mapping is populated for writing at once (no page fault on the recording path).
 * A memory file system (the default, /dev/shm) keeps it so; a file on a local disk is written back
 * by the page cache and write-protected again after each writeback; a network file system is
 * refused (-2), its writeback would cross the network.  When none fits (no folder, too little room:
 * in /dev/shm the pool must leave NCCL's own shared-memory segments three quarters of what is free
 * for the ranks of this host) the recorder keeps its pool in private memory, as without this, and
 * the reason is said. */
#ifndef NPKIT_EVENT_POOL_H
#define NPKIT_EVENT_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"
#include "npkit/pool_file.h"

/* The recorder's shapes: events per chunk, and where it keeps each thread's counters, so that the
 * file can say where a reader finds them (npkit_pool_header.thread_*). */
typedef struct npkit_pool_layout {
  uint32_t chunk_events;
  uint32_t slot_size;
  uint32_t index_offset, tid_offset, recorded_offset, dropped_offset;
} npkit_pool_layout;

typedef struct npkit_event_pool {
  int fd;                   /* held open for the owner's lock */
  char path[248];
  uint64_t bytes;
  npkit_pool_header *header;
  void *chunks;             /* nchunks × npkit_pool_chunk */
  unsigned char *threads;   /* max_threads slots */
  void *data;               /* the events */
  uint32_t nchunks, max_threads, slot_size;
  int on_disk;              /* not a memory file system: written back by the page cache */
  _Atomic uint32_t threads_used;
} npkit_event_pool;

/* Creates, reserves, maps and locks the pool file of `nchunks` chunks for the log at log_path
 * (header lh) in `dir`, sized against what is free there for `local_ranks` ranks of this host.
 * 0, or -1 with why not, or -2 when `dir` is on a network file system (nothing is left behind). */
int npkit_pool_create(npkit_event_pool *p, const char *dir, uint32_t nchunks, const npkit_pool_layout *layout,
                      const npkit_log_header *lh, const char *log_path, int local_ranks, char *why, size_t whylen);

/* A zeroed thread slot of the file, or NULL when all are taken (the thread's counters then live in
 * private memory: its events are still recovered, its counts come from the log's last COUNTERS). */
void *npkit_pool_thread_slot(npkit_event_pool *p);

/* The owner closed its log: the pool holds nothing to recover.  Removes the file; the mapping
 * stays (threads of a job stopped by a signal may still touch their chunks). */
void npkit_pool_closed(npkit_event_pool *p);

#endif
