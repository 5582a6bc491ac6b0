#include "log_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block_frame.h"
#include "crc32c.h"

/* Cumulative counter blocks kept: one per source, latest first; sources beyond are dropped. */
#define COUNTER_SOURCES 8u
#define COUNTER_RECS 512u
/* Events per EVENTS block of a dump. */
#define EVENTS_PER_BLOCK 8192u
#define PATH_MAX_LEN 1024u

typedef struct counter_slot {
  uint32_t source;             /* 0: unused */
  _Atomic int cur;             /* the half readers take: a put fills the other, then flips */
  uint32_t n[2];
  npkit_counter_rec rec[2][COUNTER_RECS];
} counter_slot;

struct npkit_log_ring {
  npkit_event *ev;             /* cap records */
  uint64_t cap;
  /* Events ever put, and that plus the count of a put under way: a reader without the lock (a
   * fatal signal's handler) leaves out the oldest records, which that put may be overwriting. */
  _Atomic uint64_t head, reserve;
  unsigned char *meta;         /* named blocks, formatted as in the file (block, CHECK) */
  size_t meta_cap;
  _Atomic size_t meta_used;    /* published after the copy */
  _Atomic uint64_t meta_lost;
  counter_slot *counters;
  void *map;
  size_t map_bytes;
  uint64_t bytes;
  char path[PATH_MAX_LEN], tmp[PATH_MAX_LEN + 16], dir[PATH_MAX_LEN];
};

npkit_log_ring *npkit_ring_create(uint64_t bytes, const char *path, char *err, size_t errlen) {
  npkit_log_ring *r = calloc(1, sizeof *r);
  counter_slot *cs = calloc(COUNTER_SOURCES, sizeof *cs);
  size_t len = strlen(path);
  if (r == NULL || cs == NULL || len + 1 > PATH_MAX_LEN) {
    snprintf(err, errlen, r == NULL || cs == NULL ? "out of memory" : "the log's path is too long");
    free(r);
    free(cs);
    return NULL;
  }
  /* One mapping: untouched pages cost nothing, so a ring that never fills stays small. */
  size_t meta_cap = (size_t)(bytes / 8) & ~(size_t)7;
  r->cap = (bytes - meta_cap) / sizeof(npkit_event);
  r->map_bytes = (size_t)bytes;
  r->map = mmap(NULL, r->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r->map == MAP_FAILED || r->cap == 0) {
    snprintf(err, errlen, "cannot map the flight recorder's ring of %llu MB",
             (unsigned long long)(bytes >> 20));
    if (r->map != MAP_FAILED) munmap(r->map, r->map_bytes);
    free(r);
    free(cs);
    return NULL;
  }
  r->ev = r->map;
  r->meta = (unsigned char *)r->map + r->cap * sizeof(npkit_event);
  r->meta_cap = meta_cap;
  r->counters = cs;
  r->bytes = bytes;
  memcpy(r->path, path, len + 1);
  memcpy(r->tmp, path, len);
  memcpy(r->tmp + len, ".tmp", 5);
  memcpy(r->dir, path, len + 1);
  char *slash = strrchr(r->dir, '/');
  if (slash != NULL && slash != r->dir) *slash = '\0';
  else r->dir[0] = '\0';
  /* The checksum decides its implementation and builds its tables once (pthread_once): done
   * here, so that a signal handler's dump runs none of that. */
  static const unsigned char warm[4096];
  (void)npkit_crc32c(0, warm, sizeof warm);
  return r;
}

void npkit_ring_free(npkit_log_ring *r) {
  if (r == NULL) return;
  munmap(r->map, r->map_bytes);
  free(r->counters);
  free(r);
}

/* ---- keeping blocks ---- */

static void put_events(npkit_log_ring *r, const npkit_event *ev, uint64_t n) {
  if (n > r->cap) { /* only the last cap records can stay */
    ev += n - r->cap;
    uint64_t skipped = n - r->cap;
    atomic_fetch_add_explicit(&r->head, skipped, memory_order_relaxed);
    n = r->cap;
  }
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  atomic_store_explicit(&r->reserve, head + n, memory_order_release);
  uint64_t at = head % r->cap, first = n < r->cap - at ? n : r->cap - at;
  memcpy(&r->ev[at], ev, first * sizeof *ev);
  memcpy(&r->ev[0], ev + first, (n - first) * sizeof *ev);
  atomic_store_explicit(&r->head, head + n, memory_order_release);
}

/* The latest COUNTERS block of its source, into the half readers do not take. */
static void put_counters(npkit_log_ring *r, uint32_t count, const npkit_counter_rec *recs) {
  if (count == 0) return;
  counter_slot *s = NULL;
  for (uint32_t i = 0; i < COUNTER_SOURCES && s == NULL; i++)
    if (r->counters[i].source == recs[0].source || r->counters[i].source == 0) s = &r->counters[i];
  if (s == NULL) return;
  int next = 1 - atomic_load_explicit(&s->cur, memory_order_relaxed);
  if (count > COUNTER_RECS) count = COUNTER_RECS;
  memcpy(s->rec[next], recs, count * sizeof *recs);
  s->n[next] = count;
  s->source = recs[0].source;
  atomic_store_explicit(&s->cur, next, memory_order_release);
}

/* A block as the file has it: header, payload, padding, then its CHECK block. */
static size_t format_block(unsigned char *out, uint16_t type, uint32_t count, const void *payload, size_t size) {
  npkit_block_header bh;
  npkit_block_check check;
  npkit_block_frame(type, count, payload, size, &bh, &check);
  size_t pad = npkit_block_pad(size);
  memcpy(out, &bh, sizeof bh);
  memcpy(out + sizeof bh, payload, size);
  memset(out + sizeof bh + size, 0, pad);
  memcpy(out + sizeof bh + size + pad, &check, sizeof check);
  return sizeof bh + size + pad + sizeof check;
}

void npkit_ring_put(npkit_log_ring *r, uint16_t type, uint32_t count, const void *payload, size_t size) {
  if (type == NPKIT_BLOCK_EVENTS) {
    put_events(r, payload, size / sizeof(npkit_event));
    return;
  }
  if (type == NPKIT_BLOCK_COUNTERS) {
    put_counters(r, (uint32_t)(size / sizeof(npkit_counter_rec)), payload);
    return;
  }
  if (type == NPKIT_BLOCK_END) return; /* the dump writes its own */
  size_t used = atomic_load_explicit(&r->meta_used, memory_order_relaxed);
  size_t need = sizeof(npkit_block_header) + size + npkit_block_pad(size) + sizeof(npkit_block_header) + sizeof(npkit_check_rec);
  if (size > UINT32_MAX - 8 || need > r->meta_cap - used) {
    atomic_fetch_add_explicit(&r->meta_lost, 1, memory_order_relaxed);
    return;
  }
  used += format_block(r->meta + used, type, count, payload, size);
  atomic_store_explicit(&r->meta_used, used, memory_order_release);
}

void npkit_ring_get_stats(const npkit_log_ring *r, npkit_ring_stats *s) {
  uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
  s->bytes = r->bytes;
  s->kept = head < r->cap ? head : r->cap;
  s->overwritten = head - s->kept;
  s->meta_lost = atomic_load_explicit(&r->meta_lost, memory_order_relaxed);
}

/* ---- writing a dump: async-signal-safe calls only ---- */

static void out_write(npkit_ring_out *o, const void *p, size_t n) {
  const char *c = p;
  while (n > 0 && o->error == 0) {
    ssize_t w = write(o->fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      o->error = w < 0 ? errno : EIO;
      return;
    }
    c += w;
    n -= (size_t)w;
  }
}

/* mkdir -p of the log's folder, without snprintf or malloc. */
static int make_dir(const char *dir) {
  char buf[PATH_MAX_LEN];
  size_t len = strlen(dir);
  if (len == 0) return 0;
  memcpy(buf, dir, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return errno;
    buf[i] = saved;
  }
  return 0;
}

void npkit_ring_out_block(npkit_ring_out *o, uint16_t type, uint32_t count, const void *payload, size_t size) {
  static const unsigned char zeros[8];
  npkit_block_header bh;
  npkit_block_check check;
  npkit_block_frame(type, count, payload, size, &bh, &check);
  out_write(o, &bh, sizeof bh);
  out_write(o, payload, size);
  out_write(o, zeros, npkit_block_pad(size));
  out_write(o, &check, sizeof check);
  if (o->error == 0) o->blocks++;
}

void npkit_ring_out_events(npkit_ring_out *o, const npkit_event *ev, size_t n) {
  while (n > 0) {
    size_t k = n < EVENTS_PER_BLOCK ? n : EVENTS_PER_BLOCK;
    npkit_ring_out_block(o, NPKIT_BLOCK_EVENTS, (uint32_t)k, ev, k * sizeof *ev);
    ev += k;
    n -= k;
  }
}

int npkit_ring_out_begin(npkit_log_ring *r, npkit_ring_out *o, const npkit_log_header *h) {
  o->fd = -1;
  o->error = 0;
  o->blocks = 0;
  int e = make_dir(r->dir);
  if (e != 0) return e;
  o->fd = open(r->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (o->fd < 0) return errno;
  npkit_log_header hh = *h;
  hh.flags |= NPKIT_LOG_F_RING;
  out_write(o, &hh, sizeof hh);
  size_t meta = atomic_load_explicit(&r->meta_used, memory_order_acquire);
  out_write(o, r->meta, meta);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
  uint64_t reserve = atomic_load_explicit(&r->reserve, memory_order_acquire);
  uint64_t from = reserve > r->cap ? reserve - r->cap : 0;
  if (head < from) from = head;
  if (head > r->cap && from < head - r->cap) from = head - r->cap;
  for (uint64_t i = from; i < head;) { /* oldest first, in at most two stretches */
    uint64_t at = i % r->cap, n = head - i < r->cap - at ? head - i : r->cap - at;
    npkit_ring_out_events(o, &r->ev[at], (size_t)n);
    i += n;
  }
  return 0;
}

int npkit_ring_out_finish(npkit_log_ring *r, npkit_ring_out *o, const npkit_end_rec *end) {
  if (o->fd < 0) return o->error != 0 ? o->error : EBADF;
  for (uint32_t i = 0; i < COUNTER_SOURCES; i++) {
    counter_slot *s = &r->counters[i];
    int cur = atomic_load_explicit(&s->cur, memory_order_acquire);
    if (s->n[cur] > 0)
      npkit_ring_out_block(o, NPKIT_BLOCK_COUNTERS, s->n[cur], s->rec[cur], s->n[cur] * sizeof(npkit_counter_rec));
  }
  if (end != NULL) npkit_ring_out_block(o, NPKIT_BLOCK_END, 1, end, sizeof *end);
  if (close(o->fd) != 0 && o->error == 0) o->error = errno;
  o->fd = -1;
  if (o->error == 0 && rename(r->tmp, r->path) != 0) o->error = errno;
  if (o->error != 0) unlink(r->tmp);
  return o->error;
}
