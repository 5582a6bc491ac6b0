/* Appends blocks to the per-process event log.  Thread safe (one mutex: blocks are appended by the
 * writer thread and, rarely, by threads that learn a communicator or start).  After the first write
 * error (full disk, vanished folder) the writer is "failed": every later append returns -1 at once
 * and the owner stops recording. */
#ifndef NPKIT_LOG_WRITER_H
#define NPKIT_LOG_WRITER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"

typedef struct npkit_log_writer npkit_log_writer;

/* A header of the current format (magic, version, sizes, byte order) with every other field zero:
 * the owner adds who writes the log and its clock bases. */
void npkit_log_header_init(npkit_log_header *h);

/* Creates the file (and its folder) and writes the header.  NULL with a message in `err`. */
npkit_log_writer *npkit_logw_open(const char *path, const npkit_log_header *header, char *err,
                                  size_t errlen);
/* The flight recorder's writer (NPKIT_RING_MB): nothing is written until npkit_logw_dump or the
 * close, which write the ring (log_ring.h) as a complete log at `path`.  NULL with a message. */
npkit_log_writer *npkit_logw_open_ring(const char *path, const npkit_log_header *header, uint64_t ring_bytes,
                                       char *err, size_t errlen);
/* Ring: writes the log as the ring holds it now (the job goes on); 0 or an errno.  A streamed log
 * is on disk already: 0. */
int npkit_logw_dump(npkit_log_writer *w);
/* The ring of a flight recorder's writer (NULL for a streamed log), and the header the log (or
 * each of a ring's dumps: for the dump a fatal signal's handler writes itself) begins with. */
struct npkit_log_ring *npkit_logw_ring(npkit_log_writer *w);
const npkit_log_header *npkit_logw_header(const npkit_log_writer *w);

/* One block: header + `size` bytes of payload (padded to 8 here).  0 or -1. */
int npkit_logw_append(npkit_log_writer *w, npkit_block_type type, uint32_t count,
                      const void *payload, size_t size);
/* Events: n of them in as many blocks as it takes, packed from version 5 on (EVENTS_PACKED,
 * src/format/event_pack.h: about a tenth of the bytes), else as EVENTS blocks.  0 or -1. */
int npkit_logw_events(npkit_log_writer *w, const npkit_event *ev, size_t n);
/* The same for at most NPKIT_LOGW_BLOCK_EVENTS events, which go out as one block: where it starts
 * in the file is stored in *at (relaxed) right before it is written (nothing for a ring), so that
 * the pool file can tell a reader whether a block of a killed process made it (pool_file.h). */
#define NPKIT_LOGW_BLOCK_EVENTS 1024u
int npkit_logw_events_at(npkit_log_writer *w, const npkit_event *ev, size_t n, _Atomic uint64_t *at);
/* An observer of what the log takes (the live metrics): called after every block that was
 * appended, on the appending thread, with events as they were given (before packing) and any
 * other block's payload; NULL stops it.  Set before recording starts and cleared after the last
 * events, by one owner; it must be cheap (it runs on the writer thread) and do its own locking. */
typedef void (*npkit_logw_tap_fn)(void *ctx, npkit_block_type type, const void *payload, uint32_t count);
void npkit_logw_set_tap(npkit_log_writer *w, npkit_logw_tap_fn fn, void *ctx);

/* The first error, as errno, or 0. */
int npkit_logw_error(const npkit_log_writer *w);
uint64_t npkit_logw_blocks(const npkit_log_writer *w);
/* Writes the END block (if healthy) and closes the file (a ring: writes its last dump); later appends return -1 (the writer stays
 * allocated, so that late appends of other threads are harmless).  Returns 0 or the first errno. */
int npkit_logw_close(npkit_log_writer *w, const npkit_end_rec *end);
/* Frees a closed writer, for an owner that knows no other thread still holds it (a tool, a test). */
void npkit_logw_free(npkit_log_writer *w);

/* mkdir -p; 0 or an errno. */
int npkit_mkdirs(const char *path);

#endif
