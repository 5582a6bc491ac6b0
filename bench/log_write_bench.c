/*
 * log_write_bench DIR [EVENTS] [REPS]: the cost of the blocks' CRC32C to the log writer.
 *
 * Appends EVENTS events (default 2,000,000) to a log in DIR in blocks of 1024 events, as the
 * recorder's writer thread does with its chunks, through the library's own writer
 * (src/runtime/log_writer.c): once as a log of version 1 (no checksums) and once of version 2 (a
 * CHECK block with the CRC32C of every block), alternating, REPS times (default 7).  Prints, per
 * repeat and as medians, the writer's CPU time per event for both, and their ratio; then the
 * throughput of the two CRC32C implementations on one block.
 */
#include <stdio.h>
#include <stdlib.h>
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

/* CPU ns per event of writing n events as a log of `version`. */
static double write_log(const char *path, uint32_t version, const npkit_event *block, unsigned long n) {
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
  for (unsigned long done = 0; done < n; done += BLOCK_EVENTS)
    if (npkit_logw_append(w, NPKIT_BLOCK_EVENTS, BLOCK_EVENTS, block, BLOCK_EVENTS * sizeof *block) != 0) {
      fprintf(stderr, "log_write_bench: write failed\n");
      exit(1);
    }
  double t = cpu_ns() - t0;
  npkit_logw_close(w, NULL);
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
  static npkit_event block[BLOCK_EVENTS];
  for (unsigned i = 0; i < BLOCK_EVENTS; i++) { /* content as varied as real events */
    block[i].start_ns = 1764671234567890123ull + 1000ull * i;
    block[i].end_ns = block[i].start_ns + 500 + i;
    block[i].kind = NPKIT_EV_API;
    block[i].func = (uint16_t)(1 + i % 40);
    block[i].thread = 1;
    block[i].u.api.count = 1000 + i;
    block[i].u.api.seq = i;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/log_write_bench_%d.npkit", argv[1], (int)getpid());
  double v1[100], v2[100], ratio[100];
  write_log(path, 2, block, n); /* warm-up: page cache, allocator */
  printf("%lu events per log, blocks of %u events (%zu KiB), %d repeats\n", n, BLOCK_EVENTS,
         BLOCK_EVENTS * sizeof(npkit_event) >> 10, reps);
  printf("repeat  version 1 (ns/event)  version 2 (ns/event)  ratio\n");
  for (int r = 0; r < reps; r++) {
    if (r % 2 == 0) {
      v1[r] = write_log(path, 1, block, n);
      v2[r] = write_log(path, 2, block, n);
    } else {
      v2[r] = write_log(path, 2, block, n);
      v1[r] = write_log(path, 1, block, n);
    }
    ratio[r] = v2[r] / v1[r];
    printf("%6d  %20.1f  %20.1f  %5.3f\n", r + 1, v1[r], v2[r], ratio[r]);
  }
  qsort(v1, (size_t)reps, sizeof v1[0], cmp_double);
  qsort(v2, (size_t)reps, sizeof v2[0], cmp_double);
  qsort(ratio, (size_t)reps, sizeof ratio[0], cmp_double);
  printf("median  %20.1f  %20.1f  %5.3f\n", v1[reps / 2], v2[reps / 2], ratio[reps / 2]);
  printf("CRC32C of one %zu KiB block: table %.2f GB/s", sizeof block >> 10,
         crc_gbs(npkit_crc32c_table, block, sizeof block));
  if (npkit_crc32c_hw_available())
    printf(", crc32 instruction %.2f GB/s (the one used)", crc_gbs(npkit_crc32c_hw, block, sizeof block));
  printf("\n");
  return 0;
}
