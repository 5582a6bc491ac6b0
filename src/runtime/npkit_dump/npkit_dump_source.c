#include "npkit_dump_source.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "diag.h"
#include "batch.h"
#include "emit.h"
#include "notes.h"
#include "npkit_dump.h"
#include "npkit_dump_scan.h"
#include "recorder.h"
#include "string_table.h"

#define BATCH 256          /* events per EVENTS block */
#define MAX_RANKS 4096     /* distinct ranks remembered; more communicators than this are rare */
/* A file modified this long before the process started still counts as this job's: file times
 * come from a coarse clock, or from a file server's clock. */
#define STALE_SLACK_NS 5000000000ll

typedef struct reading {
  uint32_t read;           /* number of this reading */
  uint64_t stored, not_stored;
  npkit_dump_counters c;
} reading;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static npkit_log_writer *out; /* NULL: off */
static char dir[512];
static uint64_t max_bytes, clock_base;
static npkit_dump_event_table *table;
static npkit_dump_seen *seen;
static uint32_t ranks[MAX_RANKS]; /* sorted, distinct */
static uint32_t others[MAX_RANKS]; /* scratch: the ranks but one */
static size_t n_ranks;
static npkit_event slots[BATCH];
static npkit_batch batch = NPKIT_BATCH_OF(slots);
static uint32_t name_ids[2][NPKIT_DUMP_NUM_IDS]; /* [0]: kind names of pairs, [1]: event names */
static uint32_t dir_id;
static uint32_t readings;         /* readings that found new files */
static uint64_t bytes_read;       /* counts against max_bytes */
static uint64_t total_stored, total_lost; /* COUNTERS */
static uint64_t last_stored = UINT64_MAX, last_lost = UINT64_MAX;
static uint64_t teardowns;        /* ncclCommDestroy and ncclCommAbort calls */
static size_t alive, held_most;   /* communicators alive now; most at once since `shared` was set */
static int shared;                /* two were alive at once since the process last held none */
static int shared_noted, folder_noted, limit_noted;

/* ---- events ---- */

static uint32_t sat32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

static void flush_batch(reading *rd) {
  long moved = npkit_batch_flush(&batch);
  if (moved > 0) rd->stored += (uint64_t)moved;
  else rd->not_stored += (uint64_t)-moved;
}

static void append(reading *rd, const npkit_event *ev) {
  if (npkit_batch_add(&batch, ev)) flush_batch(rd);
}

static uint32_t name_id(const npkit_dump_slice *s) {
  int pair = s->type == NPKIT_SLICE_COMPLETE;
  uint32_t *id = &name_ids[pair ? 0 : 1][s->id];
  if (*id == 0) {
    char text[NPKIT_DUMP_NAME_MAX];
    size_t len = s->name_len < sizeof text ? s->name_len : sizeof text - 1;
    memcpy(text, s->name, len);
    text[len] = '\0';
    *id = npkit_string_intern(text[0] ? text : "(unnamed NPKit event)");
  }
  return *id;
}

static int on_slice(void *user, const npkit_dump_slice *s) {
  reading *rd = user;
  int64_t start = s->start_ns, end = s->end_ns;
  if (s->flags & NPKIT_SLICE_UNALIGNED) { /* ns since the rank's first GPU event */
    start += (int64_t)clock_base;
    end += (int64_t)clock_base;
  }
  if (start < 0 || end < start) { /* a TIME_SYNC_CPU from before 1970: not a time */
    rd->c.bad_times++;
    return 0;
  }
  npkit_event ev;
  npkit_event_init(&ev, NPKIT_EV_NPKIT_DUMP_SLICE, (uint64_t)start, (uint64_t)end);
  npkit_ev_npkit *x = &ev.u.npkit;
  x->seq = s->seq;
  x->read = rd->read;
  x->rank = s->rank;
  x->buffer = s->buffer;
  x->lane = s->lane;
  x->size = s->size;
  x->rsvd = s->rsvd;
  x->entry_size = s->entry_size;
  x->entry_rsvd = s->entry_rsvd;
  x->name = name_id(s);
  x->source = s->source == NPKIT_SOURCE_GPU ? NPKIT_DUMP_SLICE_GPU : NPKIT_DUMP_SLICE_CPU;
  switch (s->type) {
  case NPKIT_SLICE_COMPLETE: x->type = NPKIT_DUMP_SLICE_PAIR; break;
  case NPKIT_SLICE_UNPAIRED_ENTRY: x->type = NPKIT_DUMP_SLICE_UNPAIRED_ENTRY; break;
  case NPKIT_SLICE_UNPAIRED_EXIT: x->type = NPKIT_DUMP_SLICE_UNPAIRED_EXIT; break;
  default: x->type = NPKIT_DUMP_SLICE_POINT; break;
  }
  x->id = s->id;
  x->flags = (s->flags & NPKIT_SLICE_UNALIGNED) ? NPKIT_DUMP_SLICE_UNALIGNED : 0;
  append(rd, &ev);
  return 0;
}

static void on_diag(void *user, npkit_dump_severity severity, const char *message) {
  (void)user;
  npkit_level level = severity == NPKIT_DIAG_ERROR ? NPKIT_LEVEL_ERROR : NPKIT_LEVEL_WARN;
  /* The parser's advice for unknown ids speaks of `npkit convert`'s option; here it is a setting. */
  static const char advice[] = "give its npkit_event.h as the event header";
  size_t len = strlen(message), alen = sizeof advice - 1;
  if (len >= alen && strcmp(message + len - alen, advice) == 0)
    npkit_note(level, "NPKit dump %s: %.*sset NPKIT_DUMP_HEADER to its npkit_event.h", dir, (int)(len - alen),
         message);
  else
    npkit_note(level, "NPKit dump %s: %s", dir, message);
}

static void write_counters(void) {
  if (out == NULL || (total_stored == last_stored && total_lost == last_lost)) return;
  npkit_counter_rec c;
  memset(&c, 0, sizeof c);
  c.source = NPKIT_SRC_NPKIT_DUMP;
  c.recorded = total_stored;
  c.dropped = total_lost;
  if (npkit_logw_append(out, NPKIT_BLOCK_COUNTERS, 1, &c, sizeof c) == 0) {
    last_stored = total_stored;
    last_lost = total_lost;
  }
}

/* The summary event of one reading, on the thread that did it. */
static void write_reading(const reading *rd, const npkit_dump_scan_result *sr, uint32_t trigger,
                          uint32_t comm, uint32_t thread, uint64_t t0) {
  const npkit_dump_counters *c = &rd->c;
  npkit_event ev;
  npkit_event_init(&ev, NPKIT_EV_NPKIT_DUMP_READ, t0, npkit_now_ns());
  ev.thread = thread;
  npkit_ev_npkit_read *r = &ev.u.npkit_read;
  r->bytes = c->bytes;
  r->events = c->events;
  r->pairs = c->slices;
  r->read = rd->read;
  r->trigger = (uint16_t)trigger;
  r->flags = shared ? NPKIT_DUMP_READ_SHARED : 0;
  r->comm = comm;
  r->files = sat32(c->files);
  r->unpaired_entries = sat32(c->unpaired_entries);
  r->unpaired_exits = sat32(c->unpaired_exits);
  r->point_events = sat32(c->point_events);
  r->unknown_ids = sat32(c->unknown_ids);
  r->invalid_events = sat32(c->invalid_events);
  r->bad_times = sat32(c->bad_times);
  r->out_of_order = sat32(c->out_of_order);
  r->time_sync_cpu = sat32(c->time_sync_cpu);
  r->time_sync_gpu = sat32(c->time_sync_gpu);
  r->unaligned_events = sat32(c->unaligned_events);
  r->truncated_files = sat32(c->truncated_files);
  r->unreadable_files = sat32(c->unreadable_files);
  r->skipped_ranks = sat32(c->skipped_ranks);
  r->not_stored = sat32(rd->not_stored);
  r->files_over_limit = sat32(sr->files_over_limit);
  if (dir_id == 0) dir_id = npkit_string_intern(dir);
  r->dir = dir_id;
  if (out != NULL) npkit_logw_events(out, &ev, 1);
}

/* ---- readings ---- */

static void rank_list(char *buf, size_t len, const npkit_dump *d) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < d->n_ranks && used + 16 < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%u", i ? "," : "", d->ranks[i].rank);
}

static void convert(const npkit_dump_scan_result *sr, uint32_t trigger, uint32_t comm, uint32_t thread,
                    uint64_t t0) {
  reading rd;
  memset(&rd, 0, sizeof rd);
  rd.read = ++readings;
  npkit_dump_options opts = {table, NULL, 0, 0};
  npkit_dump_callbacks cb = {NULL, on_slice, on_diag, &rd};
  char err[512];
  int rc = npkit_dump_convert(sr->dump, &opts, &cb, &rd.c, err, sizeof err);
  flush_batch(&rd);
  if (rc < 0) npkit_note(NPKIT_LEVEL_WARN, "NPKit dump %s: %s; what was read so far is kept", dir, err);
  bytes_read += sr->bytes;
  total_stored += rd.stored;
  total_lost += rd.not_stored; /* records it could not convert are in the reading's counts */
  write_reading(&rd, sr, trigger, comm, thread, t0);
  write_counters();
  char ranks_text[128];
  rank_list(ranks_text, sizeof ranks_text, sr->dump);
  if (shared && !shared_noted++)
    npkit_note(NPKIT_LEVEL_WARN,
         "NPKit dump %s (rank %s): this process held %zu communicators at once; NPKit keeps one state "
         "per process that the setup of every communicator starts afresh (NpKit::Init in "
         "devCommSetup), so a dump holds the GPU events of the communicator set up last and the "
         "network events of all from then on, only the first ncclCommDestroy or ncclCommAbort "
         "writes one, and later ones read freed buffers: NPKit's patch supports one communicator "
         "per process",
         dir, ranks_text, held_most);
  npkit_info("NPKit dump of rank %s merged%s: %llu pairs, %llu unpaired, %llu point events from %llu "
             "files (%.1f KB)",
             ranks_text, trigger == NPKIT_DUMP_READ_AT_EXIT ? " at exit" : "",
             (unsigned long long)rd.c.slices,
             (unsigned long long)(rd.c.unpaired_entries + rd.c.unpaired_exits),
             (unsigned long long)rd.c.point_events, (unsigned long long)rd.c.files,
             (double)rd.c.bytes / 1024.0);
}

/* Scans for new files of the given ranks; 1 when a dump was found and merged, 0 when nothing was
 * new, -1 when the folder could not be read. */
static int read_ranks(const uint32_t *want, size_t n_want, uint32_t trigger, uint32_t comm,
                      uint32_t thread) {
  if (n_want == 0) return 0;
  uint64_t t0 = npkit_now_ns();
  npkit_dump_scan_opts so = {want, n_want, (int64_t)clock_base - STALE_SLACK_NS,
                        bytes_read < max_bytes ? max_bytes - bytes_read : 0};
  npkit_dump_scan_result sr;
  char err[600];
  if (npkit_dump_scan_new_files(dir, seen, &so, &sr, err, sizeof err) != 0) {
    if (!folder_noted++)
      npkit_note(NPKIT_LEVEL_WARN, "NPKIT_DUMP_DIR: %s; NPKit events are not merged into the trace", err);
    return -1;
  }
  if (sr.files_over_limit > 0 && !limit_noted++)
    npkit_note(NPKIT_LEVEL_WARN,
         "NPKIT_DUMP_MAX_MB=%llu reached: %llu NPKit dump files (%.1f MB) of %s were not read; raise "
         "it, or convert the dump with `npkit convert %s`",
         (unsigned long long)(max_bytes >> 20), (unsigned long long)sr.files_over_limit,
         (double)sr.bytes_over_limit / 1048576.0, dir, dir);
  if (sr.dump == NULL) return 0;
  convert(&sr, trigger, comm, thread, t0);
  npkit_dump_close(sr.dump);
  return 1;
}

/* ---- life cycle ---- */

static void attach(const npkit_source_log *at) {
  npkit_log_writer *log = at->log;
  const npkit_config *cfg = at->cfg;
  pthread_mutex_lock(&lock);
  if (log == NULL || cfg->npkit_dump_dir[0] == '\0' || cfg->npkit_dump_max_mb == 0) goto done;
  table = malloc(sizeof *table);
  seen = npkit_dump_seen_new();
  if (table == NULL || seen == NULL) {
    free(table);
    npkit_dump_seen_free(seen);
    table = NULL;
    seen = NULL;
    npkit_warn("out of memory: NPKit dumps are not merged");
    goto done;
  }
  out = log;
  batch.log = log;
  snprintf(dir, sizeof dir, "%s", cfg->npkit_dump_dir);
  max_bytes = cfg->npkit_dump_max_mb << 20;
  clock_base = at->clock_base_ns;
  npkit_dump_table_builtin(table);
  if (cfg->npkit_dump_header[0] != '\0') {
    char err[512];
    if (npkit_dump_table_load_header(table, cfg->npkit_dump_header, NPKIT_HEADER_REPLACE, err,
                                     sizeof err) != 0)
      npkit_note(NPKIT_LEVEL_WARN,
           "NPKIT_DUMP_HEADER: %s; NPKit events are named after the built-in table (NPKit's patch "
           "for NCCL 2.17.1)",
           err);
  }
done:
  pthread_mutex_unlock(&lock);
}

void npkit_dump_source_comm_created(int rank) {
  pthread_mutex_lock(&lock);
  if (++alive > held_most) held_most = alive;
  if (alive > 1) shared = 1;
  if (rank < 0) goto done;
  size_t i = 0;
  while (i < n_ranks && ranks[i] < (uint32_t)rank) i++;
  if ((i == n_ranks || ranks[i] != (uint32_t)rank) && n_ranks < MAX_RANKS) {
    memmove(&ranks[i + 1], &ranks[i], (n_ranks - i) * sizeof ranks[0]);
    ranks[i] = (uint32_t)rank;
    n_ranks++;
  }
done:
  pthread_mutex_unlock(&lock);
}

void npkit_dump_source_comm_gone(uint32_t comm, int rank, int ended, int aborted, int result,
                                 uint32_t thread) {
  (void)result; /* NCCL dumps before it tears the communicator down: look even after an error */
  pthread_mutex_lock(&lock);
  if (out == NULL) goto done;
  /* Both reach NCCL's commDestroySync, where NPKit dumps (NPKit's patch for 2.17.1, src/init.cc):
   * ncclCommAbort through commReclaim's loop over the process's ranks of the communicator. */
  uint32_t trigger = aborted ? NPKIT_DUMP_READ_AFTER_ABORT : NPKIT_DUMP_READ_AFTER_DESTROY;
  teardowns++;
  uint32_t own = rank >= 0 ? (uint32_t)rank : UINT32_MAX;
  if (own != UINT32_MAX && read_ranks(&own, 1, trigger, comm, thread) != 0) goto done;
  /* NPKit names its dump after the communicator initialised last, not the one torn down */
  size_t n = 0;
  for (size_t i = 0; i < n_ranks; i++)
    if (ranks[i] != own) others[n++] = ranks[i];
  read_ranks(others, n, trigger, comm, thread);
done:
  if (ended && alive > 0 && --alive == 0) { /* the next communicator starts NPKit afresh */
    shared = 0;
    held_most = 0;
  }
  pthread_mutex_unlock(&lock);
}

static void finish(npkit_source_totals *totals) {
  pthread_mutex_lock(&lock);
  if (out == NULL) goto done;
  /* On a signal this runs on the writer thread against a deadline; a patched NCCL has nothing
   * new to dump then anyway (it dumps only when a communicator is torn down). */
  if (!npkit_recorder_on_writer()) read_ranks(ranks, n_ranks, NPKIT_DUMP_READ_AT_EXIT, 0, 0);
  if (readings == 0 && teardowns > 0 && !folder_noted)
    npkit_note(NPKIT_LEVEL_WARN,
         "NPKIT_DUMP_DIR=%s is set but no NPKit dump of this process's ranks appeared there after "
         "ncclCommDestroy or ncclCommAbort: the loaded NCCL is probably not built with NPKit "
         "(-DENABLE_NPKIT)",
         dir);
  else if (readings == 0 && teardowns == 0 && n_ranks > 0)
    npkit_note(NPKIT_LEVEL_INFO,
         "NPKIT_DUMP_DIR=%s is set but no communicator was destroyed or aborted and no NPKit dump "
         "appeared: NCCL writes its NPKit dump when a communicator is finalized, destroyed or "
         "aborted",
         dir);
  write_counters();
  out = NULL;
  batch.log = NULL;
  free(table);
  table = NULL;
  npkit_dump_seen_free(seen);
  seen = NULL;
done:
  totals->recorded += total_stored;
  pthread_mutex_unlock(&lock);
}

const npkit_source_ops npkit_source_npkit_dump = {"npkit_dump", NULL, attach, finish, NULL, NULL, NULL};
