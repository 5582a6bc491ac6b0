/*
 * npkit_preload.h: the application's side of npkit-preload (libnpkit_preload.so).
 *
 * Marks put the application's own phases ("forward", "GEMM", "optimizer") on the timeline next to
 * its NCCL calls, on the track of the calling thread; `npkit report` counts marked ranges as
 * computation when it measures how much communication overlaps with it.  npkit_pause() and
 * npkit_resume() limit recording to the steps that matter (see also NPKIT_START_AFTER,
 * NPKIT_STOP_AFTER and NPKIT_TOGGLE_SIGNAL in README.md).
 *
 *     #include <npkit_preload.h>
 *     npkit_mark_begin("GEMM");  gemm(...);  npkit_mark_end("GEMM");
 *     npkit_mark_instant("checkpoint saved");
 *
 * A program built with this header runs unchanged without the library: the functions below look
 * the library up at their first call (dlsym) and do nothing when it is not loaded.  Link with -ldl
 * on glibc older than 2.34.  Names are copied on the first use of each name; ranges with the same
 * name may nest, and npkit_mark_end(name) closes the latest open range of that name on the
 * calling thread.  Every function is thread safe and cheap after the first call with a given name
 * (a hash lookup and one stored event); none may be called from a signal handler.
 *
 * From Python (ctypes), with the library preloaded:
 *     import ctypes
 *     lib = ctypes.CDLL(None)
 *     mark_begin = getattr(lib, "npkit_mark_begin", None)   # None without the library
 *     if mark_begin: mark_begin(b"GEMM")
 */
#ifndef NPKIT_PRELOAD_H
#define NPKIT_PRELOAD_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef NPKIT_PRELOAD_BUILDING_LIBRARY
/* The entry points as the library exports them. */
void npkit_mark_begin(const char *name);
void npkit_mark_end(const char *name);
void npkit_mark_instant(const char *name);
void npkit_pause(void);
void npkit_resume(void);
#else

#include <dlfcn.h>

/* The library's function `symbol`, looked up once per program unit and cached (also when absent). */
static inline void *npkit_preload_lookup_(const char *symbol, void **cache) {
  void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (f == (void *)0) {
    f = dlsym(RTLD_DEFAULT, symbol);
    if (f == (void *)0) f = (void *)cache; /* "looked up, absent": a value no function has */
    __atomic_store_n(cache, f, __ATOMIC_RELEASE);
  }
  return f == (void *)cache ? (void *)0 : f;
}

#define NPKIT_PRELOAD_CALL_NAME_(symbol, name)                       \
  do {                                                                \
    static void *cache_;                                              \
    union {                                                           \
      void *p;                                                        \
      void (*f)(const char *);                                        \
    } u_;                                                             \
    u_.p = npkit_preload_lookup_(symbol, &cache_);                    \
    if (u_.p != (void *)0) u_.f(name);                                \
  } while (0)

#define NPKIT_PRELOAD_CALL_VOID_(symbol)                              \
  do {                                                                \
    static void *cache_;                                              \
    union {                                                           \
      void *p;                                                        \
      void (*f)(void);                                                \
    } u_;                                                             \
    u_.p = npkit_preload_lookup_(symbol, &cache_);                    \
    if (u_.p != (void *)0) u_.f();                                    \
  } while (0)

/* Opens a range named `name` on the calling thread's track. */
static inline void npkit_mark_begin(const char *name) { NPKIT_PRELOAD_CALL_NAME_("npkit_mark_begin", name); }
/* Closes the latest open range named `name` of the calling thread. */
static inline void npkit_mark_end(const char *name) { NPKIT_PRELOAD_CALL_NAME_("npkit_mark_end", name); }
/* A point in time named `name` on the calling thread's track. */
static inline void npkit_mark_instant(const char *name) { NPKIT_PRELOAD_CALL_NAME_("npkit_mark_instant", name); }
/* Stops storing events (sequence numbers keep counting, so ranks stay comparable). */
static inline void npkit_pause(void) { NPKIT_PRELOAD_CALL_VOID_("npkit_pause"); }
/* Stores events again. */
static inline void npkit_resume(void) { NPKIT_PRELOAD_CALL_VOID_("npkit_resume"); }

/* The marker of NPKit-instrumented code, as an instant. */
#define NPKIT_MARK_CPU_EVENT(name) npkit_mark_instant(name)

#endif /* NPKIT_PRELOAD_BUILDING_LIBRARY */

#ifdef __cplusplus
}
#endif
#endif /* NPKIT_PRELOAD_H */
