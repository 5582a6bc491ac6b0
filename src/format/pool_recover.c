#include "pool_recover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "block_frame.h"
#include "event_pack.h"
#include "log_reader.h"
#include "npkit/event_log.h"
#include "npkit/pool_file.h"

/* Far beyond what a writer makes (NPKIT_EVENT_BUF_SIZE tops at 64 GiB: 2^19 chunks), so that a
 * damaged header cannot make a reader allocate or read without bound. */
#define MAX_CHUNKS (1u << 22)
#define MAX_CHUNK_EVENTS 65536u
#define MAX_THREADS (1u << 16)

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

static int read_exact(int fd, void *buf, size_t n, uint64_t off) { return npkit_read_at(fd, buf, n, off); }

int npkit_pool_boot_id(char *out, size_t len) {
  out[0] = '\0';
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, out, len - 1);
  close(fd);
  while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ')) n--;
  out[n > 0 ? n : 0] = '\0';
  return n > 0 ? 0 : -1;
}

/* Whether every part the header describes lies inside a file of st_size bytes: NULL or why not. */
static const char *check_header(const npkit_pool_header *h, uint64_t st_size) {
  if (memcmp(h->magic, NPKIT_POOL_MAGIC, 8) != 0) return "not an event pool file";
  if (h->version != NPKIT_POOL_VERSION) return "an event pool file of another version";
  if (h->header_size < sizeof *h || h->record_size != sizeof(npkit_event) ||
      h->chunk_record_size != sizeof(npkit_pool_chunk))
    return "an event pool file of other record sizes";
  if (h->nchunks == 0 || h->nchunks > MAX_CHUNKS || h->chunk_events == 0 || h->chunk_events > MAX_CHUNK_EVENTS ||
      h->max_threads > MAX_THREADS)
    return "implausible counts in the pool header";
  if (h->thread_slot_size < 8 || h->thread_slot_size > 65536 || h->thread_index_offset > h->thread_slot_size - 4 ||
      h->thread_tid_offset > h->thread_slot_size - 4 || h->thread_recorded_offset > h->thread_slot_size - 8 ||
      h->thread_dropped_offset > h->thread_slot_size - 8)
    return "implausible thread slots in the pool header";
  uint64_t chunks_end = h->chunks_offset + (uint64_t)h->nchunks * h->chunk_record_size;
  uint64_t threads_end = h->threads_offset + (uint64_t)h->max_threads * h->thread_slot_size;
  uint64_t data_end = h->data_offset + (uint64_t)h->nchunks * h->chunk_events * h->record_size;
  if (h->chunks_offset < h->header_size || h->threads_offset < chunks_end || h->data_offset < threads_end ||
      data_end != h->file_size || h->file_size != st_size)
    return "the pool file's parts do not fit its size";
  return NULL;
}

/* A stretch of one chunk the log lacks. */
typedef struct pending {
  uint32_t owner, chunk, from, to;
  uint64_t serial;
} pending;

static int by_owner_serial(const void *a, const void *b) {
  const pending *x = a, *y = b;
  if (x->owner != y->owner) return x->owner < y->owner ? -1 : 1;
  return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* One framed block at the end of the log. */
static int append_block(int fd, uint16_t type, uint32_t count, const void *payload, size_t size, uint64_t *off) {
  static const uint8_t zeros[8];
  npkit_block_header bh;
  npkit_block_check check;
  npkit_block_frame(type, count, payload, size, &bh, &check);
  struct iovec iov[4] = {{&bh, sizeof bh}, {(void *)payload, size}, {(void *)zeros, npkit_block_pad(size)},
                         {&check, sizeof check}};
  size_t total = sizeof bh + size + npkit_block_pad(size) + sizeof check;
  ssize_t w = pwritev(fd, iov, 4, (off_t)*off);
  if (w < 0 || (size_t)w != total) return -1;
  *off += total;
  return 0;
}

typedef struct recovery {
  int pool_fd, log_fd;
  npkit_pool_header h;
  npkit_pool_chunk *chunks;
  pending *todo;
  size_t n_todo;
  npkit_event *events;     /* one chunk */
  unsigned char *packed;   /* one packed block */
  npkit_packer packer;
} recovery;

static void recovery_free(recovery *v) {
  free(v->chunks);
  free(v->todo);
  free(v->events);
  free(v->packed);
  if (v->log_fd >= 0) close(v->log_fd);
}

/* The events of the pool the log lacks: the chunks' [written, used), where a block being written
 * when the process died counts when it is complete in the log (it starts below valid_end). */
static void find_pending(recovery *v, uint64_t valid_end) {
  for (uint32_t i = 0; i < v->h.nchunks; i++) {
    const npkit_pool_chunk *c = &v->chunks[i];
    if (c->owner == 0 || c->used > v->h.chunk_events || c->written > c->used) continue;
    uint32_t from = c->written;
    if (c->write_to > from && c->write_to <= c->used && c->write_off != NPKIT_POOL_NO_OFFSET && c->write_off < valid_end)
      from = c->write_to;
    if (c->used > from) v->todo[v->n_todo++] = (pending){c->owner, i, from, c->used, c->serial};
  }
  qsort(v->todo, v->n_todo, sizeof *v->todo, by_owner_serial);
}

/* The threads' counters from their slots, as one COUNTERS block (the latest per thread wins). */
static int append_counters(recovery *v, uint64_t *off, char *err, size_t errlen) {
  if (v->h.max_threads == 0) return 0;
  size_t bytes = (size_t)v->h.max_threads * v->h.thread_slot_size;
  unsigned char *slots = malloc(bytes);
  npkit_counter_rec *recs = calloc(v->h.max_threads, sizeof *recs);
  int rc = 0;
  if (slots == NULL || recs == NULL) {
    rc = fail(err, errlen, "out of memory");
  } else if (read_exact(v->pool_fd, slots, bytes, v->h.threads_offset) != 0) {
    rc = fail(err, errlen, "cannot read the pool's threads: %s", strerror(errno));
  } else {
    uint32_t n = 0;
    for (uint32_t i = 0; i < v->h.max_threads; i++) {
      const unsigned char *s = slots + (size_t)i * v->h.thread_slot_size;
      uint32_t index;
      memcpy(&index, s + v->h.thread_index_offset, 4);
      if (index == 0) continue;
      recs[n].thread = index;
      recs[n].source = NPKIT_SRC_API;
      memcpy(&recs[n].recorded, s + v->h.thread_recorded_offset, 8);
      memcpy(&recs[n].dropped, s + v->h.thread_dropped_offset, 8);
      n++;
    }
    if (n > 0 && append_block(v->log_fd, NPKIT_BLOCK_COUNTERS, n, recs, (size_t)n * sizeof *recs, off) != 0)
      rc = fail(err, errlen, "cannot write to the log: %s", strerror(errno));
  }
  free(slots);
  free(recs);
  return rc;
}

/* Appends the pending events, the counters and the RECOVERED record.  0 or -1. */
static int append_recovered(recovery *v, const char *by, uint64_t off, uint64_t cut, npkit_pool_recovery *rec,
                            char *err, size_t errlen) {
  v->events = malloc((size_t)v->h.chunk_events * sizeof *v->events);
  v->packed = malloc((size_t)v->h.chunk_events * NPKIT_PACK_EVENT_MAX);
  if (v->events == NULL || v->packed == NULL) return fail(err, errlen, "out of memory");
  uint32_t last_owner = 0;
  for (size_t i = 0; i < v->n_todo; i++) {
    const pending *p = &v->todo[i];
    uint32_t n = p->to - p->from;
    uint64_t at = v->h.data_offset + ((uint64_t)p->chunk * v->h.chunk_events + p->from) * sizeof(npkit_event);
    if (read_exact(v->pool_fd, v->events, (size_t)n * sizeof(npkit_event), at) != 0)
      return fail(err, errlen, "cannot read the pool's events: %s", strerror(errno));
    size_t size = npkit_pack_events(&v->packer, v->events, n, v->packed);
    if (append_block(v->log_fd, NPKIT_BLOCK_EVENTS_PACKED, n, v->packed, size, &off) != 0)
      return fail(err, errlen, "cannot write to the log: %s", strerror(errno));
    rec->events += n;
    rec->chunks++;
    if (p->owner != last_owner) rec->threads++;
    last_owner = p->owner;
  }
  if (append_counters(v, &off, err, errlen) != 0) return -1;
  npkit_recovered_rec r;
  memset(&r, 0, sizeof r);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  r.time_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  r.events = rec->events;
  r.chunks = rec->chunks;
  r.cut_bytes = cut;
  r.threads = rec->threads;
  r.pid = (int32_t)getpid();
  snprintf(r.by, sizeof r.by, "%s", by);
  if (gethostname(r.host, sizeof r.host - 1) != 0) r.host[0] = '\0';
  if (append_block(v->log_fd, NPKIT_BLOCK_RECOVERED, 1, &r, sizeof r, &off) != 0 || fsync(v->log_fd) != 0)
    return fail(err, errlen, "cannot write to the log: %s", strerror(errno));
  return 0;
}

/* The log's part: it is the pool's, not closed; where its intact blocks end.  1 go on, 0 nothing
 * to recover into it, -1 error. */
static int open_log(recovery *v, const char *log_path, uint64_t *valid_end, uint64_t *cut, char *err, size_t errlen) {
  v->log_fd = open(log_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  /* The log was removed (a trace folder deleted after its job was killed): the events have nowhere
   * to go, and a pool kept for them would hold its memory and be tried by every later process. */
  if (v->log_fd < 0 && errno == ENOENT) return 0;
  if (v->log_fd < 0) return fail(err, errlen, "cannot open its log %s: %s", log_path, strerror(errno));
  npkit_log_header lh;
  if (read_exact(v->log_fd, &lh, sizeof lh, 0) != 0 || memcmp(lh.magic, NPKIT_LOG_MAGIC, 8) != 0)
    return fail(err, errlen, "%s is not an npkit event log", log_path);
  if (lh.pid != v->h.pid || lh.clock_base_ns != v->h.log_clock_base_ns)
    return fail(err, errlen, "%s is not the log of the pool's process (pid %d)", log_path, (int)v->h.pid);
  npkit_log_reader *r;
  char rerr[512];
  if (npkit_reader_open_fd(v->log_fd, log_path, &r, rerr, sizeof rerr) != 0) return fail(err, errlen, "%s", rerr);
  int closed = r->has_end || r->n_recovered > 0;
  *valid_end = r->truncated ? r->data_end : r->file_size;
  *cut = r->file_size - *valid_end;
  npkit_reader_close(r);
  return closed ? 0 : 1;
}

/* Marks the pool recovered and removes it (the lock goes with the last close). */
static void pool_done(int fd, const char *path) {
  uint32_t state = NPKIT_POOL_RECOVERED;
  if (pwrite(fd, &state, sizeof state, offsetof(npkit_pool_header, state)) != (ssize_t)sizeof state) {
    /* unlinking is what matters: a later reader then finds nothing */
  }
  unlink(path);
}

/* A file of a pool's name found by a scan (tidy) that is no pool, unlocked and older than this: the
 * remains of a process killed while it created its pool (the header is written last).  A younger
 * one may be a pool being created right now, between its open and its lock. */
#define TIDY_AGE_S 60

/* With the pool file open and locked: 1 recovered, 0 nothing, -1 error. */
static int recover_locked(recovery *v, const char *pool_path, const char *log_override, const char *by, int tidy,
                          npkit_pool_recovery *rec, char *err, size_t errlen) {
  struct stat st;
  if (fstat(v->pool_fd, &st) != 0) return fail(err, errlen, "%s: %s", pool_path, strerror(errno));
  const char *why = read_exact(v->pool_fd, &v->h, sizeof v->h, 0) != 0 ? "shorter than a pool header"
                                                                         : check_header(&v->h, (uint64_t)st.st_size);
  if (why != NULL && tidy) {
    if (st.st_mtime + TIDY_AGE_S < time(NULL)) unlink(pool_path);
    return 0;
  }
  if (why != NULL) return fail(err, errlen, "%s: %s", pool_path, why);
  v->h.log_path[sizeof v->h.log_path - 1] = '\0';
  rec->pid = v->h.pid;
  snprintf(rec->log_path, sizeof rec->log_path, "%s", log_override != NULL ? log_override : v->h.log_path);
  if (v->h.state != NPKIT_POOL_RECORDING) {
    pool_done(v->pool_fd, pool_path); /* closed or recovered already: a leftover */
    return 0;
  }
  char boot[sizeof v->h.boot_id];
  v->h.boot_id[sizeof v->h.boot_id - 1] = '\0';
  if (v->h.boot_id[0] != '\0' && npkit_pool_boot_id(boot, sizeof boot) == 0 && strcmp(boot, v->h.boot_id) != 0) {
    pool_done(v->pool_fd, pool_path); /* it will never be consistent: its memory is given back */
    return fail(err, errlen,
                "%s was written before its host restarted: a disk keeps only what writeback had reached, its "
                "events are not recovered",
                pool_path);
  }
  uint64_t valid_end = 0, cut = 0;
  int go = open_log(v, rec->log_path, &valid_end, &cut, err, errlen);
  if (go <= 0) {
    if (go == 0) pool_done(v->pool_fd, pool_path); /* its log is closed: nothing is missing from it */
    return go;
  }
  v->chunks = malloc((size_t)v->h.nchunks * sizeof *v->chunks);
  v->todo = malloc((size_t)v->h.nchunks * sizeof *v->todo);
  if (v->chunks == NULL || v->todo == NULL) return fail(err, errlen, "out of memory");
  if (read_exact(v->pool_fd, v->chunks, (size_t)v->h.nchunks * sizeof *v->chunks, v->h.chunks_offset) != 0)
    return fail(err, errlen, "%s: cannot read its chunks: %s", pool_path, strerror(errno));
  find_pending(v, valid_end);
  if (cut > 0 && ftruncate(v->log_fd, (off_t)valid_end) != 0)
    return fail(err, errlen, "cannot cut the incomplete block at the end of %s: %s", rec->log_path, strerror(errno));
  rec->cut_bytes = cut;
  if (append_recovered(v, by, valid_end, cut, rec, err, errlen) != 0) return -1;
  pool_done(v->pool_fd, pool_path);
  return 1;
}

/* The pool file at pool_path into log_override, or the log the pool names; tidy: found by a scan
 * of the pool folder, which removes what is no pool (recover_locked). */
static int recover_pool(const char *pool_path, const char *log_override, const char *by, int tidy,
                        npkit_pool_recovery *rec, char *err, size_t errlen) {
  memset(rec, 0, sizeof *rec);
  snprintf(rec->pool_path, sizeof rec->pool_path, "%s", pool_path);
  recovery v;
  memset(&v, 0, sizeof v);
  v.log_fd = -1;
  v.pool_fd = open(pool_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (v.pool_fd < 0) return errno == ENOENT ? 0 : fail(err, errlen, "%s: %s", pool_path, strerror(errno));
  struct stat st;
  struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  int rc = 0;
  if (fstat(v.pool_fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    rc = 0; /* not one of ours */
  } else if (fcntl(v.pool_fd, F_SETLK, &lk) != 0) {
    rc = errno == EAGAIN || errno == EACCES ? 0 : fail(err, errlen, "%s: cannot lock: %s", pool_path, strerror(errno));
  } else {
    rc = recover_locked(&v, pool_path, log_override, by, tidy, rec, err, errlen);
  }
  recovery_free(&v);
  close(v.pool_fd); /* drops the lock */
  return rc;
}

static int by_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int npkit_pool_inspect(const char *pool_path, npkit_pool_summary *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  int fd = open(pool_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return fail(err, errlen, "%s", strerror(errno));
  struct stat st;
  npkit_pool_header h;
  const char *why = NULL;
  if (fstat(fd, &st) != 0 || read_exact(fd, &h, sizeof h, 0) != 0)
    why = "shorter than a pool header";
  else
    why = check_header(&h, (uint64_t)st.st_size);
  npkit_pool_chunk *chunks = why == NULL ? malloc((size_t)h.nchunks * sizeof *chunks) : NULL;
  uint32_t *owners = why == NULL ? malloc((size_t)h.nchunks * sizeof *owners) : NULL;
  if (why == NULL && (chunks == NULL || owners == NULL)) why = "out of memory";
  if (why == NULL && read_exact(fd, chunks, (size_t)h.nchunks * sizeof *chunks, h.chunks_offset) != 0)
    why = "cannot read its chunks";
  if (why == NULL) {
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    s->owner_alive = fcntl(fd, F_GETLK, &lk) == 0 && lk.l_type != F_UNLCK;
    s->state = h.state;
    s->pid = h.pid;
    uint32_t n = 0;
    for (uint32_t i = 0; i < h.nchunks; i++) {
      const npkit_pool_chunk *c = &chunks[i];
      if (c->owner == 0 || c->used > h.chunk_events || c->written >= c->used) continue;
      s->pending_events += c->used - c->written;
      s->pending_chunks++;
      owners[n++] = c->owner;
    }
    qsort(owners, n, sizeof *owners, by_u32);
    for (uint32_t i = 0; i < n; i++)
      if (i == 0 || owners[i] != owners[i - 1]) s->pending_threads++;
  }
  free(chunks);
  free(owners);
  close(fd);
  return why == NULL ? 0 : fail(err, errlen, "%s", why);
}

int npkit_pool_recover_file(const char *pool_path, const char *by, npkit_pool_recovery *rec, char *err, size_t errlen) {
  return recover_pool(pool_path, NULL, by, 0, rec, err, errlen);
}

int npkit_pool_recover_log(const char *log_path, const char *by, npkit_pool_recovery *rec, char *err, size_t errlen) {
  memset(rec, 0, sizeof *rec);
  int fd = open(log_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0; /* the readers say what is wrong with it */
  npkit_log_header lh;
  struct {
    npkit_block_header bh;
    npkit_pool_rec pool;
  } first;
  int named = read_exact(fd, &lh, sizeof lh, 0) == 0 && memcmp(lh.magic, NPKIT_LOG_MAGIC, 8) == 0 && lh.version >= 6 &&
              lh.header_size >= sizeof lh && read_exact(fd, &first, sizeof first, lh.header_size) == 0 &&
              first.bh.magic == NPKIT_BLOCK_MAGIC && first.bh.type == NPKIT_BLOCK_POOL &&
              first.bh.size >= sizeof first.pool;
  close(fd);
  if (!named) return 0;
  first.pool.path[sizeof first.pool.path - 1] = '\0';
  if (access(first.pool.path, F_OK) != 0) return 0; /* recovered already, or of another host */
  return recover_pool(first.pool.path, log_path, by, 0, rec, err, errlen);
}

int npkit_pool_recover_dir(const char *dir, const char *by,
                           void (*said)(void *ctx, const char *log, const npkit_pool_recovery *rec, const char *err),
                           void *ctx) {
  DIR *d = opendir(dir);
  if (d == NULL) return 0;
  char prefix[64];
  snprintf(prefix, sizeof prefix, NPKIT_POOL_PREFIX "%u-", (unsigned)geteuid());
  size_t pl = strlen(prefix);
  int recovered = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, pl) != 0) continue;
    char path[4096], err[600];
    npkit_pool_recovery rec;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    int rc = recover_pool(path, NULL, by, 1, &rec, err, sizeof err);
    if (rc > 0) recovered++;
    if (rc != 0 && said != NULL) said(ctx, rec.log_path[0] ? rec.log_path : path, &rec, rc < 0 ? err : NULL);
  }
  closedir(d);
  return recovered;
}
