/* The flight recorder's storage (NPKIT_RING_MB): the blocks the log writer is given are kept in a
 * fixed amount of memory instead of a file, and written out as one complete log when a dump is
 * asked for.
 *
 *  - Events (EVENTS blocks) go to a ring of records: when it is full the oldest are overwritten,
 *    and counted.  Each producer's blocks arrive in order, so what the ring keeps of a thread is the
 *    latest stretch of its events, in order.
 *  - The blocks that name things (THREAD, COMM, PROCESS, STRING, STACK, NOTE) are few and needed to
 *    read any event: they go to an area of their own (an eighth of the ring's memory), formatted as
 *    in a file, until it is full; what does not fit is counted.
 *  - COUNTERS blocks are cumulative: the latest of each source is kept.
 *
 * A dump writes the header, the named blocks, the events oldest first, the counters and, for the
 * last one, the END block into `<path>.tmp` and renames it over `path`: the file on disk is always
 * one complete dump.  Writing uses open, write, close and rename only, with no lock and no
 * allocation, so that a handler of a fatal signal can write the ring the crashed process holds
 * (npkit_ring_out_*).  The ring itself is not thread safe: the log writer puts blocks under its lock.
 */
#ifndef NPKIT_LOG_RING_H
#define NPKIT_LOG_RING_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"

typedef struct npkit_log_ring npkit_log_ring;

/* A ring of `bytes` for the log at `path` (the folder is created at the first dump).  NULL with a
 * message when memory is short. */
npkit_log_ring *npkit_ring_create(uint64_t bytes, const char *path, char *err, size_t errlen);

/* Frees the ring (for an owner that knows nobody else holds it: a tool, a test). */
void npkit_ring_free(npkit_log_ring *r);

/* Keeps one block (payload padded to 8 by the writer of the file). */
void npkit_ring_put(npkit_log_ring *r, uint16_t type, uint32_t count, const void *payload, size_t size);

typedef struct npkit_ring_stats {
  uint64_t bytes;       /* the ring's memory */
  uint64_t kept;        /* events it holds */
  uint64_t overwritten; /* events overwritten since the start */
  uint64_t meta_lost;   /* named blocks it had no room for */
} npkit_ring_stats;
void npkit_ring_get_stats(const npkit_log_ring *r, npkit_ring_stats *s);

/* A dump being written: every call is async-signal-safe. */
typedef struct npkit_ring_out {
  int fd;
  int error;            /* first errno, 0 */
  uint64_t blocks;
} npkit_ring_out;

/* Creates `<path>.tmp` (and the folder) and writes the header (with NPKIT_LOG_F_RING), the named
 * blocks and the ring's events.  0, or an errno (nothing to close then). */
int npkit_ring_out_begin(npkit_log_ring *r, npkit_ring_out *o, const npkit_log_header *h);
/* One more block, or events as EVENTS blocks. */
void npkit_ring_out_block(npkit_ring_out *o, uint16_t type, uint32_t count, const void *payload, size_t size);
void npkit_ring_out_events(npkit_ring_out *o, const npkit_event *ev, size_t n);
/* The counters kept, then `end` when not NULL; closes the file and renames it over the log's
 * path.  0 or the first errno (the temporary file is removed then). */
int npkit_ring_out_finish(npkit_log_ring *r, npkit_ring_out *o, const npkit_end_rec *end);

#endif
