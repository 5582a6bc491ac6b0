/* The next definition of a function a test shim wraps (dlsym with RTLD_NEXT), looked up once and
 * kept in *cache.  Atomic: the library's own threads (writer, machine sampler, watchdog) call the
 * wrapped functions beside the job's threads, and a plain lazy store would be a data race that
 * ThreadSanitizer reports.  The shim defines _GNU_SOURCE before any include (RTLD_NEXT). */
#ifndef NPKIT_TEST_SHIM_NEXT_H
#define NPKIT_TEST_SHIM_NEXT_H

#include <dlfcn.h>

static inline void *npkit_shim_next(void **cache, const char *name) {
  void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = dlsym(RTLD_NEXT, name);
    __atomic_store_n(cache, f, __ATOMIC_RELEASE);
  }
  return f;
}

#endif
