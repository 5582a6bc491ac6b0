#include "cupti_buffers.h"

#include <pthread.h>
#include <stdlib.h>

#include "cupti_loader.h"

/* The header sits in front of the bytes CUPTI sees, so a buffer CUPTI hands back leads straight
 * to it; 64 bytes keep the data 8-byte (and cache-line) aligned. */
#define HEADER_ROOM 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static npkit_cupti_buf *free_list;
static npkit_cupti_buf *all_bufs; /* linked by all_next, to find the ones CUPTI still holds */
static npkit_cupti_buf *done_head, *done_tail;
static size_t buf_bytes = 4u << 20;
static uint32_t max_bufs = 32;
static int null_ok;
static int discarding;
static void (*wake)(void);
static npkit_cupti_buf_stats stats;

_Static_assert(HEADER_ROOM >= sizeof(npkit_cupti_buf) && HEADER_ROOM % 8 == 0, "buffer header room");

void npkit_cupti_bufs_config(size_t buffer_bytes, uint32_t max_buffers, int newest_cupti,
                             void (*wake_drain)(void)) {
  pthread_mutex_lock(&lock);
  buf_bytes = (buffer_bytes + 7) & ~(size_t)7;
  max_bufs = max_buffers < 2 ? 2 : max_buffers;
  null_ok = newest_cupti;
  wake = wake_drain;
  pthread_mutex_unlock(&lock);
}

static npkit_cupti_buf *buf_new(size_t size) {
  unsigned char *mem = aligned_alloc(HEADER_ROOM, HEADER_ROOM + size);
  if (mem == NULL) return NULL;
  npkit_cupti_buf *b = (npkit_cupti_buf *)(void *)mem;
  b->next = NULL;
  b->data = mem + HEADER_ROOM;
  b->size = size;
  b->valid = 0;
  b->req = b->before = 0;
  b->all_next = all_bufs;
  all_bufs = b;
  return b;
}

static npkit_cupti_buf *buf_of(uint8_t *data) {
  return (npkit_cupti_buf *)(void *)(data - HEADER_ROOM);
}

void CUPTIAPI npkit_cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  npkit_cupti_buf *b = NULL;
  int over = 0;
  void (*w)(void) = NULL;
  pthread_mutex_lock(&lock);
  if (free_list != NULL) {
    b = free_list;
    free_list = b->next;
  } else if (stats.allocated < max_bufs || !null_ok) {
    over = stats.allocated >= max_bufs;
    b = buf_new(buf_bytes);
    if (b != NULL) {
      stats.allocated++;
      if (over) stats.over_limit++;
    }
  }
  if (b == NULL) stats.refused++;
  else {
    b->valid = 0;
    b->req = ++stats.requested;
  }
  /* Out of free buffers: completed ones are probably waiting for the drain. */
  if (b == NULL || over || free_list == NULL) w = wake;
  pthread_mutex_unlock(&lock);
  if (w != NULL) w();
  *max_records = 0; /* as many as fit */
  if (b == NULL) {
    *buffer = NULL; /* CUPTI drops the records it cannot store and counts them */
    *size = 0;
    return;
  }
  *buffer = b->data;
  *size = b->size;
}

void npkit_cupti_bufs_count_dropped(CUcontext ctx, uint32_t stream_id) {
  size_t dropped = 0;
  if (npkit_cupti.ActivityGetNumDroppedRecords != NULL &&
      npkit_cupti.ActivityGetNumDroppedRecords(ctx, stream_id, &dropped) != CUPTI_SUCCESS)
    dropped = 0;
  pthread_mutex_lock(&lock);
  stats.cupti_dropped += dropped;
  pthread_mutex_unlock(&lock);
}

void CUPTIAPI npkit_cupti_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
                                           size_t size, size_t valid) {
  npkit_cupti_bufs_count_dropped(ctx, stream_id);
  pthread_mutex_lock(&lock);
  if (buffer != NULL) {
    npkit_cupti_buf *b = buf_of(buffer);
    b->valid = valid <= b->size ? valid : b->size;
    b->before = stats.requested;
    stats.completed++;
    if (discarding) {
      stats.discarded++;
      b->req = 0;
      b->next = free_list;
      free_list = b;
    } else {
      b->next = NULL;
      if (done_tail != NULL)
        done_tail->next = b;
      else
        done_head = b;
      done_tail = b;
    }
  }
  pthread_mutex_unlock(&lock);
  (void)size;
}

void npkit_cupti_bufs_discard(void) {
  pthread_mutex_lock(&lock);
  discarding = 1;
  pthread_mutex_unlock(&lock);
}

npkit_cupti_buf *npkit_cupti_bufs_take(uint64_t *read_through) {
  pthread_mutex_lock(&lock);
  npkit_cupti_buf *l = done_head;
  done_head = done_tail = NULL;
  for (npkit_cupti_buf *b = l; b != NULL; b = b->next) b->req = 0;
  /* Buffers are few (NPKIT_CUPTI_BUFFERS): a walk over all of them is cheaper than keeping a
   * sorted set on CUPTI's threads. */
  uint64_t held = UINT64_MAX;
  for (npkit_cupti_buf *b = all_bufs; b != NULL; b = b->all_next)
    if (b->req != 0 && b->req < held) held = b->req;
  *read_through = held == UINT64_MAX ? stats.requested : held - 1;
  pthread_mutex_unlock(&lock);
  return l;
}

void npkit_cupti_bufs_release(npkit_cupti_buf *list) {
  if (list == NULL) return;
  npkit_cupti_buf *tail = list;
  while (tail->next != NULL) tail = tail->next;
  pthread_mutex_lock(&lock);
  tail->next = free_list;
  free_list = list;
  pthread_mutex_unlock(&lock);
}

void npkit_cupti_bufs_stats(npkit_cupti_buf_stats *s) {
  pthread_mutex_lock(&lock);
  *s = stats;
  pthread_mutex_unlock(&lock);
}
