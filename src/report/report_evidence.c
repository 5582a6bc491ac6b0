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

/* The folder of the first log: `npkit merge` takes a folder, and a job's logs are in one. */
static void logs_folder(const npkit_job *job, char *out, size_t len) {
  const char *first = job->logs[0].path, *slash = strrchr(first, '/');
  if (slash == NULL) snprintf(out, len, ".");
  else if (slash == first) snprintf(out, len, "/");
  else snprintf(out, len, "%.*s", (int)(slash - first), first);
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
  if (c->n_members <= FEW_RANKS && c->n_members >= job->n_logs) return;
  size_t want = c->n_members > FEW_RANKS ? 4 : FEW_RANKS, n = 0;
  int32_t pick[FEW_RANKS];
  for (int32_t r = 0; r < c->nranks && n < want; r++) {
    uint32_t m = c->members[r];
    if (m == NPKIT_JOB_NONE) continue;
    if ((pick[n++] = job->logs[job->members[m].log].rank) < 0) return; /* unnumbered: all members */
  }
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
  char dir[4096], qdir[8200], what[512], comm[40];
  logs_folder(job, dir, sizeof dir);
  shell_word(qdir, sizeof qdir, dir);
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
    snprintf(f->command, sizeof f->command, "npkit merge %s %s-o finding%zu.%s", qdir, what, i + 1, ext);
  }
  return 0;
}
