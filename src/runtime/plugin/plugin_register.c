/* Self-registration as NCCL's profiler plugin: with the library preloaded and NCCL_PROFILER_PLUGIN
 * set neither in the environment nor in NCCL's configuration files (self_register.h), point it at
 * the library itself, so that NCCL (which dlopens the variable's value as a path) finds the
 * already-loaded library and its ncclProfiler_v* tables.  A value the user or the site set,
 * "none" included, is left alone: only one profiler plugin can be active.
 *
 * This runs in every process the library is preloaded into (launchers and shells too), so it only
 * reads NCCL's configuration files and sets a variable: no file written, no thread, no message.
 * NPKIT_DISABLE=1 or NPKIT_PLUGIN=0 skip it. */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include "self_register.h"

__attribute__((constructor)) static void npkit_plugin_register_self(void) {
  if (getenv("NCCL_PROFILER_PLUGIN") != NULL) return;
  if (npkit_self_register_setting_is("NPKIT_DISABLE", 1) || npkit_self_register_setting_is("NPKIT_PLUGIN", 0))
    return;
  if (!npkit_self_register_may_set("NCCL_PROFILER_PLUGIN")) return;
  Dl_info info;
  if (dladdr((void *)&npkit_plugin_register_self, &info) == 0 || info.dli_fname == NULL) return;
  /* An absolute path: the program may change its working directory before NCCL looks. */
  char path[PATH_MAX];
  if (realpath(info.dli_fname, path) == NULL) return;
  setenv("NCCL_PROFILER_PLUGIN", path, 0);
}
