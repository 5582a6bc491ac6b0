#include "nccl_resolve.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"

_Atomic(void *) npkit_nccl_syms[NPKIT_FN_COUNT];
_Atomic uintptr_t npkit_nccl_text_lo, npkit_nccl_text_len;
static char library_path[512];
static void *library_handle;
static pthread_mutex_t library_lock = PTHREAD_MUTEX_INITIALIZER;

void npkit_nccl_set_library(const char *path) {
  snprintf(library_path, sizeof library_path, "%s", path ? path : "");
}

/* True when p lies in this library: a lookup must never hand back our own wrapper. */
static int is_ours(void *p) {
  Dl_info mine, theirs;
  if (dladdr((void *)&npkit_nccl_resolve, &mine) == 0) return 0;
  if (dladdr(p, &theirs) == 0) return 0;
  return mine.dli_fbase == theirs.dli_fbase;
}

static void *lookup(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (p != NULL && !is_ours(p)) return p;
  /* Not after us in the search order: NCCL may have been dlopen'ed (frameworks do), or we were
   * loaded by dlopen rather than preloaded. */
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (h != NULL) {
    p = dlsym(h, name);
    dlclose(h);
    if (p != NULL && !is_ours(p)) return p;
  }
  pthread_mutex_lock(&library_lock);
  if (library_handle == NULL && library_path[0] != '\0') {
    library_handle = dlopen(library_path, RTLD_NOW | RTLD_GLOBAL);
    if (library_handle == NULL) {
      const char *e = dlerror();
      npkit_warn("NPKIT_NCCL_LIBRARY='%s' cannot be loaded: %s", library_path, e ? e : "?");
      library_path[0] = '\0';
    }
  }
  h = library_handle;
  pthread_mutex_unlock(&library_lock);
  if (h != NULL) {
    p = dlsym(h, name);
    if (p != NULL && !is_ours(p)) return p;
  }
  return NULL;
}

/* The executable segment holding p, from the program headers of the object that has it. */
typedef struct text_search {
  uintptr_t p, lo, len;
} text_search;

static int find_text(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  text_search *t = arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    if (t->p - lo < (uintptr_t)ph->p_memsz) {
      t->lo = lo;
      t->len = (uintptr_t)ph->p_memsz;
      return 1;
    }
  }
  return 0;
}

static void learn_text(void *p) {
  if (atomic_load_explicit(&npkit_nccl_text_len, memory_order_acquire) != 0) return;
  text_search t = {(uintptr_t)p, 0, 0};
  if (dl_iterate_phdr(find_text, &t) == 0 || t.len == 0) return;
  atomic_store_explicit(&npkit_nccl_text_lo, t.lo, memory_order_relaxed);
  atomic_store_explicit(&npkit_nccl_text_len, t.len, memory_order_release);
}

void *npkit_nccl_resolve(unsigned fn) {
  if (fn == 0 || fn >= NPKIT_FN_COUNT) return NPKIT_SYM_MISSING;
  void *p = lookup(npkit_fn_name(fn));
  if (p != NULL) learn_text(p);
  if (p == NULL) p = NPKIT_SYM_MISSING;
  /* Racing resolvers find the same answer, so a plain store is enough. */
  atomic_store_explicit(&npkit_nccl_syms[fn], p, memory_order_release);
  return p;
}

int npkit_nccl_version(void) {
  typedef int (*get_version_fn)(int *);
  get_version_fn f = (get_version_fn)npkit_nccl_sym(NPKIT_FN_GetVersion);
  int v = 0;
  if (f == NULL || f(&v) != 0) return 0;
  return v;
}
