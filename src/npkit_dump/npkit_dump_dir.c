/* Discovery of an NPKit dump directory: event files per rank, and each rank's clock files. */
#include "npkit_dump.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grow.h"
#include "sorted_find.h"

typedef struct scan {
  npkit_dump_file *files;
  size_t n_files, cap_files;
  uint32_t *clocks; /* rank of each clock file */
  size_t n_clocks, cap_clocks;
} scan;

/* Decimal number filling [s, end) exactly: no sign, no leading zero, below NPKIT_DUMP_MAX_INDEX.
 * Returns 0, -1 if it is not a number at all, -2 if it is a number this reader refuses. */
static int parse_index(const char *s, const char *end, uint32_t *v) {
  if (s >= end) return -1;
  uint64_t x = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9') return -1;
    x = x * 10 + (uint64_t)(*p - '0');
    if (x >= NPKIT_DUMP_MAX_INDEX) return -2;
  }
  if (*s == '0' && end - s > 1) return -2;
  *v = (uint32_t)x;
  return 0;
}

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* "<prefix><rank><mid><index>": 0 on a match, -1 if the name is something else, -2 if it looks
 * like a dump file with numbers this reader refuses. */
static int match_two(const char *name, const char *prefix, const char *mid, uint32_t *rank, uint32_t *index) {
  if (!starts(name, prefix)) return -1;
  const char *r = name + strlen(prefix);
  const char *m = strstr(r, mid);
  if (m == NULL) return -1;
  const char *i = m + strlen(mid);
  int a = parse_index(r, m, rank);
  int b = parse_index(i, i + strlen(i), index);
  if (a == -1 || b == -1) return -1;
  return a == 0 && b == 0 ? 0 : -2;
}

int npkit_dump_parse_event_name(const char *name, uint32_t *rank, npkit_dump_source *source, uint32_t *index) {
  int m = match_two(name, "gpu_events_rank_", "_buf_", rank, index);
  *source = NPKIT_SOURCE_GPU;
  if (m != -1) return m; /* a GPU name, or one with refused numbers: not tried as a CPU name */
  *source = NPKIT_SOURCE_CPU;
  return match_two(name, "cpu_events_rank_", "_channel_", rank, index);
}

static int match_one(const char *name, const char *prefix, uint32_t *rank) {
  if (!starts(name, prefix)) return -1;
  const char *r = name + strlen(prefix);
  return parse_index(r, r + strlen(r), rank);
}

static int add_file(scan *s, uint32_t rank, uint32_t index, npkit_dump_source src, uint64_t size) {
  if (NPKIT_GROW(s->files, s->cap_files, s->n_files + 1, 1024) != 0) return -1;
  npkit_dump_file *f = &s->files[s->n_files++];
  f->rank = rank;
  f->index = index;
  f->source = (uint8_t)src;
  f->size = size;
  return 0;
}

/* Clock files are only looked at per rank later; one entry per file, merged after sorting. */
static int add_clock(scan *s, uint32_t rank) {
  if (NPKIT_GROW(s->clocks, s->cap_clocks, s->n_clocks + 1, 64) != 0) return -1;
  s->clocks[s->n_clocks++] = rank;
  return 0;
}

int npkit_dump_file_cmp(const void *a, const void *b) {
  const npkit_dump_file *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->source != y->source) return x->source < y->source ? -1 : 1;
  if (x->index != y->index) return x->index < y->index ? -1 : 1;
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Reads one clock file into *v; on failure writes "<file>: <why>" into why.  The file is opened
 * non-blocking: opening a FIFO for reading would otherwise wait for a writer that never comes
 * (a dump folder is shared and writable by the job); fstat then refuses anything that is not a
 * regular file before a byte is read. */
static int read_clock_value(int dfd, const char *fmt, uint32_t rank, uint64_t *v, char *why, size_t whylen) {
  char name[64], text[65], msg[160];
  snprintf(name, sizeof(name), fmt, rank);
  int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(why, whylen, "%s: %s", name, errno == ENOENT ? "missing" : strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, whylen, "%s: not a regular file", name);
    close(fd);
    return -1;
  }
  ssize_t n;
  size_t len = 0;
  while (len < sizeof(text) && (n = read(fd, text + len, sizeof(text) - len)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      snprintf(why, whylen, "%s: %s", name, strerror(errno));
      close(fd);
      return -1;
    }
    len += (size_t)n;
  }
  close(fd);
  if (len == sizeof(text)) {
    snprintf(why, whylen, "%s: longer than %zu bytes: not a clock value", name, sizeof(text) - 1);
    return -1;
  }
  if (npkit_dump_parse_uint(text, len, v, msg, sizeof(msg)) != 0) {
    snprintf(why, whylen, "%s: %s", name, msg);
    return -1;
  }
  return 0;
}

void npkit_dump_read_clocks(int dfd, npkit_dump_rank *r) {
  npkit_dump_clock c = {0, 0, 0};
  char why[sizeof(r->clock_error)];
  r->clock_ok = 0;
  if (read_clock_value(dfd, "gpu_clock_rate_rank_%u", r->rank, &c.gpu_khz, why, sizeof(why)) != 0 ||
      read_clock_value(dfd, "cpu_clock_period_num_rank_%u", r->rank, &c.cpu_num, why, sizeof(why)) != 0 ||
      read_clock_value(dfd, "cpu_clock_period_den_rank_%u", r->rank, &c.cpu_den, why, sizeof(why)) != 0 ||
      npkit_dump_check_clock(&c, why, sizeof(why)) != 0) {
    snprintf(r->clock_error, sizeof(r->clock_error), "%s", why);
    return;
  }
  r->clock = c;
  r->clock_ok = 1;
}

/* Fills d->ranks from the sorted files and the clock-file ranks. */
static int build_ranks(npkit_dump *d, scan *s, int dfd) {
  if (s->n_clocks > 1) qsort(s->clocks, s->n_clocks, sizeof(*s->clocks), cmp_u32); /* NULL when none */
  size_t cap = s->n_clocks + 1;
  for (size_t i = 0; i < d->n_files; i++)
    if (i == 0 || d->files[i].rank != d->files[i - 1].rank) cap++;
  d->ranks = calloc(cap, sizeof(*d->ranks));
  if (d->ranks == NULL) return -1;
  size_t fi = 0, ci = 0;
  while (fi < d->n_files || ci < s->n_clocks) {
    uint32_t rank;
    if (fi < d->n_files && (ci >= s->n_clocks || d->files[fi].rank <= s->clocks[ci]))
      rank = d->files[fi].rank;
    else
      rank = s->clocks[ci];
    npkit_dump_rank *r = &d->ranks[d->n_ranks++];
    r->rank = rank;
    r->first_file = fi;
    while (fi < d->n_files && d->files[fi].rank == rank) {
      if (d->files[fi].source == NPKIT_SOURCE_GPU) {
        r->n_gpu++;
        r->gpu_bytes += d->files[fi].size;
      } else {
        r->n_cpu++;
        r->cpu_bytes += d->files[fi].size;
      }
      fi++;
    }
    r->n_files = fi - r->first_file;
    while (ci < s->n_clocks && s->clocks[ci] == rank) ci++;
    npkit_dump_read_clocks(dfd, r);
  }
  return 0;
}

int npkit_dump_open(const char *dir, npkit_dump **out, char *err, size_t errlen) {
  *out = NULL;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: %s", dir, strerror(errno));
    return NPKIT_DUMP_EIO;
  }
  int dup_fd = dup(dfd);
  DIR *dp = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (dp == NULL) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: %s", dir, strerror(errno));
    if (dup_fd >= 0) close(dup_fd);
    close(dfd);
    return NPKIT_DUMP_EIO;
  }
  npkit_dump *d = calloc(1, sizeof(*d));
  scan s;
  memset(&s, 0, sizeof(s));
  int rc = NPKIT_DUMP_ENOMEM;
  if (d == NULL || (d->dir = strdup(dir)) == NULL) goto fail;
  struct dirent *de;
  for (;;) {
    errno = 0;
    if ((de = readdir(dp)) == NULL) break;
    const char *nm = de->d_name;
    uint32_t rank, index;
    npkit_dump_source source;
    int m = npkit_dump_parse_event_name(nm, &rank, &source, &index);
    if (m == 0) {
      struct stat st;
      if (fstatat(dfd, nm, &st, 0) != 0 || !S_ISREG(st.st_mode)) {
        d->n_not_regular++;
        continue;
      }
      if (st.st_size == 0) d->n_empty_files++;
      d->total_bytes += (uint64_t)st.st_size;
      if (add_file(&s, rank, index, source, (uint64_t)st.st_size) != 0) goto fail;
      continue;
    }
    if (m == -2) {
      d->n_bad_names++;
      continue;
    }
    if ((m = match_one(nm, "gpu_clock_rate_rank_", &rank)) == -1 &&
        (m = match_one(nm, "cpu_clock_period_num_rank_", &rank)) == -1 &&
        (m = match_one(nm, "cpu_clock_period_den_rank_", &rank)) == -1)
      continue; /* not ours: the trace written here, notes, ... */
    if (m == -2) {
      d->n_bad_names++;
      continue;
    }
    if (add_clock(&s, rank) != 0) goto fail;
  }
  if (errno != 0) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: reading the directory: %s", dir, strerror(errno));
    rc = NPKIT_DUMP_EIO;
    goto fail_msg;
  }
  if (s.n_files == 0) {
    if (err != NULL && errlen > 0)
      snprintf(err, errlen,
               "%s: no NPKit dump files (gpu_events_rank_<r>_buf_<i>, cpu_events_rank_<r>_channel_<c>); "
               "NCCL writes them into NPKIT_DUMP_DIR in ncclCommDestroy",
               dir);
    rc = NPKIT_DUMP_ENOENT;
    goto fail_msg;
  }
  qsort(s.files, s.n_files, sizeof(*s.files), npkit_dump_file_cmp);
  d->files = s.files;
  d->n_files = s.n_files;
  s.files = NULL;
  if (build_ranks(d, &s, dfd) != 0) goto fail;
  free(s.clocks);
  closedir(dp);
  close(dfd);
  *out = d;
  return 0;
fail:
  if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: out of memory", dir);
fail_msg:
  free(s.files);
  free(s.clocks);
  npkit_dump_close(d);
  closedir(dp);
  close(dfd);
  return rc;
}

void npkit_dump_close(npkit_dump *d) {
  if (d == NULL) return;
  free(d->dir);
  free(d->files);
  free(d->ranks);
  free(d);
}

int npkit_dump_rank_listed(const uint32_t *ranks, size_t n, uint32_t rank) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ranks[mid] == rank) return 1;
    if (ranks[mid] < rank)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

NPKIT_SORTED_FIND(find_rank, npkit_dump_rank, uint32_t, rank)

const npkit_dump_rank *npkit_dump_find_rank(const npkit_dump *d, uint32_t rank) {
  return find_rank(d->ranks, d->n_ranks, rank);
}

void npkit_dump_file_label(char *out, size_t outlen, uint32_t rank, npkit_dump_source source, uint32_t index) {
  if (source == NPKIT_SOURCE_GPU)
    snprintf(out, outlen, "rank %u GPU buf %u (gpu_events_rank_%u_buf_%u)", rank, index, rank, index);
  else
    snprintf(out, outlen, "rank %u channel %u (cpu_events_rank_%u_channel_%u)", rank, index, rank, index);
}
