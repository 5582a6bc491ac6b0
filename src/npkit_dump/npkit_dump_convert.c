/* Streaming conversion of NPKit dump files into paired slices (npkit_dump.h). */
#include "npkit_dump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npkit_dump_diag.h"
#include "npkit_dump_pair.h"

#define DEFAULT_BLOCK (1u << 20)
#define PRESCAN_BYTES (64u << 10)

typedef struct conv {
  const npkit_dump_event_table *tab;
  const npkit_dump_callbacks *cb;
  npkit_dump_counters *c;
  int stopped, nomem;

  /* the buffer being read */
  uint32_t rank, index;
  uint8_t source;
  npkit_dump_clock clock;
  uint64_t anchor; /* GPU tick shown as time 0 for unaligned events; UINT64_MAX: not known yet */

  /* GPU time base, as NPKit's converter keeps it while walking a buffer */
  int have_cpu_base, have_gpu_base;
  int64_t cpu_base_ns;
  uint64_t gpu_base_ticks;
  int have_prev;
  int64_t prev_ns;
  uint8_t prev_flags;
  uint64_t buf_unaligned, buf_sync_cpu, buf_sync_gpu;
  uint64_t buf_bad_sync; /* TIME_SYNC_CPU events whose value did not convert */

  uint64_t seq[NPKIT_DUMP_NUM_IDS];
  npkit_kind_stack stacks[NPKIT_DUMP_NUM_IDS];
  uint8_t open_listed[NPKIT_DUMP_NUM_IDS];
  uint8_t open_kinds[NPKIT_DUMP_NUM_IDS];
  unsigned n_open_kinds;
  npkit_dump_lanes lanes;
  npkit_slot_table slots;

  npkit_dump_diags dg;
} conv;

static void diag(conv *v, npkit_dump_severity sev, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void diag(conv *v, npkit_dump_severity sev, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (sev == NPKIT_DIAG_ERROR)
    v->c->errors++;
  else
    v->c->warnings++;
  if (v->cb->diag != NULL) v->cb->diag(v->cb->user, sev, msg);
}

static void emit_diag(void *ctx, npkit_dump_severity sev, const char *msg) { diag(ctx, sev, "%s", msg); }

static void final_diags(conv *v, const npkit_dump_counters *start) {
  npkit_dump_diags_report(&v->dg, start, v->c, v->tab, emit_diag, v);
}

/* ---- slices ---- */

static void emit(conv *v, npkit_dump_slice *s) {
  if (v->stopped) return;
  s->rank = v->rank;
  s->buffer = v->index;
  s->source = v->source;
  if (v->cb->slice != NULL && v->cb->slice(v->cb->user, s) != 0) v->stopped = 1;
}

static void emit_single(conv *v, npkit_dump_slice_type type, uint8_t id, int64_t ns, uint32_t size, uint32_t rsvd,
                        uint8_t flags) {
  npkit_dump_slice s;
  memset(&s, 0, sizeof(s));
  s.type = (uint8_t)type;
  s.id = id;
  s.flags = flags;
  s.name = v->tab->name[id];
  s.name_len = strlen(s.name);
  s.start_ns = s.end_ns = ns;
  s.size = size;
  s.rsvd = rsvd;
  if (type == NPKIT_SLICE_UNPAIRED_ENTRY) {
    v->c->unpaired_entries++;
  } else if (type == NPKIT_SLICE_UNPAIRED_EXIT) {
    v->c->unpaired_exits++;
  } else {
    v->c->point_events++;
  }
  emit(v, &s);
}

static void emit_complete(conv *v, uint8_t kind, const npkit_open_entry *in, int64_t end_ns, uint32_t size,
                          uint32_t rsvd, uint32_t lane) {
  npkit_dump_slice s;
  s.lane = lane;
  s.type = NPKIT_SLICE_COMPLETE;
  s.flags = in->flags;
  s.id = kind;
  s.name = v->tab->name[kind];
  s.name_len = v->tab->kind_len[kind];
  s.start_ns = in->ns;
  s.end_ns = end_ns;
  s.size = size;
  s.rsvd = rsvd;
  s.entry_size = in->size;
  s.entry_rsvd = in->rsvd;
  s.seq = v->seq[kind]++;
  v->c->slices++;
  emit(v, &s);
}

/* ---- GPU buffers ---- */

/* Every ENTRY still open becomes unpaired: at a new time base (a new kernel) and at the end. */
static void gpu_flush_open(conv *v) {
  for (unsigned i = 0; i < v->n_open_kinds; i++) {
    uint8_t k = v->open_kinds[i];
    npkit_open_entry e;
    while (npkit_kind_pop_oldest(&v->stacks[k], &e))
      emit_single(v, NPKIT_SLICE_UNPAIRED_ENTRY, k, e.ns, e.size, e.rsvd, e.flags);
    v->open_listed[k] = 0;
  }
  v->n_open_kinds = 0;
}

static void check_order(conv *v, int64_t ns, uint8_t flags) {
  if (v->have_prev && flags == v->prev_flags && ns < v->prev_ns) v->c->out_of_order++;
  v->have_prev = 1;
  v->prev_ns = ns;
  v->prev_flags = flags;
}

/* Ids the table does not know, or knows as invalid: counted (the unknown ones also for the
 * diagnostics) and not converted.  Returns 1 for those. */
static int not_an_event(conv *v, uint8_t id) {
  switch (v->tab->role[id]) {
  case NPKIT_ROLE_UNKNOWN:
    v->c->unknown_ids++;
    v->dg.unknown_bits[id / 64] |= 1ull << (id % 64);
    return 1;
  case NPKIT_ROLE_INVALID:
    v->c->invalid_events++;
    return 1;
  default:
    return 0;
  }
}

static void gpu_event(conv *v, uint8_t id, uint32_t size, uint32_t rsvd, uint64_t ts) {
  const npkit_dump_event_table *t = v->tab;
  int64_t ns;
  uint8_t flags = 0;
  if (not_an_event(v, id)) return;
  switch (t->role[id]) {
  case NPKIT_ROLE_TIME_SYNC_CPU:
    v->c->time_sync_cpu++;
    v->buf_sync_cpu++;
    gpu_flush_open(v);
    npkit_dump_lanes_reset(&v->lanes);
    if (npkit_dump_cpu_ns(&v->clock, ts, &ns) != 0) {
      v->c->bad_times++;
      v->buf_bad_sync++;
      v->have_cpu_base = v->have_gpu_base = 0; /* better unaligned than on a stale base */
      return;
    }
    v->cpu_base_ns = ns;
    v->have_cpu_base = 1;
    v->have_gpu_base = 0;
    return;
  case NPKIT_ROLE_TIME_SYNC_GPU:
    v->c->time_sync_gpu++;
    v->buf_sync_gpu++;
    if (!v->have_gpu_base) {
      v->gpu_base_ticks = ts;
      v->have_gpu_base = 1;
    }
    return;
  default:
    break;
  }
  if (!v->have_gpu_base) {
    v->gpu_base_ticks = ts;
    v->have_gpu_base = 1;
  }
  int rc;
  if (v->have_cpu_base) {
    rc = npkit_dump_gpu_ns(&v->clock, v->cpu_base_ns, v->gpu_base_ticks, ts, &ns);
  } else {
    if (v->anchor == UINT64_MAX) v->anchor = ts;
    flags = NPKIT_SLICE_UNALIGNED;
    rc = npkit_dump_gpu_ns(&v->clock, 0, v->anchor, ts, &ns);
    v->c->unaligned_events++;
    v->buf_unaligned++;
  }
  if (rc != 0) {
    v->c->bad_times++;
    return;
  }
  check_order(v, ns, flags);
  switch (t->role[id]) {
  case NPKIT_ROLE_ENTRY: {
    npkit_open_entry e = {ns, size, rsvd, flags}, old;
    int r = npkit_kind_push(&v->stacks[id], &e, &old);
    if (r < 0) {
      v->nomem = 1;
      return;
    }
    if (r > 0) {
      v->c->stack_overflows++;
      emit_single(v, NPKIT_SLICE_UNPAIRED_ENTRY, id, old.ns, old.size, old.rsvd, old.flags);
    }
    if (!v->open_listed[id]) {
      v->open_listed[id] = 1;
      v->open_kinds[v->n_open_kinds++] = id;
    }
    return;
  }
  case NPKIT_ROLE_EXIT: {
    uint8_t k = t->kind[id];
    npkit_open_entry e;
    if (t->role[k] != NPKIT_ROLE_ENTRY || !npkit_kind_pop(&v->stacks[k], &e)) {
      emit_single(v, NPKIT_SLICE_UNPAIRED_EXIT, id, ns, size, rsvd, flags);
      return;
    }
    if (ns < e.ns || e.flags != flags) { /* a slice cannot end before it starts */
      emit_single(v, NPKIT_SLICE_UNPAIRED_ENTRY, k, e.ns, e.size, e.rsvd, e.flags);
      emit_single(v, NPKIT_SLICE_UNPAIRED_EXIT, id, ns, size, rsvd, flags);
      return;
    }
    uint32_t lane;
    if (npkit_dump_lanes_place(&v->lanes, e.ns, ns, &lane) != 0) {
      v->nomem = 1;
      return;
    }
    emit_complete(v, k, &e, ns, size, rsvd, lane);
    return;
  }
  default:
    emit_single(v, NPKIT_SLICE_POINT, id, ns, size, rsvd, flags);
    return;
  }
}

/* ---- CPU channels ---- */

static void cpu_event(conv *v, uint8_t id, uint32_t size, uint32_t slot, uint64_t ts) {
  const npkit_dump_event_table *t = v->tab;
  int64_t ns;
  if (not_an_event(v, id)) return;
  switch (t->role[id]) {
  case NPKIT_ROLE_TIME_SYNC_CPU: /* meaningless on the host side: host times are already absolute */
    v->c->time_sync_cpu++;
    return;
  case NPKIT_ROLE_TIME_SYNC_GPU:
    v->c->time_sync_gpu++;
    return;
  default:
    break;
  }
  if (npkit_dump_cpu_ns(&v->clock, ts, &ns) != 0) {
    v->c->bad_times++;
    return;
  }
  check_order(v, ns, 0);
  switch (t->role[id]) {
  case NPKIT_ROLE_ENTRY: {
    uint32_t key = slot << 8 | id;
    npkit_slot_entry *e = npkit_slot_find(&v->slots, key);
    if (e != NULL) { /* the same slot opened again: the first one never closed */
      emit_single(v, NPKIT_SLICE_UNPAIRED_ENTRY, id, e->ns, e->size, e->rsvd, 0);
      npkit_slot_remove(&v->slots, e);
    }
    int full;
    e = npkit_slot_insert(&v->slots, key, &full);
    if (e == NULL) {
      if (!full) {
        v->nomem = 1;
        return;
      }
      v->c->stack_overflows++;
      emit_single(v, NPKIT_SLICE_UNPAIRED_ENTRY, id, ns, size, slot, 0);
      return;
    }
    e->ns = ns;
    e->size = size;
    e->rsvd = slot;
    return;
  }
  case NPKIT_ROLE_EXIT: {
    uint8_t k = t->kind[id];
    npkit_slot_entry *e = t->role[k] == NPKIT_ROLE_ENTRY ? npkit_slot_find(&v->slots, slot << 8 | k) : NULL;
    if (e == NULL) {
      emit_single(v, NPKIT_SLICE_UNPAIRED_EXIT, id, ns, size, slot, 0);
      return;
    }
    npkit_open_entry in = {e->ns, e->size, e->rsvd, 0};
    uint32_t lane = e->lane;
    npkit_slot_remove(&v->slots, e);
    if (ns < in.ns) {
      emit_single(v, NPKIT_SLICE_UNPAIRED_ENTRY, k, in.ns, in.size, in.rsvd, 0);
      emit_single(v, NPKIT_SLICE_UNPAIRED_EXIT, id, ns, size, slot, 0);
      return;
    }
    emit_complete(v, k, &in, ns, size, slot, lane);
    return;
  }
  default:
    emit_single(v, NPKIT_SLICE_POINT, id, ns, size, slot, 0);
    return;
  }
}

static void cpu_flush_open(conv *v) {
  npkit_slot_table *st = &v->slots;
  for (uint32_t i = 0; i < st->cap && st->count > 0; i++) {
    npkit_slot_entry *e = &st->v[i];
    if (!e->used) continue;
    emit_single(v, NPKIT_SLICE_UNPAIRED_ENTRY, (uint8_t)(e->key & 0xff), e->ns, e->size, e->rsvd, 0);
  }
  npkit_slot_clear(st);
}

/* ---- buffers ---- */

static uint64_t le64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static void begin_buffer(conv *v, uint32_t rank, npkit_dump_source source, uint32_t index) {
  v->rank = rank;
  v->source = (uint8_t)source;
  v->index = index;
  v->have_cpu_base = v->have_gpu_base = v->have_prev = 0;
  v->buf_unaligned = v->buf_sync_cpu = v->buf_sync_gpu = v->buf_bad_sync = 0;
  memset(v->seq, 0, sizeof(v->seq));
  npkit_dump_lanes_reset(&v->lanes);
}

static void end_buffer(conv *v) {
  if (v->source == NPKIT_SOURCE_GPU) {
    gpu_flush_open(v);
    /* why its events are unaligned: no TIME_SYNC_CPU at all (counted as a good one or not), one
     * whose value does not convert, or events before the first good one */
    if (v->buf_unaligned > 0 && v->buf_bad_sync > 0) {
      v->dg.bad_sync_buffers++;
      v->dg.bad_sync_events += v->buf_unaligned;
      npkit_rank_set_add(&v->dg.bad_sync, v->rank);
    } else if (v->buf_unaligned > 0 && v->buf_sync_cpu > 0) {
      v->dg.late_sync_buffers++;
      v->dg.late_sync_events += v->buf_unaligned;
      npkit_rank_set_add(&v->dg.late_sync, v->rank);
    } else if (v->buf_unaligned > 0) {
      v->dg.unaligned_buffers++;
      v->dg.unaligned_events += v->buf_unaligned;
      npkit_rank_set_add(&v->dg.unaligned, v->rank);
    }
    if (v->buf_sync_cpu > 0 && v->buf_sync_gpu == 0) {
      v->dg.no_sync_gpu_buffers++;
      npkit_rank_set_add(&v->dg.no_sync_gpu, v->rank);
    }
  } else {
    cpu_flush_open(v);
  }
}

/* n is a multiple of 16. */
static void feed(conv *v, const unsigned char *p, size_t n) {
  v->c->events += n / NPKIT_DUMP_EVENT_BYTES;
  v->c->bytes += n;
  if (v->source == NPKIT_SOURCE_GPU) {
    for (size_t i = 0; i < n && !v->stopped && !v->nomem; i += NPKIT_DUMP_EVENT_BYTES) {
      uint64_t lo = le64(p + i);
      gpu_event(v, (uint8_t)lo, (uint32_t)(lo >> 8), (uint32_t)(lo >> 40), le64(p + i + 8));
    }
  } else {
    for (size_t i = 0; i < n && !v->stopped && !v->nomem; i += NPKIT_DUMP_EVENT_BYTES) {
      uint64_t lo = le64(p + i);
      cpu_event(v, (uint8_t)lo, (uint32_t)(lo >> 8), (uint32_t)(lo >> 40), le64(p + i + 8));
    }
  }
}

static void conv_free(conv *v) {
  for (int k = 0; k < NPKIT_DUMP_NUM_IDS; k++) npkit_kind_free(&v->stacks[k]);
  npkit_dump_lanes_free(&v->lanes);
  npkit_slot_free(&v->slots);
  free(v);
}

static int finish_status(conv *v, char *err, size_t errlen) {
  if (v->nomem) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "out of memory while pairing events");
    return NPKIT_DUMP_ENOMEM;
  }
  if (v->stopped) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "conversion stopped by its output");
    return NPKIT_DUMP_ESTOPPED;
  }
  return 0;
}

static void file_path(char *out, size_t outlen, const char *dir, const npkit_dump_file *f) {
  if (f->source == NPKIT_SOURCE_GPU)
    snprintf(out, outlen, "%s/gpu_events_rank_%u_buf_%u", dir, f->rank, f->index);
  else
    snprintf(out, outlen, "%s/cpu_events_rank_%u_channel_%u", dir, f->rank, f->index);
}

static void convert_file(conv *v, const npkit_dump *d, const npkit_dump_file *f, unsigned char *buf, size_t cap) {
  char path[4096], label[128];
  file_path(path, sizeof(path), d->dir, f);
  npkit_dump_file_label(label, sizeof(label), f->rank, (npkit_dump_source)f->source, f->index);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    v->c->unreadable_files++;
    diag(v, NPKIT_DIAG_ERROR, "%s: cannot be opened: %s", label, strerror(errno));
    return;
  }
#ifdef POSIX_FADV_SEQUENTIAL
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  begin_buffer(v, f->rank, (npkit_dump_source)f->source, f->index);
  v->c->files++;
  size_t carry = 0;
  uint64_t total = 0;
  while (!v->stopped && !v->nomem) {
    ssize_t n = read(fd, buf + carry, cap - carry);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      v->c->unreadable_files++;
      diag(v, NPKIT_DIAG_ERROR, "%s: read error after %llu bytes: %s", label, (unsigned long long)total,
           strerror(errno));
      break;
    }
    if (n == 0) break;
    total += (uint64_t)n;
    size_t have = carry + (size_t)n, whole = have - have % NPKIT_DUMP_EVENT_BYTES;
    feed(v, buf, whole);
    carry = have - whole;
    memmove(buf, buf + whole, carry);
  }
  close(fd);
  if (carry != 0 && !v->stopped && !v->nomem) {
    v->c->truncated_files++;
    if (v->dg.truncated_example[0] == '\0')
      snprintf(v->dg.truncated_example, sizeof(v->dg.truncated_example), "%s, %llu bytes", label,
               (unsigned long long)total);
  }
  end_buffer(v);
}

/* ---- quick scan for the time base ---- */

typedef struct prescan {
  int64_t min_ns;
  int has_aligned, has_unaligned;
} prescan;

/* Reads the first block of a file and notes the earliest CLOCK_REALTIME time in it and, for GPU
 * buffers, the first event's tick (the rank's anchor for unaligned events). */
static void prescan_file(const npkit_dump *d, const npkit_dump_file *f, const npkit_dump_event_table *t,
                         const npkit_dump_clock *clk, unsigned char *buf, size_t cap, prescan *ps, uint64_t *anchor) {
  char path[4096];
  file_path(path, sizeof(path), d->dir, f);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return; /* reported by the conversion itself */
  size_t want = cap < PRESCAN_BYTES ? cap : PRESCAN_BYTES;
  ssize_t n = pread(fd, buf, want, 0);
  close(fd);
  if (n <= 0) return;
  size_t len = (size_t)n - (size_t)n % NPKIT_DUMP_EVENT_BYTES;
  int have_cpu = 0, have_gpu = 0, first = 1;
  int64_t cpu_base = 0, ns;
  uint64_t gpu_base = 0;
  for (size_t i = 0; i < len; i += NPKIT_DUMP_EVENT_BYTES) {
    uint8_t id = buf[i];
    uint64_t ts = le64(buf + i + 8);
    uint8_t role = t->role[id];
    if (role == NPKIT_ROLE_UNKNOWN || role == NPKIT_ROLE_INVALID) continue;
    if (f->source == NPKIT_SOURCE_CPU) {
      if (role == NPKIT_ROLE_TIME_SYNC_CPU || role == NPKIT_ROLE_TIME_SYNC_GPU) continue;
      if (npkit_dump_cpu_ns(clk, ts, &ns) != 0) continue;
    } else if (role == NPKIT_ROLE_TIME_SYNC_CPU) {
      if (npkit_dump_cpu_ns(clk, ts, &cpu_base) == 0) have_cpu = 1;
      have_gpu = 0;
      continue;
    } else if (role == NPKIT_ROLE_TIME_SYNC_GPU) {
      if (!have_gpu) gpu_base = ts;
      have_gpu = 1;
      continue;
    } else {
      if (!have_gpu) gpu_base = ts;
      have_gpu = 1;
      if (first && ts < *anchor) *anchor = ts;
      first = 0;
      if (!have_cpu) {
        ps->has_unaligned = 1;
        continue;
      }
      if (npkit_dump_gpu_ns(clk, cpu_base, gpu_base, ts, &ns) != 0) continue;
    }
    if (!ps->has_aligned || ns < ps->min_ns) ps->min_ns = ns;
    ps->has_aligned = 1;
  }
}

/* ---- entry points ---- */

static int is_selected(const npkit_dump_options *o, uint32_t rank) {
  return o == NULL || o->ranks == NULL || npkit_dump_rank_listed(o->ranks, o->n_ranks, rank);
}

static conv *conv_new(const npkit_dump_event_table *table, const npkit_dump_callbacks *cb, npkit_dump_counters *c) {
  conv *v = calloc(1, sizeof(*v));
  if (v == NULL) return NULL;
  v->tab = table;
  v->cb = cb;
  v->c = c;
  return v;
}

int npkit_dump_convert(const npkit_dump *d, const npkit_dump_options *opts, const npkit_dump_callbacks *cb,
                       npkit_dump_counters *counters, char *err, size_t errlen) {
  npkit_dump_event_table *builtin = NULL;
  const npkit_dump_event_table *table = opts != NULL ? opts->table : NULL;
  if (table == NULL) {
    if ((builtin = malloc(sizeof(*builtin))) == NULL) goto nomem;
    npkit_dump_table_builtin(builtin);
    table = builtin;
  }
  size_t cap = opts != NULL && opts->block_bytes != 0 ? opts->block_bytes : DEFAULT_BLOCK;
  cap -= cap % NPKIT_DUMP_EVENT_BYTES;
  if (cap < NPKIT_DUMP_EVENT_BYTES * 4) cap = NPKIT_DUMP_EVENT_BYTES * 4;
  unsigned char *buf = malloc(cap);
  uint64_t *anchors = calloc(d->n_ranks ? d->n_ranks : 1, sizeof(*anchors));
  conv *v = conv_new(table, cb, counters);
  if (buf == NULL || anchors == NULL || v == NULL) {
    free(buf);
    free(anchors);
    free(v);
    free(builtin);
    goto nomem;
  }
  npkit_dump_counters start = *counters;
  int rc = 0;

  /* which selected ranks exist */
  size_t present = 0;
  if (opts != NULL && opts->ranks != NULL) {
    for (size_t i = 0; i < opts->n_ranks; i++) {
      if (i > 0 && opts->ranks[i] == opts->ranks[i - 1]) continue;
      if (npkit_dump_find_rank(d, opts->ranks[i]) != NULL) {
        present++;
      } else {
        v->dg.absent_ranks++;
        npkit_rank_set_add(&v->dg.absent, opts->ranks[i]);
      }
    }
  } else {
    present = d->n_ranks;
  }
  if (present == 0) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s: none of the selected ranks is in the dump", d->dir);
    rc = NPKIT_DUMP_ENOENT;
    goto out;
  }
  if (d->n_not_regular > 0)
    diag(v, NPKIT_DIAG_WARNING, "%llu entries named like event files are not regular files and were skipped",
         (unsigned long long)d->n_not_regular);
  if (d->n_bad_names > 0)
    diag(v, NPKIT_DIAG_WARNING,
         "%llu files named like dump files carry numbers this reader refuses (leading zeros, or >= %u) and were "
         "skipped",
         (unsigned long long)d->n_bad_names, NPKIT_DUMP_MAX_INDEX);

  /* the time base, before any slice goes out */
  prescan ps = {0, 0, 0};
  for (size_t r = 0; r < d->n_ranks; r++) {
    const npkit_dump_rank *rk = &d->ranks[r];
    anchors[r] = UINT64_MAX;
    if (!is_selected(opts, rk->rank) || !rk->clock_ok) continue;
    for (size_t i = rk->first_file; i < rk->first_file + rk->n_files; i++)
      if (d->files[i].size >= NPKIT_DUMP_EVENT_BYTES)
        prescan_file(d, &d->files[i], table, &rk->clock, buf, cap, &ps, &anchors[r]);
  }
  npkit_dump_info info = {ps.has_aligned ? ps.min_ns : 0, ps.has_aligned, ps.has_unaligned};
  if (cb->begin != NULL && cb->begin(cb->user, &info) != 0) {
    v->stopped = 1;
    rc = finish_status(v, err, errlen);
    goto out;
  }

  for (size_t r = 0; r < d->n_ranks && !v->stopped && !v->nomem; r++) {
    const npkit_dump_rank *rk = &d->ranks[r];
    if (!is_selected(opts, rk->rank) || rk->gpu_bytes + rk->cpu_bytes == 0) continue;
    if (!rk->clock_ok) {
      counters->skipped_ranks++;
      diag(v, NPKIT_DIAG_ERROR, "rank %u skipped (%llu bytes of events): %s", rk->rank,
           (unsigned long long)(rk->gpu_bytes + rk->cpu_bytes), rk->clock_error);
      continue;
    }
    npkit_dump_counters before = *counters;
    v->clock = rk->clock;
    v->anchor = anchors[r];
    for (size_t i = rk->first_file; i < rk->first_file + rk->n_files && !v->stopped && !v->nomem; i++)
      if (d->files[i].size > 0) convert_file(v, d, &d->files[i], buf, cap);
    npkit_dump_diags_note_rank(&v->dg, &before, counters, rk->rank);
  }
  rc = finish_status(v, err, errlen);
  if (rc == 0) {
    if (counters->events == start.events && counters->errors == start.errors)
      diag(v, NPKIT_DIAG_WARNING,
           "the dump holds no events: every event file of the selected ranks is empty (NPKit records only the "
           "events compiled into NCCL with -DENABLE_NPKIT_EVENT_<NAME>)");
    final_diags(v, &start);
  }
out:
  conv_free(v);
  free(anchors);
  free(buf);
  free(builtin);
  return rc;
nomem:
  if (err != NULL && errlen > 0) snprintf(err, errlen, "out of memory");
  return NPKIT_DUMP_ENOMEM;
}

int npkit_dump_convert_memory(const npkit_dump_event_table *table, const npkit_dump_clock *clock, uint32_t rank,
                              npkit_dump_source source, uint32_t index, uint64_t anchor_ticks, const void *data,
                              size_t len, const npkit_dump_callbacks *cb, npkit_dump_counters *counters, char *err,
                              size_t errlen) {
  char why[256];
  if (npkit_dump_check_clock(clock, why, sizeof(why)) != 0) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "%s", why);
    return NPKIT_DUMP_EFORMAT;
  }
  conv *v = conv_new(table, cb, counters);
  if (v == NULL) {
    if (err != NULL && errlen > 0) snprintf(err, errlen, "out of memory");
    return NPKIT_DUMP_ENOMEM;
  }
  npkit_dump_counters start = *counters, before = *counters;
  char label[128];
  npkit_dump_file_label(label, sizeof(label), rank, source, index);
  v->clock = *clock;
  v->anchor = anchor_ticks;
  begin_buffer(v, rank, source, index);
  if (len > 0) counters->files++;
  size_t whole = len - len % NPKIT_DUMP_EVENT_BYTES;
  feed(v, data, whole);
  if (whole != len) {
    counters->truncated_files++;
    snprintf(v->dg.truncated_example, sizeof(v->dg.truncated_example), "%s, %zu bytes", label, len);
  }
  end_buffer(v);
  npkit_dump_diags_note_rank(&v->dg, &before, counters, rank);
  int rc = finish_status(v, err, errlen);
  if (rc == 0) final_diags(v, &start);
  conv_free(v);
  return rc;
}
