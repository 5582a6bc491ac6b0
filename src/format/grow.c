#include "grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int npkit_grow(void *array, size_t *cap, size_t need, size_t size, size_t first) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : (first ? first : 1);
  while (n < need) {
    if (n > SIZE_MAX / 2) return -1;
    n *= 2;
  }
  if (size != 0 && n > SIZE_MAX / size) return -1;
  void *old;
  memcpy(&old, array, sizeof(old));
  void *p = realloc(old, n * size);
  if (p == NULL) return -1;
  memcpy(array, &p, sizeof(p));
  *cap = n;
  return 0;
}
