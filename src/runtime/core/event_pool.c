#include "event_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "pool_recover.h"

_Static_assert(sizeof(npkit_pool_header) == 3072, "pool header layout");
_Static_assert(offsetof(npkit_pool_header, boot_id) == 1208, "pool header layout");
_Static_assert(sizeof(npkit_pool_chunk) == 64, "pool chunk layout");

#define TMPFS_MAGIC_ 0x01021994L
#define HEADER_AREA 4096u
#define MAX_THREAD_SLOTS 1024u
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14, uapi/asm-generic/mman-common.h */
#endif

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* File systems whose pages another host serves (statfs f_type, include/uapi/linux/magic.h and the
 * file systems' own headers): a shared mapping there is written back over the network. */
static const struct {
  long magic;
  const char *name;
} network_fs[] = {
    {0x6969L, "NFS"},         {0x0BD00BD0L, "Lustre"},  {0x47504653L, "GPFS"},     {0x19830326L, "BeeGFS"},
    {0x00C36400L, "CephFS"},  {0xFF534D42L, "CIFS"},    {0xFE534D42L, "SMB2"},     {0x517BL, "SMB"},
    {0x5346414FL, "AFS"},     {0x20030528L, "OrangeFS"}, {0x01161970L, "GFS2"},    {0x7461636FL, "OCFS2"},
    {0x65735546L, "FUSE"},
};

static const char *network_fs_name(long magic) {
  for (size_t i = 0; i < sizeof network_fs / sizeof network_fs[0]; i++)
    if ((long)(uint32_t)network_fs[i].magic == (long)(uint32_t)magic) return network_fs[i].name;
  return NULL;
}

/* Room the pool may take.  In a memory file system the ranks of this host together a quarter of
 * what is free, so that NCCL's segments (which fail the job when /dev/shm is full) keep the rest;
 * on a local disk half of what is free for the ranks of this host.  -2: a network file system. */
static int room_for(const char *dir, uint64_t bytes, int local_ranks, int *memory, char *why, size_t whylen) {
  struct statfs fs;
  struct statvfs vfs;
  if (statfs(dir, &fs) != 0 || statvfs(dir, &vfs) != 0) {
    snprintf(why, whylen, "%s: %s", dir, strerror(errno));
    return -1;
  }
  const char *net = network_fs_name((long)fs.f_type);
  if (net != NULL) {
    snprintf(why, whylen, "%s is on %s, a network file system", dir, net);
    return -2;
  }
  *memory = (long)fs.f_type == TMPFS_MAGIC_;
  uint64_t free_bytes = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
  uint64_t ranks = local_ranks > 0 ? (uint64_t)local_ranks : 8;
  if (bytes > free_bytes / (*memory ? 4 : 2) / ranks) {
    snprintf(why, whylen, "%s has %llu MB free, too little for %llu ranks' pools of %llu MB%s", dir,
             (unsigned long long)(free_bytes >> 20), (unsigned long long)ranks, (unsigned long long)(bytes >> 20),
             *memory ? " and NCCL's segments" : "");
    return -1;
  }
  return 0;
}

/* The log's path as a later process elsewhere in the file system can open it; relative when the
 * absolute one does not fit. */
static void absolute(const char *path, char *out, size_t len) {
  char cwd[PATH_MAX];
  size_t pl = strlen(path), cl;
  if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL || (cl = strlen(cwd)) + 1 + pl >= len) {
    snprintf(out, len, "%s", path);
    return;
  }
  memcpy(out, cwd, cl);
  out[cl] = '/';
  memcpy(out + cl + 1, path, pl + 1);
}

int npkit_pool_create(npkit_event_pool *p, const char *dir, uint32_t nchunks, const npkit_pool_layout *layout,
                      const npkit_log_header *lh, const char *log_path, int local_ranks, char *why, size_t whylen) {
  memset(p, 0, sizeof *p);
  p->fd = -1;
  uint32_t slot = (uint32_t)align_up(layout->slot_size, 64);
  uint64_t chunks_off = HEADER_AREA;
  uint64_t threads_off = align_up(chunks_off + (uint64_t)nchunks * sizeof(npkit_pool_chunk), 64);
  uint64_t data_off = align_up(threads_off + (uint64_t)MAX_THREAD_SLOTS * slot, 4096);
  uint64_t bytes = data_off + (uint64_t)nchunks * layout->chunk_events * sizeof(npkit_event);
  int memory = 0, room = room_for(dir, bytes, local_ranks, &memory, why, whylen);
  if (room != 0) return room;
  int n = snprintf(p->path, sizeof p->path, "%s/" NPKIT_POOL_PREFIX "%u-%s-%d-%llu", dir, (unsigned)getuid(), lh->host,
                   (int)lh->pid, (unsigned long long)lh->clock_base_ns);
  if (n < 0 || (size_t)n >= sizeof p->path) {
    snprintf(why, whylen, "the name of a pool file in %s is too long", dir);
    return -1;
  }
  int fd = open(p->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    snprintf(why, whylen, "cannot create %s: %s", p->path, strerror(errno));
    return -1;
  }
  struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  int e = fcntl(fd, F_SETLK, &lk) != 0 ? errno : posix_fallocate(fd, 0, (off_t)bytes);
  void *m = MAP_FAILED;
  if (e == 0) {
    m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (m == MAP_FAILED) e = errno;
  }
  /* MAP_POPULATE maps a shared file's pages for reading only where the file system wants to know
   * of writes (a disk's page_mkwrite), so that each page's first store would fault: fault them in
   * for writing now.  Their writeback write-protects them again (bench/RESULTS.md); a kernel before
   * 5.14 says EINVAL and the first stores fault. */
  if (e == 0 && !memory) (void)madvise(m, bytes, MADV_POPULATE_WRITE);
  if (e != 0) {
    snprintf(why, whylen, "cannot reserve %llu MB in %s: %s", (unsigned long long)(bytes >> 20), p->path, strerror(e));
    unlink(p->path);
    close(fd);
    return -1;
  }
  p->fd = fd;
  p->bytes = bytes;
  p->header = m;
  p->chunks = (unsigned char *)m + chunks_off;
  p->threads = (unsigned char *)m + threads_off;
  p->data = (unsigned char *)m + data_off;
  p->nchunks = nchunks;
  p->max_threads = MAX_THREAD_SLOTS;
  p->slot_size = slot;
  p->on_disk = !memory;

  npkit_pool_header *h = p->header;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  h->version = NPKIT_POOL_VERSION;
  h->header_size = HEADER_AREA;
  h->record_size = sizeof(npkit_event);
  h->chunk_events = layout->chunk_events;
  h->nchunks = nchunks;
  h->chunk_record_size = sizeof(npkit_pool_chunk);
  h->max_threads = MAX_THREAD_SLOTS;
  h->thread_slot_size = slot;
  h->thread_index_offset = layout->index_offset;
  h->thread_tid_offset = layout->tid_offset;
  h->thread_recorded_offset = layout->recorded_offset;
  h->thread_dropped_offset = layout->dropped_offset;
  h->chunks_offset = chunks_off;
  h->threads_offset = threads_off;
  h->data_offset = data_off;
  h->file_size = bytes;
  h->state = NPKIT_POOL_RECORDING;
  h->pid = lh->pid;
  h->uid = (uint32_t)getuid();
  h->log_clock_base_ns = lh->clock_base_ns;
  h->created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  snprintf(h->host, sizeof h->host, "%s", lh->host);
  npkit_pool_boot_id(h->boot_id, sizeof h->boot_id);
  absolute(log_path, h->log_path, sizeof h->log_path);
  memcpy(h->magic, NPKIT_POOL_MAGIC, 8); /* last: a header without it is not one */
  return 0;
}

void *npkit_pool_thread_slot(npkit_event_pool *p) {
  if (p == NULL || p->threads == NULL) return NULL;
  uint32_t i = atomic_fetch_add(&p->threads_used, 1);
  return i < p->max_threads ? p->threads + (size_t)i * p->slot_size : NULL;
}

void npkit_pool_closed(npkit_event_pool *p) {
  if (p == NULL || p->fd < 0) return;
  atomic_store((_Atomic uint32_t *)&p->header->state, NPKIT_POOL_CLOSED);
  unlink(p->path);
  close(p->fd); /* drops the lock: nobody needs it once the state says closed */
  p->fd = -1;
}
