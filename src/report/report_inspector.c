#include "report_inspector.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_writer.h"
#include "nccl_names.h"
#include "out_file.h"

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "unknown"
#endif

/* The version whose keys are written: v4.0 (releases up to NCCL v2.30.7-1) with v4.1's dump_stats
 * line (inspector_json.cc, inspectorCommInfoDumpStats) and v4.2's coll_algo and coll_proto. */
#define FORMAT_VERSION "v4.2"
/* metadata.rec_mechanism: the Inspector writes "nccl_profiler_interface"; this says who recorded. */
#define REC_MECHANISM "npkit_preload"

/* A JSON string, escaped as every JSON the tool writes (invalid UTF-8 as U+FFFD); the names
 * written here (hosts, communicators, algorithms) are short. */
static void put_string(FILE *f, const char *s) {
  char buf[6 * 256 + 8];
  size_t n = strnlen(s, 256);
  char *end = npkit_fmt_escaped(buf, s, n);
  fprintf(f, "\"%.*s\"", (int)(end - buf), buf);
}

/* Inspector's coll names (inspector.cc, ncclFuncToString): NCCL's without the prefix. */
static const char *coll_name(unsigned fn) {
  return npkit_fn_short_name(fn);
}

/* inspectorComputeOpBw: traffic bytes are S, or S x n for AllGather and ReduceScatter (whose S is
 * per rank there), divided by the integer microseconds; busbw x the nccl-tests factor. */
static void bandwidths(unsigned fn, int32_t n, uint64_t msg_bytes, uint64_t exec_us, double *algbw, double *busbw) {
  int per_rank = fn == NPKIT_FN_AllGather || fn == NPKIT_FN_ReduceScatter;
  double traffic = (double)msg_bytes * (per_rank ? (double)n : 1.0);
  *algbw = exec_us > 0 ? traffic / 1e9 / ((double)exec_us / 1e6) : 0.0;
  *busbw = *algbw * npkit_busbw_factor(fn, n);
}

typedef struct member_ctx {
  const npkit_report *rep;
  const uint32_t *row_of;        /* scan row -> sorted row */
  FILE *f;
  const char *head;              /* the line's header and metadata, ending in ',' */
  int32_t nranks;
  uint64_t lines;
} member_ctx;

static int coll_line(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  member_ctx *m = p;
  (void)n;
  const npkit_table *t = &m->rep->table;
  if (e->row >= t->n) return 0; /* GPU activity of a call that was not seen: no size */
  const npkit_table_row *r = &t->rows[m->row_of[e->row]];
  int per_rank = e->fn == NPKIT_FN_AllGather || e->fn == NPKIT_FN_ReduceScatter;
  uint64_t bytes = per_rank && m->nranks > 0 ? r->key.bytes / (uint64_t)m->nranks : r->key.bytes;
  uint64_t us = (e->end_ns - e->start_ns) / 1000;
  double algbw, busbw;
  bandwidths(e->fn, m->nranks, bytes, us, &algbw, &busbw);
  fputs(m->head, m->f);
  fputs("\"coll_perf\":{\"coll\":", m->f);
  put_string(m->f, coll_name(e->fn));
  fputs(",\"coll_algo\":", m->f);
  put_string(m->f, r->algo[0] != '\0' ? r->algo : "unknown");
  fputs(",\"coll_proto\":", m->f);
  put_string(m->f, r->proto[0] != '\0' ? r->proto : "unknown");
  fprintf(m->f,
          ",\"coll_sn\":%" PRIu64 ",\"coll_msg_size_bytes\":%" PRIu64 ",\"coll_exec_time_us\":%" PRIu64
          ",\"coll_timing_source\":\"%s\",\"coll_algobw_gbs\":%f,\"coll_busbw_gbs\":%f}}\n",
          seq, bytes, us, e->gpu ? "kernel_gpu" : "collective_cpu", algbw, busbw);
  m->lines++;
  return 0;
}

static int count_line(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  member_ctx *m = p;
  (void)seq, (void)n;
  m->lines += e->row < m->rep->table.n;
  return 0;
}

/* header and metadata of every line of one member (Inspector's inspectorCommInfoHeader and
 * inspectorCommInfoMetaHeader, in their key order) */
static void line_head(char *buf, size_t len, const npkit_report *rep, uint32_t member, uint64_t dump_us) {
  const npkit_job *job = &rep->job;
  const npkit_job_member *mb = &job->members[member];
  const npkit_job_comm *c = &job->comms[mb->comm];
  const npkit_job_log *l = &job->logs[mb->log];
  /* nnodes: the hosts of the communicator's ranks that have a log */
  uint32_t nodes = 0;
  for (size_t h = 0; h < job->n_hosts; h++) {
    int on = 0;
    for (int32_t r = 0; r < c->nranks && !on && c->members != NULL; r++)
      on = c->members[r] != NPKIT_JOB_NONE && job->logs[job->members[c->members[r]].log].host == h;
    nodes += on;
  }
  char *mem = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&mem, &size);
  if (f == NULL) {
    buf[0] = '\0';
    return;
  }
  fprintf(f, "{\"header\":{\"id\":\"0x%" PRIx64 "\",\"comm_name\":", c->comm_id);
  put_string(f, c->name[0] != '\0' ? c->name : "unknown");
  fprintf(f, ",\"rank\":%" PRId32 ",\"n_ranks\":%" PRId32 ",\"nnodes\":%" PRIu32 "},", mb->comm_rank, c->nranks, nodes);
  fputs("\"metadata\":{\"inspector_output_format_version\":\"" FORMAT_VERSION "\",\"git_rev\":", f);
  put_string(f, "npkit-preload " NPKIT_VERSION_STRING);
  fputs(",\"rec_mechanism\":\"" REC_MECHANISM "\",", f);
  fprintf(f, "\"dump_timestamp_us\":%" PRIu64 ",\"hostname\":", dump_us);
  put_string(f, job->hosts[l->host].name);
  fprintf(f, ",\"pid\":%" PRId32 "},", l->pid);
  fclose(f);
  snprintf(buf, len, "%s", mem != NULL ? mem : "");
  free(mem);
}

static int write_log(const npkit_report *rep, uint32_t log, const char *dir, uint64_t dump_us, const uint32_t *row_of,
                     npkit_inspector_stats *st, char *err, size_t errlen) {
  const npkit_job *job = &rep->job;
  const npkit_job_log *l = &job->logs[log];
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s-pid%" PRId32 ".log", dir, job->hosts[l->host].name, l->pid) >= (int)sizeof path) {
    snprintf(err, errlen, "%s: the folder's name is too long", dir);
    return -1;
  }
  npkit_out_file out;
  if (npkit_out_open(&out, path, err, errlen) != 0) return -1;
  int fd = dup(out.fd);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f == NULL) {
    if (fd >= 0) close(fd);
    snprintf(err, errlen, "%s: cannot write", path);
    return npkit_out_close(&out, -1, err, errlen);
  }
  char head[2048];
  int rc = 0;
  for (uint32_t m = 0; m < job->n_members && rc == 0; m++) {
    if (job->members[m].log != log) continue;
    member_ctx mc = {rep, row_of, f, head, job->comms[job->members[m].comm].nranks, 0};
    line_head(head, sizeof head, rep, m, dump_us);
    if (npkit_inst_each(job->inst, m, count_line, &mc) != 0) rc = -1;
    uint64_t written = mc.lines, seen = npkit_inst_count(job->inst, m);
    uint64_t dropped = seen > written ? seen - written : 0;
    fprintf(f, "%s\"dump_stats\":{\"coll_records\":%" PRIu64 ",\"coll_dropped_total\":%" PRIu64
               ",\"coll_dropped_since_last_dump\":%" PRIu64 ",\"p2p_records\":0,\"p2p_dropped_total\":0,"
               "\"p2p_dropped_since_last_dump\":0}}\n", head, written, dropped, dropped);
    mc.lines = 0;
    if (rc == 0 && npkit_inst_each(job->inst, m, coll_line, &mc) != 0) rc = -1;
    st->lines += mc.lines;
    st->without_time += dropped;
  }
  if (fclose(f) != 0 && rc == 0) {
    snprintf(err, errlen, "%s: write error", path);
    rc = -1;
  } else if (rc != 0) {
    snprintf(err, errlen, "%s: out of memory, or the instances could not be read back", path);
  }
  st->files += rc == 0;
  return npkit_out_close(&out, rc, err, errlen);
}

int npkit_report_inspector(const npkit_report *rep, const char *dir, uint64_t dump_us, npkit_inspector_stats *st,
                           char *err, size_t errlen) {
  memset(st, 0, sizeof(*st));
  const npkit_table *t = &rep->table;
  uint32_t *row_of = malloc((t->n ? t->n : 1) * sizeof(*row_of));
  if (row_of == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < t->n; i++) row_of[t->rows[i].scan_row < t->n ? t->rows[i].scan_row : 0] = (uint32_t)i;
  int rc = 0;
  for (uint32_t i = 0; i < rep->job.n_logs && rc == 0; i++) rc = write_log(rep, i, dir, dump_us, row_of, st, err, errlen);
  free(row_of);
  return rc;
}
