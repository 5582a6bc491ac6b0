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
#define LIST_MAX 1024       /* names npkit_nccl_conf_each lists at most (a real file has a few) */

/* What one reading found for one name. */
typedef struct found {
  int set;
  char file[NCCL_PATH_MAX];
  char value[NCCL_TEXT_MAX + 1];
  int carriage_return;
} found;

/* Where the lines of a reading go: the lookup of some names, or the list of every name. */
typedef struct sink {
  void (*line)(struct sink *s, const char *line, int cr, const char *file);
  const char *const *names; /* lookup */
  int n;
  found *f;
  char **all;               /* list: distinct names, in the order first set */
  size_t n_all, cap_all;
} sink;

/* Length of the name of a `NAME=value` line as NCCL cuts it; 0 when the line sets nothing. */
static size_t name_length(const char *line) {
  size_t s = 0;
  while (line[s] != '\0' && line[s] != '=') s++;
  if (line[s] == '\0') return 0; /* no '=': skipped */
  return s < NCCL_TEXT_MAX ? s : NCCL_TEXT_MAX; /* 0: setenv("", ...) fails with EINVAL */
}

/* One `NAME=value` line after NCCL's own clean-up: records it for the first name it sets. */
static void apply(sink *k, const char *line, int cr, const char *file) {
  size_t klen = name_length(line);
  if (klen == 0) return;
  const char *value = strchr(line, '=') + 1;
  for (int i = 0; i < k->n; i++) {
    found *f = &k->f[i];
    if (f->set || strlen(k->names[i]) != klen || memcmp(k->names[i], line, klen) != 0) continue;
    f->set = 1; /* setenv(name, value, 0): later lines and files do not replace it */
    snprintf(f->file, sizeof f->file, "%s", file);
    size_t vlen = strnlen(value, NCCL_TEXT_MAX);
    f->carriage_return = cr || (vlen > 0 && value[vlen - 1] == '\r');
    if (f->carriage_return && !cr) vlen--; /* kept by the older reading: shown without it */
    memcpy(f->value, value, vlen);
    f->value[vlen] = '\0';
  }
}

/* One line for the list of every name: remembers a name not seen before.  Memory short: the name
 * is left out, as a file that cannot be read adds nothing. */
static void collect(sink *k, const char *line, int cr, const char *file) {
  (void)cr;
  (void)file;
  size_t klen = name_length(line);
  if (klen == 0 || k->n_all == LIST_MAX) return;
  for (size_t i = 0; i < k->n_all; i++)
    if (strlen(k->all[i]) == klen && memcmp(k->all[i], line, klen) == 0) return;
  if (k->n_all == k->cap_all) {
    size_t cap = k->cap_all ? 2 * k->cap_all : 16;
    char **grown = realloc(k->all, cap * sizeof *grown);
    if (grown == NULL) return;
    k->all = grown;
    k->cap_all = cap;
  }
  char *name = strndup(line, klen);
  if (name != NULL) k->all[k->n_all++] = name;
}

/* setEnvFile of NCCL up to 2.30.2 (v2.28.9-1 src/misc/param.cc). */
static void read_up_to_2_30_2(FILE *fp, const char *file, sink *k) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, fp)) != -1) {
    if (line[0] == '#') continue; /* before the newline is removed */
    if (line[len - 1] == '\n') line[len - 1] = '\0';
    k->line(k, line, 0, file);
  }
  free(line);
}

/* setEnvFile of NCCL 2.30.3 and later (v2.30.3-1 src/misc/param.cc). */
static void read_from_2_30_3(FILE *fp, const char *file, sink *k) {
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
    k->line(k, line, cr, file);
  }
}

static void read_file(unsigned reader, const char *path, sink *k) {
  FILE *fp = fopen(path, "r");
  if (fp == NULL) return;
  if (reader == NPKIT_NCCL_CONF_UP_TO_2_30_2)
    read_up_to_2_30_2(fp, path, k);
  else
    read_from_2_30_3(fp, path, k);
  fclose(fp);
}

/* initEnvFunc: NCCL_CONF_FILE instead of ~/.nccl.conf, then the system file. */
static void read_all(unsigned reader, const char *home, const npkit_nccl_conf_places *where, sink *k) {
  char path[NCCL_PATH_MAX];
  if (where->conf_file != NULL && where->conf_file[0] != '\0') {
    snprintf(path, sizeof path, "%s", where->conf_file);
    read_file(reader, path, k);
  } else if (home != NULL) {
    snprintf(path, sizeof path, "%s/.nccl.conf", home);
    read_file(reader, path, k);
  }
  if (where->system_file != NULL) {
    snprintf(path, sizeof path, "%s", where->system_file);
    read_file(reader, path, k);
  }
}

void npkit_nccl_conf_lookup(const npkit_nccl_conf_places *where, const char *const *names, int n,
                            npkit_nccl_conf_hit *hits) {
  for (int i = 0; i < n; i++) memset(&hits[i], 0, sizeof hits[i]);
  if (n <= 0) return;
  found *older = calloc((size_t)n, sizeof *older), *newer = calloc((size_t)n, sizeof *newer);
  if (older != NULL && newer != NULL) {
    sink k_older = {apply, names, n, older, NULL, 0, 0}, k_newer = {apply, names, n, newer, NULL, 0, 0};
    read_all(NPKIT_NCCL_CONF_UP_TO_2_30_2, where->home_passwd, where, &k_older);
    read_all(NPKIT_NCCL_CONF_FROM_2_30_3, where->home_env, where, &k_newer);
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

void npkit_nccl_conf_each(const npkit_nccl_conf_places *where, npkit_nccl_conf_fn fn, void *ctx) {
  /* Every name either reading sets, then the lookup of those names: one definition of what NCCL
   * takes from the files, shared with the self-registration. */
  sink k = {collect, NULL, 0, NULL, NULL, 0, 0};
  read_all(NPKIT_NCCL_CONF_UP_TO_2_30_2, where->home_passwd, where, &k);
  read_all(NPKIT_NCCL_CONF_FROM_2_30_3, where->home_env, where, &k);
  npkit_nccl_conf_hit *hits = k.n_all > 0 ? malloc(k.n_all * sizeof *hits) : NULL;
  if (hits != NULL) {
    npkit_nccl_conf_lookup(where, (const char *const *)k.all, (int)k.n_all, hits);
    for (size_t i = 0; i < k.n_all; i++)
      if (hits[i].readers != 0) fn(ctx, k.all[i], &hits[i]);
  }
  free(hits);
  for (size_t i = 0; i < k.n_all; i++) free(k.all[i]);
  free(k.all);
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
