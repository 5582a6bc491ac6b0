/* The activity buffers' bookkeeping (src/runtime/cupti/cupti_buffers.c) as CUPTI drives it: buffers
 * asked for, handed back out of order (a default flush keeps back a buffer with an unfinished
 * record and returns later ones: cupti_activity.h of CUDA 13, cuptiActivityFlushAll), and taken by
 * the drain.  Checks what the drain relies on to know that no correlation record is still to come:
 * each buffer's `before` (buffers requested by the time it came back) and `read_through` (every
 * buffer requested up to it has been taken), and that a refused request counts no buffer. */
#include <stdlib.h>

#include "check.h"
#include "cupti_buffers.h"
#include "cupti_loader.h"

npkit_cupti_api npkit_cupti; /* no CUPTI: the dropped-record count is not asked for */

static int wakes;
static void wake(void) { wakes++; }

static uint8_t *ask(void) {
  uint8_t *b = NULL;
  size_t size = 0, max_records = 1;
  npkit_cupti_buffer_requested(&b, &size, &max_records);
  CHECK(max_records == 0);
  if (b != NULL) CHECK(size == 4096 && ((uintptr_t)b & 7u) == 0);
  return b;
}

static void give_back(uint8_t *b, size_t valid) { npkit_cupti_buffer_completed(NULL, 0, b, 4096, valid); }

static size_t count(npkit_cupti_buf *l) {
  size_t n = 0;
  for (; l != NULL; l = l->next) n++;
  return n;
}

int main(void) {
  npkit_cupti_bufs_config(4096, 4, 1, wake);
  uint64_t through = 99;
  CHECK(npkit_cupti_bufs_take(&through) == NULL);
  CHECK_EQ_U64(through, 0); /* nothing asked for, nothing outstanding */

  uint8_t *a = ask(), *b = ask(), *c = ask(); /* requests 1, 2, 3 */
  CHECK(a != NULL && b != NULL && c != NULL);
  /* b and c come back first: a holds an unfinished kernel */
  give_back(b, 100);
  give_back(c, 5000); /* more than the buffer: clamped */
  npkit_cupti_buf *l = npkit_cupti_bufs_take(&through);
  CHECK_EQ_U64(count(l), 2);
  CHECK_EQ_U64(through, 0); /* request 1 is still with CUPTI */
  if (l != NULL && l->next != NULL) {
    CHECK(l->data == b && l->next->data == c); /* in order of return */
    CHECK_EQ_U64(l->valid, 100);
    CHECK_EQ_U64(l->next->valid, 4096);
    CHECK_EQ_U64(l->before, 3); /* three buffers had been asked for when b came back */
    CHECK_EQ_U64(l->next->before, 3);
  }
  npkit_cupti_bufs_release(l);

  uint8_t *d = ask(); /* request 4, reusing b or c */
  CHECK(d == b || d == c);
  give_back(a, 8); /* a comes back after d was asked for */
  l = npkit_cupti_bufs_take(&through);
  CHECK_EQ_U64(count(l), 1);
  if (l != NULL) CHECK_EQ_U64(l->before, 4);
  CHECK_EQ_U64(through, 3); /* 1-3 read; 4 still out */
  npkit_cupti_bufs_release(l);

  /* a buffer handed back but not yet taken still counts as outstanding for the drain */
  give_back(d, 16);
  uint8_t *e = ask(); /* request 5 */
  give_back(e, 16);
  l = npkit_cupti_bufs_take(&through);
  CHECK_EQ_U64(count(l), 2);
  CHECK_EQ_U64(through, 5);
  npkit_cupti_bufs_release(l);

  /* the limit (4 buffers, a CUPTI that takes NULL): refused requests ask no number */
  uint8_t *f[5];
  int got = 0;
  for (int i = 0; i < 5; i++) {
    f[i] = ask();
    got += f[i] != NULL;
  }
  CHECK_EQ_U64(got, 4);
  CHECK(f[4] == NULL);
  CHECK(wakes > 0);
  npkit_cupti_buf_stats st;
  npkit_cupti_bufs_stats(&st);
  CHECK_EQ_U64(st.requested, 9);
  CHECK_EQ_U64(st.refused, 1);
  CHECK_EQ_U64(st.allocated, 4);
  /* 6..9 out; the last two back */
  give_back(f[3], 8);
  give_back(f[2], 8);
  l = npkit_cupti_bufs_take(&through);
  CHECK_EQ_U64(count(l), 2);
  CHECK_EQ_U64(through, 5);
  npkit_cupti_bufs_release(l);
  give_back(f[0], 8);
  l = npkit_cupti_bufs_take(&through);
  CHECK_EQ_U64(through, 6);
  npkit_cupti_bufs_release(l);
  give_back(f[1], 8);
  l = npkit_cupti_bufs_take(&through);
  CHECK_EQ_U64(through, 9);
  npkit_cupti_bufs_release(l);

  /* after the end, buffers handed back are reused unread and are no longer outstanding */
  uint8_t *g = ask(); /* request 10 */
  npkit_cupti_bufs_discard();
  give_back(g, 8);
  CHECK(npkit_cupti_bufs_take(&through) == NULL);
  CHECK_EQ_U64(through, 10);
  npkit_cupti_bufs_stats(&st);
  CHECK_EQ_U64(st.discarded, 1);
  CHECK_EQ_U64(st.completed, 10);
  return check_exit_code("test_cupti_buffers");
}
