#include "nccl_conf.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define NCCL_PATH_MAX 1024  /* NCCL's confFilePath[1024] */
#define NCCL_TEXT_MAX 1023  /* NCCL's envVar[1024] and envValue[1024] */
#define NEW_LINE_MAX 4096   /* 2.30.3's line[4096] for fgets */

/* What one reading found for one name. */
typedef struct found {
  int set;
  char file[NCCL_PATH_MAX];
  char value[NCCL_TEXT_MAX + 1];
  int carriage_return;
} found;

/* One `NAME=value` line after NCCL's own clean-up: records it for the first name it sets. */
static void apply(const char *line, int cr, const char *file, const char *const *names, int n,
                  found *f) {
  size_t s = 0;
  while (line[s] != '\0' && line[s] != '=') s++;
  if (line[s] == '\0') return; /* no '=': skipped */
  size_t klen = s < NCCL_TEXT_MAX ? s : NCCL_TEXT_MAX;
  if (klen == 0) return; /* setenv("", ...) fails with EINVAL */
  const char *value = line + s + 1;
  for (int i = 0; i < n; i++) {
    if (f[i].set || strlen(names[i]) != klen || memcmp(names[i], line, klen) != 0) continue;
    f[i].set = 1; /* setenv(name, value, 0): later lines and files do not replace it */
    snprintf(f[i].file, sizeof f[i].file, "%s", file);
    size_t vlen = strnlen(value, NCCL_TEXT_MAX);
    f[i].carriage_return = cr || (vlen > 0 && value[vlen - 1] == '\r');
    if (f[i].carriage_return && !cr) vlen--; /* kept by the older reading: shown without it */
    memcpy(f[i].value, value, vlen);
    f[i].value[vlen] = '\0';
  }
}

/* setEnvFile of NCCL up to 2.30.2 (v2.28.9-1 src/misc/param.cc). */
static void read_up_to_2_30_2(FILE *fp, const char *file, const char *const *names, int n, found *f) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, fp)) != -1) {
    if (line[0] == '#') continue; /* before the newline is removed */
    if (line[len - 1] == '\n') line[len - 1] = '\0';
    apply(line, 0, file, names, n, f);
  }
  free(line);
}

/* setEnvFile of NCCL 2.30.3 and later (v2.30.3-1 src/misc/param.cc). */
static void read_from_2_30_3(FILE *fp, const char *file, const char *const *names, int n, found *f) {
  char line[NEW_LINE_MAX];
  while (fgets(line, (int)sizeof line, fp) != NULL) {
    size_t len = strlen(line);
    int cr = 0;
    if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
    if (len > 0 && line[len - 1] == '\r') {
      line[--len] = '\0';
      cr = 1;
    }
    if (line[0] == '#') continue;
    apply(line, cr, file, names, n, f);
  }
}

static void read_file(unsigned reader, const char *path, const char *const *names, int n, found *f) {
  FILE *fp = fopen(path, "r");
  if (fp == NULL) return;
  if (reader == NPKIT_NCCL_CONF_UP_TO_2_30_2)
    read_up_to_2_30_2(fp, path, names, n, f);
  else
    read_from_2_30_3(fp, path, names, n, f);
  fclose(fp);
}

/* initEnvFunc: NCCL_CONF_FILE instead of ~/.nccl.conf, then the system file. */
static void read_all(unsigned reader, const char *home, const npkit_nccl_conf_places *where,
                     const char *const *names, int n, found *f) {
  char path[NCCL_PATH_MAX];
  if (where->conf_file != NULL && where->conf_file[0] != '\0') {
    snprintf(path, sizeof path, "%s", where->conf_file);
    read_file(reader, path, names, n, f);
  } else if (home != NULL) {
    snprintf(path, sizeof path, "%s/.nccl.conf", home);
    read_file(reader, path, names, n, f);
  }
  if (where->system_file != NULL) {
    snprintf(path, sizeof path, "%s", where->system_file);
    read_file(reader, path, names, n, f);
  }
}

void npkit_nccl_conf_lookup(const npkit_nccl_conf_places *where, const char *const *names, int n,
                            npkit_nccl_conf_hit *hits) {
  for (int i = 0; i < n; i++) memset(&hits[i], 0, sizeof hits[i]);
  if (n <= 0) return;
  found *older = calloc((size_t)n, sizeof *older), *newer = calloc((size_t)n, sizeof *newer);
  if (older != NULL && newer != NULL) {
    read_all(NPKIT_NCCL_CONF_UP_TO_2_30_2, where->home_passwd, where, names, n, older);
    read_all(NPKIT_NCCL_CONF_FROM_2_30_3, where->home_env, where, names, n, newer);
    for (int i = 0; i < n; i++) {
      const found *use = older[i].set ? &older[i] : newer[i].set ? &newer[i] : NULL;
      if (use == NULL) continue;
      hits[i].readers = (older[i].set ? NPKIT_NCCL_CONF_UP_TO_2_30_2 : 0u) |
                        (newer[i].set ? NPKIT_NCCL_CONF_FROM_2_30_3 : 0u);
      snprintf(hits[i].file, sizeof hits[i].file, "%s", use->file);
      snprintf(hits[i].value, sizeof hits[i].value, "%s", use->value);
      hits[i].carriage_return = use->carriage_return;
    }
  }
  free(older);
  free(newer);
}

void npkit_nccl_conf_places_of_process(npkit_nccl_conf_places *where, char *home_buf, size_t len) {
  where->conf_file = getenv("NCCL_CONF_FILE");
  where->home_env = getenv("HOME");
  where->home_passwd = NULL;
  where->system_file = "/etc/nccl.conf";
  struct passwd pw, *res = NULL;
  char buf[4096];
  if (len > 0 && getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) == 0 && res != NULL &&
      res->pw_dir != NULL) {
    snprintf(home_buf, len, "%s", res->pw_dir);
    where->home_passwd = home_buf;
  }
}
