/* Activity buffers handed to CUPTI: 8-byte aligned, reused, at most NPKIT_CUPTI_BUFFERS of them.
 *
 * CUPTI asks for a buffer (request callback) whenever it needs room and hands it back full, or
 * partly filled on a forced flush (complete callback), from its own worker thread or from the
 * thread that flushes.  The complete callback only queues the buffer and reads CUPTI's count of
 * dropped records: the records are translated later by the drain (cupti_drain.c), on one thread
 * at a time, so CUPTI's threads are never held up by npkit's processing or by the disk. */
#ifndef NPKIT_CUPTI_BUFFERS_H
#define NPKIT_CUPTI_BUFFERS_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

typedef struct npkit_cupti_buf {
  struct npkit_cupti_buf *next;
  struct npkit_cupti_buf *all_next; /* every buffer in existence */
  uint8_t *data;   /* what CUPTI sees, 8-byte aligned */
  size_t size;     /* capacity */
  size_t valid;    /* bytes of records, set on completion */
  uint64_t req;    /* 1, 2, ... in order of request; 0 while free or taken */
  uint64_t before; /* on completion: buffers requested so far (this one included) */
} npkit_cupti_buf;

/* Sets the size and number of buffers.  `newest_cupti`: CUPTI accepts a NULL buffer (it then drops
 * and counts records; older releases could crash), so the limit can be enforced strictly. */
void npkit_cupti_bufs_config(size_t buffer_bytes, uint32_t max_buffers, int newest_cupti,
                             void (*wake_drain)(void));

/* The callbacks registered with cuptiActivityRegisterCallbacks. */
void CUPTIAPI npkit_cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void CUPTIAPI npkit_cupti_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                           size_t size, size_t valid);

/* From now on completed buffers are reused at once, their records discarded (the source has
 * finished; CUPTI may still hand back what it had in flight). */
void npkit_cupti_bufs_discard(void);
/* Adds the records CUPTI dropped since it was last asked (it resets its count when asked): at
 * every completed buffer, and once more after the final flush, since records dropped after the
 * last buffer completed are reported by no completion. */
void npkit_cupti_bufs_count_dropped(CUcontext ctx, uint32_t stream_id);
/* Takes every completed buffer, oldest first (a list linked by `next`), or NULL.  `*read_through`:
 * every buffer requested up to this request number has now been taken, by this call or an earlier
 * one; a later one is still with CUPTI.  CUPTI may hand buffers back out of order: a default
 * flush keeps back a buffer with an unfinished record in it and returns later ones. */
npkit_cupti_buf *npkit_cupti_bufs_take(uint64_t *read_through);
/* Returns a list of buffers for reuse. */
void npkit_cupti_bufs_release(npkit_cupti_buf *list);

typedef struct npkit_cupti_buf_stats {
  uint64_t cupti_dropped;  /* records CUPTI reported lost */
  uint64_t refused;        /* requests answered with no buffer (the limit was reached) */
  uint64_t over_limit;     /* buffers allocated beyond the limit for a CUPTI without NULL support */
  uint32_t allocated;      /* buffers in existence */
  uint64_t requested;      /* buffers handed to CUPTI */
  uint64_t completed;      /* buffers handed back by CUPTI */
  uint64_t discarded;      /* of those, handed back after the end and reused unread */
} npkit_cupti_buf_stats;

void npkit_cupti_bufs_stats(npkit_cupti_buf_stats *s);

#endif
