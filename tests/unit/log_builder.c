#include "log_builder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

struct npkit_lb {
  FILE *fp;
  uint64_t offset;
  uint32_t record_size;
  int failed;
  int checksums;  /* version 2 and later, unless turned off: a CHECK block after every block */
  uint32_t crc;   /* of the block being written */
  npkit_lb_block *blocks;
  size_t n_blocks, cap_blocks;
};

void npkit_lb_defaults(npkit_lb_options *o) {
  memset(o, 0, sizeof(*o));
  o->clock_base_ns = 1764671234567890123ull;
  o->mono_base_ns = 5000000000ull;
  o->pid = 4242;
  o->rank = 3;
  o->world_size = 4;
  o->local_rank = 1;
  o->nccl_header_version = 22809;
  o->host = "node1";
  o->launcher = "ompi";
  o->library_version = "0.1.0";
  o->version = NPKIT_LOG_VERSION;
  o->header_size = sizeof(npkit_log_header);
  o->record_size = sizeof(npkit_event);
  o->endian = NPKIT_LOG_ENDIAN_TAG;
}

static void put(npkit_lb *b, const void *p, size_t n) {
  if (n > 0 && fwrite(p, 1, n, b->fp) != n) b->failed = 1;
  b->offset += n;
  if (n > 0) b->crc = npkit_crc32c(b->crc, p, n);
}

static void put_zeros(npkit_lb *b, size_t n) {
  static const unsigned char zeros[256];
  while (n > 0) {
    size_t k = n < sizeof(zeros) ? n : sizeof(zeros);
    put(b, zeros, k);
    n -= k;
  }
}

static void copy_str(char *dst, size_t len, const char *src) {
  memset(dst, 0, len);
  if (src != NULL) strncpy(dst, src, len - 1);
}

npkit_lb *npkit_lb_create(const char *path, const npkit_lb_options *o) {
  npkit_lb *b = calloc(1, sizeof(*b));
  if (b == NULL) return NULL;
  b->fp = fopen(path, "wb");
  if (b->fp == NULL) {
    free(b);
    return NULL;
  }
  setvbuf(b->fp, NULL, _IOFBF, 1 << 20);
  b->record_size = o->record_size;
  b->checksums = o->version >= 2;
  npkit_log_header h;
  memset(&h, 0, sizeof(h));
  memcpy(h.magic, NPKIT_LOG_MAGIC, 8);
  h.version = o->version;
  h.header_size = o->header_size;
  h.record_size = o->record_size;
  h.endian = o->endian;
  h.clock_base_ns = o->clock_base_ns;
  h.mono_base_ns = o->mono_base_ns;
  h.pid = o->pid;
  h.rank = o->rank;
  h.world_size = o->world_size;
  h.local_rank = o->local_rank;
  h.nccl_header_version = o->nccl_header_version;
  copy_str(h.host, sizeof(h.host), o->host);
  copy_str(h.launcher, sizeof(h.launcher), o->launcher);
  copy_str(h.library_version, sizeof(h.library_version), o->library_version);
  put(b, &h, sizeof(h));
  if (o->header_size > sizeof(h)) put_zeros(b, o->header_size - sizeof(h));
  return b;
}

int npkit_lb_close(npkit_lb *b) {
  int rc = b->failed ? -1 : 0;
  if (fclose(b->fp) != 0) rc = -1;
  free(b->blocks);
  free(b);
  return rc;
}

uint64_t npkit_lb_offset(const npkit_lb *b) { return b->offset; }

const npkit_lb_block *npkit_lb_blocks(const npkit_lb *b, size_t *n) {
  *n = b->n_blocks;
  return b->blocks;
}

static void begin_block(npkit_lb *b, uint16_t type, uint32_t count, uint32_t size) {
  if (b->n_blocks == b->cap_blocks) {
    size_t cap = b->cap_blocks ? 2 * b->cap_blocks : 64;
    npkit_lb_block *nb = realloc(b->blocks, cap * sizeof(*nb));
    if (nb == NULL) {
      b->failed = 1;
    } else {
      b->blocks = nb;
      b->cap_blocks = cap;
    }
  }
  if (b->n_blocks < b->cap_blocks) {
    npkit_lb_block *blk = &b->blocks[b->n_blocks++];
    blk->type = type;
    blk->offset = b->offset;
    blk->end = b->offset + sizeof(npkit_block_header) + size;
  }
  npkit_block_header bh = {NPKIT_BLOCK_MAGIC, type, 0, count, size};
  b->crc = 0;
  put(b, &bh, sizeof(bh));
}

/* After the payload: the block's CHECK block, which then belongs to the block (its `end`). */
static int end_block(npkit_lb *b) {
  if (b->checksums) {
    struct {
      npkit_block_header bh;
      npkit_check_rec rec;
    } check = {{NPKIT_BLOCK_MAGIC, NPKIT_BLOCK_CHECK, 0, 1, sizeof(npkit_check_rec)}, {b->crc, 0}};
    put(b, &check, sizeof(check));
    if (b->n_blocks > 0) b->blocks[b->n_blocks - 1].end = b->offset;
  }
  return b->failed ? -1 : 0;
}

void npkit_lb_set_checksums(npkit_lb *b, int on) { b->checksums = on; }

static uint32_t pad8(uint64_t n) { return (uint32_t)((8 - n % 8) % 8); }

int npkit_lb_raw_block(npkit_lb *b, uint16_t type, uint32_t count, const void *payload, uint32_t size) {
  begin_block(b, type, count, size);
  if (payload != NULL)
    put(b, payload, size);
  else
    put_zeros(b, size);
  return end_block(b);
}

int npkit_lb_events(npkit_lb *b, const npkit_event *ev, size_t n) {
  begin_block(b, NPKIT_BLOCK_EVENTS, (uint32_t)n, (uint32_t)(n * b->record_size));
  if (b->record_size == sizeof(npkit_event)) {
    put(b, ev, n * sizeof(*ev));
  } else {
    for (size_t i = 0; i < n; i++) {
      put(b, &ev[i], sizeof(*ev));
      put_zeros(b, b->record_size - sizeof(*ev));
    }
  }
  return end_block(b);
}

static int records(npkit_lb *b, uint16_t type, const void *recs, size_t size, size_t n) {
  return npkit_lb_raw_block(b, type, (uint32_t)n, recs, (uint32_t)(size * n));
}

int npkit_lb_comms(npkit_lb *b, const npkit_comm_rec *c, size_t n) {
  return records(b, NPKIT_BLOCK_COMM, c, sizeof(*c), n);
}
int npkit_lb_threads(npkit_lb *b, const npkit_thread_rec *t, size_t n) {
  return records(b, NPKIT_BLOCK_THREAD, t, sizeof(*t), n);
}
int npkit_lb_process(npkit_lb *b, const npkit_process_rec *p) { return records(b, NPKIT_BLOCK_PROCESS, p, sizeof(*p), 1); }
int npkit_lb_counters(npkit_lb *b, const npkit_counter_rec *c, size_t n) {
  return records(b, NPKIT_BLOCK_COUNTERS, c, sizeof(*c), n);
}
int npkit_lb_end(npkit_lb *b, const npkit_end_rec *e) { return records(b, NPKIT_BLOCK_END, e, sizeof(*e), 1); }

int npkit_lb_strings(npkit_lb *b, const uint32_t *ids, const char *const *texts, const size_t *lengths, size_t n) {
  uint64_t size = 0;
  for (size_t i = 0; i < n; i++) size += sizeof(npkit_string_rec) + lengths[i] + pad8(lengths[i]);
  begin_block(b, NPKIT_BLOCK_STRING, (uint32_t)n, (uint32_t)size);
  for (size_t i = 0; i < n; i++) {
    npkit_string_rec rec = {ids[i], (uint32_t)lengths[i]};
    put(b, &rec, sizeof(rec));
    put(b, texts[i], lengths[i]);
    put_zeros(b, pad8(lengths[i]));
  }
  return end_block(b);
}

int npkit_lb_note(npkit_lb *b, uint64_t time_ns, uint32_t level, const char *text, size_t len) {
  npkit_note_rec rec = {time_ns, level, (uint32_t)len};
  begin_block(b, NPKIT_BLOCK_NOTE, 1, (uint32_t)(sizeof(rec) + len + pad8(len)));
  put(b, &rec, sizeof(rec));
  put(b, text, len);
  put_zeros(b, pad8(len));
  return end_block(b);
}

int npkit_lb_machine(npkit_lb *b, const char *text, size_t len) {
  begin_block(b, NPKIT_BLOCK_MACHINE, 0, (uint32_t)(len + pad8(len)));
  put(b, text, len);
  put_zeros(b, pad8(len));
  return end_block(b);
}

npkit_event npkit_lb_api_event(unsigned fn, uint32_t thread, uint64_t start_ns, uint64_t end_ns) {
  npkit_event ev;
  memset(&ev, 0, sizeof(ev));
  ev.start_ns = start_ns;
  ev.end_ns = end_ns;
  ev.kind = NPKIT_EV_API;
  ev.func = (uint16_t)fn;
  ev.thread = thread;
  ev.u.api.seq = NPKIT_NO_SEQ;
  ev.u.api.peer = -1;
  ev.u.api.datatype = -1;
  ev.u.api.redop = -1;
  return ev;
}

char *npkit_lb_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = n < 0 ? NULL : malloc((size_t)n + 1);
  if (b != NULL && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (b != NULL) b[n] = '\0';
  fclose(f);
  if (len != NULL) *len = b != NULL ? (size_t)n : 0;
  return b;
}
