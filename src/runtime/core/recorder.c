#include "recorder.h"

#include "clock.h"
#include "signals.h"
#include "state.h"

#include <stddef.h>

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The recorder's chunk records are the pool file's (include/npkit/pool_file.h). */
#define SAME_FIELD(f) (offsetof(npkit_chunk_meta, f) == offsetof(npkit_pool_chunk, f))
_Static_assert(sizeof(npkit_chunk_meta) == sizeof(npkit_pool_chunk) && SAME_FIELD(used) && SAME_FIELD(next) &&
                   SAME_FIELD(finished) && SAME_FIELD(written) && SAME_FIELD(owner) && SAME_FIELD(write_to) &&
                   SAME_FIELD(write_off) && SAME_FIELD(serial),
               "npkit_chunk_meta is npkit_pool_chunk");

/* A chunk's events go to the log as one block (npkit_logw_events_at). */
_Static_assert(NPKIT_CHUNK_EVENTS <= NPKIT_LOGW_BLOCK_EVENTS, "a chunk is one block");

struct npkit_recorder {
  npkit_log_writer *log;
  npkit_event_pool *file; /* the pool file holding the chunks and the threads' counters, or NULL */
  uint32_t nchunks;
  /* The free chunks, oldest recycled first: a ring of chunk indexes that the writer alone fills
   * (free_tail) and the threads take from (free_head, by compare-and-swap; both count up, so a
   * taker that raced with others fails its exchange rather than taking a chunk twice). */
  _Atomic uint32_t *free_ring;
  _Alignas(64) _Atomic uint64_t free_head;
  _Alignas(64) _Atomic uint64_t free_tail;
  _Atomic uint32_t fresh_next; /* chunks from here on were never handed out */
  _Atomic(npkit_thread *) threads;
  _Atomic uint32_t thread_count;
  uint64_t flush_ms;
  void (*on_failure)(void);
  pthread_t writer;
  int writer_running;
  /* A semaphore, not a condition variable: sem_post is async-signal-safe, so a signal handler can
   * hand the final flush to the writer thread (see npkit_recorder_request). */
  sem_t wake;
  _Atomic int stop;
  _Atomic int alive;           /* the writer thread runs its loop */
  _Atomic int request_pending;
  void (*_Atomic on_request)(void);
  _Atomic int task_pending;    /* npkit_recorder_kick */
  void (*task)(void);
  uint64_t last_counter_sum; /* writer only */
  pthread_key_t key;
};

npkit_recorder *npkit_rec;
npkit_chunk_meta *npkit_rec_meta;
npkit_event *npkit_rec_data;

__thread npkit_thread *npkit_tls_self __attribute__((tls_model("initial-exec")));
static __thread int tls_retired __attribute__((tls_model("initial-exec")));

/* A thread takes the chunk the writer recycled longest ago, not the latest one: the writer has
 * just read the latest, so its lines are in the writer core's caches, and every store of the thread
 * into them would first have to take them back from there (alternate runs of bench/overhead: the
 * calling thread's CPU per call, medians of 5, 97 -> 74 ns on one thread and 126 -> 91 on two;
 * bench/RESULTS.md).  With none recycled, a chunk never used: the pool's untouched pages cost
 * nothing until the writer falls behind. */
static uint32_t free_pop(npkit_recorder *r) {
  uint64_t head = atomic_load_explicit(&r->free_head, memory_order_relaxed);
  while (head != atomic_load_explicit(&r->free_tail, memory_order_acquire)) {
    uint32_t c = atomic_load_explicit(&r->free_ring[head % r->nchunks], memory_order_relaxed);
    if (atomic_compare_exchange_weak_explicit(&r->free_head, &head, head + 1, memory_order_relaxed,
                                              memory_order_relaxed))
      return c;
  }
  uint32_t f = atomic_load_explicit(&r->fresh_next, memory_order_relaxed);
  while (f < r->nchunks && !atomic_compare_exchange_weak_explicit(&r->fresh_next, &f, f + 1,
                                                                 memory_order_relaxed, memory_order_relaxed)) {
  }
  return f < r->nchunks ? f : NPKIT_NO_CHUNK;
}

/* On the writer thread only (or once it has stopped): the ring has one producer. */
static void free_push(npkit_recorder *r, uint32_t idx) {
  npkit_chunk_meta *m = &npkit_rec_meta[idx];
  atomic_store_explicit(&m->used, 0, memory_order_relaxed);
  atomic_store_explicit(&m->next, NPKIT_NO_CHUNK, memory_order_relaxed);
  atomic_store_explicit(&m->finished, 0, memory_order_relaxed);
  atomic_store_explicit(&m->written, 0, memory_order_relaxed);
  atomic_store_explicit(&m->write_to, 0, memory_order_relaxed); /* the last write is not this fill's */
  uint64_t tail = atomic_load_explicit(&r->free_tail, memory_order_relaxed);
  atomic_store_explicit(&r->free_ring[tail % r->nchunks], idx, memory_order_relaxed);
  atomic_store_explicit(&r->free_tail, tail + 1, memory_order_release);
}

int npkit_record_advance(npkit_thread *t) {
  npkit_recorder *r = npkit_rec;
  uint32_t n = free_pop(r);
  if (n == NPKIT_NO_CHUNK) return -1;
  /* whose and which, for a reader of the pool file of a killed process (pool_file.h) */
  npkit_rec_meta[n].owner = t->index;
  npkit_rec_meta[n].serial = t->chunk_serial++;
  if (t->cur == NPKIT_NO_CHUNK) {
    atomic_store_explicit(&t->first, n, memory_order_release);
  } else {
    atomic_store_explicit(&npkit_rec_meta[t->cur].next, n, memory_order_relaxed);
    atomic_store_explicit(&npkit_rec_meta[t->cur].finished, 1, memory_order_release);
  }
  t->cur = n;
  return 0;
}

/* Appends what thread t filled since the last pass and recycles its finished chunks; with
 * `partial` 0, only chunks the thread has finished (the quick passes below).  Returns the number
 * of chunks recycled. */
static uint32_t drain_thread(npkit_recorder *r, npkit_thread *t, int partial) {
  uint32_t c = atomic_load_explicit(&t->first, memory_order_acquire), recycled = 0;
  while (c != NPKIT_NO_CHUNK) {
    npkit_chunk_meta *m = &npkit_rec_meta[c];
    int finished = atomic_load_explicit(&m->finished, memory_order_acquire);
    if (!finished && !partial) return recycled;
    uint32_t used = atomic_load_explicit(&m->used, memory_order_acquire);
    uint32_t written = atomic_load_explicit(&m->written, memory_order_relaxed);
    if (used > written) {
      /* Should the process die during the write, the pool file says which events the block holds
       * and where it starts, so that a reader keeps them once, whether the block made it or not. */
      atomic_store_explicit(&m->write_off, NPKIT_POOL_NO_OFFSET, memory_order_relaxed);
      atomic_store_explicit(&m->write_to, used, memory_order_relaxed);
      if (npkit_logw_events_at(r->log, &npkit_rec_data[(uint64_t)c * NPKIT_CHUNK_EVENTS + written], used - written,
                               &m->write_off) != 0)
        return recycled;
      atomic_store_explicit(&m->written, used, memory_order_relaxed);
    }
    if (!finished) return recycled;
    uint32_t next = atomic_load_explicit(&m->next, memory_order_relaxed);
    atomic_store_explicit(&t->first, next, memory_order_relaxed);
    free_push(r, c);
    recycled++;
    c = next;
  }
  return recycled;
}

static uint32_t drain_all(npkit_recorder *r, int partial) {
  uint32_t recycled = 0;
  for (npkit_thread *t = atomic_load_explicit(&r->threads, memory_order_acquire); t; t = t->next)
    recycled += drain_thread(r, t, partial);
  return recycled;
}

void npkit_recorder_totals(uint64_t *recorded, uint64_t *dropped) {
  uint64_t rec = 0, drop = 0;
  if (npkit_rec != NULL)
    for (npkit_thread *t = atomic_load_explicit(&npkit_rec->threads, memory_order_acquire); t;
         t = t->next) {
      rec += atomic_load_explicit(&t->recorded, memory_order_relaxed);
      drop += atomic_load_explicit(&t->dropped, memory_order_relaxed);
    }
  *recorded = rec;
  *dropped = drop;
}

/* A COUNTERS block when anything changed since the last one: drops become visible in the log even
 * if the process is killed later. */
static void write_counters(npkit_recorder *r, int force) {
  uint32_t n = atomic_load(&r->thread_count);
  if (n == 0) return;
  npkit_counter_rec *recs = calloc(n, sizeof *recs);
  if (recs == NULL) return;
  uint32_t i = 0;
  uint64_t sum = 0;
  for (npkit_thread *t = atomic_load_explicit(&r->threads, memory_order_acquire); t && i < n;
       t = t->next, i++) {
    recs[i].thread = t->index;
    recs[i].source = NPKIT_SRC_API;
    recs[i].recorded = atomic_load_explicit(&t->recorded, memory_order_relaxed);
    recs[i].dropped = atomic_load_explicit(&t->dropped, memory_order_relaxed);
    sum += recs[i].recorded + (recs[i].dropped << 20);
  }
  if (force || sum != r->last_counter_sum) {
    npkit_logw_append(r->log, NPKIT_BLOCK_COUNTERS, i, recs, (size_t)i * sizeof *recs);
    r->last_counter_sum = sum;
  }
  free(recs);
}

/* The writer's period.  While timestamps come from the time-stamp counter, each pass also compares
 * it with CLOCK_REALTIME (clock.h): the first passes come sooner (10, 40, 160 ms) because the
 * start measured the counter's frequency over 1 ms only, and passes come at least every second
 * so that the map never drifts long unchecked. */
static uint64_t writer_period_ms(const npkit_recorder *r, unsigned pass) {
  if (!atomic_load_explicit(&npkit_clock_tsc_on, memory_order_relaxed)) return r->flush_ms;
  uint64_t ms = r->flush_ms < 1000 ? r->flush_ms : 1000;
  if (pass < 3 && (10ull << (2 * pass)) < ms) ms = 10ull << (2 * pass);
  return ms;
}

/* Between two regular passes the writer comes back for the chunks threads have finished, so that
 * it reads them while they are still in the caches, and before a burst of events
 * empties the pool (a thread can fill 64 MiB in 50 ms).  While chunks come in, a quick pass should
 * find about QUICK_CHUNKS (8 MiB), at most an eighth of the pool, and comes at least QUICK_MIN_NS
 * after the last; when none came, every QUICK_IDLE_NS: a look at one flag per thread, 100 times a
 * second.  Partial chunks, the counters and the clock check wait for the regular pass, so that a
 * thread that records slowly does not make small blocks. */
#define QUICK_CHUNKS 64u
#define QUICK_MIN_NS 1000000ull
#define QUICK_IDLE_NS 10000000ull

/* The time to the next quick pass after one that recycled `chunks` over `elapsed_ns`. */
static uint64_t quick_period_ns(const npkit_recorder *r, uint32_t chunks, uint64_t elapsed_ns) {
  if (chunks == 0) return QUICK_IDLE_NS;
  uint64_t want = r->nchunks / 8 < QUICK_CHUNKS ? r->nchunks / 8 : QUICK_CHUNKS;
  if (want == 0) want = 1;
  uint64_t ns = elapsed_ns / chunks * want;
  return ns < QUICK_MIN_NS ? QUICK_MIN_NS : ns > QUICK_IDLE_NS ? QUICK_IDLE_NS : ns;
}

/* Waits until `deadline_ns` (CLOCK_REALTIME, which sem_timedwait measures against) or a post. */
static void writer_wait(npkit_recorder *r, uint64_t deadline_ns) {
  struct timespec ts = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
  while (sem_timedwait(&r->wake, &ts) != 0 && errno == EINTR) {
  }
}

/* The writer's last act: a request that came while it was leaving is run all the same (the
 * requester saw it alive), so that no request is ever left unanswered. */
static void *writer_exit(npkit_recorder *r) {
  atomic_store(&r->alive, 0);
  if (atomic_exchange(&r->request_pending, 0)) {
    void (*fn)(void) = atomic_load(&r->on_request);
    if (fn != NULL) fn();
  }
  return NULL;
}

static void *writer_main(void *arg) {
  npkit_recorder *r = arg;
  npkit_own_thread_mark();
  npkit_signals_mask_thread();
  uint64_t quick_ns = QUICK_IDLE_NS, last_mono = npkit_mono_ns();
  for (unsigned pass = 0; !atomic_load(&r->stop); pass++) {
    uint64_t now = npkit_realtime_ns(), regular = now + writer_period_ms(r, pass) * 1000000ull;
    /* quick passes until the regular one is due */
    for (;;) {
      uint64_t at = now + quick_ns < regular ? now + quick_ns : regular;
      writer_wait(r, at);
      if (atomic_load(&r->stop) || atomic_load(&r->request_pending)) break;
      now = npkit_realtime_ns();
      if (now >= regular) break;
      uint64_t mono = npkit_mono_ns();
      quick_ns = quick_period_ns(r, drain_all(r, 0), mono - last_mono);
      last_mono = mono;
    }
    if (atomic_load(&r->stop)) break;
    if (atomic_exchange(&r->request_pending, 0)) {
      /* The final flush asked for by a signal handler runs here, on a thread that holds no lock
       * of the interrupted code (which goes on running meanwhile). */
      void (*fn)(void) = atomic_load(&r->on_request);
      atomic_store(&r->alive, 0);
      if (fn != NULL) fn();
      return NULL;
    }
    npkit_clock_check(writer_period_ms(r, pass + 1) * 1000000ull);
    uint64_t mono = npkit_mono_ns();
    quick_ns = quick_period_ns(r, drain_all(r, 1), mono - last_mono);
    last_mono = mono;
    write_counters(r, 0);
    if (atomic_exchange(&r->task_pending, 0) && r->task != NULL) r->task();
    if (npkit_logw_error(r->log) != 0) {
      if (r->on_failure != NULL) r->on_failure();
      return writer_exit(r);
    }
  }
  return writer_exit(r);
}

int npkit_recorder_request(void (*fn)(void)) {
  npkit_recorder *r = npkit_rec;
  if (r == NULL || !atomic_load(&r->alive) || atomic_load(&r->stop)) return -1;
  atomic_store(&r->on_request, fn);
  atomic_store(&r->request_pending, 1);
  sem_post(&r->wake);
  /* The writer may have left in between (a failed write): then the request is ours again, unless
   * its exit took it (writer_exit runs it). */
  if (!atomic_load(&r->alive) && atomic_exchange(&r->request_pending, 0)) return -1;
  return 0;
}

void npkit_recorder_set_task(void (*fn)(void)) {
  if (npkit_rec != NULL) npkit_rec->task = fn;
}

int npkit_recorder_kick(void) {
  npkit_recorder *r = npkit_rec;
  if (r == NULL || !atomic_load(&r->alive) || atomic_load(&r->stop)) return -1;
  atomic_store(&r->task_pending, 1);
  sem_post(&r->wake);
  return 0;
}

npkit_thread *npkit_recorder_threads(void) {
  return npkit_rec != NULL ? atomic_load_explicit(&npkit_rec->threads, memory_order_acquire) : NULL;
}

void npkit_recorder_each_pending(void (*fn)(void *ctx, const npkit_event *ev, size_t n), void *ctx) {
  for (npkit_thread *t = npkit_recorder_threads(); t != NULL; t = t->next) {
    uint32_t c = atomic_load_explicit(&t->first, memory_order_acquire);
    for (uint32_t hops = 0; c != NPKIT_NO_CHUNK && hops < npkit_rec->nchunks; hops++) {
      const npkit_chunk_meta *m = &npkit_rec_meta[c];
      uint32_t used = atomic_load_explicit(&m->used, memory_order_acquire);
      uint32_t written = atomic_load_explicit(&m->written, memory_order_relaxed);
      if (used > written && used <= NPKIT_CHUNK_EVENTS)
        fn(ctx, &npkit_rec_data[(uint64_t)c * NPKIT_CHUNK_EVENTS + written], used - written);
      if (!atomic_load_explicit(&m->finished, memory_order_acquire)) break;
      c = atomic_load_explicit(&m->next, memory_order_relaxed);
    }
  }
}

void npkit_recorder_flush(void) {
  npkit_recorder *r = npkit_rec;
  if (r == NULL) return;
  drain_all(r, 1);
  write_counters(r, 1);
}

int npkit_recorder_on_writer(void) {
  npkit_recorder *r = npkit_rec;
  return r != NULL && r->writer_running && pthread_equal(pthread_self(), r->writer);
}

static void thread_retire(void *arg) {
  npkit_thread *t = arg;
  tls_retired = 1;
  npkit_tls_self = NULL;
  if (t->cur != NPKIT_NO_CHUNK) {
    atomic_store_explicit(&npkit_rec_meta[t->cur].next, NPKIT_NO_CHUNK, memory_order_relaxed);
    atomic_store_explicit(&npkit_rec_meta[t->cur].finished, 1, memory_order_release);
    t->cur = NPKIT_NO_CHUNK;
  }
  atomic_store_explicit(&t->exited, 1, memory_order_release);
}

npkit_thread *npkit_thread_create(void) {
  if (tls_retired || npkit_rec == NULL) return NULL;
  npkit_recorder *r = npkit_rec;
  /* In the pool file when it has a slot left: a killed process's counters are then recovered too. */
  npkit_thread *t = npkit_pool_thread_slot(r->file);
  if (t == NULL) t = aligned_alloc(64, sizeof *t);
  if (t != NULL) memset(t, 0, sizeof *t);
  if (t == NULL) return NULL;
  t->index = atomic_fetch_add(&r->thread_count, 1) + 1;
  t->cur = NPKIT_NO_CHUNK;
  atomic_init(&t->first, NPKIT_NO_CHUNK);
  t->os_tid = (int)syscall(SYS_gettid);
  npkit_thread_rec rec;
  memset(&rec, 0, sizeof rec);
  rec.index = t->index;
  rec.os_tid = t->os_tid;
  pthread_getname_np(pthread_self(), rec.name, sizeof rec.name);
  /* The THREAD block precedes every event of the thread in the log. */
  npkit_logw_append(r->log, NPKIT_BLOCK_THREAD, 1, &rec, sizeof rec);
  t->next = atomic_load_explicit(&r->threads, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&r->threads, &t->next, t, memory_order_release,
                                                memory_order_relaxed)) {
  }
  npkit_tls_self = t;
  pthread_setspecific(r->key, t);
  return t;
}

uint32_t npkit_recorder_chunks(uint64_t pool_bytes) {
  uint64_t n = pool_bytes / ((uint64_t)NPKIT_CHUNK_EVENTS * sizeof(npkit_event));
  if (n < 2) n = 2;
  if (n > UINT32_MAX / 2) n = UINT32_MAX / 2;
  return (uint32_t)n;
}

void npkit_recorder_pool_layout(npkit_pool_layout *l) {
  l->chunk_events = NPKIT_CHUNK_EVENTS;
  l->slot_size = sizeof(npkit_thread);
  l->index_offset = offsetof(npkit_thread, index);
  l->tid_offset = offsetof(npkit_thread, os_tid);
  l->recorded_offset = offsetof(npkit_thread, recorded);
  l->dropped_offset = offsetof(npkit_thread, dropped);
}

int npkit_recorder_start(uint64_t pool_bytes, uint64_t flush_ms, npkit_log_writer *log,
                         npkit_event_pool *file, void (*on_failure)(void), char *err, size_t errlen) {
  const uint64_t chunk_bytes = (uint64_t)NPKIT_CHUNK_EVENTS * sizeof(npkit_event);
  uint64_t n = npkit_recorder_chunks(pool_bytes);
  if (file != NULL && file->nchunks != n) file = NULL;
  npkit_recorder *r = aligned_alloc(64, (sizeof *r + 63) & ~(size_t)63);
  if (r != NULL) memset(r, 0, sizeof *r);
  npkit_chunk_meta *meta = file != NULL ? file->chunks : aligned_alloc(64, n * sizeof *meta);
  if (meta != NULL && file == NULL) memset(meta, 0, n * sizeof *meta);
  _Atomic uint32_t *ring = calloc(n, sizeof *ring);
  /* Untouched pages of an anonymous mapping cost nothing: the pool's memory grows with use.  A
   * pool file is reserved and mapped whole (event_pool.h). */
  void *data = file != NULL ? file->data
                            : mmap(NULL, n * chunk_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == NULL || meta == NULL || ring == NULL || data == MAP_FAILED) {
    snprintf(err, errlen, "cannot allocate the event pool of %llu MB",
             (unsigned long long)(pool_bytes >> 20));
    free(r);
    if (file == NULL) free(meta);
    free(ring);
    if (data != MAP_FAILED && file == NULL) munmap(data, n * chunk_bytes);
    return -1;
  }
  r->log = log;
  r->file = file;
  r->nchunks = (uint32_t)n;
  r->flush_ms = flush_ms;
  r->on_failure = on_failure;
  npkit_rec_meta = meta;
  npkit_rec_data = data;
  r->free_ring = ring;
  /* A quarter of the pool (16 MiB by default) goes round from the start, so that a chunk comes back
   * to a thread only after that many others: long enough for the writer's caches to have let go
   * of it.  The rest is taken when the writer falls behind. */
  uint32_t warm = r->nchunks / 4 > 0 ? r->nchunks / 4 : 1;
  for (uint32_t i = 0; i < warm; i++) free_push(r, i);
  atomic_store_explicit(&r->fresh_next, warm, memory_order_relaxed);
  sem_init(&r->wake, 0, 0);
  pthread_key_create(&r->key, thread_retire);
  npkit_rec = r;
  atomic_store(&r->alive, 1);
  int e = pthread_create(&r->writer, NULL, writer_main, r);
  if (e != 0) {
    /* Still usable: everything is written at exit instead of streamed. */
    atomic_store(&r->alive, 0);
    snprintf(err, errlen, "cannot start the writer thread (%s); the log is written at exit only",
             strerror(e));
    return 1;
  }
  pthread_setname_np(r->writer, "npkit-writer");
  r->writer_running = 1;
  return 0;
}

void npkit_recorder_stop(npkit_end_rec *end) {
  npkit_recorder *r = npkit_rec;
  memset(end, 0, sizeof *end);
  if (r == NULL) return;
  if (r->writer_running) {
    atomic_store(&r->stop, 1);
    if (pthread_equal(pthread_self(), r->writer)) {
      pthread_detach(r->writer); /* finishing on behalf of a signal handler: it exits after this */
    } else {
      sem_post(&r->wake);
      pthread_join(r->writer, NULL);
    }
    r->writer_running = 0;
  }
  npkit_clock_check(0); /* the last stretch of the clock map is measured too */
  drain_all(r, 1);
  write_counters(r, 1);
  npkit_recorder_totals(&end->events_recorded, &end->events_dropped);
}
