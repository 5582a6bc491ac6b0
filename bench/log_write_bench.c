/*
 * log_write_bench DIR [EVENTS] [REPS]: what the log writer's thread spends per event, by format.
 *
 * Appends EVENTS events (default 2,000,000) to a log in DIR in blocks of 1024 events, as the
 * recorder's writer thread does with its chunks, through the library's own writer
 * (src/runtime/core/log_writer.c): as a log of version 1 (EVENTS blocks, no checksums), of version
 * 2 (a CHECK block with the CRC32C of every block; versions 3 and 4 write their events the same way) and of
 * version 5 (the events packed), in turn,
 * REPS times (default 7).  Prints, per repeat and as medians, the writer's CPU time per event for
 * each (the kernel's copy into the page cache included) and the ratios, the log's bytes per
 * event, then the throughput of the two CRC32C implementations on one block.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "log_writer.h"

#define BLOCK_EVENTS 1024u

static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* CPU ns per event of writing the n events of ev as a log of `version` (5: packed); its size in
 * *bytes. */
static double write_log(const char *path, uint32_t version, const npkit_event *ev, unsigned long n, double *bytes) {
  npkit_log_header h;
  npkit_log_header_init(&h);
  h.version = version;
  char err[256];
  npkit_log_writer *w = npkit_logw_open(path, &h, err, sizeof err);
  if (w == NULL) {
    fprintf(stderr, "log_write_bench: %s\n", err);
    exit(1);
  }
  double t0 = cpu_ns();
  for (unsigned long done = 0; done < n; done += BLOCK_EVENTS) {
    int rc = version >= NPKIT_LOG_VERSION_PACKED ? npkit_logw_events(w, ev + done, BLOCK_EVENTS)
                          : npkit_logw_append(w, NPKIT_BLOCK_EVENTS, BLOCK_EVENTS, ev + done, BLOCK_EVENTS * sizeof *ev);
    if (rc != 0) {
      fprintf(stderr, "log_write_bench: write failed\n");
      exit(1);
    }
  }
  double t = cpu_ns() - t0;
  npkit_logw_close(w, NULL);
  npkit_logw_free(w);
  struct stat st;
  *bytes = stat(path, &st) == 0 ? (double)st.st_size / (double)n : 0;
  unlink(path);
  return t / (double)n;
}

static double crc_gbs(uint32_t (*f)(uint32_t, const void *, size_t), const void *p, size_t n) {
  unsigned reps = 2000;
  volatile uint32_t sink = 0;
  double t0 = cpu_ns();
  for (unsigned i = 0; i < reps; i++) sink += f(i, p, n);
  (void)sink;
  return (double)n * reps / (cpu_ns() - t0);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: log_write_bench DIR [EVENTS] [REPS]\n");
    return 2;
  }
  unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000000ul;
  int reps = argc > 3 ? atoi(argv[3]) : 7;
  if (reps < 1 || reps > 100) reps = 7;
  n = (n + BLOCK_EVENTS - 1) / BLOCK_EVENTS * BLOCK_EVENTS;
  /* A stream of calls as one thread makes them (times a few hundred ns apart, the next sequence
   * and call number, now and then another function), in memory larger than the caches: the
   * writer reads chunks another core wrote. */
  npkit_event *ev = calloc(n, sizeof *ev);
  if (ev == NULL) {
    fprintf(stderr, "log_write_bench: no memory for %lu events\n", n);
    return 1;
  }
  uint64_t t = 1764671234567890123ull, seed = 12345;
  for (unsigned long i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    t += 200 + (seed >> 56);
    ev[i].start_ns = t;
    ev[i].end_ns = t + 60 + (seed >> 59);
    ev[i].kind = NPKIT_EV_API;
    ev[i].func = (uint16_t)(i % 64 == 0 ? 1 + (seed >> 40) % 40 : 2);
    ev[i].thread = 1;
    ev[i].u.api.count = 1024;
    ev[i].u.api.bytes = 4096;
    ev[i].u.api.stream = 0x7f0012345678ull;
    ev[i].u.api.comm = 1;
    ev[i].u.api.peer = ev[i].u.api.redop = -1;
    ev[i].u.api.seq = i;
    ev[i].u.api.call_no = i + 1;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/log_write_bench_%d.npkit", argv[1], (int)getpid());
  double v[3][100], ratio2[100], ratio3[100], bytes[3];
  write_log(path, 2, ev, n, &bytes[1]); /* warm-up: page cache, allocator */
  printf("%lu events per log, blocks of %u events, %d repeats, writer CPU per event\n", n, BLOCK_EVENTS, reps);
  printf("repeat  v1: EVENTS (ns)  v2: + CRC32C (ns)  v5: packed (ns)  v2/v1  v5/v2\n");
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < 3; k++) { /* the order turns every repeat */
      int ver = (k + r) % 3;
      v[ver][r] = write_log(path, ver == 2 ? NPKIT_LOG_VERSION_PACKED : (uint32_t)ver + 1, ev, n, &bytes[ver]);
    }
    ratio2[r] = v[1][r] / v[0][r];
    ratio3[r] = v[2][r] / v[1][r];
    printf("%6d  %15.1f  %17.1f  %15.1f  %5.3f  %5.3f\n", r + 1, v[0][r], v[1][r], v[2][r], ratio2[r], ratio3[r]);
  }
  for (int k = 0; k < 3; k++) qsort(v[k], (size_t)reps, sizeof v[k][0], cmp_double);
  qsort(ratio2, (size_t)reps, sizeof ratio2[0], cmp_double);
  qsort(ratio3, (size_t)reps, sizeof ratio3[0], cmp_double);
  printf("median  %15.1f  %17.1f  %15.1f  %5.3f  %5.3f\n", v[0][reps / 2], v[1][reps / 2], v[2][reps / 2],
         ratio2[reps / 2], ratio3[reps / 2]);
  printf("log bytes per event: v1 %.1f, v2 %.1f, v5 %.1f\n", bytes[0], bytes[1], bytes[2]);
  static npkit_event block[BLOCK_EVENTS];
  memcpy(block, ev, sizeof block);
  free(ev);
  printf("CRC32C of one %zu KiB block: table %.2f GB/s", sizeof block >> 10,
         crc_gbs(npkit_crc32c_table, block, sizeof block));
  if (npkit_crc32c_hw_available())
    printf(", crc32 instruction %.2f GB/s (the one used)", crc_gbs(npkit_crc32c_hw, block, sizeof block));
  printf("\n");
  return 0;
}
