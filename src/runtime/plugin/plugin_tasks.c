#include "plugin_tasks.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "npkit/event_log.h"

#define TASK_RING 4096u
#define CTXS 1024u /* contexts whose channel reports are remembered */
#define WORDS (sizeof(npkit_plugin_task_info) / sizeof(uint64_t))
_Static_assert(sizeof(npkit_plugin_task_info) % sizeof(uint64_t) == 0, "task info in whole words");

typedef struct task_entry {
  _Atomic uint64_t id;       /* 0 while written; the task's id when its words are valid */
  _Atomic uint64_t w[WORDS]; /* npkit_plugin_task_info, word by word */
  _Atomic uint32_t started;  /* 1 once a channel of its kernel started */
} task_entry;

static task_entry ring[TASK_RING];
/* Per context, the latest task NCCL reported a started kernel channel of: a communicator's kernels
 * run in launch order, so an earlier task whose start was never reported is not waiting for the
 * GPU (NCCL reports none of its channels); 0: none reported yet. */
static _Atomic uint64_t ctx_latest_started[CTXS];

void npkit_plugin_task_note(const npkit_plugin_task_info *t) {
  task_entry *e = &ring[t->id % TASK_RING];
  uint64_t w[WORDS];
  memcpy(w, t, sizeof w);
  atomic_store_explicit(&e->id, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  for (size_t i = 0; i < WORDS; i++) atomic_store_explicit(&e->w[i], w[i], memory_order_relaxed);
  atomic_store_explicit(&e->started, 0, memory_order_relaxed);
  atomic_store_explicit(&e->id, t->id, memory_order_release);
}

/* Words [first, first + n) of entry e when it holds task id (any task when id is 0), and its mark
 * in *started (if asked): a sequence lock on the entry's id. */
static int read_words(const task_entry *e, uint64_t id, size_t first, size_t n, uint64_t *w,
                      uint32_t *started) {
  uint64_t have = atomic_load_explicit(&e->id, memory_order_acquire);
  if (have == 0 || (id != 0 && have != id)) return 0;
  for (size_t i = 0; i < n; i++) w[i] = atomic_load_explicit(&e->w[first + i], memory_order_relaxed);
  if (started != NULL) *started = atomic_load_explicit(&e->started, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&e->id, memory_order_relaxed) == have;
}

/* A copy of entry e when it holds task id (any task when id is 0); its mark in *started. */
static int read_entry(const task_entry *e, uint64_t id, npkit_plugin_task_info *out, uint32_t *started) {
  uint64_t w[WORDS];
  if (!read_words(e, id, 0, WORDS, w, started)) return 0;
  memcpy(out, w, sizeof w);
  return 1;
}

int npkit_plugin_task_get(uint64_t id, npkit_plugin_task_info *out) {
  uint32_t started;
  return id != 0 && read_entry(&ring[id % TASK_RING], id, out, &started);
}

/* One word, not the whole entry: asked for at every kernel channel's stop (the GPU clock map). */
uint64_t npkit_plugin_task_before(uint64_t id) {
  _Static_assert(offsetof(npkit_plugin_task_info, before_ns) % sizeof(uint64_t) == 0, "before_ns is a word");
  const size_t word = offsetof(npkit_plugin_task_info, before_ns) / sizeof(uint64_t);
  uint64_t before;
  return id != 0 && read_words(&ring[id % TASK_RING], id, word, 1, &before, NULL) ? before : 0;
}

/* At every channel start, on NCCL's proxy thread: a mark, not a count, so a load and at most one
 * store rather than a locked add per channel, and the same value whoever writes it.  The
 * communicator's latest task moves once per task, by a compare-and-swap since it only grows. */
void npkit_plugin_task_channel_started(uint64_t id, uint32_t ctx) {
  if (ctx < CTXS) {
    uint64_t have = atomic_load_explicit(&ctx_latest_started[ctx], memory_order_relaxed);
    while (have < id && !atomic_compare_exchange_weak_explicit(&ctx_latest_started[ctx], &have, id,
                                                               memory_order_relaxed, memory_order_relaxed)) {
    }
  }
  task_entry *e = &ring[id % TASK_RING];
  if (id == 0 || atomic_load_explicit(&e->id, memory_order_acquire) != id) return;
  if (atomic_load_explicit(&e->started, memory_order_relaxed) == 0)
    atomic_store_explicit(&e->started, 1, memory_order_relaxed);
}

void npkit_plugin_task_name_item(const npkit_plugin_task_info *t, npkit_ev_inflight *f) {
  npkit_inflight_set_comm(f, t->comm, t->comm_id, t->rank, t->nranks);
  f->seq = t->seq;
  f->nccl_seq = t->nccl_seq;
  f->count = t->count;
}

void npkit_plugin_tasks_queued(npkit_inflight_sink *sink) {
  for (uint32_t i = 0; i < TASK_RING; i++) {
    npkit_plugin_task_info t;
    uint32_t started;
    if (!read_entry(&ring[i], 0, &t, &started) || started) continue;
    if (!(t.flags & NPKIT_PTASK_KERNEL_CH) || (t.flags & NPKIT_PTASK_SYMMETRIC)) continue;
    if (t.ctx >= CTXS) continue;
    uint64_t latest = atomic_load_explicit(&ctx_latest_started[t.ctx], memory_order_relaxed);
    if (latest == 0 || latest > t.id) continue;
    npkit_event *ev = npkit_inflight_add(sink, NPKIT_INFL_QUEUED, t.fn, t.start_ns);
    if (ev == NULL) return;
    npkit_ev_inflight *f = &ev->u.inflight;
    npkit_plugin_task_name_item(&t, f);
    f->task = t.id;
    f->ctx = t.ctx;
    if (t.flags & NPKIT_PTASK_P2P) f->peer = t.peer;
    f->nsteps = t.nchannels;
  }
}
