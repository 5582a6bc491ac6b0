#include "out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether path may be written as path.partial and renamed over: it is a regular file, or none. */
static int is_regular_or_absent(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT;
  return S_ISREG(st.st_mode);
}

int npkit_out_open(npkit_out_file *f, const char *path, char *err, size_t errlen) {
  memset(f, 0, sizeof(*f));
  f->path = path;
  f->fd = STDOUT_FILENO;
  if (strcmp(path, "-") == 0) {
    f->is_stdout = 1;
    return 0;
  }
  const char *name = path;
  if (is_regular_or_absent(path)) {
    size_t n = strlen(path);
    if ((f->partial = malloc(n + sizeof(".partial"))) == NULL) {
      snprintf(err, errlen, "out of memory");
      errno = ENOMEM;
      return -1;
    }
    memcpy(f->partial, path, n);
    memcpy(f->partial + n, ".partial", sizeof(".partial"));
    name = f->partial;
  }
  f->fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f->fd < 0) {
    int e = errno;
    snprintf(err, errlen, "%s: %s", name, strerror(e));
    free(f->partial);
    f->partial = NULL;
    errno = e;
    return -1;
  }
  return 0;
}

int npkit_out_close(npkit_out_file *f, int rc, char *err, size_t errlen) {
  if (!f->is_stdout && close(f->fd) != 0 && rc == 0) {
    snprintf(err, errlen, "%s: %s", f->partial != NULL ? f->partial : f->path, strerror(errno));
    rc = -1;
  }
  if (f->partial != NULL) {
    if (rc == 0 && rename(f->partial, f->path) != 0) {
      snprintf(err, errlen, "%s: %s", f->path, strerror(errno));
      rc = -1;
    }
    if (rc != 0) unlink(f->partial);
    free(f->partial);
    f->partial = NULL;
  }
  f->fd = -1;
  return rc;
}
