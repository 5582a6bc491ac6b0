/* Writing records into the client's activity buffers, as CUPTI does: a buffer is asked for when
 * one is needed, filled record after record (each 8-byte aligned, in the CUDA 13 layouts or the
 * CUDA 12 kernel layout), and handed back when the next record does not fit or on a forced flush.
 * A request answered without a buffer loses the record, which is counted as dropped. */
#include <stdlib.h>
#include <string.h>

#include "fake_cupti_internal.h"

static uint8_t *cur;
static size_t cur_size, cur_used;
static uint64_t dropped;

/* Records exist only once settings are read, so the kernel size is known by then. */
static size_t kernel_size;

size_t fc_record_size(const CUpti_Activity *rec) {
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
  case CUPTI_ACTIVITY_KIND_KERNEL:
    if (kernel_size == 0)
      kernel_size = fc_cfg()->kernel_version == 9 ? sizeof(CUpti_ActivityKernel9)
                                                  : sizeof(CUpti_ActivityKernel10);
    return kernel_size;
  case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
  case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
  case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
  case CUPTI_ACTIVITY_KIND_DRIVER:
  case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
  default: return 0;
  }
}

static void hand_back(uint8_t *b, size_t size, size_t used) {
  CUpti_BuffersCallbackCompleteFunc done = fc_complete_fn();
  if (done != NULL) done(NULL, 0, b, size, used);
}

void fc_complete_current(void) {
  if (cur == NULL) return;
  uint8_t *b = cur;
  size_t size = cur_size, used = cur_used;
  cur = NULL;
  cur_size = cur_used = 0;
  hand_back(b, size, used);
}

/* ---- ext-late mode ----
 * CUPTI writes a launch's correlation record in front of its API record, at the launch
 * (cupti_activity.h of CUDA 13, cuptiActivityPushExternalCorrelationId: "the activity API record
 * will be preceded by a CUpti_ActivityExternalCorrelation record"), and the kernel's record is in
 * a buffer from the launch on, incomplete until the kernel ends (cuptiActivityFlushAll: "Activity
 * record is considered as completed if it has all the information filled up including the
 * timestamps").  Nothing there orders the kernel's record after the correlation record, so this
 * mode takes the worst order the header allows: the correlation record comes after the kernel's,
 * at the next flush, or in the next buffer when the kernel's fills - that one asked for and
 * written before the full one is handed back, since CUPTI cannot hand back a buffer before the
 * records written in front of what it holds are done.  The reader then meets a kernel whose
 * correlation record is in a buffer that comes back later, and must wait for it. */
static CUpti_ActivityExternalCorrelation *late;
static size_t nlate, caplate;

void fc_emit_late(const CUpti_ActivityExternalCorrelation *x) {
  if (nlate == caplate) {
    size_t cap = caplate ? 2 * caplate : 64;
    CUpti_ActivityExternalCorrelation *l = realloc(late, cap * sizeof *l);
    if (l == NULL) {
      dropped++;
      return;
    }
    late = l;
    caplate = cap;
  }
  late[nlate++] = *x;
}

void fc_release_late(void) {
  size_t n = nlate;
  nlate = 0; /* the writes below may switch buffers, which releases nothing more */
  for (size_t i = 0; i < n; i++) fc_emit(&late[i], sizeof late[i]);
}

static int request(void);

/* The current buffer is full: the next one is asked for, the late records are written there, and
 * only then does the full one go back (see above).  Always in that order, also while late records
 * are being written (fc_release_late, where the list reads as empty): handing the full buffer back
 * first would put a correlation record in a buffer asked for after the buffer of its kernel came
 * back, an order CUPTI cannot produce (the record was written at the launch) and one the library
 * may rightly take as "no correlation record" (its reader settles a kernel once every buffer
 * asked for by the time the kernel's came back has been read). */
static int next_buffer(void) {
  uint8_t *full = cur;
  size_t size = cur_size, used = cur_used;
  cur = NULL;
  cur_size = cur_used = 0;
  int refused = request() != 0;
  fc_release_late();
  hand_back(full, size, used);
  return refused && cur == NULL; /* asked, refused: the record that needed it is dropped */
}

static int request(void) {
  CUpti_BuffersCallbackRequestFunc req = fc_request_fn();
  if (req == NULL) return -1;
  uint8_t *b = NULL;
  size_t size = 0, max_records = 0;
  req(&b, &size, &max_records);
  if (b == NULL || size == 0) return -1;
  if (((uintptr_t)b & 7u) != 0) return -1; /* CUPTI requires 8-byte alignment */
  cur = b;
  cur_size = size;
  cur_used = 0;
  return 0;
}

/* The times of a record in the clock of a registered timestamp callback (fake_cupti_api.c). */
static void restamp(CUpti_Activity *rec, uint64_t r, uint64_t c) {
#define RESTAMP(type, ...)                                                                         \
  do {                                                                                             \
    type *x_ = (type *)(void *)rec;                                                                \
    uint64_t *f_[] = {__VA_ARGS__};                                                                \
    for (size_t i_ = 0; i_ < sizeof f_ / sizeof f_[0]; i_++) *f_[i_] = fc_clock_stamp(*f_[i_], r, c); \
  } while (0)
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
  case CUPTI_ACTIVITY_KIND_KERNEL: /* Kernel9 has these at the same offsets */
    RESTAMP(CUpti_ActivityKernel10, &x_->start, &x_->end, &x_->completed, &x_->queued, &x_->submitted);
    break;
  case CUPTI_ACTIVITY_KIND_MEMCPY: RESTAMP(CUpti_ActivityMemcpy6, &x_->start, &x_->end); break;
  case CUPTI_ACTIVITY_KIND_MEMCPY2: RESTAMP(CUpti_ActivityMemcpyPtoP4, &x_->start, &x_->end); break;
  case CUPTI_ACTIVITY_KIND_MEMSET: RESTAMP(CUpti_ActivityMemset4, &x_->start, &x_->end); break;
  case CUPTI_ACTIVITY_KIND_DRIVER:
  case CUPTI_ACTIVITY_KIND_RUNTIME: RESTAMP(CUpti_ActivityAPI, &x_->start, &x_->end); break;
  default: break;
  }
#undef RESTAMP
}

void fc_emit(const void *rec, size_t size) {
  union {
    CUpti_ActivityKernel10 kernel; /* the largest record written */
    uint64_t align;
  } copy;
  uint64_t r, c;
  if (size <= sizeof copy && fc_clock_reading(&r, &c)) {
    memcpy(&copy, rec, size);
    restamp((CUpti_Activity *)(void *)&copy, r, c);
    rec = &copy;
  }
  int refused = 0;
  while (cur != NULL && cur_used + size > cur_size) refused = next_buffer();
  if (cur == NULL && (refused || request() != 0)) {
    dropped++;
    return;
  }
  if (cur_used + size > cur_size) { /* a buffer smaller than one record */
    dropped++;
    return;
  }
  memcpy(cur + cur_used, rec, size);
  cur_used += size;
}

void fc_count_dropped(uint64_t n) { dropped += n; }

uint64_t fc_take_dropped(void) {
  uint64_t n = dropped;
  dropped = 0;
  return n;
}
