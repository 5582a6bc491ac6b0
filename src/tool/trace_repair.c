/* Traces the library could not finish: a process stopped by SIGKILL (a launcher's last word, a
 * time limit) before or while it rendered its Chrome trace leaves its log, maybe a cut
 * FILE.json.partial, and no FILE.json.  npkit report and npkit merge render those traces from the
 * logs of the job they opened, before they analyse it, and say so. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "job.h"
#include "log_reader.h"
#include "trace_files.h"
#include "trace_render.h"

/* A closed log of another host without its trace is taken as abandoned once this old: the library
 * renders right after it closes the log. */
#define OTHER_HOST_QUIET_S 60

static void dir_of(const char *path, char *dir, size_t len) {
  const char *slash = strrchr(path, '/');
  if (slash == NULL) snprintf(dir, len, ".");
  else if (slash == path) snprintf(dir, len, "/");
  else snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/* Whether dir holds a trace of (host, pid): npkit_rank<R>_<host>_<pid><suffix> or
 * npkit_<host>_<pid><suffix>.  The rank may have been learnt late (from the first communicator):
 * any rank matches. */
static int has_trace(const char *dir, const char *host, int32_t pid, const char *suffix) {
  char tail[128];
  snprintf(tail, sizeof tail, "_%s_%" PRId32 "%s", host, pid, suffix);
  size_t tl = strlen(tail);
  DIR *d = opendir(dir);
  if (d == NULL) return 1; /* nothing to be done there anyway */
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n <= tl || strncmp(e->d_name, "npkit_", 6) != 0 || strcmp(e->d_name + n - tl, tail) != 0) continue;
    const char *mid = e->d_name + 6; /* "" or "rank<R>" before the tail */
    size_t ml = n - tl - 6;
    int rank_part = ml > 4 && strncmp(mid, "rank", 4) == 0 && strspn(mid + 4, "0123456789") == ml - 4;
    found = ml == 0 || rank_part;
  }
  closedir(d);
  return found;
}

/* Whether the log's process may still run: it is of this host and a process with its pid started
 * before the log was opened (a later one only reuses the pid). */
static int may_run_here(const npkit_log_header *h, int *same_host) {
  char me[64] = "";
  if (gethostname(me, sizeof me - 1) != 0) return 0;
  npkit_file_safe_name(me);
  *same_host = strcmp(me, h->host) == 0;
  if (!*same_host) return 0;
  if (kill((pid_t)h->pid, 0) != 0 && errno == ESRCH) return 0;
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%" PRId32 "/stat", h->pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  ssize_t k = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (k <= 0) return 1;
  buf[k] = '\0';
  /* field 22, starttime, in clock ticks since boot; the command name (field 2) may hold spaces */
  char *p = strrchr(buf, ')');
  unsigned long long start = 0;
  if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                          &start) != 1)
    return 1;
  long hz = sysconf(_SC_CLK_TCK);
  unsigned long long start_ns = hz > 0 ? start * (1000000000ull / (unsigned long long)hz) : 0;
  return start_ns <= h->mono_base_ns + 1000000000ull;
}

void npkit_cli_render_missing(const char *cmd, const npkit_job *job) {
  size_t remote = 0;
  for (size_t i = 0; i < job->n_logs; i++) {
    const char *path = job->logs[i].path;
    const npkit_log_reader *r = job->logs[i].reader;
    const npkit_log_header *h = &r->header;
    /* the traces its process meant to write at exit (NPKIT_TRACE_FORMAT), and which are missing */
    int meant[2] = {(h->flags & NPKIT_LOG_F_JSON_AT_EXIT) != 0, (h->flags & NPKIT_LOG_F_PERFETTO_AT_EXIT) != 0};
    const npkit_trace_format formats[2] = {NPKIT_TRACE_JSON, NPKIT_TRACE_PERFETTO};
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    int missing = 0;
    for (int f = 0; f < 2; f++) {
      meant[f] = meant[f] && !has_trace(dir, h->host, h->pid, npkit_trace_format_suffix(formats[f]));
      missing += meant[f];
    }
    if (missing == 0) continue;
    int same_host = 0;
    if (may_run_here(h, &same_host)) continue; /* it writes its own trace when it ends */
    char err[512];
    struct stat st;
    int quiet_long = stat(path, &st) == 0 && time(NULL) - st.st_mtime > OTHER_HOST_QUIET_S;
    if (!same_host && !(r->has_end && quiet_long)) {
      remote++; /* another host's process: still running, or rendering right now */
      continue;
    }
    int closed = r->has_end;
    for (int f = 0; f < 2; f++) {
      if (!meant[f]) continue;
      char json[4200], partial[4300];
      npkit_trace_path(json, sizeof json, dir, r->rank, h->host, h->pid, npkit_trace_format_suffix(formats[f]));
      /* a trace the process began and could not finish: the rendering writes over it (as its own
       * FILE.partial) and renames the complete one into place */
      snprintf(partial, sizeof partial, "%s.partial", json);
      int had_partial = access(partial, F_OK) == 0;
      npkit_render_stats stats;
      /* a separate reading of the log, for a separate artefact (and only for a stopped process) */
      if (npkit_render_trace_as(path, json, formats[f], &stats, err, sizeof err) != 0) {
        fprintf(stderr, "npkit %s: warning: cannot write the missing trace of %s: %s\n", cmd, path, err);
        continue;
      }
      fprintf(stderr, "npkit %s: rendered %s from its log: the process was stopped %s%s\n", cmd, json,
              closed ? "before it finished its trace" : "before it closed its log (events after its last flush are lost)",
              had_partial ? " (it replaces the cut trace it left)" : "");
    }
  }
  if (remote > 0)
    fprintf(stderr, "npkit %s: note: %zu log%s of processes on other hosts have no trace yet (still running, or "
                    "stopped): `npkit json LOG` renders one\n",
            cmd, remote, remote == 1 ? "" : "s");
}
