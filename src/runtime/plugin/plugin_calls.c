#include "plugin_calls.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "comm_registry.h"
#include "lifecycle.h"
#include "nccl_names.h"
#include "notes.h"
#include "npkit/event_log.h"

#define CTXS 1024u /* plugin contexts remembered; later ones get no calls of their own */

typedef struct ctx_info {
  _Atomic int state;      /* 0 unknown, 1 info set, 2 communicator being made, 3 made */
  uint64_t nccl_comm_id;
  int32_t rank, nranks;
  unsigned abi;
  char name[72];
  npkit_comm *comm;
} ctx_info;

static ctx_info ctxs[CTXS];
static _Atomic uint32_t n_ctx, n_made;
static _Atomic uint64_t n_calls;
static _Atomic unsigned abi_seen;

/* The handle the registry knows a context's communicator by: never a real ncclComm_t (odd). */
static const void *pseudo_handle(uint32_t ctx) { return (const void *)(uintptr_t)((uint64_t)ctx << 4 | 0x9); }

void npkit_plugin_calls_finish(void) {
  uint32_t made = atomic_load(&n_made);
  if (atomic_load(&n_ctx) == 0 || npkit_comm_count() > made) return; /* the wrappers saw communicators */
  unsigned abi = atomic_load(&abi_seen);
  uint64_t calls = atomic_load(&n_calls);
  if (abi >= 5)
    npkit_note(NPKIT_LEVEL_WARN,
               "no NCCL call went through the wrappers (NCCL is called through pointers of its own, e.g. "
               "dlopen and dlsym): %llu calls on %u communicator(s) were taken from NCCL's own API events "
               "(from_nccl_events in the trace), without the reduction operator, Send/Recv peers and their "
               "sequence numbers; AlltoAll, Gather and Scatter show as the Send/Recv NCCL reports for them",
               (unsigned long long)calls, made);
  else
    npkit_note(NPKIT_LEVEL_WARN,
               "NCCL was used (profiler interface v%u, %u communicator(s)) but no call went through the "
               "wrappers (NCCL is called through pointers of its own, e.g. dlopen and dlsym): the trace has "
               "NCCL's tasks, kernel channels and proxy events and the GPU activity, but no calls; NCCL 2.28 "
               "or later reports the calls too",
               abi, atomic_load(&n_ctx));
}

void npkit_plugin_calls_ctx(uint32_t ctx, const npkit_plugin_comm *c) {
  atomic_fetch_add(&n_ctx, 1);
  if (c->abi > atomic_load(&abi_seen)) atomic_store(&abi_seen, c->abi);
  if (ctx == 0 || ctx >= CTXS) return;
  ctx_info *x = &ctxs[ctx];
  x->nccl_comm_id = c->nccl_comm_id;
  x->rank = c->rank;
  x->nranks = c->nranks;
  x->abi = c->abi;
  snprintf(x->name, sizeof x->name, "%s", c->name != NULL ? c->name : "");
  atomic_store_explicit(&x->state, 1, memory_order_release);
}

/* The context's communicator, registered at its first call (a wrapped job never gets one). */
static npkit_comm *comm_of(uint32_t ctx) {
  if (ctx == 0 || ctx >= CTXS) return NULL;
  ctx_info *x = &ctxs[ctx];
  int s = atomic_load_explicit(&x->state, memory_order_acquire);
  if (s == 3) return x->comm;
  int one = 1;
  if (s != 1 || x->nranks <= 0 || x->nccl_comm_id == 0 ||
      !atomic_compare_exchange_strong(&x->state, &one, 2))
    return atomic_load_explicit(&x->state, memory_order_acquire) == 3 ? x->comm : NULL;
  npkit_comm_info info = {pseudo_handle(ctx), x->nccl_comm_id, x->rank, x->nranks, -1, 0, NPKIT_FN_NONE,
                          x->name[0] != '\0' ? x->name : NULL};
  x->comm = npkit_comm_register(&info);
  if (x->comm != NULL) {
    atomic_fetch_add(&n_made, 1);
    npkit_identity_from_comm(x->rank, x->nranks, -1);
  }
  atomic_store_explicit(&x->state, x->comm != NULL ? 3 : 1, memory_order_release);
  return x->comm;
}

npkit_comm *npkit_plugin_calls_comm(uint32_t ctx) { return comm_of(ctx); }

uint64_t npkit_plugin_calls_begin(const npkit_plugin_call *p, npkit_call *c) {
  if (p->fn == NPKIT_FN_NONE) return 0;
  npkit_comm *comm = comm_of(p->ctx);
  if (comm == NULL) return 0;
  if (!npkit_call_begin(c, p->fn)) return 0;
  npkit_ev_api *a = &c->ev.u.api;
  c->comm = comm;
  c->ev.start_ns = p->start_ns;
  c->ev.end_ns = p->end_ns;
  a->comm = comm->local_id;
  a->count = p->count;
  a->datatype = p->datatype;
  a->stream = p->stream;
  a->bytes = npkit_message_bytes(p->fn, p->count, p->datatype, comm->nranks);
  if (p->kind == NPKIT_PAPI_COLL && (p->fn == NPKIT_FN_Broadcast || p->fn == NPKIT_FN_Reduce ||
                                     p->fn == NPKIT_FN_Gather || p->fn == NPKIT_FN_Scatter))
    a->peer = p->root;
  a->flags |= NPKIT_API_FROM_PLUGIN;
  if (p->group != 0) {
    a->flags |= NPKIT_API_IN_GROUP;
    a->group = p->group;
  }
  if (p->user_tag != 0 && npkit_fn_config_variant(p->fn) != NPKIT_FN_NONE) {
    a->flags |= NPKIT_API_CONFIG;
    a->user_tag = p->user_tag;
  }
  atomic_fetch_add_explicit(&n_calls, 1, memory_order_relaxed);
  return a->call_no;
}

void npkit_plugin_calls_end(npkit_call *c) { npkit_call_end(c); }
