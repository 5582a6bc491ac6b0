/* Self-registration with the CUDA driver: when this library is preloaded and the user has not named
 * an injection library, CUDA_INJECTION64_PATH is pointed at this library, so that cuInit calls its
 * InitializeInjection (cupti_source.c) and CUPTI starts at the moment NVIDIA recommends.
 *
 * A constructor runs in every process the library is preloaded into (mpirun, shells): it only sets
 * an environment variable, which does nothing in a process that never initialises CUDA.  Everything
 * else starts lazily. */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include "config.h"

static int setting_is(const char *name, int value) {
  const char *v = getenv(name);
  int b;
  return v != NULL && npkit_config_parse_bool(v, &b) == 0 && b == value;
}

__attribute__((constructor)) static void npkit_self_register(void) {
  if (getenv("CUDA_INJECTION64_PATH") != NULL) return; /* the user's choice, even an empty one */
  if (setting_is("NPKIT_DISABLE", 1) || setting_is("NPKIT_CUPTI", 0)) return;
  /* Only when this copy interposes NCCL (preloaded): a copy loaded later by dlopen (as NCCL's
   * profiler plugin, say) comes after cuInit and while other threads may read the environment. */
  Dl_info info, first_info;
  void *first = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  if (dladdr((void *)&npkit_self_register, &info) == 0 || info.dli_fname == NULL) return;
  if (first == NULL || dladdr(first, &first_info) == 0 || first_info.dli_fbase != info.dli_fbase) return;
  char path[PATH_MAX];
  if (realpath(info.dli_fname, path) == NULL) return;
  setenv("CUDA_INJECTION64_PATH", path, 0);
}
