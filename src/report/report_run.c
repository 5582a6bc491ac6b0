/* npkit_report_run(): identity of every log, then one streaming pass per log, then the analyses. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_reader.h"
#include "report_model.h"
#include "report_scan.h"
#include "report_steps.h"

/* A communicator larger than this is taken for a corrupt record. */
#define MAX_COMM_RANKS (1 << 22)

void npkit_report_defaults(npkit_report_options *o) {
  o->threshold_ns = NPKIT_REPORT_DEFAULT_THRESHOLD_NS;
  o->align = 1;
  o->analyses = 1;
  o->top = NPKIT_REPORT_DEFAULT_TOP;
}

int npkit_report_warn(npkit_report *rep, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  char **nw = realloc(rep->warnings, (rep->n_warnings + 1) * sizeof(*nw));
  if (nw == NULL) return -1;
  rep->warnings = nw;
  if ((nw[rep->n_warnings] = strdup(buf)) == NULL) return -1;
  rep->n_warnings++;
  return 0;
}

/* ---- identity ---- */

typedef struct log_id {
  npkit_rep_log log;
  char host[64];
} log_id;

static int32_t first_device(const npkit_log_reader *r) {
  if (r->device >= 0) return r->device;
  for (size_t i = 0; i < r->n_comms; i++)
    if (r->comms[i].device >= 0) return r->comms[i].device;
  return -1;
}

static void read_identity(const npkit_log_reader *r, log_id *id) {
  npkit_rep_log *l = &id->log;
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
      if (k == NPKIT_REPORT_MAX_SOURCES) continue;
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

static uint32_t host_index(npkit_report *rep, const char *name, size_t *cap) {
  for (size_t h = 0; h < rep->n_hosts; h++)
    if (strcmp(rep->hosts[h].name, name) == 0) return (uint32_t)h;
  if (rep->n_hosts == *cap) {
    size_t nc = *cap ? 2 * *cap : 8;
    npkit_rep_host *nh = realloc(rep->hosts, nc * sizeof(*nh));
    if (nh == NULL) return UINT32_MAX;
    rep->hosts = nh;
    *cap = nc;
  }
  npkit_rep_host *h = &rep->hosts[rep->n_hosts];
  memset(h, 0, sizeof(*h));
  snprintf(h->name, sizeof(h->name), "%s", name);
  h->min_rank = -1;
  return (uint32_t)rep->n_hosts++;
}

/* Opens every log once for its identity, sorts by rank and drops duplicates. */
static int identify(npkit_report *rep, char *const *paths, size_t n, char *err, size_t errlen) {
  log_id *ids = calloc(n ? n : 1, sizeof(*ids));
  size_t k = 0, host_cap = 0;
  if (ids == NULL) goto oom;
  for (size_t i = 0; i < n; i++) {
    npkit_log_reader *r;
    char rerr[512];
    if (npkit_reader_open(paths[i], &r, rerr, sizeof(rerr)) != 0) {
      if (npkit_report_warn(rep, "skipped %s", rerr) != 0) goto oom;
      continue;
    }
    read_identity(r, &ids[k]);
    rep->input_bytes += r->file_size;
    char note[400];
    if (r->skipped_blocks > 0 &&
        npkit_report_warn(rep, "%s: %s; the rest was read", paths[i], npkit_reader_damage(r, note, sizeof(note))) != 0) {
      npkit_reader_close(r);
      goto oom;
    }
    if (r->newer_version &&
        npkit_report_warn(rep, "%s: %s", paths[i], npkit_reader_version_note(r, note, sizeof(note))) != 0) {
      npkit_reader_close(r);
      goto oom;
    }
    npkit_reader_close(r);
    if ((ids[k].log.path = strdup(paths[i])) == NULL) goto oom;
    k++;
  }
  if (k == 0) {
    snprintf(err, errlen, "none of the %zu log%s could be read%s%s", n, n == 1 ? "" : "s",
             rep->n_warnings ? ": " : "", rep->n_warnings ? rep->warnings[0] + strlen("skipped ") : "");
    free(ids);
    return -1;
  }
  qsort(ids, k, sizeof(*ids), cmp_ids);
  rep->logs = calloc(k, sizeof(*rep->logs));
  if (rep->logs == NULL) goto oom;
  for (size_t i = 0; i < k; i++) {
    const npkit_rep_log *p = rep->n_logs > 0 ? &rep->logs[rep->n_logs - 1] : NULL;
    if (p != NULL && strcmp(rep->hosts[p->host].name, ids[i].host) == 0 && p->pid == ids[i].log.pid &&
        p->clock_base_ns == ids[i].log.clock_base_ns) {
      if (npkit_report_warn(rep, "skipped %s: the same process as %s", ids[i].log.path, p->path) != 0) goto oom;
      free(ids[i].log.path);
      ids[i].log.path = NULL;
      continue;
    }
    npkit_rep_log *l = &rep->logs[rep->n_logs];
    *l = ids[i].log;
    ids[i].log.path = NULL; /* owned by rep now */
    l->host = host_index(rep, ids[i].host, &host_cap);
    if (l->host == UINT32_MAX) goto oom;
    npkit_rep_host *h = &rep->hosts[l->host];
    h->n_logs++;
    if (l->rank >= 0 && (h->min_rank < 0 || l->rank < h->min_rank)) h->min_rank = l->rank;
    rep->n_logs++;
  }
  free(ids);
  return 0;
oom:
  if (ids != NULL)
    for (size_t i = 0; i < n; i++) free(ids[i].log.path);
  free(ids);
  snprintf(err, errlen, "out of memory");
  return -1;
}

/* ---- communicators and members ---- */

typedef struct comm_map {
  uint32_t *slots; /* index + 1 into rep->comms */
  size_t n_slots, cap;
} comm_map;

static size_t comm_slot(uint64_t id, size_t n_slots) {
  return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (n_slots - 1);
}

static int comm_rehash(npkit_report *rep, comm_map *m, size_t n_slots) {
  uint32_t *s = calloc(n_slots, sizeof(*s));
  if (s == NULL) return -1;
  for (size_t i = 0; i < rep->n_comms; i++) {
    size_t k = comm_slot(rep->comms[i].comm_id, n_slots);
    while (s[k] != 0) k = (k + 1) & (n_slots - 1);
    s[k] = (uint32_t)(i + 1);
  }
  free(m->slots);
  m->slots = s;
  m->n_slots = n_slots;
  return 0;
}

/* The report communicator of a COMM record, created on first sight; UINT32_MAX on memory shortage. */
static uint32_t comm_index(npkit_report *rep, comm_map *m, const npkit_comm_rec *c) {
  if (m->n_slots > 0)
    for (size_t k = comm_slot(c->comm_id, m->n_slots); m->slots[k] != 0; k = (k + 1) & (m->n_slots - 1))
      if (rep->comms[m->slots[k] - 1].comm_id == c->comm_id) return m->slots[k] - 1;
  if (rep->n_comms == m->cap) {
    size_t nc = m->cap ? 2 * m->cap : 16;
    npkit_rep_comm *np = realloc(rep->comms, nc * sizeof(*np));
    if (np == NULL) return UINT32_MAX;
    rep->comms = np;
    m->cap = nc;
  }
  if (2 * (rep->n_comms + 1) > m->n_slots && comm_rehash(rep, m, m->n_slots ? 2 * m->n_slots : 64) != 0)
    return UINT32_MAX;
  npkit_rep_comm *rc = &rep->comms[rep->n_comms];
  memset(rc, 0, sizeof(*rc));
  rc->comm_id = c->comm_id;
  rc->nranks = c->nranks;
  memcpy(rc->name, c->name, sizeof(rc->name));
  rc->name[sizeof(rc->name) - 1] = '\0';
  if (c->nranks > 0 && c->nranks <= MAX_COMM_RANKS) {
    rc->members = malloc((size_t)c->nranks * sizeof(*rc->members));
    if (rc->members == NULL) return UINT32_MAX;
    for (int32_t i = 0; i < c->nranks; i++) rc->members[i] = NPKIT_SCAN_NONE;
  }
  size_t k = comm_slot(c->comm_id, m->n_slots);
  while (m->slots[k] != 0) k = (k + 1) & (m->n_slots - 1);
  m->slots[k] = (uint32_t)(rep->n_comms + 1);
  return (uint32_t)rep->n_comms++;
}

/* Maps the log's communicators to report communicators and members. */
static int map_comms(npkit_report *rep, comm_map *m, uint32_t log, const npkit_log_reader *r, uint32_t *comm,
                     uint32_t *member, size_t *members_cap) {
  for (size_t i = 0; i < r->n_comms; i++) {
    const npkit_comm_rec *c = &r->comms[i];
    comm[i] = member[i] = NPKIT_SCAN_NONE;
    uint32_t ci = comm_index(rep, m, c);
    if (ci == UINT32_MAX) return -1;
    comm[i] = ci;
    npkit_rep_comm *rc = &rep->comms[ci];
    if (rc->nranks != c->nranks) {
      if (npkit_report_warn(rep, "%s: communicator %016" PRIx64 " has %" PRId32 " ranks here, %" PRId32 " elsewhere",
                            rep->logs[log].path, c->comm_id, c->nranks, rc->nranks) != 0)
        return -1;
      continue;
    }
    if (rc->members == NULL || c->rank < 0 || c->rank >= rc->nranks) continue;
    if (rc->members[c->rank] != NPKIT_SCAN_NONE) {
      const npkit_rep_member *other = &rep->members[rc->members[c->rank]];
      if (other->log != log &&
          npkit_report_warn(rep, "%s: rank %" PRId32 " of communicator %016" PRIx64 " is also in %s; its calls there "
                            "are left out of the cross-rank analyses", rep->logs[log].path, c->rank, c->comm_id,
                            rep->logs[other->log].path) != 0)
        return -1;
      continue;
    }
    uint32_t id;
    if (npkit_inst_add_member(rep->inst, &id) != 0) return -1;
    if (rep->n_members == *members_cap) {
      size_t nc = *members_cap ? 2 * *members_cap : 16;
      npkit_rep_member *nm = realloc(rep->members, nc * sizeof(*nm));
      if (nm == NULL) return -1;
      rep->members = nm;
      *members_cap = nc;
    }
    rep->members[rep->n_members++] = (npkit_rep_member){.comm = ci, .log = log, .comm_rank = c->rank};
    rc->members[c->rank] = id;
    rc->n_members++;
    member[i] = id;
  }
  return 0;
}

static int read_logs(npkit_report *rep, char *err, size_t errlen) {
  comm_map m = {0};
  size_t members_cap = 0;
  int rc = 0;
  for (uint32_t i = 0; i < rep->n_logs && rc == 0; i++) {
    npkit_log_reader *r;
    if (npkit_reader_open(rep->logs[i].path, &r, err, errlen) != 0) {
      rc = -1; /* it was readable a moment ago */
      break;
    }
    size_t nc = r->n_comms ? r->n_comms : 1;
    uint32_t *comm = malloc(nc * sizeof(*comm)), *member = malloc(nc * sizeof(*member));
    if (comm == NULL || member == NULL || map_comms(rep, &m, i, r, comm, member, &members_cap) != 0) {
      snprintf(err, errlen, "out of memory");
      rc = -1;
    } else {
      npkit_scan_comms map = {comm, member};
      rc = npkit_report_scan(rep, i, r, &map, err, errlen);
    }
    free(comm);
    free(member);
    npkit_reader_close(r);
  }
  free(m.slots);
  return rc;
}

/* ---- cross-rank analyses ---- */

typedef struct strag_walk {
  npkit_straggler *s;
  npkit_strag_ctx ctx;
  uint32_t comm;
} strag_walk;

static int strag_instance(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  strag_walk *w = p;
  return npkit_straggler_add(w->s, &w->ctx, w->comm, seq, e, n);
}

size_t npkit_report_comm_members(const npkit_rep_comm *c, uint32_t *out) {
  size_t n = 0;
  if (c->members == NULL) return 0;
  for (int32_t r = 0; r < c->nranks; r++)
    if (c->members[r] != NPKIT_SCAN_NONE) out[n++] = c->members[r];
  return n;
}

static int stragglers(npkit_report *rep) {
  uint32_t *member_log = malloc((rep->n_members ? rep->n_members : 1) * sizeof(*member_log));
  uint32_t *log_host = malloc(rep->n_logs * sizeof(*log_host));
  int64_t *offset = malloc((rep->n_hosts ? rep->n_hosts : 1) * sizeof(*offset));
  double *unc = malloc((rep->n_hosts ? rep->n_hosts : 1) * sizeof(*unc));
  uint32_t *ids = malloc((rep->n_members ? rep->n_members : 1) * sizeof(*ids));
  int rc = -1;
  if (member_log == NULL || log_host == NULL || offset == NULL || unc == NULL || ids == NULL) goto out;
  for (size_t i = 0; i < rep->n_members; i++) member_log[i] = rep->members[i].log;
  for (size_t i = 0; i < rep->n_logs; i++) log_host[i] = rep->logs[i].host;
  for (size_t h = 0; h < rep->n_hosts; h++) {
    offset[h] = rep->hosts[h].align.offset_ns;
    unc[h] = rep->hosts[h].align.uncertainty_ns;
  }
  if (npkit_straggler_init(&rep->strag, rep->n_logs, rep->n_comms, rep->opts.threshold_ns, rep->opts.top) != 0)
    goto out;
  strag_walk w = {.s = &rep->strag, .ctx = {member_log, log_host, offset, unc}};
  rc = 0;
  for (uint32_t c = 0; c < rep->n_comms && rc == 0; c++) {
    w.comm = c;
    size_t n = npkit_report_comm_members(&rep->comms[c], ids);
    if (n >= 2) rc = npkit_inst_join(rep->inst, ids, n, strag_instance, &w) != 0 ? -1 : 0;
  }
out:
  free(member_log);
  free(log_host);
  free(offset);
  free(unc);
  free(ids);
  return rc;
}

/* A GPU-timed instance gives its call's table row a GPU sample. */
static int gpu_sample(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  npkit_table *t = p;
  (void)seq;
  (void)n;
  if (!e->gpu || e->row >= t->n) return 0;
  return npkit_quantile_add(&t->rows[e->row].gpu, e->end_ns - e->start_ns) != 0 ? -1 : 0;
}

static int analyse(npkit_report *rep, char *err, size_t errlen) {
  if (npkit_report_align(rep) != 0) goto oom;
  if (!rep->opts.analyses) return 0;
  for (uint32_t m = 0; m < rep->n_members; m++)
    if (npkit_inst_each(rep->inst, m, gpu_sample, &rep->table) != 0) goto oom;
  npkit_table_finish(&rep->table); /* row indices change here */
  if (stragglers(rep) != 0) goto oom;
  uint32_t *logged = malloc((rep->n_comms ? rep->n_comms : 1) * sizeof(*logged));
  if (logged == NULL) goto oom;
  for (size_t c = 0; c < rep->n_comms; c++) logged[c] = rep->comms[c].n_members;
  int rc = npkit_curves_build(&rep->curves, &rep->table, logged, rep->n_comms);
  free(logged);
  if (rc != 0) goto oom;
  if (npkit_tags_summarize(&rep->table, &rep->tags, &rep->n_tags) < 0) goto oom;
  for (size_t i = 0; i < rep->n_logs; i++) rep->gpu_ranks += rep->logs[i].has_gpu != 0;
  if (npkit_report_diagnose(rep) != 0) goto oom;
  return 0;
oom:
  snprintf(err, errlen, "out of memory while analysing");
  return -1;
}

int npkit_report_run(npkit_report *rep, char *const *paths, size_t n_paths, const npkit_report_options *o,
                     char *err, size_t errlen) {
  memset(rep, 0, sizeof(*rep));
  rep->opts = *o;
  npkit_table_init(&rep->table);
  npkit_quantile_init(&rep->host_end_spread);
  rep->inst = npkit_inst_create();
  if (rep->inst == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (identify(rep, paths, n_paths, err, errlen) != 0) return -1;
  /* without analyses the events matter only to align several hosts */
  if (!rep->opts.analyses && (!rep->opts.align || rep->n_hosts <= 1)) {
    (void)npkit_report_align(rep); /* nothing to estimate: it only marks every host unaligned */
    return 0;
  }
  if (read_logs(rep, err, errlen) != 0) return -1;
  return analyse(rep, err, errlen);
}

void npkit_report_free(npkit_report *rep) {
  for (size_t i = 0; i < rep->n_logs; i++) {
    free(rep->logs[i].path);
    npkit_gpu_rank_free(&rep->logs[i].gpu);
  }
  free(rep->logs);
  free(rep->hosts);
  for (size_t c = 0; c < rep->n_comms; c++) free(rep->comms[c].members);
  free(rep->comms);
  free(rep->members);
  npkit_inst_free(rep->inst);
  npkit_table_free(&rep->table);
  free(rep->tags);
  rep->tags = NULL;
  rep->n_tags = 0;
  npkit_quantile_free(&rep->host_end_spread);
  npkit_straggler_free(&rep->strag);
  npkit_curves_free(&rep->curves);
  npkit_findings_free(&rep->findings);
  for (size_t i = 0; i < rep->n_warnings; i++) free(rep->warnings[i]);
  free(rep->warnings);
  memset(rep, 0, sizeof(*rep));
}
