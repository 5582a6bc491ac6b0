#include "string_table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "npkit/event_log.h"

/* Twice the names kept: probes stay short. */
#define SLOTS (2 * NPKIT_STRTAB_MAX_NAMES)

typedef struct interned {
  uint64_t hash;
  uint32_t id;
  uint32_t len;
  char text[];
} interned;

static _Atomic(interned *) slots[SLOTS];
static _Atomic uint32_t next_id = 1;
static uint32_t n_names;          /* under lock */
static npkit_log_writer *log_out; /* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

_Static_assert((SLOTS & (SLOTS - 1)) == 0, "slot count is a power of two");

void npkit_strings_attach_log(npkit_log_writer *log) {
  pthread_mutex_lock(&lock);
  log_out = log;
  pthread_mutex_unlock(&lock);
}

uint32_t npkit_string_id_new(void) {
  return atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
}

static int matches(const interned *e, uint64_t hash, const char *text, size_t len) {
  return e->hash == hash && e->len == len && memcmp(e->text, text, len) == 0;
}

/* Appends one STRING block: the record, then the text (the writer pads the block). */
static void write_string(uint32_t id, const char *text, size_t len) {
  if (log_out == NULL) return;
  struct {
    npkit_string_rec rec;
    char text[NPKIT_STRTAB_MAX_NAME];
  } block;
  block.rec.id = id;
  block.rec.length = (uint32_t)len;
  memcpy(block.text, text, len);
  npkit_logw_append(log_out, NPKIT_BLOCK_STRING, 1, &block, sizeof block.rec + len);
}

static uint32_t insert(size_t slot, uint64_t hash, const char *text, size_t len) {
  uint32_t id = 0;
  pthread_mutex_lock(&lock);
  for (size_t i = slot;; i = (i + 1) & (SLOTS - 1)) {
    interned *e = atomic_load_explicit(&slots[i], memory_order_acquire);
    if (e != NULL) {
      if (matches(e, hash, text, len)) {
        id = e->id; /* another thread stored it meanwhile */
        break;
      }
      continue;
    }
    if (n_names >= NPKIT_STRTAB_MAX_NAMES) break;
    e = malloc(sizeof *e + len);
    if (e == NULL) break;
    e->hash = hash;
    e->id = npkit_string_id_new();
    e->len = (uint32_t)len;
    memcpy(e->text, text, len);
    write_string(e->id, text, len); /* before publishing: no event refers to it yet */
    atomic_store_explicit(&slots[i], e, memory_order_release);
    n_names++;
    id = e->id;
    break;
  }
  pthread_mutex_unlock(&lock);
  return id;
}

uint32_t npkit_string_intern(const char *text) {
  size_t len = strnlen(text, NPKIT_STRTAB_MAX_NAME);
  uint64_t hash = npkit_hash64(NPKIT_HASH_SEED, text, len);
  size_t slot = (size_t)(hash ^ (hash >> 32)) & (SLOTS - 1);
  for (size_t i = slot;; i = (i + 1) & (SLOTS - 1)) {
    interned *e = atomic_load_explicit(&slots[i], memory_order_acquire);
    if (e == NULL) return insert(slot, hash, text, len);
    if (matches(e, hash, text, len)) return e->id;
  }
}
