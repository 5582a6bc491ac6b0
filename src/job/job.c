/* npkit_job_open(): every log opened once for its identity, sorted by rank, duplicates dropped,
 * hosts and communicators mapped; the readers stay open for the layers above. */
#include "job.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "event_facts.h"
#include "grow.h"
#include "nccl_names.h"

/* A communicator larger than this is taken for a corrupt record. */
#define MAX_COMM_RANKS (1 << 22)

int npkit_job_warn(npkit_job *job, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (NPKIT_GROW(job->warnings, job->cap_warnings, job->n_warnings + 1, 8) != 0) return -1;
  if ((job->warnings[job->n_warnings] = strdup(buf)) == NULL) return -1;
  job->n_warnings++;
  return 0;
}

void npkit_job_log_label(const npkit_job *job, size_t log, char *buf, size_t len) {
  if (log >= job->n_logs) {
    snprintf(buf, len, "?");
    return;
  }
  const npkit_job_log *l = &job->logs[log];
  if (l->rank >= 0)
    snprintf(buf, len, "rank %" PRId32, l->rank);
  else
    snprintf(buf, len, "%s:%" PRId32, job->hosts[l->host].name, l->pid);
}

/* ---- identity ---- */

typedef struct log_id {
  npkit_job_log log;
  char host[64];
} log_id;

static int32_t first_device(const npkit_log_reader *r) {
  if (r->device >= 0) return r->device;
  for (size_t i = 0; i < r->n_comms; i++)
    if (r->comms[i].device >= 0) return r->comms[i].device;
  return -1;
}

static void read_identity(npkit_log_reader *r, log_id *id) {
  npkit_job_log *l = &id->log;
  l->reader = r;
  l->rank = r->rank;
  l->world_size = r->world_size;
  l->local_rank = r->local_rank;
  l->pid = r->header.pid;
  l->device = first_device(r);
  l->clock_base_ns = r->header.clock_base_ns;
  l->events = r->n_events;
  l->recorded = r->recorded;
  l->dropped = r->dropped;
  l->truncated = r->truncated;
  l->closed_cleanly = r->has_end;
  l->simulated = (r->header.flags & NPKIT_LOG_F_SIMULATED) != 0;
  l->log_version = r->header.version;
  l->skipped_blocks = r->skipped_blocks;
  l->skipped_bytes = r->skipped_bytes;
  if (r->truncated)
    snprintf(l->truncation, sizeof(l->truncation), "%s at offset %" PRIu64, r->truncation, r->truncated_at);
  snprintf(id->host, sizeof(id->host), "%s", r->header.host);
  /* counters are cumulative per (thread, source): the sum over threads is the source's total */
  for (size_t i = 0; i < r->n_counters; i++) {
    const npkit_counter_rec *c = &r->counters[i];
    uint32_t k = 0;
    while (k < l->n_loss && l->loss[k].source != c->source) k++;
    if (k == l->n_loss) {
      if (k == NPKIT_JOB_MAX_SOURCES) continue;
      l->n_loss++;
      l->loss[k].source = c->source;
    }
    l->loss[k].recorded += c->recorded;
    l->loss[k].dropped += c->dropped;
  }
}

static int cmp_ids(const void *a, const void *b) {
  const log_id *x = a, *y = b;
  int kx = x->log.rank < 0, ky = y->log.rank < 0;
  if (kx != ky) return kx - ky;
  if (x->log.rank != y->log.rank) return x->log.rank < y->log.rank ? -1 : 1;
  int c = strcmp(x->host, y->host);
  if (c != 0) return c;
  if (x->log.pid != y->log.pid) return x->log.pid < y->log.pid ? -1 : 1;
  if (x->log.clock_base_ns != y->log.clock_base_ns) return x->log.clock_base_ns < y->log.clock_base_ns ? -1 : 1;
  return strcmp(x->log.path, y->log.path);
}

static uint32_t host_index(npkit_job *job, const char *name) {
  for (size_t h = 0; h < job->n_hosts; h++)
    if (strcmp(job->hosts[h].name, name) == 0) return (uint32_t)h;
  if (NPKIT_GROW(job->hosts, job->cap_hosts, job->n_hosts + 1, 8) != 0) return UINT32_MAX;
  npkit_job_host *h = &job->hosts[job->n_hosts];
  memset(h, 0, sizeof(*h));
  snprintf(h->name, sizeof(h->name), "%s", name);
  h->min_rank = -1;
  return (uint32_t)job->n_hosts++;
}

/* Every log stays open until the job is freed: let the process hold one descriptor per log. */
static void room_for_descriptors(size_t n) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= n + 64) return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > n + 64 ? (rlim_t)(n + 64) : rl.rlim_max;
  (void)setrlimit(RLIMIT_NOFILE, &rl); /* at worst the logs beyond the limit are skipped with a warning */
}

/* Opens every log once for its identity, sorts by rank and drops duplicates. */
static int identify(npkit_job *job, char *const *paths, size_t n, char *err, size_t errlen) {
  log_id *ids = calloc(n ? n : 1, sizeof(*ids));
  size_t k = 0;
  if (ids == NULL) goto oom;
  room_for_descriptors(n);
  for (size_t i = 0; i < n; i++) {
    npkit_log_reader *r;
    char rerr[512], note[400];
    int (*open)(const char *, npkit_log_reader **, char *, size_t) = job->lazy ? npkit_reader_open_lazy : npkit_reader_open;
    int opened = open(paths[i], &r, rerr, sizeof(rerr));
    if (opened == 0 && job->recover != NULL && r->has_pool && !r->has_end && job->recover(job->recover_ctx, paths[i]) > 0) {
      npkit_reader_close(r);
      opened = open(paths[i], &r, rerr, sizeof(rerr));
    }
    if (opened != 0) {
      if (npkit_job_warn(job, "skipped %s", rerr) != 0) goto oom;
      continue;
    }
    read_identity(r, &ids[k]);
    job->input_bytes += r->file_size;
    if ((ids[k].log.path = strdup(paths[i])) == NULL) goto oom_k;
    k++;
    if (r->skipped_blocks > 0 &&
        npkit_job_warn(job, "%s: %s; the rest was read", paths[i], npkit_reader_damage(r, note, sizeof(note))) != 0)
      goto oom;
    if (r->newer_version &&
        npkit_job_warn(job, "%s: %s", paths[i], npkit_reader_version_note(r, note, sizeof(note))) != 0)
      goto oom;
  }
  if (k == 0) {
    snprintf(err, errlen, "none of the %zu log%s could be read%s%s", n, n == 1 ? "" : "s",
             job->n_warnings ? ": " : "", job->n_warnings ? job->warnings[0] + strlen("skipped ") : "");
    free(ids);
    return -1;
  }
  qsort(ids, k, sizeof(*ids), cmp_ids);
  job->logs = calloc(k, sizeof(*job->logs));
  if (job->logs == NULL) goto oom;
  for (size_t i = 0; i < k; i++) {
    const npkit_job_log *p = job->n_logs > 0 ? &job->logs[job->n_logs - 1] : NULL;
    if (p != NULL && strcmp(job->hosts[p->host].name, ids[i].host) == 0 && p->pid == ids[i].log.pid &&
        p->clock_base_ns == ids[i].log.clock_base_ns) {
      if (npkit_job_warn(job, "skipped %s: the same process as %s", ids[i].log.path, p->path) != 0) goto oom;
      continue;
    }
    npkit_job_log *l = &job->logs[job->n_logs];
    *l = ids[i].log;
    ids[i].log.path = NULL; /* owned by the job now */
    ids[i].log.reader = NULL;
    l->host = host_index(job, ids[i].host);
    if (l->host == UINT32_MAX) goto oom;
    npkit_job_host *h = &job->hosts[l->host];
    h->n_logs++;
    if (l->rank >= 0 && (h->min_rank < 0 || l->rank < h->min_rank)) h->min_rank = l->rank;
    job->n_logs++;
  }
  for (size_t i = 0; i < k; i++) {
    free(ids[i].log.path);
    npkit_reader_close(ids[i].log.reader);
  }
  free(ids);
  return 0;
oom_k:
  npkit_reader_close(ids[k].log.reader);
oom:
  if (ids != NULL)
    for (size_t i = 0; i < k; i++) {
      free(ids[i].log.path);
      npkit_reader_close(ids[i].log.reader);
    }
  free(ids);
  snprintf(err, errlen, "out of memory");
  return -1;
}

/* ---- communicators and members ---- */

/* comm_ids are random 64-bit hashes already (NCCL's commHash). */
static uint64_t id_itself(const void *comm_id) { return *(const uint64_t *)comm_id; }
static uint64_t comm_hash(const void *job, size_t i) { return ((const npkit_job *)job)->comms[i].comm_id; }
static int is_comm(const void *job, size_t i, const void *comm_id) { return comm_hash(job, i) == *(const uint64_t *)comm_id; }

/* The job communicator of a COMM record, created on first sight; UINT32_MAX on memory shortage. */
static uint32_t comm_index(npkit_job *job, const npkit_comm_rec *c) {
  size_t found = npkit_slots_find(&job->comm_index, job, &c->comm_id, is_comm, id_itself);
  if (found != SIZE_MAX) return (uint32_t)found;
  if (NPKIT_GROW(job->comms, job->cap_comms, job->n_comms + 1, 16) != 0 ||
      npkit_slots_reserve(&job->comm_index, job->n_comms, 64, comm_hash, job) != 0)
    return UINT32_MAX;
  npkit_job_comm *jc = &job->comms[job->n_comms];
  memset(jc, 0, sizeof(*jc));
  jc->comm_id = c->comm_id;
  jc->nranks = c->nranks;
  memcpy(jc->name, c->name, sizeof(jc->name));
  jc->name[sizeof(jc->name) - 1] = '\0';
  if (c->nranks > 0 && c->nranks <= MAX_COMM_RANKS) {
    jc->members = malloc((size_t)c->nranks * sizeof(*jc->members));
    if (jc->members == NULL) return UINT32_MAX;
    for (int32_t i = 0; i < c->nranks; i++) jc->members[i] = NPKIT_JOB_NONE;
  }
  npkit_slots_put(&job->comm_index, c->comm_id, job->n_comms);
  return (uint32_t)job->n_comms++;
}

/* Maps the log's communicators to job communicators and members. */
static int map_comms(npkit_job *job, uint32_t log) {
  npkit_job_log *l = &job->logs[log];
  const npkit_log_reader *r = l->reader;
  size_t nc = r->n_comms ? r->n_comms : 1;
  if ((l->comm_of = malloc(nc * sizeof(*l->comm_of))) == NULL ||
      (l->member_of = malloc(nc * sizeof(*l->member_of))) == NULL)
    return -1;
  for (size_t i = 0; i < r->n_comms; i++) {
    const npkit_comm_rec *c = &r->comms[i];
    l->comm_of[i] = l->member_of[i] = NPKIT_JOB_NONE;
    uint32_t ci = comm_index(job, c);
    if (ci == UINT32_MAX) return -1;
    l->comm_of[i] = ci;
    npkit_job_comm *jc = &job->comms[ci];
    if (jc->nranks != c->nranks) {
      if (npkit_job_warn(job, "%s: communicator %016" PRIx64 " has %" PRId32 " ranks here, %" PRId32 " elsewhere",
                         l->path, c->comm_id, c->nranks, jc->nranks) != 0)
        return -1;
      continue;
    }
    if (jc->members == NULL || c->rank < 0 || c->rank >= jc->nranks) continue;
    if (jc->members[c->rank] != NPKIT_JOB_NONE) {
      const npkit_job_member *other = &job->members[jc->members[c->rank]];
      if (other->log != log &&
          npkit_job_warn(job, "%s: rank %" PRId32 " of communicator %016" PRIx64 " is also in %s; its calls there "
                         "are left out of the cross-rank analyses", l->path, c->rank, c->comm_id,
                         job->logs[other->log].path) != 0)
        return -1;
      continue;
    }
    uint32_t id;
    if (npkit_inst_add_member(job->inst, &id) != 0) return -1;
    if (NPKIT_GROW(job->members, job->cap_members, job->n_members + 1, 16) != 0) return -1;
    job->members[job->n_members++] = (npkit_job_member){.comm = ci, .log = log, .comm_rank = c->rank};
    jc->members[c->rank] = id;
    jc->n_members++;
    l->member_of[i] = id;
  }
  return 0;
}

int npkit_job_open(npkit_job *job, char *const *paths, size_t n_paths, char *err, size_t errlen) {
  int (*recover)(void *, const char *) = job->recover;
  int lazy = job->lazy;
  void *recover_ctx = job->recover_ctx;
  memset(job, 0, sizeof(*job));
  job->recover = recover;
  job->recover_ctx = recover_ctx;
  job->lazy = lazy;
  npkit_quantile_init(&job->host_end_spread);
  job->inst = npkit_inst_create();
  if (job->inst == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (identify(job, paths, n_paths, err, errlen) != 0) return -1;
  for (uint32_t i = 0; i < job->n_logs; i++)
    if (map_comms(job, i) != 0) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
  return 0;
}

static size_t comms_named(const npkit_job *job, const char *name) {
  size_t n = 0;
  for (size_t c = 0; c < job->n_comms; c++) n += strcmp(job->comms[c].name, name) == 0;
  return n;
}

static size_t comms_prefixed(const npkit_job *job, uint64_t high32) {
  size_t n = 0;
  for (size_t c = 0; c < job->n_comms; c++) n += job->comms[c].comm_id >> 32 == high32;
  return n;
}

char *npkit_job_comm_ref(const npkit_job *job, uint32_t comm, char *buf, size_t len) {
  const npkit_job_comm *c = &job->comms[comm];
  int plain = c->name[0] != '\0' && strspn(c->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
                                         strlen(c->name);
  if (plain && comms_named(job, c->name) == 1 && npkit_job_find_comm(job, c->name) == comm) {
    snprintf(buf, len, "%s", c->name);
    return buf;
  }
  if (comms_prefixed(job, c->comm_id >> 32) == 1) { /* unless another communicator is named so */
    snprintf(buf, len, "%08" PRIx64, c->comm_id >> 32);
    if (npkit_job_find_comm(job, buf) == comm) return buf;
  }
  snprintf(buf, len, "%016" PRIx64, c->comm_id);
  return buf;
}

uint32_t npkit_job_find_comm(const npkit_job *job, const char *ref) {
  uint32_t found = UINT32_MAX;
  size_t n = 0;
  for (size_t c = 0; c < job->n_comms; c++)
    if (strcmp(job->comms[c].name, ref) == 0) found = (uint32_t)c, n++;
  if (n == 1) return found;
  if (n > 1) return UINT32_MAX;
  const char *hex = strncmp(ref, "0x", 2) == 0 ? ref + 2 : ref;
  size_t digits = strspn(hex, "0123456789abcdefABCDEF");
  if (hex[digits] != '\0' || (digits != 8 && digits != 16)) return UINT32_MAX;
  uint64_t v = strtoull(hex, NULL, 16);
  for (size_t c = 0; c < job->n_comms; c++)
    if (digits == 16 ? job->comms[c].comm_id == v : job->comms[c].comm_id >> 32 == v) found = (uint32_t)c, n++;
  return n == 1 ? found : UINT32_MAX;
}

size_t npkit_job_comm_members(const npkit_job_comm *c, uint32_t *out) {
  size_t n = 0;
  if (c->members == NULL) return 0;
  for (int32_t r = 0; r < c->nranks; r++)
    if (c->members[r] != NPKIT_JOB_NONE) out[n++] = c->members[r];
  return n;
}

/* ---- collective instances ---- */

size_t npkit_job_comm_pos(const npkit_job *job, uint32_t log, uint32_t local_id, size_t *hint) {
  return npkit_reader_comm_pos(job->logs[log].reader, local_id, hint);
}

int npkit_job_collective(npkit_job *job, uint32_t log, const npkit_event *ev, size_t pos, uint32_t row) {
  const npkit_job_log *l = &job->logs[log];
  uint32_t member = pos != SIZE_MAX ? l->member_of[pos] : NPKIT_JOB_NONE;
  if (ev->kind == NPKIT_EV_API) {
    const npkit_ev_api *a = &ev->u.api;
    uint32_t comm = pos != SIZE_MAX ? l->comm_of[pos] : NPKIT_JOB_NONE;
    if (npkit_fn_class_of(ev->func) != NPKIT_CLASS_coll || a->seq == NPKIT_NO_SEQ || comm == NPKIT_JOB_NONE) return 0;
    job->comms[comm].collectives++;
    if (member == NPKIT_JOB_NONE) return 0;
    return npkit_inst_put_call(job->inst, member, a->seq, ev->func, row, ev->start_ns, ev->end_ns,
                               npkit_api_timed(ev)) < 0 ? -1 : 0;
  }
  /* A kernel attributed to one collective call times that collective on the GPU.  Not a CUDA
   * graph replay: every replay carries the sequence number of the one call that was captured. */
  const npkit_ev_gpu *g = &ev->u.gpu;
  if (ev->kind != NPKIT_EV_CUPTI_KERNEL || npkit_cupti_untimed(ev) || npkit_fn_class_of(ev->func) != NPKIT_CLASS_coll ||
      ev->func == NPKIT_FN_NONE || g->call_seq == NPKIT_NO_SEQ || g->comm == 0 || (g->flags & NPKIT_GPU_GRAPH) ||
      member == NPKIT_JOB_NONE)
    return 0;
  return npkit_inst_put_gpu(job->inst, member, g->call_seq, ev->func, ev->start_ns, ev->end_ns) < 0 ? -1 : 0;
}

/* The job's maps index a log's communicators by position: the full scan must find the same ones. */
static int same_comms(void *ctx, const npkit_log_reader *lazy, const npkit_log_reader *full) {
  (void)ctx;
  if (lazy->n_comms != full->n_comms) return 0;
  for (size_t i = 0; i < lazy->n_comms; i++)
    if (lazy->comms[i].comm_id != full->comms[i].comm_id || lazy->comms[i].local_id != full->comms[i].local_id)
      return 0;
  return 1;
}

int npkit_job_complete(npkit_job *job, uint32_t log, char *err, size_t errlen) {
  npkit_job_log *l = &job->logs[log];
  npkit_log_reader *r = l->reader;
  if (!r->lazy) return 0;
  uint64_t skipped = r->skipped_blocks;
  if (npkit_reader_complete(r, same_comms, NULL, err, errlen) != 0) return -1;
  l->events = r->n_events;
  l->truncated = r->truncated;
  if (r->truncated)
    snprintf(l->truncation, sizeof(l->truncation), "%s at offset %" PRIu64, r->truncation, r->truncated_at);
  l->skipped_blocks = r->skipped_blocks;
  l->skipped_bytes = r->skipped_bytes;
  char note[400];
  /* the identify pass warned about the damage it saw already */
  if (r->skipped_blocks > skipped &&
      npkit_job_warn(job, "%s: %s; the rest was read", l->path, npkit_reader_damage(r, note, sizeof(note))) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return 0;
}

int npkit_job_log_read(npkit_job *job, uint32_t log) {
  const npkit_job_log *l = &job->logs[log];
  for (size_t i = 0; i < l->reader->n_comms; i++)
    if (l->member_of[i] != NPKIT_JOB_NONE && npkit_inst_seal(job->inst, l->member_of[i]) != 0) return -1;
  return 0;
}

int npkit_job_scan_collectives(npkit_job *job, const unsigned char *which, char *err, size_t errlen) {
  for (uint32_t i = 0; i < job->n_logs; i++) {
    if (which != NULL && !which[i]) continue;
    char why[512];
    if (npkit_job_complete(job, i, why, sizeof why) != 0) { /* left out of the instances, with a warning */
      if (npkit_job_warn(job, "%s; its collectives are left out of the clock alignment", why) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      continue;
    }
    npkit_log_reader *r = job->logs[i].reader;
    size_t hint = SIZE_MAX;
    const npkit_event *ev;
    int k;
    npkit_reader_rewind(r);
    while ((k = npkit_reader_next(r, &ev, err, errlen)) > 0) {
      uint32_t local;
      if (ev->kind == NPKIT_EV_API && npkit_fn_moves_data(ev->func) && npkit_api_succeeded(ev))
        local = ev->u.api.comm;
      else if (ev->kind == NPKIT_EV_CUPTI_KERNEL)
        local = ev->u.gpu.comm;
      else
        continue;
      size_t pos = local != 0 ? npkit_job_comm_pos(job, i, local, &hint) : SIZE_MAX;
      if (npkit_job_collective(job, i, ev, pos, NPKIT_INST_NO_ROW) != 0) {
        snprintf(err, errlen, "%s: out of memory while analysing", r->path);
        return -1;
      }
    }
    if (k < 0) return -1;
    if (npkit_job_log_read(job, i) != 0) {
      snprintf(err, errlen, "%s: out of memory while analysing", r->path);
      return -1;
    }
  }
  return 0;
}

void npkit_job_free(npkit_job *job) {
  for (size_t i = 0; i < job->n_logs; i++) {
    free(job->logs[i].path);
    npkit_reader_close(job->logs[i].reader);
    free(job->logs[i].comm_of);
    free(job->logs[i].member_of);
  }
  free(job->logs);
  free(job->hosts);
  for (size_t c = 0; c < job->n_comms; c++) free(job->comms[c].members);
  free(job->comms);
  free(job->members);
  npkit_slots_free(&job->comm_index);
  npkit_inst_free(job->inst);
  npkit_quantile_free(&job->host_end_spread);
  for (size_t i = 0; i < job->n_warnings; i++) free(job->warnings[i]);
  free(job->warnings);
  memset(job, 0, sizeof(*job));
}
