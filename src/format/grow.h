/*
 * The one growable array of the readers and renderers: capacity doubles (from `first`) until it
 * holds `need` elements, so appending n elements costs O(n) copies in all.  Every array of the
 * tool that grows one element at a time goes through it, so that an overflow check or a change
 * of policy is made in one place.
 */
#ifndef NPKIT_GROW_H
#define NPKIT_GROW_H

#include <stddef.h>

/* Makes *array (of *cap elements of `size` bytes) hold at least `need`.  Returns 0, or -1 when
 * memory is short or the size would overflow; *array and *cap are then unchanged. */
int npkit_grow(void *array, size_t *cap, size_t need, size_t size, size_t first);

/* NPKIT_GROW(ptr, cap, need, first): the same for a typed pointer. */
#define NPKIT_GROW(ptr, cap, need, first) npkit_grow(&(ptr), &(cap), (need), sizeof(*(ptr)), (first))

#endif /* NPKIT_GROW_H */
