/* Command-line inputs of `npkit report` and `npkit merge`: folders and log files → log paths. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npkit/event_log.h"
#include "job.h"
#include "grow.h"

typedef struct path_list {
  char **p;
  size_t n, cap;
} path_list;

static int push(path_list *l, const char *dir, const char *name) {
  if (NPKIT_GROW(l->p, l->cap, l->n + 1, 16) != 0) return -1;
  size_t nd = dir ? strlen(dir) : 0, nn = strlen(name);
  char *s = malloc(nd + nn + 2);
  if (s == NULL) return -1;
  if (dir) {
    memcpy(s, dir, nd);
    if (nd > 0 && dir[nd - 1] != '/') s[nd++] = '/';
  }
  memcpy(s + nd, name, nn + 1);
  l->p[l->n++] = s;
  return 0;
}

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && strcmp(s + n - k, suffix) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void npkit_job_free_inputs(char **paths, size_t n) {
  if (paths == NULL) return;
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
}

int npkit_job_inputs(char *const *args, size_t n_args, char ***paths, size_t *n_paths, char *err, size_t errlen) {
  path_list l = {0};
  *paths = NULL;
  *n_paths = 0;
  for (size_t i = 0; i < n_args; i++) {
    struct stat st;
    if (stat(args[i], &st) != 0) {
      snprintf(err, errlen, "%s: %s", args[i], strerror(errno));
      goto fail;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (push(&l, NULL, args[i]) != 0) goto oom;
      continue;
    }
    DIR *d = opendir(args[i]);
    if (d == NULL) {
      snprintf(err, errlen, "%s: %s", args[i], strerror(errno));
      goto fail;
    }
    size_t before = l.n;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (!has_suffix(de->d_name, NPKIT_LOG_SUFFIX)) continue;
      if (push(&l, args[i], de->d_name) != 0) {
        closedir(d);
        goto oom;
      }
    }
    closedir(d);
    if (l.n == before) {
      snprintf(err, errlen, "%s: no event logs (*" NPKIT_LOG_SUFFIX ") in this folder", args[i]);
      goto fail;
    }
    qsort(l.p + before, l.n - before, sizeof(*l.p), cmp_str);
  }
  if (l.n == 0) {
    snprintf(err, errlen, "no event logs given");
    goto fail;
  }
  *paths = l.p;
  *n_paths = l.n;
  return (int)(l.n > (size_t)INT32_MAX ? INT32_MAX : l.n);
oom:
  snprintf(err, errlen, "out of memory");
fail:
  npkit_job_free_inputs(l.p, l.n);
  return -1;
}
