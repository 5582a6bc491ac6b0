#include "cupti_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

npkit_cupti_api npkit_cupti;

/* One libcupti per process: a copy loaded by the application (PyTorch, a tool) wins. */
static const char *const loaded_sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so.11"};
static const char *const usual_names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so.11",
                                          "libcupti.so"};
static const char *const usual_dirs[] = {"/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64"};

int npkit_cuda_driver_loaded(void) {
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL) return 0;
  dlclose(h); /* only drops the reference NOLOAD took */
  return 1;
}

static void *try_open(const char *name, int flags, char *err, size_t errlen) {
  void *h = dlopen(name, flags);
  if (h == NULL && err != NULL && errlen > 0) {
    const char *e = dlerror();
    snprintf(err, errlen, "%s", e ? e : "dlopen failed");
  }
  return h;
}

static void *find_loaded(const char **name) {
  for (size_t i = 0; i < sizeof loaded_sonames / sizeof loaded_sonames[0]; i++) {
    void *h = dlopen(loaded_sonames[i], RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL) {
      *name = loaded_sonames[i];
      return h;
    }
  }
  return NULL;
}

static void *find_usual(char *name, size_t namelen) {
  for (size_t i = 0; i < sizeof usual_names / sizeof usual_names[0]; i++) {
    void *h = dlopen(usual_names[i], RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) {
      snprintf(name, namelen, "%s", usual_names[i]);
      return h;
    }
  }
  char path[600];
  const char *home = getenv("CUDA_HOME");
  if (home != NULL && home[0] != '\0' && strlen(home) < 400) {
    snprintf(path, sizeof path, "%s/lib64/libcupti.so", home);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) {
      snprintf(name, namelen, "%s", path);
      return h;
    }
  }
  for (size_t i = 0; i < sizeof usual_dirs / sizeof usual_dirs[0]; i++) {
    snprintf(path, sizeof path, "%s/libcupti.so", usual_dirs[i]);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) {
      snprintf(name, namelen, "%s", path);
      return h;
    }
  }
  return NULL;
}

#define RESOLVE(field, symbol, required)                                                  \
  do {                                                                                    \
    *(void **)(&api->field) = dlsym(h, #symbol);                                          \
    if (api->field == NULL && (required)) {                                               \
      snprintf(why, whylen, "%s lacks %s (too old a CUPTI?)", api->path, #symbol);        \
      return -1;                                                                          \
    }                                                                                     \
  } while (0)

static int resolve(npkit_cupti_api *api, void *h, char *why, size_t whylen) {
  RESOLVE(GetVersion, cuptiGetVersion, 1);
  RESOLVE(GetResultString, cuptiGetResultString, 1);
  RESOLVE(Subscribe, cuptiSubscribe, 1);
  RESOLVE(Unsubscribe, cuptiUnsubscribe, 1);
  RESOLVE(EnableCallback, cuptiEnableCallback, 1);
  RESOLVE(ActivityRegisterCallbacks, cuptiActivityRegisterCallbacks, 1);
  RESOLVE(ActivityEnable, cuptiActivityEnable, 1);
  RESOLVE(ActivityDisable, cuptiActivityDisable, 1);
  RESOLVE(ActivityGetNextRecord, cuptiActivityGetNextRecord, 1);
  RESOLVE(ActivityGetNumDroppedRecords, cuptiActivityGetNumDroppedRecords, 1);
  RESOLVE(ActivityFlushAll, cuptiActivityFlushAll, 1);
  RESOLVE(ActivityPushExternalCorrelationId, cuptiActivityPushExternalCorrelationId, 1);
  RESOLVE(ActivityPopExternalCorrelationId, cuptiActivityPopExternalCorrelationId, 1);
  RESOLVE(GetGraphNodeId, cuptiGetGraphNodeId, 0);
  RESOLVE(ActivityEnableDriverApi, cuptiActivityEnableDriverApi, 0);
  RESOLVE(ActivityEnableRuntimeApi, cuptiActivityEnableRuntimeApi, 0);
  return 0;
}

int npkit_cupti_load(const char *path, char *why, size_t whylen) {
  npkit_cupti_api *api = &npkit_cupti;
  const char *soname = NULL;
  char path_err[256] = "";
  memset(api, 0, sizeof *api);

  void *h = find_loaded(&soname);
  if (h != NULL) {
    api->preloaded = 1;
    snprintf(api->path, sizeof api->path, "%s", soname);
  }
  if (h == NULL && path != NULL && path[0] != '\0') {
    h = try_open(path, RTLD_NOW | RTLD_LOCAL, path_err, sizeof path_err);
    if (h != NULL) snprintf(api->path, sizeof api->path, "%s", path);
  }
  if (h == NULL) {
    /* Without a driver CUPTI can only fail; do not load megabytes to learn that. */
    if (!npkit_cuda_driver_loaded()) {
      if (path_err[0] != '\0')
        snprintf(why, whylen, "cannot load NPKIT_CUPTI_LIBRARY (%s) and no CUDA driver is loaded in "
                 "this process", path_err);
      else
        snprintf(why, whylen, "no CUDA driver is loaded in this process (no GPU, or CUDA not used)");
      return -1;
    }
    h = find_usual(api->path, sizeof api->path);
  }
  if (h == NULL) {
    if (path_err[0] != '\0')
      snprintf(why, whylen, "cannot load NPKIT_CUPTI_LIBRARY (%s), and no libcupti was found", path_err);
    else
      snprintf(why, whylen, "libcupti was not found (set NPKIT_CUPTI_LIBRARY to its path, e.g. "
               "/usr/local/cuda/lib64/libcupti.so)");
    return -1;
  }
  api->handle = h;
  if (resolve(api, h, why, whylen) != 0) return -1;
  if (api->GetVersion(&api->version) != CUPTI_SUCCESS) api->version = 0;
  return 0;
}

const char *npkit_cupti_result(CUptiResult r, char *buf, size_t len) {
  const char *s = NULL;
  if (npkit_cupti.GetResultString == NULL || npkit_cupti.GetResultString(r, &s) != CUPTI_SUCCESS ||
      s == NULL)
    snprintf(buf, len, "CUPTI error %d", (int)r);
  else
    snprintf(buf, len, "%s", s);
  return buf;
}
