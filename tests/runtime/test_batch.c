/* The producers' batch (src/runtime/core/batch.h): it says when it is full, appends what it holds
 * as one EVENTS block that the log reader gives back in order, and counts what the log took and
 * what it could not (no log, or a log that stopped accepting writes). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "check.h"
#include "log_reader.h"
#include "log_writer.h"

static npkit_log_writer *open_log(const char *path) {
  npkit_log_header h;
  npkit_log_header_init(&h);
  char err[256];
  npkit_log_writer *w = npkit_logw_open(path, &h, err, sizeof err);
  if (w == NULL) fprintf(stderr, "test_batch: %s\n", err);
  return w;
}

static void event(npkit_event *ev, uint64_t i) {
  memset(ev, 0, sizeof *ev);
  ev->kind = NPKIT_EV_MARK_INSTANT;
  ev->start_ns = ev->end_ns = 1000 + i;
}

int main(int argc, char **argv) {
  char path[512];
  snprintf(path, sizeof path, "%s/batch.npkit", argc > 1 ? argv[1] : "/tmp");
  npkit_mkdirs(argc > 1 ? argv[1] : "/tmp");
  unlink(path);

  npkit_event slots[4];
  npkit_batch b = NPKIT_BATCH_OF(slots);
  CHECK_EQ_U64(b.cap, 4);
  CHECK_EQ_U64(npkit_batch_flush(&b), 0); /* empty: nothing moves, nothing counted */

  /* No log yet: what the batch held is counted as refused. */
  npkit_event ev;
  event(&ev, 99);
  CHECK(npkit_batch_add(&b, &ev) == 0);
  CHECK(npkit_batch_flush(&b) == -1);
  CHECK_EQ_U64(b.failed, 1);
  CHECK_EQ_U64(b.n, 0);

  b.log = open_log(path);
  CHECK(b.log != NULL);
  if (b.log == NULL) return check_exit_code("test_batch");
  /* Ten events: full at the 4th and the 8th (one built in its slot), two left for the last flush. */
  int full_at[10];
  for (uint64_t i = 0; i < 10; i++) {
    if (i == 5) {
      event(npkit_batch_slot(&b), i);
      full_at[i] = npkit_batch_add(&b, npkit_batch_slot(&b));
    } else {
      event(&ev, i);
      full_at[i] = npkit_batch_add(&b, &ev);
    }
    if (full_at[i]) CHECK(npkit_batch_flush(&b) == 4);
  }
  for (int i = 0; i < 10; i++) CHECK(full_at[i] == (i == 3 || i == 7));
  CHECK(npkit_batch_flush(&b) == 2);
  CHECK_EQ_U64(b.stored, 10);
  CHECK_EQ_U64(b.failed, 1);

  /* A closed log refuses: counted, and the batch is empty again. */
  CHECK(npkit_logw_close(b.log, NULL) == 0);
  event(&ev, 50);
  npkit_batch_add(&b, &ev);
  npkit_batch_add(&b, &ev);
  CHECK(npkit_batch_flush(&b) == -2);
  CHECK_EQ_U64(b.failed, 3);
  CHECK_EQ_U64(b.stored, 10);
  CHECK_EQ_U64(b.n, 0);
  npkit_logw_free(b.log);
  b.log = NULL;

  /* The log holds the ten stored events, in order, and none of the refused ones. */
  npkit_log_reader *r = NULL;
  char err[256];
  CHECK(npkit_reader_open(path, &r, err, sizeof err) == 0);
  if (r != NULL) {
    const npkit_event *got;
    uint64_t n = 0;
    int rc;
    while ((rc = npkit_reader_next(r, &got, err, sizeof err)) == 1) {
      CHECK_EQ_U64(got->kind, NPKIT_EV_MARK_INSTANT);
      CHECK_EQ_U64(got->start_ns, 1000 + n);
      n++;
    }
    CHECK(rc == 0);
    CHECK_EQ_U64(n, 10);
    npkit_reader_close(r);
  }
  return check_exit_code("test_batch");
}
