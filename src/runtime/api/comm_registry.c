#include "comm_registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

#define TABLE_SIZE 16384u /* power of two */

static _Atomic(uintptr_t) keys[TABLE_SIZE];
static _Atomic(npkit_comm *) values[TABLE_SIZE];
static _Atomic(npkit_comm *) by_id[TABLE_SIZE]; /* index: local id */
static pthread_mutex_t insert_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t next_local_id = 1;
static npkit_log_writer *comm_log;

void npkit_comms_attach_log(npkit_log_writer *log) { comm_log = log; }

static uint32_t slot_of(uintptr_t key) {
  uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 40) & (TABLE_SIZE - 1);
}

npkit_comm *npkit_comm_find(const void *handle) {
  uintptr_t key = (uintptr_t)handle;
  if (key == 0) return NULL;
  for (uint32_t i = slot_of(key), n = 0; n < TABLE_SIZE; i = (i + 1) & (TABLE_SIZE - 1), n++) {
    uintptr_t k = atomic_load_explicit(&keys[i], memory_order_acquire);
    if (k == key) return atomic_load_explicit(&values[i], memory_order_acquire);
    if (k == 0) return NULL;
  }
  return NULL;
}

npkit_comm *npkit_comm_by_id(uint32_t local_id) {
  return local_id < TABLE_SIZE ? atomic_load_explicit(&by_id[local_id], memory_order_acquire) : NULL;
}

uint32_t npkit_comm_count(void) { return atomic_load(&next_local_id) - 1; }

npkit_comm *npkit_comm_register(const npkit_comm_info *info) {
  uintptr_t key = (uintptr_t)info->handle;
  if (key == 0) return NULL;
  npkit_comm *c = aligned_alloc(64, sizeof *c);
  int n = info->nranks > 0 ? info->nranks : 0;
  if (c == NULL) return NULL;
  memset(c, 0, sizeof *c);
  if (n > 0) {
    c->send_seq = calloc((size_t)n, sizeof *c->send_seq);
    c->recv_seq = calloc((size_t)n, sizeof *c->recv_seq);
    if (c->send_seq == NULL || c->recv_seq == NULL) {
      free(c->send_seq);
      free(c->recv_seq);
      free(c);
      return NULL;
    }
  }
  c->local_id = atomic_fetch_add(&next_local_id, 1);
  c->rank = info->rank;
  c->nranks = info->nranks;
  c->comm_id = info->comm_id;
  atomic_init(&c->alive, 1);

  pthread_mutex_lock(&insert_lock);
  uint32_t i = slot_of(key), probes = 0;
  for (; probes < TABLE_SIZE; i = (i + 1) & (TABLE_SIZE - 1), probes++) {
    uintptr_t k = atomic_load_explicit(&keys[i], memory_order_relaxed);
    if (k == key || k == 0) break;
  }
  if (probes == TABLE_SIZE) {
    pthread_mutex_unlock(&insert_lock);
    free(c->send_seq);
    free(c->recv_seq);
    free(c);
    return NULL;
  }
  /* Value first, then key: a reader that sees the key sees the value. */
  atomic_store_explicit(&values[i], c, memory_order_release);
  atomic_store_explicit(&keys[i], key, memory_order_release);
  if (c->local_id < TABLE_SIZE) atomic_store_explicit(&by_id[c->local_id], c, memory_order_release);
  pthread_mutex_unlock(&insert_lock);

  npkit_comm_rec rec;
  memset(&rec, 0, sizeof rec);
  rec.local_id = c->local_id;
  rec.parent = info->parent;
  rec.comm_id = info->comm_id;
  rec.handle = (uint64_t)key;
  rec.rank = info->rank;
  rec.nranks = info->nranks;
  rec.device = info->device;
  rec.created_by = info->created_by;
  rec.create_ns = npkit_now_ns();
  if (info->name != NULL) strncpy(rec.name, info->name, sizeof rec.name - 1);
  if (comm_log != NULL) npkit_logw_append(comm_log, NPKIT_BLOCK_COMM, 1, &rec, sizeof rec);
  return c;
}
