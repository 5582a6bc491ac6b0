/* `npkit api`: the NCCL functions the preloaded library wraps, from nccl_api.def, one per line:
 * name, class, first NCCL version (NCCL_VERSION_CODE) and the same as a release, separated by tabs. */
#include <stdio.h>

#include "commands.h"
#include "nccl_names.h"

int npkit_cmd_api(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (npkit_cli_is_help(argv[i])) {
      printf("Usage: npkit api\n"
             "Lists the wrapped NCCL functions, one per line: name, class, first NCCL version\n"
             "(NCCL_VERSION_CODE) and the same as a release (2.29.2), separated by tabs.  Functions\n"
             "newer than the NCCL a job loads answer ncclInvalidUsage there.  The position of a\n"
             "line is the function id stored in event logs.\n");
      return NPKIT_EXIT_OK;
    }
    return npkit_cli_usage_error("api", "unexpected argument '%s'", argv[i]);
  }
  for (unsigned fn = 1; fn < NPKIT_FN_COUNT; fn++) {
    char release[32];
    npkit_nccl_release_string(npkit_fn_since(fn), release, sizeof release);
    printf("%s\t%s\t%d\t%s\n", npkit_fn_name(fn), npkit_class_name(npkit_fn_class_of(fn)),
           npkit_fn_since(fn), release);
  }
  return fflush(stdout) == 0 ? NPKIT_EXIT_OK : NPKIT_EXIT_FAIL;
}
