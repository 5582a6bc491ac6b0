/*
 * The one binary search of the readers: the element of an array sorted by one of its members
 * (the reader's communicators, threads and strings, the stack table, the NPKit dump's ranks...).
 * A macro that defines a typed function, so that each lookup is as fast as the loop written out
 * (the member is compared in place, no callback) and the loop itself is written once.
 */
#ifndef NPKIT_SORTED_FIND_H
#define NPKIT_SORTED_FIND_H

#include <stddef.h>

/* NPKIT_SORTED_FIND(name, type, key_type, member) defines
 *     static const type *name(const type *v, size_t n, key_type key)
 * which returns the element of v[0..n), sorted ascending by `member` (distinct values), whose
 * member equals key, or NULL. */
#define NPKIT_SORTED_FIND(name, type, key_type, member)                  \
  static inline const type *name(const type *v, size_t n, key_type key) { \
    size_t lo = 0, hi = n;                                                \
    while (lo < hi) {                                                     \
      size_t mid = lo + (hi - lo) / 2;                                    \
      if (v[mid].member == key) return &v[mid];                           \
      if (v[mid].member < key)                                            \
        lo = mid + 1;                                                     \
      else                                                                \
        hi = mid;                                                         \
    }                                                                     \
    return NULL;                                                          \
  }

#endif /* NPKIT_SORTED_FIND_H */
