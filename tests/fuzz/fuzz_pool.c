/* Fuzz target of the recovery of a killed process's events from its event pool file
 * (src/format/pool_recover.c, include/npkit/pool_file.h): the input is the pool file.
 *
 * Each input gets a log of its own, as the library leaves it when its process is killed: version
 * 6, a POOL block naming the pool first, three events, no END block.  Where the input is long
 * enough to hold a pool header, the three fields that tie a pool to its log (pid, the log's clock
 * base, the log's path) are set to this log's and its boot id to "unknown", so that the fuzzer spends its time on everything
 * else the reader trusts: sizes, offsets, counts, chunk records, thread slots, events.
 *
 * Whatever the pool holds: no crash, no read outside the file; a failure comes with a message;
 * a recovery leaves a log the reader takes whole (not truncated), with one RECOVERED block that
 * counts exactly the events appended. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_builder.h"
#include "log_reader.h"
#include "nccl_names.h"
#include "npkit/pool_file.h"
#include "pool_recover.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void make_log(const char *log, const char *pool, const npkit_lb_options *o) {
  npkit_lb *b = npkit_lb_create(log, o);
  if (b == NULL) abort();
  npkit_pool_rec rec;
  memset(&rec, 0, sizeof rec);
  rec.bytes = 1u << 20;
  snprintf(rec.path, sizeof rec.path, "%s", pool);
  npkit_event ev[3];
  memset(ev, 0, sizeof ev);
  for (int i = 0; i < 3; i++) {
    ev[i].kind = NPKIT_EV_API;
    ev[i].func = NPKIT_FN_AllReduce;
    ev[i].thread = 1;
    ev[i].start_ns = o->clock_base_ns + 1000u * (uint64_t)i;
    ev[i].end_ns = ev[i].start_ns + 500;
  }
  if (npkit_lb_raw_block(b, NPKIT_BLOCK_POOL, 1, &rec, sizeof rec) != 0 || npkit_lb_events(b, ev, 3) != 0 ||
      npkit_lb_close(b) != 0)
    abort();
}

static uint64_t events_in(const char *log, npkit_log_reader **out) {
  char err[512];
  if (npkit_reader_open(log, out, err, sizeof err) != 0) abort(); /* the library's own log: always readable */
  return (*out)->n_events;
}

/* Every input's files are removed after it; the folder goes when the process ends. */
static void remove_dir(void) {
  if (dir[0] != '\0') rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (dir[0] == '\0') {
    snprintf(dir, sizeof dir, "/tmp/npkit_fuzz_pool_XXXXXX");
    if (mkdtemp(dir) == NULL) abort();
    atexit(remove_dir);
  }
  char log[128], pool[128];
  snprintf(log, sizeof log, "%s/npkit_node1_4242.npkit", dir);
  snprintf(pool, sizeof pool, "%s/" NPKIT_POOL_PREFIX "%u-node1-4242", dir, (unsigned)geteuid());
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  make_log(log, pool, &o);

  uint8_t *copy = malloc(size > 0 ? size : 1);
  if (copy == NULL) abort();
  memcpy(copy, data, size);
  if (size >= sizeof(npkit_pool_header)) {
    npkit_pool_header h;
    memcpy(&h, copy, sizeof h);
    h.pid = o.pid;
    h.log_clock_base_ns = o.clock_base_ns;
    memset(h.log_path, 0, sizeof h.log_path);
    memset(h.boot_id, 0, sizeof h.boot_id); /* "unknown": a random one would stop every input there */
    snprintf(h.log_path, sizeof h.log_path, "%s", log);
    memcpy(copy, &h, sizeof h);
  }
  FILE *f = fopen(pool, "wb");
  if (f == NULL || (size > 0 && fwrite(copy, 1, size, f) != size) || fclose(f) != 0) abort();
  free(copy);

  npkit_log_reader *r;
  uint64_t before = events_in(log, &r);
  npkit_reader_close(r);
  npkit_pool_recovery rec;
  char err[600] = "";
  int rc = npkit_pool_recover_log(log, NPKIT_RECOVERED_BY_TOOL, &rec, err, sizeof err);
  if (rc < 0 && err[0] == '\0') abort();
  if (rc > 0) {
    uint64_t after = events_in(log, &r);
    if (r->truncated || r->n_recovered != 1 || r->recovered_events != rec.events || after != before + rec.events ||
        r->has_end)
      abort();
    npkit_reader_close(r);
    if (access(pool, F_OK) == 0) abort(); /* a recovered pool is removed */
  }
  unlink(pool);
  unlink(log);
  return 0;
}
