/* The version-independent core of the NCCL profiler plugin: contexts, handles, records. */
#include "plugin_core.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "comm_registry.h"
#include "lifecycle.h"
#include "notes.h"
#include "emit.h"
#include "plugin_abi.h"
#include "plugin_api.h"
#include "plugin_calls.h"
#include "plugin_clock_map.h"
#include "plugin_emit.h"
#include "plugin_names.h"
#include "plugin_slots.h"
#include "plugin_tasks.h"
#include "recorder.h"

static _Atomic uint32_t next_ctx = 1;
static _Atomic uint64_t next_task = 1;
static _Atomic uint32_t events_on;  /* NPKIT_PEV_* asked for at the latest init */
static _Atomic unsigned abi_loaded; /* the ABI version NCCL loaded */
static _Atomic(int *) nccl_mask;    /* NCCL's process-wide activation mask */
static pid_t self_pid;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static _Atomic int set_up;          /* a communicator's init came: there is something to finish */

#define counts npkit_plugin_counts_now

/* ---- recording ---- */

static int recording_on(void) {
  if (atomic_load_explicit(&npkit_state, memory_order_acquire) == NPKIT_STATE_ON) return 1;
  /* Off for good (a full disk, a fork, the end of the process): stop NCCL from calling. */
  int *m = atomic_exchange_explicit(&nccl_mask, NULL, memory_order_relaxed);
  if (m != NULL) __atomic_store_n(m, 0, __ATOMIC_RELAXED);
  return 0;
}

#define emit npkit_plugin_emit

/* ---- the GPU clock of each communicator (plugin_clock_map.h) ----
 * One map per context: a communicator runs on one GPU.  Kernel-channel events of a context come
 * from NCCL's proxy thread (its profiler thread from 2.31): the lock is rarely contended. */
#define MAPS 256u
#define FIXES 256u /* tasks whose channels are being reported */
typedef struct task_fix {
  uint64_t task;
  npkit_plugin_clock_fix fix;
} task_fix;
typedef struct ctx_map {
  _Atomic uint32_t ctx; /* 0: free */
  _Atomic int lock;     /* map_lock: a spin lock */
  npkit_plugin_clock_map *m;
  task_fix *fixes;      /* the estimate a task's first channel got, for all of its channels */
} ctx_map;
static ctx_map maps[MAPS];
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

/* A spin lock, not a mutex: it is taken at every kernel channel's stop, and NCCL reports a
 * communicator's channels from one thread (its proxy thread, profilerProxyProgress in
 * src/transport/profiler.cc, NVIDIA/nccl v2.30.7), so it is almost never contended, and the mutex's
 * two locked instructions and two calls were 6 % of the samples of v7 without steps (perf).  The
 * holder never blocks; a waiter yields. */
static void map_lock(ctx_map *c) {
  while (atomic_exchange_explicit(&c->lock, 1, memory_order_acquire) != 0)
    while (atomic_load_explicit(&c->lock, memory_order_relaxed) != 0) sched_yield();
}
static void map_unlock(ctx_map *c) { atomic_store_explicit(&c->lock, 0, memory_order_release); }

static ctx_map *map_of(uint32_t ctx, int create) {
  for (uint32_t i = 0; i < MAPS; i++) {
    ctx_map *c = &maps[(ctx + i) % MAPS];
    uint32_t have = atomic_load_explicit(&c->ctx, memory_order_acquire);
    if (have == ctx) return c;
    if (have != 0) continue;
    if (!create) return NULL;
    pthread_mutex_lock(&maps_lock);
    if (atomic_load_explicit(&c->ctx, memory_order_relaxed) == 0) {
      c->m = malloc(sizeof *c->m);
      c->fixes = calloc(FIXES, sizeof *c->fixes);
      if (c->m == NULL || c->fixes == NULL) {
        free(c->m);
        free(c->fixes);
        c->m = NULL;
        c->fixes = NULL;
      } else {
        npkit_plugin_clock_map_init(c->m);
        atomic_store_explicit(&c->lock, 0, memory_order_relaxed);
        atomic_store_explicit(&c->ctx, ctx, memory_order_release);
      }
    }
    pthread_mutex_unlock(&maps_lock);
    if (atomic_load_explicit(&c->ctx, memory_order_acquire) == ctx) return c;
    if (c->m == NULL) return NULL;
  }
  return NULL;
}

static void emit_clock(ctx_map *c) {
  npkit_event ev;
  npkit_event_now(&ev, NPKIT_EV_PLUGIN_CLOCK);
  map_lock(c);
  npkit_plugin_clock_map_stats(c->m, &ev.u.plugin_clock);
  map_unlock(c);
  ev.u.plugin_clock.ctx = atomic_load_explicit(&c->ctx, memory_order_relaxed);
  if (ev.u.plugin_clock.samples > 0) emit(&ev);
}

/* The collective a task belongs to: its communicator and the sequence number its call took, from
 * its CollApi (NCCL 2.28+), else from the wrapped collective of the same function running on the
 * thread (NCCL launches a call outside a group inside it). */
static const npkit_comm *task_call(const npkit_event *ev, uint64_t *seq) {
  uint32_t comm = 0;
  *seq = NPKIT_NO_SEQ;
  if (ev->u.plugin_task.flags & NPKIT_PTASK_P2P) return NULL;
  if (!npkit_plugin_api_call_seq(ev->u.plugin_task.api, &comm, seq)) {
    const npkit_thread *t = npkit_tls_self;
    uint64_t what = t != NULL && atomic_load_explicit(&t->cur_call, memory_order_relaxed) != 0
                        ? atomic_load_explicit(&t->cur_what, memory_order_relaxed)
                        : 0;
    const npkit_comm *c = what != 0 && (what & 0xffff) == ev->func ? npkit_comm_by_id((uint32_t)(what >> 16)) : NULL;
    if (c == NULL) return NULL;
    *seq = atomic_load_explicit(&c->coll_seq, memory_order_relaxed);
    return c;
  }
  return npkit_comm_by_id(comm);
}

/* What later events and the work in flight need of a task (plugin_tasks.h). */
static void note_task(const npkit_event *ev, uint64_t before_ns) {
  const npkit_ev_plugin_task *pt = &ev->u.plugin_task;
  npkit_plugin_task_info t;
  memset(&t, 0, sizeof t);
  t.id = pt->task;
  t.before_ns = before_ns;
  t.start_ns = ev->start_ns;
  t.nccl_seq = pt->nccl_seq;
  t.count = pt->count;
  t.ctx = pt->ctx;
  t.rank = pt->rank;
  t.nranks = -1;
  t.peer = pt->root;
  t.fn = ev->func;
  t.nchannels = pt->nchannels;
  t.flags = (uint8_t)pt->flags;
  const npkit_comm *c = task_call(ev, &t.seq);
  if (c != NULL) {
    t.comm = c->local_id;
    t.comm_id = c->comm_id;
    t.rank = c->rank;
    t.nranks = c->nranks;
  }
  npkit_plugin_task_note(&t);
}

/* A host time that precedes the kernel of a task NCCL starts now (v2.28.9-1):
 *  - a graph replay's tasks come from the host callback, which runs before the kernel in stream
 *    order (src/enqueue.cc hostStreamPlanCallback): now;
 *  - otherwise, from 2.28, the thread's KernelLaunch started just before (hostStreamPlanTask
 *    follows ncclLaunchKernel); a thread that never launched is CUDA's callback thread: now;
 *  - before 2.28, inside the wrapped call that launched the work: its start. */
static uint64_t before_kernel(uint64_t api, uint64_t now, unsigned abi) {
  if (api != 0 && npkit_plugin_api_graph(api)) return now;
  if (abi >= 5) {
    uint64_t l = npkit_plugin_last_launch_ns();
    return l != 0 ? l : now;
  }
  npkit_thread *t = npkit_thread_self();
  return t != NULL && atomic_load_explicit(&t->cur_call, memory_order_relaxed) != 0
             ? atomic_load_explicit(&t->cur_call_start, memory_order_relaxed)
             : 0;
}

static void emit_stats(void) {
  npkit_event ev;
  npkit_event_now(&ev, NPKIT_EV_PLUGIN_STATS);
  ev.u.plugin_stats.lost = atomic_load(&counts.lost);
  ev.u.plugin_stats.late = atomic_load(&counts.late);
  ev.u.plugin_stats.foreign = atomic_load(&counts.foreign);
  ev.u.plugin_stats.unknown = atomic_load(&counts.ignored);
  emit(&ev);
}

/* The life cycle's finish: the last state of every clock map, the counters, and what the
 * plugin could not record. */
static void finish(npkit_source_totals *totals) {
  (void)totals; /* the plugin's events go through the recorder, which counts them */
  if (!atomic_load(&set_up)) return;
  for (uint32_t i = 0; i < MAPS; i++)
    if (atomic_load_explicit(&maps[i].ctx, memory_order_acquire) != 0) emit_clock(&maps[i]);
  emit_stats();
  uint64_t lost = atomic_load(&counts.lost);
  if (lost > 0)
    npkit_note(NPKIT_LEVEL_WARN,
               "the NCCL profiler plugin lost %llu events (no memory for their state, or no "
               "recorder on the thread that reported them)",
               (unsigned long long)lost);
  npkit_plugin_calls_finish();
}

/* ---- the work in flight (inflight.h) ---- */

/* An item of a running event's slot: kernel channels, proxy operations and steps (proxy control
 * and kernel phases say nothing a channel does not), named after their task's collective. */
static void inflight_slot(void *ctx, const npkit_plugin_watched *w) {
  npkit_inflight_sink *sink = ctx;
  uint8_t what = w->tag == NPKIT_PLUGIN_H_KERNEL_CH    ? NPKIT_INFL_KERNEL_CH
                 : w->tag == NPKIT_PLUGIN_H_PROXY_OP   ? NPKIT_INFL_PROXY_OP
                 : w->tag == NPKIT_PLUGIN_H_PROXY_STEP ? NPKIT_INFL_PROXY_STEP
                                                       : 0;
  if (what == 0) return;
  npkit_plugin_task_info t;
  int known = npkit_plugin_task_get(w->task, &t);
  npkit_event *ev = npkit_inflight_add(sink, what, known ? t.fn : 0, w->since);
  if (ev == NULL) return;
  npkit_ev_inflight *f = &ev->u.inflight;
  f->task = w->task;
  f->ctx = w->ctx;
  f->channel = w->channel;
  f->progress_ns = w->progress;
  if (what != NPKIT_INFL_KERNEL_CH) {
    f->peer = w->peer;
    f->is_send = w->is_send;
    f->step = what == NPKIT_INFL_PROXY_OP ? w->steps_done : w->step_or_nsteps;
    if (what == NPKIT_INFL_PROXY_OP) f->nsteps = w->step_or_nsteps;
    if (what == NPKIT_INFL_PROXY_STEP) f->phase = w->phase;
  }
  if (known) npkit_plugin_task_name_item(&t, f);
}

static void inflight(npkit_inflight_sink *sink) {
  if (!atomic_load(&set_up)) return;
  npkit_plugin_tasks_queued(sink);
  npkit_plugin_slots_each(inflight_slot, sink);
}

const npkit_source_ops npkit_source_plugin = {"plugin", NULL, NULL, finish, NULL, NULL, inflight};

/* NCCL dlcloses the plugin after its last communicator: a library that was loaded that way (not
 * preloaded) must stay mapped, since its threads and exit handlers outlive that moment. */
static void pin_library(void) {
  Dl_info info;
  if (dladdr((void *)&npkit_plugin_init, &info) == 0 || info.dli_fname == NULL) return;
  void *self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  (void)self; /* deliberately never closed */
}

static void setup(void) {
  self_pid = getpid();
  pin_library();
  atomic_store(&set_up, 1);
}

static uint32_t ctx_id(const void *ctx) {
  return npkit_plugin_handle_tag(ctx) == NPKIT_PLUGIN_H_CTX ? (uint32_t)npkit_plugin_handle_payload(ctx) : 0;
}

static uint64_t parent_task(const void *parent) {
  uint32_t tag = npkit_plugin_handle_tag(parent);
  return tag == NPKIT_PLUGIN_H_COLL || tag == NPKIT_PLUGIN_H_P2P ? npkit_plugin_handle_payload(parent) : 0;
}

#define copy_name npkit_plugin_copy_name

/* ---- init / finalize ---- */

int npkit_plugin_nccl_mask(uint32_t events, unsigned abi) {
  int m = 0;
  if (events & NPKIT_PEV_COLL) m |= NPKIT_NCCL_EV_COLL;
  if (events & NPKIT_PEV_P2P) m |= NPKIT_NCCL_EV_P2P;
  if (events & NPKIT_PEV_PROXY) m |= NPKIT_NCCL_EV_PROXY_OP;
  if (events & NPKIT_PEV_STEP) m |= NPKIT_NCCL_EV_PROXY_STEP;
  if (events & NPKIT_PEV_CTRL) m |= NPKIT_NCCL_EV_PROXY_CTRL;
  if ((events & NPKIT_PEV_KERNEL) && abi >= 3) m |= NPKIT_NCCL_EV_KERNEL_CH;
  /* phases come with their channels (NCCL 2.31.2 ncclProfilerEnforceMaskDeps) */
  if ((events & NPKIT_PEV_PHASE) && abi >= 7) m |= NPKIT_NCCL_EV_KERNEL_PHASE | NPKIT_NCCL_EV_KERNEL_CH;
  /* Two calls per launch: a lower bound for the GPU clock map, and the correlation of kernels
   * launched from NCCL's own threads. */
  if (m != 0 && abi >= 5) m |= NPKIT_NCCL_EV_KERNEL_LAUNCH;
  return m;
}

int npkit_plugin_init(void **ctx, int *mask, const npkit_plugin_comm *c) {
  if (ctx != NULL) *ctx = NULL;
  /* The first NCCL call of a process may be this one: the life cycle starts here then. */
  if (!npkit_recording() || !npkit_cfg.plugin) {
    if (mask != NULL) __atomic_store_n(mask, 0, __ATOMIC_RELAXED); /* NCCL then calls nothing */
    return 0;
  }
  pthread_once(&setup_once, setup);
  uint32_t events = npkit_cfg.plugin_events;
  if (events & NPKIT_PEV_PHASE) events |= NPKIT_PEV_KERNEL; /* a phase is mapped with its channel */
  int m = npkit_plugin_nccl_mask(events, c->abi);
  atomic_store(&events_on, events);
  atomic_store(&abi_loaded, c->abi);
  if (mask != NULL) {
    __atomic_store_n(mask, m, __ATOMIC_RELAXED); /* NCCL reads it atomically, at any time */
    atomic_store(&nccl_mask, mask);
  }
  uint32_t id = atomic_fetch_add(&next_ctx, 1);
  if (ctx != NULL) *ctx = npkit_plugin_handle_make(NPKIT_PLUGIN_H_CTX, id);
  npkit_plugin_calls_ctx(id, c);

  npkit_event ev;
  npkit_event_now(&ev, NPKIT_EV_PLUGIN_INIT);
  npkit_ev_plugin_comm *pc = &ev.u.plugin_comm;
  pc->nccl_comm_id = c->nccl_comm_id;
  pc->ctx = id;
  pc->rank = c->rank;
  pc->nranks = c->nranks;
  pc->nnodes = c->nnodes;
  pc->abi = c->abi;
  pc->mask = (uint32_t)m;
  copy_name(pc->name, sizeof pc->name, c->name);
  emit(&ev);
  return 0;
}

int npkit_plugin_finalize(void *ctx) {
  uint32_t id = ctx_id(ctx);
  if (id == 0 || !recording_on()) return 0;
  npkit_event ev;
  npkit_event_now(&ev, NPKIT_EV_PLUGIN_FINALIZE);
  ev.u.plugin_comm.ctx = id;
  ev.u.plugin_comm.rank = ev.u.plugin_comm.nranks = ev.u.plugin_comm.nnodes = -1;
  ev.u.plugin_comm.abi = atomic_load(&abi_loaded);
  emit(&ev);
  ctx_map *c = map_of(id, 0);
  if (c != NULL) emit_clock(c);
  emit_stats();
  return 0;
}

/* ---- starting events ---- */

static void start_task(uint32_t ctx, void **handle, const npkit_plugin_descr *d) {
  const npkit_plugin_task *t = &d->u.task;
  int p2p = d->type == NPKIT_PLUGIN_P2P;
  uint64_t id = atomic_fetch_add_explicit(&next_task, 1, memory_order_relaxed);
  npkit_event ev;
  npkit_event_now(&ev, NPKIT_EV_PLUGIN_TASK);
  ev.func = (uint16_t)npkit_plugin_fn_from_name(t->func);
  npkit_ev_plugin_task *pt = &ev.u.plugin_task;
  pt->task = id;
  pt->nccl_seq = p2p ? NPKIT_NO_SEQ : t->seq;
  pt->count = t->count;
  pt->comm_hash = t->comm_hash;
  pt->ctx = ctx;
  pt->rank = d->rank;
  pt->root = t->root;
  pt->datatype = t->datatype;
  pt->nchannels = t->nchannels;
  pt->nwarps = t->nwarps;
  pt->flags = (uint16_t)(p2p ? NPKIT_PTASK_P2P : 0);
  if (t->symmetric) pt->flags |= NPKIT_PTASK_SYMMETRIC;
  if ((atomic_load_explicit(&events_on, memory_order_relaxed) & NPKIT_PEV_KERNEL) &&
      atomic_load_explicit(&abi_loaded, memory_order_relaxed) >= 3)
    pt->flags |= NPKIT_PTASK_KERNEL_CH;
  copy_name(pt->algo, sizeof pt->algo, t->algo);
  copy_name(pt->proto, sizeof pt->proto, t->proto);
  copy_name(pt->func, sizeof pt->func, t->func);
  pt->api = npkit_plugin_api_id(d->parent);
  emit(&ev);
  note_task(&ev, before_kernel(pt->api, ev.start_ns, atomic_load_explicit(&abi_loaded, memory_order_relaxed)));
  *handle = npkit_plugin_handle_make(p2p ? NPKIT_PLUGIN_H_P2P : NPKIT_PLUGIN_H_COLL, id);
}

static npkit_plugin_slot *take_slot(uint32_t tag, void **handle) {
  npkit_plugin_slot *s = npkit_plugin_slot_alloc(tag, handle);
  if (s == NULL) {
    *handle = NULL;
    atomic_fetch_add_explicit(&counts.lost, 1, memory_order_relaxed);
  }
  return s;
}

static void start_proxy_op(uint32_t ctx, void **handle, const npkit_plugin_descr *d) {
  npkit_plugin_slot *s = take_slot(NPKIT_PLUGIN_H_PROXY_OP, handle);
  if (s == NULL) return;
  s->ctx = ctx;
  s->start_ns = npkit_now_ns();
  /* The parent handle of an op issued by another process means nothing here. */
  if (d->u.proxy_op.pid == (int)self_pid || d->u.proxy_op.pid == 0) {
    s->task = parent_task(d->parent);
  } else {
    atomic_fetch_add_explicit(&counts.foreign, 1, memory_order_relaxed);
  }
  s->u.op.pid = d->u.proxy_op.pid;
  s->u.op.channel = (uint8_t)d->u.proxy_op.channel;
  s->u.op.peer = d->u.proxy_op.peer;
  s->u.op.nsteps = d->u.proxy_op.nsteps;
  s->u.op.chunk_size = d->u.proxy_op.chunk_size;
  s->u.op.is_send = d->u.proxy_op.is_send != 0;
  npkit_plugin_watch_publish(s, s->start_ns, s->u.op.channel, s->u.op.is_send, s->u.op.peer, s->u.op.nsteps);
}

static void start_proxy_step(uint32_t ctx, void **handle, const npkit_plugin_descr *d) {
  npkit_plugin_slot *s = take_slot(NPKIT_PLUGIN_H_PROXY_STEP, handle);
  if (s == NULL) return;
  s->ctx = ctx;
  s->start_ns = npkit_now_ns();
  s->u.step.step = d->u.proxy_step.step;
  s->u.step.peer = -1;
  const npkit_plugin_slot *op = npkit_plugin_slot_get(d->parent, NPKIT_PLUGIN_H_PROXY_OP);
  if (op != NULL) {
    s->task = op->task;
    s->u.step.op_handle = (uint64_t)(uintptr_t)d->parent;
    s->u.step.peer = op->u.op.peer;
    s->u.step.channel = op->u.op.channel;
    s->u.step.is_send = op->u.op.is_send;
  }
  npkit_plugin_watch_publish(s, s->start_ns, op != NULL ? s->u.step.channel : -1, s->u.step.is_send,
                             s->u.step.peer, s->u.step.step);
}

static void start_kernel_ch(uint32_t ctx, void **handle, const npkit_plugin_descr *d) {
  npkit_plugin_slot *s = take_slot(NPKIT_PLUGIN_H_KERNEL_CH, handle);
  if (s == NULL) return;
  s->ctx = ctx;
  s->task = parent_task(d->parent);
  s->u.kch.cpu_start = npkit_now_ns();
  s->u.kch.channel = (uint8_t)d->u.kernel_ch.channel;
  if (d->u.kernel_ch.has_ptimer && d->u.kernel_ch.ptimer != 0) {
    s->u.kch.gpu_start = d->u.kernel_ch.ptimer;
    s->u.kch.has_gpu_start = 1;
  }
  npkit_plugin_task_channel_started(s->task, ctx);
  npkit_plugin_watch_publish(s, s->u.kch.cpu_start, s->u.kch.channel, 0, -1, -1);
}

/* A phase inherits its channel's task and context: its parent is the KernelCh, still running. */
static void start_kernel_phase(uint32_t ctx, void **handle, const npkit_plugin_descr *d) {
  npkit_plugin_slot *s = take_slot(NPKIT_PLUGIN_H_KERNEL_PHASE, handle);
  if (s == NULL) return;
  s->ctx = ctx;
  const npkit_plugin_slot *ch = npkit_plugin_slot_get(d->parent, NPKIT_PLUGIN_H_KERNEL_CH);
  s->task = ch != NULL ? ch->task : 0;
  s->u.kch.cpu_start = npkit_now_ns();
  s->u.kch.channel = (uint8_t)d->u.kernel_phase.channel;
  s->u.kch.phase = (uint8_t)d->u.kernel_phase.phase;
  copy_name(s->u.kch.name, sizeof s->u.kch.name, d->u.kernel_phase.name);
  if (d->u.kernel_phase.ptimer != 0) {
    s->u.kch.gpu_start = d->u.kernel_phase.ptimer;
    s->u.kch.has_gpu_start = 1;
  }
}

int npkit_plugin_start(void *ctx, void **handle, const npkit_plugin_descr *d) {
  if (handle == NULL) return 0;
  *handle = NULL;
  uint32_t id = ctx_id(ctx);
  if (id == 0 || d == NULL || !recording_on()) return 0;
  switch (d->type) {
  case NPKIT_PLUGIN_GROUP: /* a non-NULL parent: NCCL v1-v3 start tasks only under one */
    *handle = npkit_plugin_handle_make(NPKIT_PLUGIN_H_GROUP, 1);
    break;
  case NPKIT_PLUGIN_API: npkit_plugin_api_start(id, handle, d); break;
  case NPKIT_PLUGIN_COLL:
  case NPKIT_PLUGIN_P2P: start_task(id, handle, d); break;
  case NPKIT_PLUGIN_PROXY_OP: start_proxy_op(id, handle, d); break;
  case NPKIT_PLUGIN_PROXY_STEP: start_proxy_step(id, handle, d); break;
  case NPKIT_PLUGIN_KERNEL_CH: start_kernel_ch(id, handle, d); break;
  case NPKIT_PLUGIN_KERNEL_PHASE: start_kernel_phase(id, handle, d); break;
  case NPKIT_PLUGIN_PROXY_CTRL: {
    npkit_plugin_slot *s = take_slot(NPKIT_PLUGIN_H_PROXY_CTRL, handle);
    if (s != NULL) {
      s->ctx = id;
      s->start_ns = npkit_now_ns();
    }
    break;
  }
  default: atomic_fetch_add_explicit(&counts.ignored, 1, memory_order_relaxed); break;
  }
  return 0;
}

/* ---- states ---- */

static void step_state(npkit_plugin_slot *s, int state, const npkit_plugin_state *a) {
  int phase;
  switch (state) {
  case NPKIT_NCCL_ST_STEP_SEND_GPU_WAIT:
  case NPKIT_NCCL_ST_STEP_RECV_WAIT: phase = 0; break;
  case NPKIT_NCCL_ST_STEP_SEND_PEER_WAIT:
  case NPKIT_NCCL_ST_STEP_RECV_FLUSH_WAIT: phase = 1; break;
  case NPKIT_NCCL_ST_STEP_SEND_WAIT:
  case NPKIT_NCCL_ST_STEP_RECV_GPU_WAIT: phase = 2; break;
  default: return;
  }
  if (s->u.step.phase_ns[phase] == 0) {
    s->u.step.phase_ns[phase] = npkit_now_ns();
    npkit_plugin_watch_progress(s, s->u.step.phase_ns[phase], phase, -1);
  }
  /* The size is set when the transfer is posted (send) or has arrived (recv); the GPU-wait state
   * before it still carries the previous step's. */
  if (a != NULL && a->has_trans_size &&
      (state == NPKIT_NCCL_ST_STEP_SEND_WAIT || state == NPKIT_NCCL_ST_STEP_RECV_FLUSH_WAIT ||
       (state == NPKIT_NCCL_ST_STEP_RECV_GPU_WAIT && s->u.step.size == 0)))
    s->u.step.size = a->trans_size;
}

int npkit_plugin_record_state(void *handle, int state, const npkit_plugin_state *a) {
  uint32_t tag = npkit_plugin_handle_tag(handle);
  if (tag == NPKIT_PLUGIN_H_API) {
    npkit_plugin_api_state(handle, state);
    return 0;
  }
  if (handle == NULL || tag == NPKIT_PLUGIN_H_GROUP || tag == NPKIT_PLUGIN_H_COLL || tag == NPKIT_PLUGIN_H_P2P)
    return 0;
  npkit_plugin_slot *s = npkit_plugin_slot_get(handle, tag);
  if (s == NULL) {
    atomic_fetch_add_explicit(&counts.late, 1, memory_order_relaxed);
    return 0;
  }
  switch (tag) {
  case NPKIT_PLUGIN_H_PROXY_STEP: step_state(s, state, a); break;
  case NPKIT_PLUGIN_H_PROXY_OP:
    if (state == NPKIT_NCCL_ST_OP_IN_PROGRESS && s->u.op.progress_ns == 0)
      s->u.op.progress_ns = npkit_now_ns();
    else if (state <= NPKIT_NCCL_ST_OP_RECV_DONE && a != NULL && a->has_trans_size &&
             a->trans_size > s->u.op.trans_size)
      s->u.op.trans_size = a->trans_size;
    break;
  case NPKIT_PLUGIN_H_KERNEL_CH:
  case NPKIT_PLUGIN_H_KERNEL_PHASE:
    if (state == (tag == NPKIT_PLUGIN_H_KERNEL_CH ? NPKIT_NCCL_ST_KERNEL_CH_STOP : NPKIT_NCCL_ST_KERNEL_PHASE_STOP) &&
        a != NULL && a->has_ptimer && a->ptimer != 0) {
      s->u.kch.gpu_stop = a->ptimer;
      s->u.kch.has_gpu_stop = 1;
    }
    break;
  case NPKIT_PLUGIN_H_PROXY_CTRL:
    if (state >= NPKIT_NCCL_ST_CTRL_IDLE && state <= NPKIT_NCCL_ST_CTRL_APPEND_END) {
      s->u.ctrl.state = (uint32_t)state;
      s->u.ctrl.appended = a != NULL && a->has_appended ? a->appended : 0;
    }
    break;
  default: break;
  }
  return 0;
}

/* ---- stopping events ---- */

static void stop_proxy_op(npkit_plugin_slot *s, uint64_t now, uint32_t events) {
  if (!(events & NPKIT_PEV_PROXY)) return;
  npkit_event *ev = npkit_plugin_emit_begin(NPKIT_EV_PLUGIN_PROXY_OP, s->start_ns, now);
  if (ev == NULL) return;
  npkit_ev_proxy_op *o = &ev->u.proxy_op;
  uint64_t step_bytes = atomic_load_explicit(&s->u.op.step_bytes, memory_order_relaxed);
  o->task = s->task;
  o->bytes = step_bytes > 0 ? step_bytes : s->u.op.trans_size;
  o->progress_ns = s->u.op.progress_ns;
  o->ctx = s->ctx;
  o->peer = s->u.op.peer;
  o->nsteps = s->u.op.nsteps;
  o->chunk_size = s->u.op.chunk_size;
  o->steps_done = atomic_load_explicit(&s->u.op.steps_done, memory_order_relaxed);
  o->pid = s->u.op.pid;
  o->channel = s->u.op.channel;
  o->is_send = s->u.op.is_send;
  npkit_emit_commit();
}

static void stop_proxy_step(npkit_plugin_slot *s, uint64_t now, uint32_t events) {
  npkit_plugin_slot *op = npkit_plugin_slot_get((void *)(uintptr_t)s->u.step.op_handle, NPKIT_PLUGIN_H_PROXY_OP);
  if (op != NULL) {
    /* One writer: NCCL stops an op's steps on the thread that progresses the op (progressOps in
     * src/proxy.cc runs op->progress, net.cc's sendProxyProgress/recvProxyProgress, on the proxy
     * progress thread; NVIDIA/nccl v2.30.7), so a load and a store, no locked add; atomics only for
     * the watchdog, which reads them from another thread. */
    atomic_store_explicit(&op->u.op.step_bytes,
                          atomic_load_explicit(&op->u.op.step_bytes, memory_order_relaxed) + s->u.step.size,
                          memory_order_relaxed);
    uint32_t done = atomic_load_explicit(&op->u.op.steps_done, memory_order_relaxed) + 1;
    atomic_store_explicit(&op->u.op.steps_done, done, memory_order_relaxed);
    npkit_plugin_watch_progress(op, now, -1, (int)done);
  }
  if (!(events & NPKIT_PEV_STEP)) return;
  npkit_event *ev = npkit_plugin_emit_begin(NPKIT_EV_PLUGIN_PROXY_STEP, s->start_ns, now);
  if (ev == NULL) return;
  npkit_ev_proxy_step *p = &ev->u.proxy_step;
  p->task = s->task;
  p->size = s->u.step.size;
  memcpy(p->phase_ns, s->u.step.phase_ns, sizeof p->phase_ns);
  p->ctx = s->ctx;
  p->peer = s->u.step.peer;
  p->step = s->u.step.step;
  p->channel = s->u.step.channel;
  p->is_send = s->u.step.is_send;
  npkit_emit_commit();
}

/* The GPU stamps onto the host clock; 0 when there is no map for the context (CPU times then). */
static int map_stamps(npkit_plugin_slot *s, uint64_t now, uint64_t *start, uint64_t *end, int64_t *err) {
  ctx_map *c = map_of(s->ctx, 1);
  if (c == NULL) return 0;
  map_lock(c);
  task_fix *f = &c->fixes[s->task % FIXES];
  if (f->task != s->task || s->task == 0) {
    f->task = s->task;
    f->fix.valid = 0;
  }
  npkit_plugin_clock_map_add(c->m, s->u.kch.gpu_start, s->u.kch.gpu_stop, s->u.kch.cpu_start, now,
                npkit_plugin_task_before(s->task), s->task != 0 ? &f->fix : NULL, start, end, err);
  map_unlock(c);
  return 1;
}

/* A phase, mapped as its channel is: with its task's estimate (map_stamps). */
static void stop_kernel_phase(npkit_plugin_slot *s, uint64_t now, uint32_t events) {
  if (!(events & NPKIT_PEV_PHASE)) return;
  uint64_t start = s->u.kch.cpu_start, end = now;
  int64_t err = -1;
  uint8_t flags = 0;
  int stamped = s->u.kch.has_gpu_start && s->u.kch.has_gpu_stop && s->u.kch.gpu_stop >= s->u.kch.gpu_start;
  if (stamped && map_stamps(s, now, &start, &end, &err))
    flags |= NPKIT_PKCH_GPU_TIMER | NPKIT_PKCH_MAPPED;
  else if (!stamped)
    flags |= NPKIT_PKCH_NO_STOP;
  npkit_event ev;
  npkit_event_init(&ev, NPKIT_EV_PLUGIN_KERNEL_PHASE, start, end);
  npkit_ev_kernel_phase *k = &ev.u.kernel_phase;
  k->task = s->task;
  k->cpu_start_ns = s->u.kch.cpu_start;
  k->cpu_stop_ns = now;
  k->ctx = s->ctx;
  k->channel = s->u.kch.channel;
  k->flags = flags;
  k->phase = s->u.kch.phase;
  k->gpu_start = s->u.kch.gpu_start;
  k->gpu_stop = s->u.kch.gpu_stop;
  k->map_error_ns = err;
  memcpy(k->name, s->u.kch.name, sizeof k->name);
  emit(&ev);
}

static void stop_kernel_ch(npkit_plugin_slot *s, uint64_t now, uint32_t events) {
  if (!(events & NPKIT_PEV_KERNEL)) return;
  uint8_t flags = 0;
  uint64_t start = s->u.kch.cpu_start, end = now;
  int64_t err = -1;
  int stamped = s->u.kch.has_gpu_start && s->u.kch.has_gpu_stop && s->u.kch.gpu_stop >= s->u.kch.gpu_start;
  if (stamped && map_stamps(s, now, &start, &end, &err)) {
    flags |= NPKIT_PKCH_GPU_TIMER | NPKIT_PKCH_MAPPED;
  } else if (!stamped && atomic_load_explicit(&abi_loaded, memory_order_relaxed) >= 4) {
    flags |= NPKIT_PKCH_NO_STOP; /* v4+ always sends the stop stamp before stopEvent */
  }
  npkit_event *ev = npkit_plugin_emit_begin(NPKIT_EV_PLUGIN_KERNEL_CH, start, end);
  if (ev == NULL) return;
  npkit_ev_kernel_ch *k = &ev->u.kernel_ch;
  k->gpu_start = s->u.kch.gpu_start;
  k->gpu_stop = s->u.kch.gpu_stop;
  k->map_error_ns = err;
  k->task = s->task;
  k->cpu_start_ns = s->u.kch.cpu_start;
  k->cpu_stop_ns = now;
  k->ctx = s->ctx;
  k->channel = s->u.kch.channel;
  k->flags = flags;
  npkit_emit_commit();
}

int npkit_plugin_stop(void *handle) {
  uint32_t tag = npkit_plugin_handle_tag(handle);
  if (tag == NPKIT_PLUGIN_H_API) {
    if (recording_on()) npkit_plugin_api_stop(handle);
    return 0;
  }
  if (handle == NULL || tag == NPKIT_PLUGIN_H_GROUP || tag == NPKIT_PLUGIN_H_COLL || tag == NPKIT_PLUGIN_H_P2P)
    return 0; /* nothing held: a task's record was written at its start */
  npkit_plugin_slot *s = npkit_plugin_slot_get(handle, tag);
  if (s == NULL) {
    atomic_fetch_add_explicit(&counts.late, 1, memory_order_relaxed);
    return 0;
  }
  uint64_t now = npkit_now_ns();
  uint32_t events = recording_on() ? atomic_load_explicit(&events_on, memory_order_relaxed) : 0;
  switch (tag) {
  case NPKIT_PLUGIN_H_PROXY_OP: stop_proxy_op(s, now, events); break;
  case NPKIT_PLUGIN_H_PROXY_STEP: stop_proxy_step(s, now, events); break;
  case NPKIT_PLUGIN_H_KERNEL_CH: stop_kernel_ch(s, now, events); break;
  case NPKIT_PLUGIN_H_KERNEL_PHASE: stop_kernel_phase(s, now, events); break;
  case NPKIT_PLUGIN_H_PROXY_CTRL:
    if (events & NPKIT_PEV_CTRL) {
      npkit_event ev;
      npkit_event_init(&ev, NPKIT_EV_PLUGIN_PROXY_CTRL, s->start_ns, now);
      ev.u.proxy_ctrl.ctx = s->ctx;
      ev.u.proxy_ctrl.state = s->u.ctrl.state;
      ev.u.proxy_ctrl.appended = s->u.ctrl.appended;
      emit(&ev);
    }
    break;
  default: break;
  }
  npkit_plugin_slot_free(s);
  return 0;
}
