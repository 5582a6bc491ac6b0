#include "metrics_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "out_file.h"

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* The lines go straight to the file through a 1 MiB buffer (a dump of a million operations is
 * hundreds of MB: no copy of it in memory); a failed dump is cut back to the lines before it. */
static int inspector_file(const char *dir, unsigned what, const npkit_metrics_proc *proc,
                          const npkit_metrics_comm *comms, size_t n_comms, const npkit_metrics_op *ops, size_t n_ops,
                          char *err, size_t errlen) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s-pid%" PRId32 ".log", dir, proc->hostname, proc->pid) >= (int)sizeof path) {
    snprintf(err, errlen, "%s: the folder's name is too long", dir);
    return -1;
  }
  int fresh = (what & NPKIT_METRICS_FRESH) != 0;
  int news = fresh;
  for (size_t i = 0; i < n_comms && !news; i++)
    news = comms[i].coll_new + comms[i].p2p_new + comms[i].coll_dropped_new + comms[i].p2p_dropped_new > 0;
  if (!news) return 0; /* nothing to append */
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (fresh ? O_TRUNC : O_APPEND), 0644);
  if (fd < 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  off_t was = lseek(fd, 0, SEEK_END);
  FILE *f = fdopen(fd, "a");
  if (f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  setvbuf(f, NULL, _IOFBF, 1u << 20);
  errno = 0;
  int rc = npkit_metrics_inspector_write(f, proc, comms, n_comms, ops, n_ops);
  if (fflush(f) != 0 || rc != 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno != 0 ? errno : EIO));
    /* no half dump: the lines before stay whole */
    if (was >= 0 && ftruncate(fd, was) != 0)
      snprintf(err, errlen, "%s: %s; its last dump is cut short", path, strerror(errno));
    rc = -1;
  }
  if (fclose(f) != 0 && rc == 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    rc = -1;
  }
  return rc;
}

static int prom_file(const char *dir, npkit_metrics_prom *prom, const npkit_metrics_proc *proc,
                     const npkit_metrics_comm *comms, size_t n_comms, const npkit_metrics_op *ops, size_t n_ops,
                     char *err, size_t errlen) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/npkit_metrics_%s-pid%" PRId32 ".prom", dir, proc->hostname, proc->pid) >=
      (int)sizeof path) {
    snprintf(err, errlen, "%s: the folder's name is too long", dir);
    return -1;
  }
  if (npkit_metrics_prom_add(prom, comms, n_comms, ops, n_ops) != 0) {
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  if (f == NULL) {
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  int rc = npkit_metrics_prom_write(prom, f, proc, comms, n_comms);
  if (fclose(f) != 0 || rc != 0) {
    free(buf);
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  npkit_out_file out;
  if (npkit_out_open(&out, path, err, errlen) != 0) {
    free(buf);
    return -1;
  }
  errno = 0;
  rc = write_all(out.fd, buf, size);
  if (rc != 0) snprintf(err, errlen, "%s: %s", path, strerror(errno != 0 ? errno : EIO));
  free(buf);
  return npkit_out_close(&out, rc, err, errlen);
}

int npkit_metrics_dump_files(const char *dir, unsigned what, npkit_metrics_prom *prom, const npkit_metrics_proc *proc,
                             const npkit_metrics_comm *comms, size_t n_comms, const npkit_metrics_op *ops, size_t n_ops,
                             char *err, size_t errlen) {
  /* the two files are independent: a failure of one does not keep the other back; the first
   * error is the one said */
  char second[512];
  int rc = 0;
  if ((what & NPKIT_METRICS_INSPECTOR) &&
      inspector_file(dir, what, proc, comms, n_comms, ops, n_ops, err, errlen) != 0)
    rc = -1;
  if ((what & NPKIT_METRICS_PROMETHEUS) && prom != NULL &&
      prom_file(dir, prom, proc, comms, n_comms, ops, n_ops, rc == 0 ? err : second, rc == 0 ? errlen : sizeof second) != 0)
    rc = -1;
  return rc;
}

int npkit_metrics_parse(const char *s, unsigned *what, char *err, size_t errlen) {
  *what = 0;
  const char *p = s != NULL ? s : "";
  while (*p != '\0') {
    size_t n = strcspn(p, ",");
    if (n == 9 && strncasecmp(p, "inspector", n) == 0) *what |= NPKIT_METRICS_INSPECTOR;
    else if ((n == 10 && strncasecmp(p, "prometheus", n) == 0) || (n == 4 && strncasecmp(p, "prom", n) == 0))
      *what |= NPKIT_METRICS_PROMETHEUS;
    else if (n == 3 && strncasecmp(p, "all", n) == 0) *what |= NPKIT_METRICS_INSPECTOR | NPKIT_METRICS_PROMETHEUS;
    else if (!(n == 3 && strncasecmp(p, "off", n) == 0) && !(n == 1 && *p == '0') && n > 0) {
      snprintf(err, errlen, "'%.*s' is not one of inspector, prometheus, all, off", (int)(n < 40 ? n : 40), p);
      *what = 0;
      return -1;
    }
    p += n;
    if (*p == ',') p++;
  }
  return 0;
}
