/* What the two self-registrations share (self_register.h): the CUDA driver's
 * (cupti_injection.c) and NCCL's profiler plugin's (plugin_register.c). */
#include "self_register.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "nccl_conf.h"

static const char *const vars[] = {"NCCL_PROFILER_PLUGIN", "CUDA_INJECTION64_PATH"};
enum { N_VARS = sizeof vars / sizeof vars[0] };
static npkit_nccl_conf_hit hits[N_VARS];
static int left_alone[N_VARS];
static int granted[N_VARS]; /* may_set said yes: the caller set it */
static pthread_once_t conf_once = PTHREAD_ONCE_INIT;

int npkit_self_register_setting_is(const char *name, int value) {
  const char *v = getenv(name);
  int b;
  return v != NULL && npkit_config_parse_bool(v, &b) == 0 && b == value;
}

static void read_conf(void) {
  npkit_nccl_conf_places where;
  char home[PATH_MAX];
  npkit_nccl_conf_places_of_process(&where, home, sizeof home);
  npkit_nccl_conf_lookup(&where, vars, N_VARS, hits);
}

int npkit_self_register_may_set(const char *var) {
  if (getenv(var) != NULL) return 0; /* the user's choice, even an empty one */
  int i = 0;
  while (i < N_VARS && strcmp(vars[i], var) != 0) i++;
  if (i == N_VARS) return 0;
  pthread_once(&conf_once, read_conf);
  if (hits[i].readers == 0) return granted[i] = 1;
  left_alone[i] = 1;
  return 0;
}

/* 1 when `value` names the file of this library: its path, or (as dlopen finds an already
 * loaded library by its name) its file name. */
static int names_this_library(const char *value) {
  Dl_info info;
  char mine[PATH_MAX], theirs[PATH_MAX];
  if (dladdr((void *)&names_this_library, &info) == 0 || info.dli_fname == NULL ||
      realpath(info.dli_fname, mine) == NULL)
    return 0;
  if (strchr(value, '/') == NULL) {
    const char *base = strrchr(mine, '/');
    return strcmp(base != NULL ? base + 1 : mine, value) == 0;
  }
  return realpath(value, theirs) != NULL && strcmp(mine, theirs) == 0;
}

int npkit_self_register_did_set(const char *var) {
  /* also when an earlier process of the job (a shell or wrapper the library was preloaded into)
   * set it and this one inherited it: the value names this library either way */
  for (int i = 0; i < N_VARS; i++)
    if (strcmp(vars[i], var) == 0) {
      const char *v = getenv(var);
      return granted[i] || (v != NULL && names_this_library(v));
    }
  return 0;
}

int npkit_self_register_note(int i, char *buf, size_t len) {
  if (i < 0 || i >= N_VARS) return -1;
  if (!left_alone[i]) return 0;
  const npkit_nccl_conf_hit *h = &hits[i];
  const char *which = h->readers == NPKIT_NCCL_CONF_UP_TO_2_30_2 ? " (as NCCL before 2.30.3 reads it)"
                      : h->readers == NPKIT_NCCL_CONF_FROM_2_30_3 ? " (as NCCL 2.30.3 and later read it)"
                                                                  : "";
  const char *cr = h->carriage_return ? " (its line ends in a carriage return, which NCCL before 2.30.3 "
                                        "keeps in the value)"
                                      : "";
  if (names_this_library(h->value)) {
    snprintf(buf, len, "%s=%s%s is set in %s%s, which NCCL applies when it starts: it names this library",
             vars[i], h->value, cr, h->file, which);
    return NPKIT_LEVEL_INFO;
  }
  if (i == 0)
    snprintf(buf, len, "NCCL_PROFILER_PLUGIN=%s%s is set in %s%s, which NCCL applies when it starts: "
             "left alone, so NCCL's own events (algorithms, protocols, GPU channel times) are not "
             "recorded; set NCCL_PROFILER_PLUGIN in the environment to choose",
             h->value, cr, h->file, which);
  else
    snprintf(buf, len, "CUDA_INJECTION64_PATH=%s%s is set in %s%s, which NCCL applies when it starts: "
             "left alone, so GPU activity is recorded from the first communicator on",
             h->value, cr, h->file, which);
  return NPKIT_LEVEL_WARN;
}
