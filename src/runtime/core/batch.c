#include "batch.h"

long npkit_batch_flush(npkit_batch *b) {
  size_t n = b->n;
  if (n == 0) return 0;
  b->n = 0;
  if (b->log != NULL && npkit_logw_events(b->log, b->ev, n) == 0) {
    b->stored += n;
    return (long)n;
  }
  b->failed += n;
  return -(long)n;
}
