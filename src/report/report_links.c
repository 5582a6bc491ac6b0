/* The throughput the machine's sampled counters measured while each table row's calls ran
 * (npkit_report_link_use, report_machine.h): an analysis over the whole model. */
#include "report_links.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nccl_names.h"
#include "report_machine.h"
#include "report_model.h"

/* ---- per row ---- */

typedef struct link_walk {
  npkit_table *table;
  const npkit_rep_machine *m;
} link_walk;

/* One instance of one rank: the rates at the middle of its call, weighted by its duration. */
static int instance(void *p, uint64_t seq, const npkit_inst_entry *e, size_t n) {
  link_walk *w = p;
  (void)seq;
  (void)n;
  if (e->row >= w->table->n || e->end_ns <= e->start_ns) return 0;
  npkit_row_links *l = &w->table->rows[e->row].links;
  uint64_t mid = e->start_ns + (e->end_ns - e->start_ns) / 2;
  double dur = (double)(e->end_ns - e->start_ns), tx, rx;
  if (npkit_rep_machine_net_at(w->m, mid, &tx, &rx) == 0) {
    l->net_w += dur;
    l->net_tx += tx * dur;
    l->net_rx += rx * dur;
  }
  if (npkit_rep_machine_nvlink_at(w->m, mid, &tx, &rx) == 0) {
    l->nvl_w += dur;
    l->nvl_tx += tx * dur;
    l->nvl_rx += rx * dur;
  }
  return 0;
}

int npkit_report_link_use(npkit_report *rep) {
  const npkit_job *job = &rep->job;
  for (uint32_t mem = 0; mem < job->n_members; mem++) {
    const npkit_rep_machine *m = &rep->logs[job->members[mem].log].machine;
    if (m->n_ports == 0 && m->nvlink.n == 0) continue;
    link_walk w = {&rep->table, m};
    if (npkit_inst_each(job->inst, mem, instance, &w) != 0) return -1;
  }
  return 0;
}

/* ---- capacities ---- */

const npkit_machine *npkit_report_host_machine(const npkit_report *rep, uint32_t host) {
  for (size_t i = 0; i < rep->job.n_logs; i++)
    if (rep->job.logs[i].host == host && rep->logs[i].machine.snap.present) return &rep->logs[i].machine.snap;
  return NULL;
}

int npkit_host_net(const npkit_machine *m, int *ib, int *ports, double *slowest_gbps) {
  int has_ib = 0;
  for (size_t i = 0; i < m->n_ports; i++)
    if (m->ports[i].type == NPKIT_PORT_IB && npkit_mach_port_is_data(&m->ports[i]) && m->ports[i].rate_mbps > 0) has_ib = 1;
  int n = 0;
  double slowest = 0;
  for (size_t i = 0; i < m->n_ports; i++) {
    const npkit_mach_port *p = &m->ports[i];
    if ((p->type == NPKIT_PORT_IB) != has_ib || !npkit_mach_port_is_data(p) || p->rate_mbps == 0) continue;
    double gbps = (double)p->rate_mbps / 1000.0;
    if (n == 0 || gbps < slowest) slowest = gbps;
    n++;
  }
  if (n == 0) return -1;
  *ib = has_ib;
  *ports = n;
  *slowest_gbps = slowest;
  return 0;
}

void npkit_comm_link_cap(const npkit_report *rep, uint32_t comm, npkit_link_cap *cap) {
  const npkit_job *job = &rep->job;
  memset(cap, 0, sizeof *cap);
  cap->log = -1;
  if (comm >= job->n_comms) return;
  const npkit_job_comm *c = &job->comms[comm];
  uint64_t seen[4] = {0, 0, 0, 0}; /* hosts met, as a bit set of the first 256 */
  int complete = 1, first = 1;
  for (uint32_t k = 0; k < c->n_members; k++) {
    if (c->members[k] == NPKIT_JOB_NONE) continue;
    uint32_t log = job->members[c->members[k]].log, h = job->logs[log].host;
    if (h < 256 && !(seen[h / 64] >> (h % 64) & 1)) {
      seen[h / 64] |= 1ull << (h % 64);
      cap->hosts++;
    }
  }
  if (cap->hosts == 1) { /* NVLink: the slowest GPU of the members */
    for (uint32_t k = 0; k < c->n_members && complete; k++) {
      if (c->members[k] == NPKIT_JOB_NONE) continue;
      uint32_t log = job->members[c->members[k]].log;
      const npkit_mach_gpu *g = npkit_machine_bound_gpu(&rep->logs[log].machine.snap);
      double gbs = g != NULL ? npkit_mach_gpu_nvlink_gbs(g) : 0;
      if (gbs <= 0) complete = 0;
      else if (first || gbs < cap->gbs) {
        cap->gbs = gbs;
        cap->links = npkit_mach_gpu_active_links(g);
        cap->nvlink_version = g->nvlink_version;
        cap->log = (int32_t)log;
        cap->host = job->logs[log].host;
        first = 0;
      }
    }
    if (complete && !first) cap->kind = NPKIT_CAP_NVLINK;
    return;
  }
  for (uint32_t h = 0; h < job->n_hosts && h < 256 && complete; h++) {
    if (!(seen[h / 64] >> (h % 64) & 1)) continue;
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    int ib, ports;
    double slowest;
    if (m == NULL || npkit_host_net(m, &ib, &ports, &slowest) != 0) {
      complete = 0;
      break;
    }
    double gbs = ports * slowest / 8.0;
    if (first || gbs < cap->gbs) {
      cap->gbs = gbs;
      cap->host = h;
      cap->ib = ib;
      cap->ports = ports;
      cap->port_gbps = slowest;
      first = 0;
    }
  }
  if (complete && !first) cap->kind = NPKIT_CAP_NET;
}

void npkit_link_cap_text(const npkit_report *rep, const npkit_link_cap *c, char *buf, size_t len) {
  if (c->kind == NPKIT_CAP_NVLINK) {
    const char *v = npkit_nvlink_version_name(c->nvlink_version);
    snprintf(buf, len, "NVLink%s%s: %d links x %.0f GB/s", v ? " " : "", v ? v : "", c->links,
             npkit_nvlink_link_gbs(c->nvlink_version));
  } else if (c->kind == NPKIT_CAP_NET) {
    snprintf(buf, len, "%d x %.4g Gb/s %s port%s of host %s", c->ports, c->port_gbps, c->ib ? "InfiniBand" : "Ethernet",
             c->ports == 1 ? "" : "s", c->host < rep->job.n_hosts ? rep->job.hosts[c->host].name : "?");
  } else {
    snprintf(buf, len, "unknown");
  }
}

double npkit_row_wall_ns(const npkit_table_row *r) {
  if (isnan(r->mean_ns) || r->nranks <= 0) return NAN;
  return r->mean_ns * (double)r->calls / (double)r->nranks;
}

void npkit_row_label(const npkit_table_row *r, char *buf, size_t len) {
  char sz[32];
  npkit_report_bytes(r->key.bytes, sz, sizeof sz);
  snprintf(buf, len, "%s %s", npkit_fn_short_name(r->key.fn), sz);
}
