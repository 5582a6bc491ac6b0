/* Finding the real NCCL functions, lazily and thread-safely: dlsym(RTLD_NEXT), then an already
 * loaded libnccl.so.2, then NPKIT_NCCL_LIBRARY.  A function the loaded NCCL lacks resolves to NULL
 * and the wrapper fails the call cleanly. */
#ifndef NPKIT_NCCL_RESOLVE_H
#define NPKIT_NCCL_RESOLVE_H

#include <stdatomic.h>
#include <stdint.h>

#include "nccl_names.h"

extern _Atomic(void *) npkit_nccl_syms[NPKIT_FN_COUNT];
#define NPKIT_SYM_MISSING ((void *)1)

void *npkit_nccl_resolve(unsigned fn);

/* The real function, or NULL if the loaded NCCL does not have it. */
static inline void *npkit_nccl_sym(unsigned fn) {
  void *p = atomic_load_explicit(&npkit_nccl_syms[fn], memory_order_acquire);
  if (p == NULL) p = npkit_nccl_resolve(fn);
  return p == NPKIT_SYM_MISSING ? NULL : p;
}

/* The executable code of the NCCL library the functions were found in: set once, with the first
 * function found.  libnccl calls its own public functions through its PLT, also from its own
 * threads (v2.28.9-1: ncclGetVersion from the init thread, ncclCommGetAsyncError inside every
 * collective): a call whose return address lies in this range is NCCL's, not the application's. */
extern _Atomic uintptr_t npkit_nccl_text_lo, npkit_nccl_text_len;

static inline int npkit_called_by_nccl(const void *return_address) {
  uintptr_t len = atomic_load_explicit(&npkit_nccl_text_len, memory_order_acquire);
  return (uintptr_t)return_address - atomic_load_explicit(&npkit_nccl_text_lo, memory_order_relaxed) < len;
}

/* Where to look last (NPKIT_NCCL_LIBRARY); call before the first lookup. */
void npkit_nccl_set_library(const char *path);
/* NCCL_VERSION_CODE of the loaded NCCL, 0 if unknown. */
int npkit_nccl_version(void);

#endif
