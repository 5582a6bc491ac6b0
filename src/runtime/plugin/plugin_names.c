/* NCCL's internal enums as ABI v1 passes them, and its datatype strings (v2+), by name.  The
 * numbers are those of NCCL 2.23 (nccl_common.h), the only release with ABI v1 as its newest. */
#include "plugin_names.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "nccl_names.h"

/* NCCL passes the same few string literals with every task: a pointer seen before is resolved by
 * one comparison with the name it resolved to, instead of a search.  An entry packs the pointer
 * and the value + 1 in one word, so a lookup never sees half an update. */
#define CACHE_SLOTS 16u
typedef struct name_cache {
  _Atomic uint64_t entry[CACHE_SLOTS];
} name_cache;

static int cached(name_cache *c, const char *s, int (*search)(const char *),
                  const char *(*name_of)(int)) {
  uintptr_t p = (uintptr_t)s;
  if (s == NULL || (p >> 48) != 0) return search(s);
  unsigned slot = (unsigned)(((uint64_t)p >> 3) * 0x9e3779b97f4a7c15ull >> 60) % CACHE_SLOTS;
  uint64_t e = atomic_load_explicit(&c->entry[slot], memory_order_relaxed);
  if ((e >> 16) == p) {
    int v = (int)(e & 0xffffu) - 1;
    const char *name = name_of(v);
    if (name != NULL && strcasecmp(name, s) == 0) return v; /* still what it said */
  }
  int v = search(s);
  if (v >= -1 && v < 0xfffe)
    atomic_store_explicit(&c->entry[slot], ((uint64_t)p << 16) | (uint64_t)(v + 1),
                          memory_order_relaxed);
  return v;
}

static const char *pick(const char *const *names, unsigned n, unsigned i) {
  return i < n ? names[i] : NULL;
}

const char *npkit_plugin_v1_func_name(unsigned func) {
  static const char *const names[] = {"Broadcast",     "Reduce",   "AllGather", "ReduceScatter",
                                      "AllReduce",     "SendRecv", "Send",      "Recv"};
  return pick(names, sizeof names / sizeof names[0], func);
}

const char *npkit_plugin_v1_algo_name(unsigned algo) {
  static const char *const names[] = {"TREE", "RING",      "COLLNET_DIRECT", "COLLNET_CHAIN",
                                      "NVLS", "NVLS_TREE", "PAT"};
  return pick(names, sizeof names / sizeof names[0], algo);
}

const char *npkit_plugin_v1_proto_name(unsigned proto) {
  static const char *const names[] = {"LL", "LL128", "SIMPLE"};
  return pick(names, sizeof names / sizeof names[0], proto);
}

/* ncclDataType_t order of nccl.h; NCCL's own string table has no entry for ncclUint8 and calls
 * it "Unknown", which lands in -1 like any other name we do not know. */
static const char *const type_names[] = {
    "ncclInt8",    "ncclUint8",    "ncclInt32",      "ncclUint32",    "ncclInt64", "ncclUint64",
    "ncclFloat16", "ncclFloat32",  "ncclFloat64",    "ncclBfloat16",  "ncclFloat8e4m3",
    "ncclFloat8e5m2"};
#define NTYPES ((int)(sizeof type_names / sizeof type_names[0]))

static int search_type(const char *name) {
  if (name == NULL) return -1;
  for (int i = 0; i < NTYPES; i++)
    if (strcmp(name, type_names[i]) == 0) return i;
  return -1;
}

static const char *type_name(int v) { return v >= 0 && v < NTYPES ? type_names[v] : NULL; }

int npkit_plugin_datatype_from_name(const char *name) {
  static name_cache cache;
  return cached(&cache, name, search_type, type_name);
}

static int search_fn(const char *name) { return (int)npkit_fn_from_name(name); }

static const char *fn_name(int v) {
  return v > NPKIT_FN_NONE && v < NPKIT_FN_COUNT ? npkit_fn_short_name((unsigned)v) : NULL;
}

int npkit_plugin_fn_from_name(const char *name) {
  static name_cache cache;
  return cached(&cache, name, search_fn, fn_name);
}
