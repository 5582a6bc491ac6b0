/* Shared-memory segments: one per communicator, holding a byte ring per ordered pair of ranks and
 * channel (collectives, send/recv).
 *
 * Creation is race-free without any other coordination: every rank tries O_CREAT|O_EXCL; the one
 * that wins sizes and initialises the segment and then sets `ready`; the others map it once it has
 * its full size and wait for `ready`.  Each rank claims its slot with its pid (a rank given twice
 * is an error; the pid lets peers notice that a process died)
 * and the rank that completes the count unlinks the name at once, so that a test that crashes
 * later leaves nothing in /dev/shm.  A segment whose ranks never all arrived is unlinked by the
 * last local user that gives up.
 *
 * Within one process all communicators joining the same name share one mapping, so that thread
 * sanitizers see the ring's acquire/release pairs on the same addresses. */
#include "fake_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LAYOUT_VERSION 1u
#define CACHE_LINE 64

typedef struct ring_ctl {
  _Atomic uint64_t head; /* bytes ever written, by the sender only */
  char pad0[CACHE_LINE - sizeof(uint64_t)];
  _Atomic uint64_t tail; /* bytes ever read, by the receiver only */
  char pad1[CACHE_LINE - sizeof(uint64_t)];
} ring_ctl;

typedef struct seg_hdr {
  _Atomic uint32_t ready; /* set last by the creator */
  uint32_t layout;
  int32_t nranks;
  uint32_t reserved;
  uint64_t ring_bytes;
  uint64_t size;
  _Atomic int32_t joined;
  _Atomic int32_t complete; /* every rank joined and the name is unlinked */
  /* The first rank whose call failed on this communicator, so that its peers stop waiting for
   * data that will never come: (rank + 1) << 8 | its ncclResult_t; 0: none. */
  _Atomic int32_t failed;
} seg_hdr;

struct npkit_fake_seg {
  npkit_fake_seg *next;
  char name[NPKIT_FAKE_NAME_MAX];
  int nranks;
  size_t ring_bytes, size;
  unsigned char *base;
  seg_hdr *hdr;
  _Atomic uint32_t *claims;
  ring_ctl *ctl;
  unsigned char *data;
  int refs; /* local communicators using the mapping; guarded by registry_lock */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static npkit_fake_seg *registry;

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Rings shrink for large rank counts so that a segment stays below ~1 GiB of address space (the
 * pages are only used when touched). */
static size_t ring_bytes_for(int nranks) {
  size_t ring = npkit_fake_cfg()->ring_bytes;
  size_t budget = ((size_t)1 << 30) / (2 * (size_t)nranks * (size_t)nranks);
  while (ring > budget && ring > 16384) ring /= 2;
  return ring;
}

typedef struct layout {
  size_t claims, ctl, data, size;
} layout;

static layout layout_for(int nranks, size_t ring_bytes) {
  size_t nrings = (size_t)NPKIT_FAKE_NCHAN * (size_t)nranks * (size_t)nranks;
  layout l;
  l.claims = align_up(sizeof(seg_hdr), CACHE_LINE);
  l.ctl = align_up(l.claims + (size_t)nranks * sizeof(uint32_t), CACHE_LINE);
  l.data = align_up(l.ctl + nrings * sizeof(ring_ctl), 4096);
  l.size = l.data + nrings * ring_bytes;
  return l;
}

static uint64_t random64(void) {
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r) return r;
  static _Atomic uint64_t counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  r = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40);
  return r ^ (atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ull);
}

void npkit_fake_new_name(char name[NPKIT_FAKE_NAME_MAX]) {
  snprintf(name, NPKIT_FAKE_NAME_MAX, "/fnccl-%ld-%016llx", (long)getpid(),
           (unsigned long long)random64());
}

void npkit_fake_derived_name(char name[NPKIT_FAKE_NAME_MAX], const char *parent, const int64_t *v,
                             int nv) {
  /* FNV-1a over the parent's name and the values: every member computes the same name. */
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = parent; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  for (int i = 0; i < nv; i++)
    for (int b = 0; b < 8; b++) h = (h ^ (((uint64_t)v[i] >> (8 * b)) & 0xff)) * 0x100000001b3ull;
  snprintf(name, NPKIT_FAKE_NAME_MAX, "/fnccl-d%016llx", (unsigned long long)h);
}

static void seg_bind(npkit_fake_seg *s, const layout *l) {
  s->hdr = (seg_hdr *)s->base;
  s->claims = (_Atomic uint32_t *)(s->base + l->claims);
  s->ctl = (ring_ctl *)(s->base + l->ctl);
  s->data = s->base + l->data;
}

/* Maps the segment, creating it if nobody has.  *again: it exists but is not sized yet, or does
 * not exist and cannot be created now.  Called with registry_lock held. */
static ncclResult_t seg_map(const char *name, int nranks, npkit_fake_seg **out, bool *again) {
  size_t ring = ring_bytes_for(nranks);
  layout l = layout_for(nranks, ring);
  bool created = false;
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd >= 0) {
    created = true;
    if (ftruncate(fd, (off_t)l.size) != 0) {
      int e = errno;
      close(fd);
      shm_unlink(name);
      return npkit_fake_fail(ncclSystemError, "cannot size shared memory %s to %zu bytes: %s",
                             name, l.size, strerror(e));
    }
  } else if (errno == EEXIST) {
    fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0) {
      if (errno == ENOENT) { /* unlinked between the two calls: look again later */
        *again = true;
        return ncclSuccess;
      }
      return npkit_fake_fail(ncclSystemError, "cannot open shared memory %s: %s", name,
                             strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0) { /* the creator has not sized it yet */
      close(fd);
      *again = true;
      return ncclSuccess;
    }
    if ((size_t)st.st_size != l.size) {
      close(fd);
      return npkit_fake_fail(ncclInvalidUsage,
                             "ranks disagree on the communicator size (or FAKE_NCCL_RING_BYTES): "
                             "segment %s has %lld bytes, %d ranks need %zu",
                             name, (long long)st.st_size, nranks, l.size);
    }
  } else {
    return npkit_fake_fail(ncclSystemError, "cannot create shared memory %s: %s", name,
                           strerror(errno));
  }
  void *base = mmap(NULL, l.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int map_errno = errno;
  close(fd);
  npkit_fake_seg *s = calloc(1, sizeof *s);
  if (base == MAP_FAILED || s == NULL) {
    if (base != MAP_FAILED) munmap(base, l.size);
    free(s);
    if (created) shm_unlink(name);
    return npkit_fake_fail(ncclSystemError, "cannot map shared memory %s (%zu bytes): %s", name,
                           l.size, strerror(base == MAP_FAILED ? map_errno : ENOMEM));
  }
  snprintf(s->name, sizeof s->name, "%s", name);
  s->nranks = nranks;
  s->ring_bytes = ring;
  s->size = l.size;
  s->base = base;
  s->refs = 1;
  seg_bind(s, &l);
  if (created) {
    s->hdr->layout = LAYOUT_VERSION;
    s->hdr->nranks = nranks;
    s->hdr->ring_bytes = ring;
    s->hdr->size = l.size;
    atomic_store_explicit(&s->hdr->ready, 1, memory_order_release);
  }
  s->next = registry;
  registry = s;
  *out = s;
  return ncclSuccess;
}

ncclResult_t npkit_fake_seg_attach(const char *name, int nranks, int rank, npkit_fake_seg **seg,
                                   bool *again) {
  *again = false;
  if (*seg == NULL) {
    pthread_mutex_lock(&registry_lock);
    npkit_fake_seg *s = registry;
    /* A completed segment of the same name belongs to an earlier communicator made from the same
     * unique id: a new one is created under the (by now unlinked) name. */
    while (s != NULL && (strcmp(s->name, name) != 0 || npkit_fake_seg_complete(s))) s = s->next;
    ncclResult_t res = ncclSuccess;
    if (s != NULL)
      s->refs++;
    else
      res = seg_map(name, nranks, &s, again);
    pthread_mutex_unlock(&registry_lock);
    if (res != ncclSuccess || *again) return res;
    *seg = s;
  }
  npkit_fake_seg *s = *seg;
  if (atomic_load_explicit(&s->hdr->ready, memory_order_acquire) == 0) {
    *again = true;
    return ncclSuccess;
  }
  ncclResult_t res = ncclSuccess;
  if (s->hdr->layout != LAYOUT_VERSION || s->hdr->nranks != nranks ||
      s->hdr->ring_bytes != s->ring_bytes) {
    res = npkit_fake_fail(ncclInvalidUsage,
                          "ranks disagree on the communicator: segment %s was made for %d ranks "
                          "(ring %llu bytes), this rank says %d ranks (ring %zu bytes)",
                          name, (int)s->hdr->nranks, (unsigned long long)s->hdr->ring_bytes,
                          nranks, s->ring_bytes);
  } else if (atomic_exchange(&s->claims[rank], (uint32_t)getpid()) != 0) {
    res = npkit_fake_fail(ncclInvalidUsage, "rank %d of %d joined communicator %s twice", rank,
                          nranks, name);
  }
  if (res != ncclSuccess) {
    npkit_fake_seg_release(s);
    *seg = NULL;
    return res;
  }
  if (atomic_fetch_add(&s->hdr->joined, 1) + 1 == nranks) {
    /* Unlinked before anyone is told that all joined: when init returns, nothing is left. */
    shm_unlink(name);
    atomic_store_explicit(&s->hdr->complete, 1, memory_order_release);
  }
  return ncclSuccess;
}

bool npkit_fake_seg_complete(const npkit_fake_seg *seg) {
  return atomic_load_explicit(&seg->hdr->complete, memory_order_acquire) != 0;
}

void npkit_fake_seg_set_failed(npkit_fake_seg *seg, int rank, ncclResult_t code) {
  int32_t none = 0;
  atomic_compare_exchange_strong(&seg->hdr->failed, &none, (rank + 1) << 8 | ((int32_t)code & 0xff));
}

int npkit_fake_seg_failed(const npkit_fake_seg *seg, ncclResult_t *code) {
  int32_t v = atomic_load_explicit(&seg->hdr->failed, memory_order_relaxed);
  *code = (ncclResult_t)(v & 0xff);
  return (v >> 8) - 1;
}

bool npkit_fake_seg_rank_alive(const npkit_fake_seg *seg, int rank) {
  pid_t pid = (pid_t)atomic_load_explicit(&seg->claims[rank], memory_order_relaxed);
  return pid == 0 || kill(pid, 0) == 0 || errno != ESRCH;
}

void npkit_fake_seg_release(npkit_fake_seg *seg) {
  if (seg == NULL) return;
  pthread_mutex_lock(&registry_lock);
  bool last = --seg->refs == 0;
  if (last) {
    for (npkit_fake_seg **p = &registry; *p != NULL; p = &(*p)->next)
      if (*p == seg) {
        *p = seg->next;
        break;
      }
    if (!npkit_fake_seg_complete(seg)) shm_unlink(seg->name);
  }
  pthread_mutex_unlock(&registry_lock);
  if (last) {
    munmap(seg->base, seg->size);
    free(seg);
  }
}

static ring_ctl *ring_of(npkit_fake_seg *seg, int chan, int src, int dst, unsigned char **data) {
  size_t i = ((size_t)chan * (size_t)seg->nranks + (size_t)src) * (size_t)seg->nranks + (size_t)dst;
  *data = seg->data + i * seg->ring_bytes;
  return &seg->ctl[i];
}

size_t npkit_fake_ring_write(npkit_fake_seg *seg, int chan, int src, int dst, const void *buf,
                             size_t len) {
  unsigned char *data;
  ring_ctl *r = ring_of(seg, chan, src, dst, &data);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
  size_t cap = seg->ring_bytes;
  size_t room = cap - (size_t)(head - tail);
  size_t n = len < room ? len : room;
  if (n == 0) return 0;
  size_t off = (size_t)head & (cap - 1);
  size_t first = n < cap - off ? n : cap - off;
  memcpy(data + off, buf, first);
  memcpy(data, (const unsigned char *)buf + first, n - first);
  atomic_store_explicit(&r->head, head + n, memory_order_release);
  return n;
}

size_t npkit_fake_ring_read(npkit_fake_seg *seg, int chan, int src, int dst, void *buf, size_t len) {
  unsigned char *data;
  ring_ctl *r = ring_of(seg, chan, src, dst, &data);
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
  size_t cap = seg->ring_bytes;
  size_t avail = (size_t)(head - tail);
  size_t n = len < avail ? len : avail;
  if (n == 0) return 0;
  size_t off = (size_t)tail & (cap - 1);
  size_t first = n < cap - off ? n : cap - off;
  memcpy(buf, data + off, first);
  memcpy((unsigned char *)buf + first, data, n - first);
  atomic_store_explicit(&r->tail, tail + n, memory_order_release);
  return n;
}
