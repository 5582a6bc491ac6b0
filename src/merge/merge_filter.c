#include "merge_filter.h"

#include "crc32c.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "duration.h"
#include "trace_tracks.h"

#define COPY_BLOCK_EVENTS 4096
#define OUT_BUF (1u << 20)

/* ---- parsing ---- */

static int parse_int(const char *s, size_t n, int32_t *v) {
  if (n == 0 || n > 9) return -1;
  int32_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i])) return -1;
    x = x * 10 + (s[i] - '0');
  }
  *v = x;
  return 0;
}

int npkit_merge_parse_ranks(npkit_merge_filter *f, const char *s, char *err, size_t errlen) {
  const char *p = s;
  f->has_ranks = 1;
  f->n_ranges = 0;
  while (*p) {
    size_t n = strcspn(p, ",");
    const char *dash = memchr(p, '-', n);
    int32_t lo, hi;
    int bad = dash ? parse_int(p, (size_t)(dash - p), &lo) || parse_int(dash + 1, n - (size_t)(dash - p) - 1, &hi)
                   : parse_int(p, n, &lo);
    if (!dash) hi = lo;
    if (bad || lo > hi) {
      snprintf(err, errlen, "--ranks takes ranks and ranges such as 0-3,8, not '%s'", s);
      return -1;
    }
    if (f->n_ranges == NPKIT_MERGE_MAX_RANK_RANGES) {
      snprintf(err, errlen, "--ranks: at most %d ranges", NPKIT_MERGE_MAX_RANK_RANGES);
      return -1;
    }
    f->rank_lo[f->n_ranges] = lo;
    f->rank_hi[f->n_ranges++] = hi;
    p += n;
    if (*p == ',') p++;
  }
  if (f->n_ranges == 0) {
    snprintf(err, errlen, "--ranks needs at least one rank");
    return -1;
  }
  return 0;
}

int npkit_merge_parse_ops(npkit_merge_filter *f, const char *s, char *err, size_t errlen) {
  const char *p = s;
  f->has_ops = 1;
  memset(f->op, 0, sizeof(f->op));
  int any = 0;
  while (*p) {
    char name[64];
    size_t n = strcspn(p, ",");
    if (n == 0 || n >= sizeof(name)) goto bad;
    memcpy(name, p, n);
    name[n] = '\0';
    npkit_fn fn = npkit_fn_from_name(name);
    if (fn != NPKIT_FN_NONE) {
      f->op[fn] = 1;
    } else {
      int cls = npkit_class_from_name(name);
      if (cls < 0) {
        snprintf(err, errlen, "--ops: '%s' is neither an NCCL function (see 'npkit api') nor a class "
                 "(coll, p2p, group, comm, mem, query, misc)", name);
        return -1;
      }
      for (unsigned k = 1; k < NPKIT_FN_COUNT; k++)
        if ((int)npkit_fn_class_of(k) == cls) f->op[k] = 1;
    }
    any = 1;
    p += n;
    if (*p == ',') p++;
  }
  if (any) return 0;
bad:
  snprintf(err, errlen, "--ops takes names separated by commas, such as AllReduce,Send, not '%s'", s);
  return -1;
}

static int window_end(const char *s, size_t n, int64_t open, int64_t *out) {
  char buf[64];
  double ns;
  if (n == 0) {
    *out = open;
    return 0;
  }
  if (n >= sizeof(buf)) return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (npkit_parse_duration(buf, "s", &ns) != 0 || ns < -9.2e18 || ns > 9.2e18) return -1;
  *out = (int64_t)ns;
  return 0;
}

int npkit_merge_parse_window(npkit_merge_filter *f, const char *s, char *err, size_t errlen) {
  const char *colon = strchr(s, ':');
  if (colon == NULL || strchr(colon + 1, ':') != NULL ||
      window_end(s, (size_t)(colon - s), INT64_MIN, &f->window_start_ns) != 0 ||
      window_end(colon + 1, strlen(colon + 1), INT64_MAX, &f->window_end_ns) != 0 ||
      f->window_start_ns > f->window_end_ns) {
    snprintf(err, errlen, "--window takes START:END in trace time, such as 1.5s:2s, 200ms: or :10ms, not '%s'", s);
    return -1;
  }
  f->has_window = 1;
  return 0;
}

int npkit_merge_rank_selected(const npkit_merge_filter *f, int32_t rank) {
  if (!f->has_ranks) return 1;
  for (size_t i = 0; i < f->n_ranges; i++)
    if (rank >= f->rank_lo[i] && rank <= f->rank_hi[i]) return 1;
  return 0;
}

int npkit_merge_filters_events(const npkit_merge_filter *f) {
  return f->has_ops || f->has_window;
}

/* ---- the filtered copy ---- */

typedef struct out_file {
  int fd;
  unsigned char *buf;
  size_t len;
  int err;  /* first errno */
  int checksums; /* the copy keeps its source's version: from 2 on, every block gets its CHECK */
  uint32_t crc;  /* of the block being written */
} out_file;

static void out_flush(out_file *o) {
  size_t off = 0;
  while (o->err == 0 && off < o->len) {
    ssize_t k = write(o->fd, o->buf + off, o->len - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) o->err = k < 0 ? errno : EIO;
    else off += (size_t)k;
  }
  o->len = 0;
}

static void out_put(out_file *o, const void *p, size_t n) {
  const unsigned char *s = p;
  while (n > 0) {
    if (o->len == OUT_BUF) out_flush(o);
    size_t k = OUT_BUF - o->len < n ? OUT_BUF - o->len : n;
    memcpy(o->buf + o->len, s, k);
    o->len += k;
    s += k;
    n -= k;
  }
}

/* A block: its header, then its payload through out_payload, then out_check. */
static void out_block(out_file *o, uint16_t type, uint32_t count, uint32_t size) {
  npkit_block_header bh = {NPKIT_BLOCK_MAGIC, type, 0, count, size};
  out_put(o, &bh, sizeof(bh));
  o->crc = npkit_crc32c(0, &bh, sizeof(bh));
}

static void out_payload(out_file *o, const void *p, size_t n) {
  out_put(o, p, n);
  o->crc = npkit_crc32c(o->crc, p, n);
}

static void out_check(out_file *o) {
  if (!o->checksums) return;
  struct {
    npkit_block_header bh;
    npkit_check_rec rec;
  } check = {{NPKIT_BLOCK_MAGIC, NPKIT_BLOCK_CHECK, 0, 1, sizeof(npkit_check_rec)}, {o->crc, 0}};
  out_put(o, &check, sizeof(check));
}

/* NCCL calls, and GPU activity and plugin tasks attributed to a call, follow the operation
 * filter; the rest (compute kernels, channel and proxy events, marks) passes it. */
static int op_selected(const npkit_merge_filter *f, const npkit_event *ev) {
  if (!f->has_ops) return 1;
  int attributed = ev->kind == NPKIT_EV_API ||
                   ((ev->kind == NPKIT_EV_CUPTI_KERNEL || ev->kind == NPKIT_EV_CUPTI_MEMCPY ||
                     ev->kind == NPKIT_EV_CUPTI_MEMSET || ev->kind == NPKIT_EV_PLUGIN_TASK) &&
                    ev->func != NPKIT_FN_NONE);
  return !attributed || (ev->func < NPKIT_FN_COUNT && f->op[ev->func]);
}

static int keep(const npkit_merge_filter *f, const npkit_event *ev, int64_t offset_ns, uint64_t base_ns) {
  if (!op_selected(f, ev)) return 0;
  if (f->has_window) {
    int64_t s = npkit_trace_time(base_ns, offset_ns, ev->start_ns);
    int64_t e = npkit_trace_time(base_ns, offset_ns, ev->end_ns);
    if (e < f->window_start_ns || s > f->window_end_ns) return 0;
  }
  return 1;
}

/* pread all of n bytes at off. */

/* Copies the events of one EVENTS block that pass the filter, as whole records of the writer's
 * size, into a block of their own. */
static int copy_events(const npkit_log_reader *r, out_file *o, const npkit_block_header *bh, uint64_t at,
                       unsigned char *in, unsigned char *keep_buf, const npkit_merge_filter *f, int64_t offset_ns,
                       uint64_t base_ns, uint64_t *kept) {
  size_t rs = r->record_size, per = COPY_BLOCK_EVENTS, n = 0;
  uint32_t left = bh->count;
  while (left > 0) {
    size_t k = left < per ? left : per;
    if (npkit_read_at(r->fd, in, k * rs, at) != 0) return -1;
    at += (uint64_t)(k * rs);
    left -= (uint32_t)k;
    for (size_t i = 0; i < k; i++) {
      npkit_event ev;
      memcpy(&ev, in + i * rs, sizeof(ev));
      if (!keep(f, &ev, offset_ns, base_ns)) continue;
      memcpy(keep_buf + n * rs, in + i * rs, rs);
      if (++n == per) {
        out_block(o, NPKIT_BLOCK_EVENTS, (uint32_t)n, (uint32_t)(n * rs));
        out_payload(o, keep_buf, n * rs);
        out_check(o);
        *kept += n;
        n = 0;
      }
    }
  }
  if (n > 0) {
    out_block(o, NPKIT_BLOCK_EVENTS, (uint32_t)n, (uint32_t)(n * rs));
    out_payload(o, keep_buf, n * rs);
    out_check(o);
    *kept += n;
  }
  return 0;
}

int npkit_merge_filtered_copy(npkit_log_reader *r, const npkit_merge_filter *f, int64_t offset_ns, uint64_t base_ns,
                              int fd, uint64_t *kept, char *err, size_t errlen) {
  out_file o = {.fd = fd, .checksums = r->checksums};
  size_t chunk = COPY_BLOCK_EVENTS * (size_t)r->record_size;
  unsigned char *in = malloc(chunk), *keep_buf = malloc(chunk);
  o.buf = malloc(OUT_BUF);
  *kept = 0;
  int rc = 0;
  if (in == NULL || keep_buf == NULL || o.buf == NULL) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
    goto out;
  }
  /* The header and every intact block other than EVENTS are copied as they are (block types this
   * build does not know included), each with a fresh checksum; corrupt blocks stay behind. */
  uint64_t at = 0;
  unsigned char raw[4096];
  while (at < r->header_size) {
    size_t k = r->header_size - at < sizeof(raw) ? (size_t)(r->header_size - at) : sizeof(raw);
    if (npkit_read_at(r->fd, raw, k, at) != 0) goto changed;
    out_put(&o, raw, k);
    at += k;
  }
  npkit_block_header bh;
  uint64_t pos = 0, payload;
  int k;
  while ((k = npkit_reader_next_block(r, &pos, &bh, &payload)) == 1) {
    if (bh.type == NPKIT_BLOCK_EVENTS) {
      if ((uint64_t)bh.count * r->record_size != bh.size ||
          copy_events(r, &o, &bh, payload, in, keep_buf, f, offset_ns, base_ns, kept) != 0)
        goto changed;
      continue;
    }
    out_block(&o, bh.type, bh.count, bh.size);
    for (uint64_t done = 0; done < bh.size;) {
      size_t n = bh.size - done < sizeof(raw) ? (size_t)(bh.size - done) : sizeof(raw);
      if (npkit_read_at(r->fd, raw, n, payload + done) != 0) goto changed;
      out_payload(&o, raw, n);
      done += n;
    }
    out_check(&o);
  }
  if (k < 0) goto changed;
  out_flush(&o);
  if (o.err != 0) {
    snprintf(err, errlen, "writing a filtered copy of %s: %s", r->path, strerror(o.err));
    rc = -1;
  }
  goto out;
changed:
  snprintf(err, errlen, "%s: the log changed while it was read", r->path);
  rc = -1;
out:
  free(in);
  free(keep_buf);
  free(o.buf);
  return rc;
}
