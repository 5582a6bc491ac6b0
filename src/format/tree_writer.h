/*
 * A tree of named values (objects, arrays, strings, numbers) written in order, whatever the
 * encoding: what describes a trace or a machine beside the events (the trace's otherData, the
 * machine snapshot, the merge's clock alignment) is written once against this and encoded by the
 * writer behind it: the JSON writer (tree_json.c), or a trace sink that keeps it its own way.
 *
 * The calls are those of the JSON writer's structured API: a member is npkit_tree_key then one
 * value (or an object or array); an array's elements are values without keys.
 */
#ifndef NPKIT_TREE_WRITER_H
#define NPKIT_TREE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "json_writer.h"

typedef struct npkit_tree npkit_tree;

typedef struct npkit_tree_ops {
  void (*key)(npkit_tree *t, const char *k);
  void (*begin_object)(npkit_tree *t);
  void (*end_object)(npkit_tree *t);
  void (*begin_array)(npkit_tree *t);
  void (*end_array)(npkit_tree *t);
  void (*string)(npkit_tree *t, const char *v);
  void (*string_n)(npkit_tree *t, const char *v, size_t n); /* from a log: at most n bytes, to a NUL */
  void (*int64)(npkit_tree *t, int64_t v);
  void (*uint64)(npkit_tree *t, uint64_t v);
  void (*real)(npkit_tree *t, double v);
  void (*boolean)(npkit_tree *t, int v);
  void (*null)(npkit_tree *t);
  void (*hex)(npkit_tree *t, uint64_t v, int width); /* "0x…", at least width digits */
  void (*next_line)(npkit_tree *t);                  /* layout: the next element on a line of its own */
} npkit_tree_ops;

struct npkit_tree {
  const npkit_tree_ops *ops;
};

static inline void npkit_tree_key(npkit_tree *t, const char *k) { t->ops->key(t, k); }
static inline void npkit_tree_begin_object(npkit_tree *t) { t->ops->begin_object(t); }
static inline void npkit_tree_end_object(npkit_tree *t) { t->ops->end_object(t); }
static inline void npkit_tree_begin_array(npkit_tree *t) { t->ops->begin_array(t); }
static inline void npkit_tree_end_array(npkit_tree *t) { t->ops->end_array(t); }
static inline void npkit_tree_string(npkit_tree *t, const char *v) { t->ops->string(t, v); }
static inline void npkit_tree_string_n(npkit_tree *t, const char *v, size_t n) { t->ops->string_n(t, v, n); }
static inline void npkit_tree_int(npkit_tree *t, int64_t v) { t->ops->int64(t, v); }
static inline void npkit_tree_uint(npkit_tree *t, uint64_t v) { t->ops->uint64(t, v); }
static inline void npkit_tree_double(npkit_tree *t, double v) { t->ops->real(t, v); }
static inline void npkit_tree_bool(npkit_tree *t, int v) { t->ops->boolean(t, v); }
static inline void npkit_tree_null(npkit_tree *t) { t->ops->null(t); }
static inline void npkit_tree_hex(npkit_tree *t, uint64_t v, int width) { t->ops->hex(t, v, width); }
static inline void npkit_tree_next_line(npkit_tree *t) { t->ops->next_line(t); }

/* A member in one call: npkit_tree_kv_string, _int, _uint, _double, _bool. */
#define NPKIT_TREE_KV(suffix, type, value)                                                     \
  static inline void npkit_tree_kv_##suffix(npkit_tree *t, const char *k, type v) {            \
    npkit_tree_key(t, k);                                                                       \
    npkit_tree_##value(t, v);                                                                   \
  }
NPKIT_TREE_KV(string, const char *, string)
NPKIT_TREE_KV(int, int64_t, int)
NPKIT_TREE_KV(uint, uint64_t, uint)
NPKIT_TREE_KV(double, double, double)
NPKIT_TREE_KV(bool, int, bool)
#undef NPKIT_TREE_KV

/* The JSON writer as a tree: every call goes to w. */
typedef struct npkit_json_tree {
  npkit_tree base;
  npkit_json *w;
} npkit_json_tree;

void npkit_json_tree_init(npkit_json_tree *t, npkit_json *w);

#endif /* NPKIT_TREE_WRITER_H */
