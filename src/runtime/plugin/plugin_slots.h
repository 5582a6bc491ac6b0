/* State of the plugin events that are still running (proxy ops and steps, kernel channels, proxy
 * control), in slots handed out lock-free and named to NCCL by handles that cannot be mistaken.
 *
 * A handle is an integer in a void*: bits 0-3 a tag (NPKIT_PLUGIN_H_*), bits 4-27 the slot index,
 * bits 32-63 the slot's generation when it was handed out.  Releasing a slot bumps its
 * generation, so a handle used after its event stopped no longer resolves; a handle whose tag,
 * index or generation does not match resolves to NULL and is never dereferenced.  Tags without a
 * slot carry a task id (Coll/P2p) or nothing (Group, API-level) instead.
 *
 * Slots come from blocks allocated on demand (no fixed pool): each thread's own list of the slots
 * it freed, then a lock-free shared list, and a mutex only when a new block is needed.  Allocation
 * fails only when memory does. */
#ifndef NPKIT_PROFILER_PLUGIN_SLOTS_H
#define NPKIT_PROFILER_PLUGIN_SLOTS_H

#include <stdatomic.h>
#include <stdint.h>

enum {
  NPKIT_PLUGIN_H_NONE = 0,
  NPKIT_PLUGIN_H_GROUP = 1,      /* no slot */
  NPKIT_PLUGIN_H_API = 2,        /* no slot */
  NPKIT_PLUGIN_H_COLL = 3,       /* bits 4-63: task id */
  NPKIT_PLUGIN_H_P2P = 4,        /* bits 4-63: task id */
  NPKIT_PLUGIN_H_PROXY_OP = 5,   /* slot */
  NPKIT_PLUGIN_H_PROXY_STEP = 6, /* slot */
  NPKIT_PLUGIN_H_KERNEL_CH = 7,  /* slot */
  NPKIT_PLUGIN_H_PROXY_CTRL = 8, /* slot */
  NPKIT_PLUGIN_H_KERNEL_PHASE = 9, /* slot (its u.kch); the last slot tag */
  NPKIT_PLUGIN_H_CTX = 12,       /* a context given to NCCL at init; bits 4-63: context id */
};

/* What a slot's running event publishes for readers on other threads (the hang watchdog, a dump's
 * snapshot): written with relaxed atomics by the thread that drives the event, read under the
 * slot's generation (npkit_plugin_slots_each). */
typedef struct npkit_plugin_watch {
  _Atomic uint64_t since;    /* when it started (host clock); 0 while the slot holds no event */
  _Atomic uint64_t progress; /* PROXY_OP: when its last step stopped; PROXY_STEP: when it entered its
                                latest phase; 0 */
  _Atomic uint64_t task;
  _Atomic uint64_t where;    /* ctx | channel << 32 | is_send << 40 | phase << 48 (0xff: none) |
                                the slot's tag << 56 */
  _Atomic uint64_t steps;    /* (uint32_t)peer | (uint32_t)step-or-nsteps << 32 */
  _Atomic int32_t done;      /* PROXY_OP: steps that stopped */
} npkit_plugin_watch;

/* A copy of a watch, with the slot's tag. */
typedef struct npkit_plugin_watched {
  uint32_t tag, ctx;
  uint64_t since, progress, task;
  int32_t channel, peer, step_or_nsteps, steps_done;
  uint8_t is_send, phase;
} npkit_plugin_watched;

typedef struct npkit_plugin_slot {
  _Atomic uint32_t gen;
  _Atomic uint32_t next_free; /* free-list link: index + 1, 0 = end */
  uint32_t index;             /* its own index, fixed */
  uint32_t tag;               /* NPKIT_PLUGIN_H_* of the event using it */
  uint32_t ctx;
  uint64_t task;              /* the task the event belongs to, 0 if unknown */
  uint64_t start_ns;
  union {
    struct {
      uint64_t trans_size;      /* v1-v3: cumulative bytes NCCL reported */
      uint64_t progress_ns;
      _Atomic uint64_t step_bytes; /* v4+: sum over the steps that stopped */
      _Atomic uint32_t steps_done;
      int32_t pid, peer, nsteps, chunk_size;
      uint8_t channel, is_send;
    } op;
    struct {
      uint64_t op_handle;       /* the parent proxy op, to credit it at the stop */
      uint64_t size;
      uint64_t phase_ns[3];
      int32_t peer, step;
      uint8_t channel, is_send;
    } step;
    struct {                    /* a kernel channel, or a phase of one */
      uint64_t gpu_start, gpu_stop, cpu_start;
      uint8_t channel, has_gpu_start, has_gpu_stop;
      uint8_t phase;            /* phases only */
      char name[16];
    } kch;
    struct {
      uint32_t state;
      int32_t appended;
    } ctrl;
  } u;
  npkit_plugin_watch watch;
} npkit_plugin_slot;

static inline uint32_t npkit_plugin_handle_tag(const void *handle) {
  return (uint32_t)((uintptr_t)handle & 0xfu);
}
/* Tag + 60-bit payload (task or context id) as a handle. */
static inline void *npkit_plugin_handle_make(uint32_t tag, uint64_t payload) {
  return (void *)(uintptr_t)((payload << 4) | tag);
}
static inline uint64_t npkit_plugin_handle_payload(const void *handle) {
  return (uint64_t)(uintptr_t)handle >> 4;
}

/* A fresh slot for an event of `tag` (fields zeroed except gen and tag), and its handle in
 * *handle.  NULL when memory is short. */
npkit_plugin_slot *npkit_plugin_slot_alloc(uint32_t tag, void **handle);
/* The slot a handle names, or NULL if the handle is not a live slot handle of `tag`. */
npkit_plugin_slot *npkit_plugin_slot_get(const void *handle, uint32_t tag);
/* Ends the slot's current use: its handles stop resolving, its watch reads as empty. */
void npkit_plugin_slot_free(npkit_plugin_slot *s);

/* Slots allocated so far (in use, free, or kept by a thread for its next events). */
uint32_t npkit_plugin_slots_capacity(void);

/* Publishes what the slot's event is (its fields are set): channel, peer, steps... */
void npkit_plugin_watch_publish(npkit_plugin_slot *s, uint64_t since, int channel, int is_send, int peer,
                                int step_or_nsteps);
/* ... and that it moved: a step stopped (op: `done` steps now) or entered a phase (step); -1 for
 * what did not change. */
static inline void npkit_plugin_watch_progress(npkit_plugin_slot *s, uint64_t now, int phase, int done) {
  if (done >= 0) atomic_store_explicit(&s->watch.done, done, memory_order_relaxed);
  if (phase >= 0) {
    uint64_t w = atomic_load_explicit(&s->watch.where, memory_order_relaxed);
    w = (w & ~(0xffull << 48)) | (uint64_t)(uint8_t)phase << 48;
    atomic_store_explicit(&s->watch.where, w, memory_order_relaxed);
  }
  atomic_store_explicit(&s->watch.progress, now, memory_order_relaxed);
}

/* Calls fn with a consistent copy of every slot that holds a running event, from any thread; a
 * slot that changes while it is read is left out.  Lock-free. */
void npkit_plugin_slots_each(void (*fn)(void *ctx, const npkit_plugin_watched *w), void *ctx);

#endif
