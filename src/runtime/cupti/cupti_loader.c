#include "cupti_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

npkit_cupti_api npkit_cupti;

/* Copies loaded by the application (PyTorch, a tool) come first: it chose them for its driver. */
static const char *const loaded_sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so.11"};
static const char *const usual_names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so.11",
                                          "libcupti.so"};
static const char *const usual_dirs[] = {"/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64"};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

enum { STAGE_LOADED, STAGE_LIST, STAGE_USUAL, STAGE_CUDA_HOME, STAGE_DIRS, STAGE_END };

int npkit_cuda_driver_loaded(void) {
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL) return 0;
  dlclose(h); /* only drops the reference NOLOAD took */
  return 1;
}

int npkit_cuda_driver_version(void) {
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL) return 0;
  int (*get)(int *);
  *(void **)(&get) = dlsym(h, "cuDriverGetVersion");
  int v = 0;
  if (get == NULL || get(&v) != 0) v = 0; /* CUDA_SUCCESS */
  dlclose(h);
  return v;
}

void npkit_cupti_search_init(npkit_cupti_search *s, const char *list) {
  memset(s, 0, sizeof *s);
  s->list = list;
}

/* The next entry of the ':'-separated list into `out`; 0 at its end. */
static int next_list_entry(npkit_cupti_search *s, char *out, size_t outlen) {
  const char *l = s->list;
  if (l == NULL) return 0;
  while (l[s->list_pos] == ':') s->list_pos++;
  if (l[s->list_pos] == '\0') return 0;
  size_t n = strcspn(l + s->list_pos, ":");
  snprintf(out, outlen, "%.*s", (int)(n < outlen ? n : outlen - 1), l + s->list_pos);
  s->list_pos += n;
  return 1;
}

/* The next of names[*index..n) that dlopen opens with `flags`: its handle, its name in `name`;
 * NULL when none is left. */
static void *next_name(const char *const *names, unsigned n, unsigned *index, int flags, char *name, size_t namelen) {
  while (*index < n) {
    const char *candidate = names[(*index)++];
    void *h = dlopen(candidate, flags);
    if (h != NULL) {
      snprintf(name, namelen, "%s", candidate);
      return h;
    }
  }
  return NULL;
}

/* The next candidate: a handle and its name, or NULL at the end of the stage. */
static void *next_in_stage(npkit_cupti_search *s, char *name, size_t namelen) {
  char path[600];
  switch (s->stage) {
  case STAGE_LOADED:
    return next_name(loaded_sonames, N_OF(loaded_sonames), &s->index, RTLD_NOW | RTLD_NOLOAD, name, namelen);
  case STAGE_LIST:
    while (next_list_entry(s, path, sizeof path)) {
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h != NULL) {
        snprintf(name, namelen, "%s", path);
        return h;
      }
      if (s->list_err[0] == '\0') {
        const char *e = dlerror();
        snprintf(s->list_err, sizeof s->list_err, "%s", e ? e : "dlopen failed");
      }
    }
    return NULL;
  case STAGE_USUAL:
    return next_name(usual_names, N_OF(usual_names), &s->index, RTLD_NOW | RTLD_LOCAL, name, namelen);
  case STAGE_CUDA_HOME: {
    if (s->index++ > 0) return NULL;
    const char *home = getenv("CUDA_HOME");
    if (home == NULL || home[0] == '\0' || strlen(home) >= 400) return NULL;
    snprintf(path, sizeof path, "%s/lib64/libcupti.so", home);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) snprintf(name, namelen, "%s", path);
    return h;
  }
  case STAGE_DIRS:
    while (s->index < N_OF(usual_dirs)) {
      snprintf(path, sizeof path, "%s/libcupti.so", usual_dirs[s->index++]);
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h != NULL) {
        snprintf(name, namelen, "%s", path);
        return h;
      }
    }
    return NULL;
  default:
    return NULL;
  }
}

static int already_tried(const npkit_cupti_search *s, void *h) {
  for (unsigned i = 0; i < s->ntried; i++)
    if (s->tried[i] == h) return 1;
  return 0;
}

#define RESOLVE(field, symbol, required)                                                  \
  do {                                                                                    \
    *(void **)(&api->field) = dlsym(h, #symbol);                                          \
    if (api->field == NULL && (required)) {                                               \
      snprintf(why, whylen, "%.300s lacks %s (too old a CUPTI?)", api->path, #symbol);    \
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
  RESOLVE(GetTimestamp, cuptiGetTimestamp, 0);
  return 0;
}

/* Why nothing at all could be loaded. */
static void nothing_found(const npkit_cupti_search *s, const char *unusable, int no_driver, char *why,
                          size_t whylen) {
  if (unusable[0] != '\0')
    snprintf(why, whylen, "%s", unusable);
  else if (no_driver && s->list_err[0] != '\0')
    snprintf(why, whylen, "cannot load NPKIT_CUPTI_LIBRARY (%s) and no CUDA driver is loaded in this "
             "process", s->list_err);
  else if (no_driver)
    snprintf(why, whylen, "no CUDA driver is loaded in this process (no GPU, or CUDA not used)");
  else if (s->list_err[0] != '\0')
    snprintf(why, whylen, "cannot load NPKIT_CUPTI_LIBRARY (%s), and no libcupti was found", s->list_err);
  else
    snprintf(why, whylen, "libcupti was not found (set NPKIT_CUPTI_LIBRARY to its path, e.g. "
             "/usr/local/cuda/lib64/libcupti.so)");
}

int npkit_cupti_load_next(npkit_cupti_search *s, char *why, size_t whylen) {
  npkit_cupti_api *api = &npkit_cupti;
  char unusable[512] = "";
  int no_driver = 0;
  memset(api, 0, sizeof *api);
  while (s->stage < STAGE_END && s->ntried < NPKIT_CUPTI_MAX_TRIED) {
    /* Without a driver CUPTI can only fail; do not load megabytes to learn that. */
    if (s->stage == STAGE_USUAL && s->index == 0 && !npkit_cuda_driver_loaded()) {
      no_driver = 1;
      break;
    }
    char name[sizeof api->path];
    void *h = next_in_stage(s, name, sizeof name);
    if (h == NULL) {
      s->stage++;
      s->index = 0;
      continue;
    }
    if (already_tried(s, h)) { /* the same copy under another name */
      dlclose(h);
      continue;
    }
    s->tried[s->ntried++] = h;
    snprintf(api->path, sizeof api->path, "%s", name);
    api->preloaded = s->stage == STAGE_LOADED;
    if (resolve(api, h, unusable, sizeof unusable) != 0) {
      dlclose(h); /* nothing of it was called */
      memset(api, 0, sizeof *api);
      continue;
    }
    api->handle = h;
    if (api->GetVersion(&api->version) != CUPTI_SUCCESS) api->version = 0;
    return 0;
  }
  nothing_found(s, unusable, no_driver, why, whylen);
  return -1;
}

void npkit_cupti_drop(void) { memset(&npkit_cupti, 0, sizeof npkit_cupti); }

int npkit_cupti_load(const char *path, char *why, size_t whylen) {
  npkit_cupti_search s;
  npkit_cupti_search_init(&s, path);
  return npkit_cupti_load_next(&s, why, whylen);
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
