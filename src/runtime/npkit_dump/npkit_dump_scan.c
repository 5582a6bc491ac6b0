#include "npkit_dump_scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grow.h"

/* ---- what was seen: (rank, source, index) -> signature, open addressing ---- */

typedef struct seen_entry {
  uint64_t key; /* 0: free; else 1 + (rank << 25 | source << 24 | index) */
  uint64_t dev, ino, size;
  int64_t mtime_ns;
} seen_entry;

struct npkit_dump_seen {
  seen_entry *v;
  size_t cap, n;
};

npkit_dump_seen *npkit_dump_seen_new(void) { return calloc(1, sizeof(npkit_dump_seen)); }

void npkit_dump_seen_free(npkit_dump_seen *s) {
  if (s == NULL) return;
  free(s->v);
  free(s);
}

static uint64_t file_key(uint32_t rank, unsigned source, uint32_t index) {
  return 1 + ((uint64_t)rank << 25 | (uint64_t)source << 24 | index);
}

static seen_entry *seen_slot(seen_entry *v, size_t cap, uint64_t key) {
  size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
  while (v[i].key != 0 && v[i].key != key) i = (i + 1) & (cap - 1);
  return &v[i];
}

static int seen_grow(npkit_dump_seen *s) {
  size_t cap = s->cap ? s->cap * 2 : 1024;
  seen_entry *v = calloc(cap, sizeof *v);
  if (v == NULL) return -1;
  for (size_t i = 0; i < s->cap; i++)
    if (s->v[i].key != 0) *seen_slot(v, cap, s->v[i].key) = s->v[i];
  free(s->v);
  s->v = v;
  s->cap = cap;
  return 0;
}

/* Records the signature; returns 1 if it differs from the one seen before (or none was), 0 if
 * not, -1 if memory is short. */
static int seen_update(npkit_dump_seen *s, uint64_t key, const struct stat *st) {
  if (2 * (s->n + 1) > s->cap && seen_grow(s) != 0) return -1;
  seen_entry *e = seen_slot(s->v, s->cap, key);
  int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  if (e->key == key && e->dev == (uint64_t)st->st_dev && e->ino == (uint64_t)st->st_ino &&
      e->size == (uint64_t)st->st_size && e->mtime_ns == mtime)
    return 0;
  if (e->key == 0) s->n++;
  e->key = key;
  e->dev = (uint64_t)st->st_dev;
  e->ino = (uint64_t)st->st_ino;
  e->size = (uint64_t)st->st_size;
  e->mtime_ns = mtime;
  return 1;
}

/* ---- the scan ---- */

/* Groups the (sorted) files into ranks and reads each rank's clocks. */
static int build_ranks(npkit_dump *d, int dfd) {
  d->ranks = calloc(d->n_files, sizeof *d->ranks);
  if (d->ranks == NULL) return -1;
  for (size_t i = 0; i < d->n_files; i++) {
    const npkit_dump_file *f = &d->files[i];
    if (i == 0 || f->rank != d->files[i - 1].rank) {
      npkit_dump_rank *nr = &d->ranks[d->n_ranks++];
      nr->rank = f->rank;
      nr->first_file = i;
      npkit_dump_read_clocks(dfd, nr); /* the files and checks of npkit_dump_open */
    }
    npkit_dump_rank *r = &d->ranks[d->n_ranks - 1];
    r->n_files++;
    if (f->source == NPKIT_SOURCE_GPU) {
      r->n_gpu++;
      r->gpu_bytes += f->size;
    } else {
      r->n_cpu++;
      r->cpu_bytes += f->size;
    }
  }
  return 0;
}

int npkit_dump_scan_new_files(const char *dir, npkit_dump_seen *seen, const npkit_dump_scan_opts *o,
                         npkit_dump_scan_result *res, char *err, size_t errlen) {
  memset(res, 0, sizeof *res);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int dup_fd = dfd >= 0 ? dup(dfd) : -1;
  DIR *dp = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (dp == NULL) {
    snprintf(err, errlen, "%s: %s", dir, strerror(errno));
    if (dup_fd >= 0) close(dup_fd);
    if (dfd >= 0) close(dfd);
    return -1;
  }
  npkit_dump_file *files = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (;;) {
    errno = 0;
    struct dirent *de = readdir(dp);
    if (de == NULL) {
      if (errno != 0) {
        snprintf(err, errlen, "%s: reading the folder: %s", dir, strerror(errno));
        rc = -1;
      }
      break;
    }
    uint32_t rank, index;
    npkit_dump_source source;
    if (npkit_dump_parse_event_name(de->d_name, &rank, &source, &index) != 0 ||
        !npkit_dump_rank_listed(o->ranks, o->n_ranks, rank))
      continue;
    struct stat st;
    if (fstatat(dfd, de->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode)) continue;
    int changed = seen_update(seen, file_key(rank, source, index), &st);
    if (changed < 0) {
      snprintf(err, errlen, "%s: out of memory", dir);
      rc = -1;
      break;
    }
    if (!changed) continue;
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (mtime < o->not_before_ns) {
      res->stale_files++;
      continue;
    }
    if (st.st_size < NPKIT_DUMP_EVENT_BYTES) { /* also what is too short to hold one event */
      res->new_empty_files++;
      continue;
    }
    if (NPKIT_GROW(files, cap, n + 1, 64) != 0) {
      snprintf(err, errlen, "%s: out of memory", dir);
      rc = -1;
      break;
    }
    files[n++] = (npkit_dump_file){rank, index, (uint8_t)source, (uint64_t)st.st_size};
  }
  closedir(dp);
  if (rc == 0 && n > 0) {
    qsort(files, n, sizeof *files, npkit_dump_file_cmp);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
      if (res->bytes + files[i].size > o->max_bytes || res->files_over_limit > 0) {
        res->files_over_limit++;
        res->bytes_over_limit += files[i].size;
        continue;
      }
      res->bytes += files[i].size;
      files[kept++] = files[i];
    }
    n = kept;
  }
  if (rc == 0 && n > 0) {
    npkit_dump *d = calloc(1, sizeof *d);
    if (d == NULL || (d->dir = strdup(dir)) == NULL) {
      free(d);
      snprintf(err, errlen, "%s: out of memory", dir);
      rc = -1;
    } else {
      d->files = files;
      d->n_files = n;
      d->total_bytes = res->bytes;
      files = NULL;
      if (build_ranks(d, dfd) != 0) {
        npkit_dump_close(d);
        snprintf(err, errlen, "%s: out of memory", dir);
        rc = -1;
      } else {
        res->dump = d;
      }
    }
  }
  free(files);
  close(dfd);
  return rc;
}
