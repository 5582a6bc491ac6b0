/* The CUDA driver's side of the GPU source.
 *
 * Self-registration: when this library is preloaded and neither the user nor NCCL's configuration
 * files name an injection library, CUDA_INJECTION64_PATH is pointed at this library, so that
 * cuInit calls its InitializeInjection and CUPTI starts at the moment NVIDIA recommends.  A
 * constructor runs in every process the library is preloaded into (mpirun, shells): it reads
 * NCCL's configuration files and sets an environment variable, which does nothing in a process
 * that never initialises CUDA.  Everything else starts lazily. */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include "cupti_source.h"
#include "lifecycle.h"
#include "self_register.h"

#define EXPORT __attribute__((visibility("default")))

__attribute__((constructor)) static void npkit_cupti_register_self(void) {
  if (getenv("CUDA_INJECTION64_PATH") != NULL) return; /* before anything else: the cheap test */
  if (npkit_self_register_setting_is("NPKIT_DISABLE", 1) || npkit_self_register_setting_is("NPKIT_CUPTI", 0))
    return;
  /* Only when this copy interposes NCCL (preloaded): a copy loaded later by dlopen (as NCCL's
   * profiler plugin, say) comes after cuInit and while other threads may read the environment. */
  Dl_info info, first_info;
  void *first = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  if (dladdr((void *)&npkit_cupti_register_self, &info) == 0 || info.dli_fname == NULL) return;
  if (first == NULL || dladdr(first, &first_info) == 0 || first_info.dli_fbase != info.dli_fbase) return;
  if (!npkit_self_register_may_set("CUDA_INJECTION64_PATH")) return;
  char path[PATH_MAX];
  if (realpath(info.dli_fname, path) == NULL) return;
  setenv("CUDA_INJECTION64_PATH", path, 0);
}

/* The entry point CUDA_INJECTION64_PATH names: called inside cuInit, so only processes that use
 * CUDA get here, and recording may start now. */
EXPORT int InitializeInjection(void) {
  if (npkit_start() == NPKIT_STATE_ON) npkit_cupti_start(NPKIT_CUPTI_FROM_DRIVER);
  return 1;
}
