#define _GNU_SOURCE
#include "test_newer_api.h"

#include <dlfcn.h>
#include <limits.h>

npkit_test_coll_cfg npkit_test_coll_cfg_make(uint64_t tag) {
  npkit_test_coll_cfg c = {
    .size = sizeof(npkit_test_coll_cfg), .magic = 0xcafebeefu, .version = 23102,
    .ext = NULL, .minCTAs = INT_MIN, .maxCTAs = INT_MIN, .nvlsCTAs = INT_MIN,
    .cgaClusterSize = INT_MIN, .algSelection = NULL, .forceAlgSelection = 1,
    .CTAPolicy = INT_MIN, .userProfilerTag = tag,
  };
  return c;
}

void *npkit_test_sym(const char *name) {
  return dlsym(RTLD_DEFAULT, name);
}
