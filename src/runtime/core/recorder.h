/* The recorder: a bounded pool of fixed-size chunks carved into per-thread event buffers.
 *
 * Hot path (npkit_record, or npkit_record_begin/commit to fill the record in place): one 128-byte
 * record in the calling thread's current chunk and a release store of its fill count — no lock,
 * no allocation, no system call.  When a chunk is full the thread
 * takes the free one the writer recycled longest ago (a lock-free ring with the writer as its
 * only producer: recorder.c free_pop); when the pool is exhausted the event is dropped and
 * counted.  A writer thread wakes every NPKIT_FLUSH_MS, appends whatever each thread has filled since
 * the last pass to the log (so a killed job loses at most one period) and recycles finished chunks.
 * Each thread's chunks form a single-producer/single-consumer queue, so the log keeps every thread's
 * events in order. */
#ifndef NPKIT_RECORDER_H
#define NPKIT_RECORDER_H

#include <stdatomic.h>
#include <stdint.h>

#include "event_pool.h"
#include "log_writer.h"
#include "npkit/event_log.h"

#define NPKIT_CHUNK_EVENTS 1024u
#define NPKIT_NO_CHUNK UINT32_MAX

/* Per-thread state, created at a thread's first NCCL call and never freed (the counters outlive
 * the thread).  Fields above the line belong to the owning thread; the rest are shared. */
/* Cache-line aligned: threads on different cores must not share a line (false sharing of the
 * counters each owner updates on every call). */
typedef struct npkit_thread {
  _Alignas(64) uint32_t index; /* process thread index, from 1 */
  uint32_t cur;           /* chunk being filled, NPKIT_NO_CHUNK if none */
  int depth;              /* > 0 while inside a wrapped NCCL call: nested calls are NCCL's own */
  int group_depth;        /* ncclGroupStart nesting */
  uint64_t group_id;      /* id of the open outermost group, 0 if none */
  uint64_t groups_opened; /* per-thread counter that makes group ids */
  uint64_t calls;         /* wrapped calls made, for npkit_ev_api.call_no */
  /* The wrapped call running now, published for the hang watchdog and NCCL's events of the
   * thread: its call_no (0 outside one), stored last when the call starts so that a reader on
   * another thread can check it before and after reading the other two (a sequence lock, see
   * npkit_thread_in_call); its start time; its communicator's local id << 16 | npkit_fn.  Plain
   * stores on x86-64 and arm64 (relaxed and release atomics). */
  _Atomic uint64_t cur_call;
  _Atomic uint64_t cur_call_start;
  _Atomic uint64_t cur_what;
  /* ---- shared ---- */
  _Atomic uint64_t recorded;
  _Atomic uint64_t dropped;
  _Atomic uint32_t first;  /* oldest chunk not yet fully written by the writer */
  _Atomic int exited;
  int os_tid;
  struct npkit_thread *next; /* registry list, immutable once published */
  uint64_t chunk_serial;  /* chunks taken so far (owner only, on the slow path) */
} npkit_thread;

/* One cache line each: threads fill chunks taken one after the other from the free list, and the
 * owner stores `used` on every event — neighbours in one line would bounce it between cores. */
/* The layout of npkit_pool_chunk (include/npkit/pool_file.h): with a pool file these records are
 * in it, and what a killed process had not written is read back from them. */
typedef struct npkit_chunk_meta {
  _Alignas(64) _Atomic uint32_t used; /* events filled, published with release by the owner */
  _Atomic uint32_t next;   /* owner's next chunk once this one is finished */
  _Atomic int finished;    /* owner moved on: no more events will be added */
  _Atomic uint32_t written; /* events already appended to the log (written by the writer only; a
                              fatal signal's dump reads it) */
  uint32_t owner;          /* the thread index filling it (set when a thread takes it) */
  _Atomic uint32_t write_to; /* the writer is appending events [written, write_to) */
  _Atomic uint64_t write_off; /* where that block starts in the log (NPKIT_POOL_NO_OFFSET: not yet) */
  uint64_t serial;         /* the owner's serial-th chunk */
} npkit_chunk_meta;

typedef struct npkit_recorder npkit_recorder;
extern npkit_recorder *npkit_rec;         /* the process recorder, NULL until started */
extern npkit_chunk_meta *npkit_rec_meta;  /* hot-path views of it */
extern npkit_event *npkit_rec_data;

/* Starts the pool and the writer thread; 0, or -1 with a message. */
/* `on_failure` runs on the writer thread after the log stopped accepting writes (full disk...).
 * `file` (may be NULL) is a pool file (event_pool.h) of npkit_recorder_chunks(pool_bytes) chunks
 * made with npkit_recorder_pool_layout(): the chunks, their records and the threads' counters are
 * kept there, so that a killed process leaves them behind; without one, private memory. */
int npkit_recorder_start(uint64_t pool_bytes, uint64_t flush_ms, npkit_log_writer *log,
                         npkit_event_pool *file, void (*on_failure)(void), char *err, size_t errlen);
/* The chunks a pool of pool_bytes holds, and the recorder's shapes a pool file records. */
uint32_t npkit_recorder_chunks(uint64_t pool_bytes);
void npkit_recorder_pool_layout(npkit_pool_layout *l);
/* initial-exec TLS: a plain %fs-relative load on the hot path.  The few bytes fit in the static TLS
 * surplus glibc keeps for libraries loaded by dlopen (CUDA_INJECTION64_PATH, NCCL_PROFILER_PLUGIN). */
extern __thread npkit_thread *npkit_tls_self __attribute__((tls_model("initial-exec")));
npkit_thread *npkit_thread_create(void);

/* The calling thread's state; created (and a THREAD block logged) on first use.  NULL when out of
 * memory or after the thread's exit handlers ran. */
static inline npkit_thread *npkit_thread_self(void) {
  npkit_thread *t = npkit_tls_self;
  return t != NULL ? t : npkit_thread_create();
}
/* Slow path of npkit_record: finish the current chunk, take a new one.  0 or -1 (pool empty). */
int npkit_record_advance(npkit_thread *t);

/* The record thread t's next event goes to, in its current chunk (not zeroed), or NULL when the
 * pool is exhausted (the drop is counted).  The event is filled there and published by
 * npkit_record_commit, written once instead of built on the stack and copied (the plugin's stops:
 * bench/RESULTS.md).  Nothing else may record on t between the two; the writer and a fatal
 * signal's dump read only up to `used`, so they never see a half-filled record, and the pool is
 * never unmapped, so a record still being filled at the end is only left out. */
static inline npkit_event *npkit_record_begin(npkit_thread *t) {
  uint32_t c = t->cur, used;
  if (c == NPKIT_NO_CHUNK ||
      (used = atomic_load_explicit(&npkit_rec_meta[c].used, memory_order_relaxed)) ==
          NPKIT_CHUNK_EVENTS) {
    if (npkit_record_advance(t) != 0) {
      atomic_store_explicit(&t->dropped, atomic_load_explicit(&t->dropped, memory_order_relaxed) + 1,
                            memory_order_relaxed);
      return NULL;
    }
    c = t->cur;
    used = 0;
  }
  return &npkit_rec_data[(uint64_t)c * NPKIT_CHUNK_EVENTS + used];
}

/* Publishes the record npkit_record_begin gave. */
static inline void npkit_record_commit(npkit_thread *t) {
  _Atomic uint32_t *used = &npkit_rec_meta[t->cur].used;
  atomic_store_explicit(used, atomic_load_explicit(used, memory_order_relaxed) + 1, memory_order_release);
  atomic_store_explicit(&t->recorded, atomic_load_explicit(&t->recorded, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

static inline void npkit_record(npkit_thread *t, const npkit_event *ev) {
  npkit_event *rec = npkit_record_begin(t);
  if (rec == NULL) return;
  *rec = *ev;
  npkit_record_commit(t);
}

/* Stops the writer, appends everything recorded so far and the final counters.  Fills the totals
 * of `end`.  Events recorded after this are not written. */
void npkit_recorder_stop(npkit_end_rec *end);
/* From a signal handler: has the writer thread run fn (the final flush) and leave; returns at once,
 * 0 when the writer will run fn, -1 when there is no writer to run it.  Only async-signal-safe
 * calls. */
int npkit_recorder_request(void (*fn)(void));
/* On the writer thread (inside the fn of a request): appends everything recorded so far and the
 * counters, as a writer pass does. */
void npkit_recorder_flush(void);
/* 1 on the writer thread. */
int npkit_recorder_on_writer(void);
/* Totals so far (all threads). */
void npkit_recorder_totals(uint64_t *recorded, uint64_t *dropped);

/* A task the writer thread runs whenever it is kicked, after appending what the threads recorded
 * (the flight recorder's dumps: they see every event recorded before the kick).  Set once. */
void npkit_recorder_set_task(void (*fn)(void));
/* Wakes the writer to run the task; async-signal-safe.  -1 when there is no writer. */
int npkit_recorder_kick(void);

/* The threads that recorded, newest first (their `next` links never change). */
npkit_thread *npkit_recorder_threads(void);

/* The wrapped call thread t runs now, read from another thread: 1 with its call_no, start and
 * what (npkit_thread.cur_what), 0 when it runs none (or started or ended one while it was read). */
static inline int npkit_thread_in_call(const npkit_thread *t, uint64_t *call_no, uint64_t *start_ns,
                                       uint64_t *what) {
  uint64_t n = atomic_load_explicit(&t->cur_call, memory_order_acquire);
  if (n == 0) return 0;
  *start_ns = atomic_load_explicit(&t->cur_call_start, memory_order_relaxed);
  *what = atomic_load_explicit(&t->cur_what, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&t->cur_call, memory_order_relaxed) != n) return 0;
  *call_no = n;
  return 1;
}

/* For a fatal signal's handler (async-signal-safe, no lock): calls fn for every stretch of events
 * the threads recorded that the writer has not appended yet, in each thread's order. */
void npkit_recorder_each_pending(void (*fn)(void *ctx, const npkit_event *ev, size_t n), void *ctx);

#endif
