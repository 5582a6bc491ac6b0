#include "report_evidence.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_names.h"
#include "report_findings.h"

#define FEW_RANKS 8         /* up to this many members, a picture shows them all */
#define PERFETTO_ABOVE 64   /* ranks: above, the browser cannot open the JSON of a merge */

/* A word for the shell: as it is when it needs no quoting, else in single quotes. */
static void shell_word(char *out, size_t len, const char *s) {
  if (s[0] != '\0' && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:,=+-@%") == strlen(s)) {
    snprintf(out, len, "%s", s);
    return;
  }
  size_t n = 0;
  if (n + 1 < len) out[n++] = '\'';
  for (; *s != '\0' && n + 5 < len; s++) {
    if (*s == '\'') {
      memcpy(out + n, "'\\''", 4);
      n += 4;
    } else {
      out[n++] = *s;
    }
  }
  if (n + 1 < len) out[n++] = '\'';
  out[n] = '\0';
}

#define MAX_FOLDERS 8 /* a job's logs in more folders than this: no command */

/* The folders of the logs, each once and quoted for the shell, separated by spaces (`npkit merge`
 * takes several); 0, or -1 when they are too many or too long for a command. */
static int logs_folders(const npkit_job *job, char *out, size_t len) {
  char dirs[MAX_FOLDERS][4096];
  size_t n = 0, k = 0;
  out[0] = '\0';
  for (size_t i = 0; i < job->n_logs; i++) {
    const char *p = job->logs[i].path, *slash = strrchr(p, '/');
    char d[4096];
    if (slash == NULL) snprintf(d, sizeof d, ".");
    else if (slash == p) snprintf(d, sizeof d, "/");
    else snprintf(d, sizeof d, "%.*s", (int)(slash - p), p);
    size_t j = 0;
    while (j < n && strcmp(dirs[j], d) != 0) j++;
    if (j < n) continue;
    if (n == MAX_FOLDERS) return -1;
    snprintf(dirs[n++], sizeof dirs[0], "%s", d);
    char q[8200];
    shell_word(q, sizeof q, d);
    int w = snprintf(out + k, len - k, "%s%s", k ? " " : "", q);
    if (w < 0 || (size_t)w >= len - k) return -1;
    k += (size_t)w;
  }
  return 0;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

/* "--ranks A,B,C " for an instance on a large communicator: its last and first arrivals and the
 * two lowest ranks of its other members; "" on a small one. */
static void involved_ranks(const npkit_report *rep, const npkit_strag_instance *in, char *out, size_t len) {
  const npkit_job *job = &rep->job;
  const npkit_job_comm *c = &job->comms[in->comm];
  out[0] = '\0';
  if (c->n_members <= FEW_RANKS) return;
  int32_t pick[4];
  size_t n = 0;
  pick[n++] = job->logs[in->last_log].rank;
  if (in->first_log != in->last_log) pick[n++] = job->logs[in->first_log].rank;
  for (int32_t r = 0; r < c->nranks && n < 4; r++) {
    uint32_t m = c->members[r];
    if (m == NPKIT_JOB_NONE) continue;
    int32_t g = job->logs[job->members[m].log].rank;
    if (g < 0 || job->members[m].log == in->last_log || job->members[m].log == in->first_log) continue;
    pick[n++] = g;
  }
  for (size_t i = 0; i < n; i++)
    if (pick[i] < 0) return; /* a rank without a number cannot be selected: all members then */
  qsort(pick, n, sizeof(*pick), cmp_i32);
  size_t k = (size_t)snprintf(out, len, "--ranks ");
  for (size_t i = 0; i < n && k < len; i++) k += (size_t)snprintf(out + k, len - k, "%s%" PRId32, i ? "," : "", pick[i]);
  if (k < len) snprintf(out + k, len - k, " ");
}

/* "--ranks A,B,C,D " of a communicator's members: the four lowest when it has more than eight,
 * all of them when it has fewer ranks than the job, "" when it spans a small job. */
static void lowest_members(const npkit_job *job, uint32_t comm, char *out, size_t len) {
  const npkit_job_comm *c = &job->comms[comm];
  out[0] = '\0';
  if (c->members == NULL || c->n_members == 0 || (c->n_members <= FEW_RANKS && c->n_members >= job->n_logs)) return;
  size_t want = c->n_members > FEW_RANKS ? 4 : FEW_RANKS, n = 0;
  int32_t pick[FEW_RANKS];
  for (int32_t r = 0; r < c->nranks && n < want; r++) {
    uint32_t m = c->members[r];
    if (m == NPKIT_JOB_NONE) continue;
    if ((pick[n++] = job->logs[job->members[m].log].rank) < 0) return; /* unnumbered: all members */
  }
  if (n == 0) return;
  qsort(pick, n, sizeof(*pick), cmp_i32);
  size_t k = (size_t)snprintf(out, len, "--ranks ");
  for (size_t i = 0; i < n && k < len; i++) k += (size_t)snprintf(out + k, len - k, "%s%" PRId32, i ? "," : "", pick[i]);
  if (k < len) snprintf(out + k, len - k, " ");
}

/* The instance a finding shows: for a straggler its largest spread where it came last, for a
 * synchronisation delay the largest of all. */
static const npkit_strag_instance *instance_of(const npkit_report *rep, const npkit_finding *f) {
  const npkit_straggler *s = &rep->strag;
  for (size_t i = 0; i < s->n_top; i++)
    if (f->kind == NPKIT_FIND_SYNC_DELAY || s->top[i].last_log == (uint32_t)f->log) return &s->top[i];
  return NULL;
}

int npkit_report_evidence_commands(npkit_report *rep) {
  const npkit_job *job = &rep->job;
  if (job->n_logs == 0) return 0;
  char qdir[600], what[512], comm[40];
  if (logs_folders(job, qdir, sizeof qdir) != 0) return 0; /* no command fits */
  const char *ext = job->n_logs > PERFETTO_ABOVE ? "pftrace" : "json";
  for (size_t i = 0; i < rep->findings.n; i++) {
    npkit_finding *f = &rep->findings.f[i];
    f->command[0] = '\0';
    what[0] = '\0';
    if (f->kind == NPKIT_FIND_STRAGGLER || f->kind == NPKIT_FIND_SYNC_DELAY) {
      const npkit_strag_instance *in = instance_of(rep, f);
      if (in == NULL || in->comm >= job->n_comms) continue;
      char ranks[96];
      involved_ranks(rep, in, ranks, sizeof ranks);
      snprintf(what, sizeof what, "--collective %s:%" PRIu64 " %s", npkit_job_comm_ref(job, in->comm, comm, sizeof comm),
               in->seq, ranks);
    } else if (f->comm < job->n_comms && f->fn != 0 && f->fn < NPKIT_FN_COUNT) {
      /* an operation on a communicator (bandwidth, tuning advice, link use, a hang): its calls on
       * a few members */
      char ranks[96];
      lowest_members(job, f->comm, ranks, sizeof ranks);
      snprintf(what, sizeof what, "%s--ops %s ", ranks, npkit_fn_short_name(f->fn));
    } else if (f->log >= 0 && (size_t)f->log < job->n_logs && job->logs[f->log].rank >= 0 && job->n_logs > 1) {
      snprintf(what, sizeof what, "--ranks %" PRId32 " ", job->logs[f->log].rank);
    } else {
      continue;
    }
    int w = snprintf(f->command, sizeof f->command, "npkit merge %s %s-o finding%zu.%s", qdir, what, i + 1, ext);
    if (w < 0 || (size_t)w >= sizeof f->command) f->command[0] = '\0'; /* cut short: none rather than a wrong one */
  }
  return 0;
}
