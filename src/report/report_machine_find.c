/* The findings about the machine (report_steps.h), from the ranks' snapshots and the table:
 *  - a network port below its peers or its rated width, down where it is up elsewhere, or at half
 *    duplex, with the collectives whose busbw it caps;
 *  - NVLinks down; NCCL settings that differ between ranks; host names that do not resolve; a low
 *    open-file limit;
 *  - measured busbw against the capacity of the links it crossed (report_links.h).
 * A host's ports and GPUs come from the snapshot of its first rank (they are the host's). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_names.h"
#include "report_links.h"
#include "report_steps.h"

#define CAPPED 0.7        /* busbw at 70 % or more of a link's limit: that link caps it */
#define BEYOND 1.1        /* busbw above 110 % of it: the data did not cross that link alone */
#define LOW_NOFILE 4096   /* soft open-file limits below this run out with many connections */
#define MAX_ROWS_QUOTED 6

#define ADD(kind, stake)                                                     \
  do {                                                                       \
    if ((f = npkit_findings_add(&rep->findings, (kind), (stake))) == NULL) return -1; \
  } while (0)

/* A finding's text, cut at its end like the evidence (names come from the logs). */
#define SET(buf, ...) ((buf)[0] = '\0', npkit_appendf((buf), sizeof(buf), __VA_ARGS__))

static const char *host_name(const npkit_report *rep, uint32_t h) {
  return h < rep->job.n_hosts ? rep->job.hosts[h].name : "?";
}

/* "host b (ranks 2-3)" */
static void host_label(const npkit_report *rep, uint32_t h, char *buf, size_t len) {
  char ranks[96];
  npkit_report_host_ranks(rep, h, ranks, sizeof ranks);
  buf[0] = '\0';
  npkit_appendf(buf, len, "host %s (rank%s %s)", host_name(rep, h), strpbrk(ranks, ",-") ? "s" : "", ranks);
}

/* Whether communicator c has a member on host h, and how many hosts it spans. */
static uint32_t comm_hosts(const npkit_report *rep, uint32_t c, uint32_t h, int *on_h) {
  npkit_link_cap cap;
  npkit_comm_link_cap(rep, c, &cap);
  *on_h = 0;
  const npkit_job_comm *jc = &rep->job.comms[c];
  for (uint32_t k = 0; k < jc->n_members; k++)
    if (jc->members[k] != NPKIT_JOB_NONE && rep->job.logs[rep->job.members[jc->members[k]].log].host == h) *on_h = 1;
  return cap.hosts;
}

/* The row with the most bytes of each operation of communicator c that has a busbw, into out
 * (at most max); the count. */
static size_t largest_rows(const npkit_report *rep, uint32_t c, const npkit_table_row **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < rep->table.n; i++) {
    const npkit_table_row *r = &rep->table.rows[i];
    if (r->key.comm != c || isnan(r->busbw_gbs)) continue;
    size_t k = 0;
    while (k < n && out[k]->key.fn != r->key.fn) k++;
    if (k < n) {
      if (r->key.bytes > out[k]->key.bytes) out[k] = r;
    } else if (n < max) {
      out[n++] = r;
    }
  }
  return n;
}

/* ---- network ports ---- */

static int same_kind(const npkit_mach_port *a, const npkit_mach_port *b) {
  if (a->type != b->type) return 0;
  /* InfiniBand ports of a job are alike (the HCAs NCCL uses); Ethernet ports by their name */
  return a->type == NPKIT_PORT_IB ? strcmp(a->link_layer, b->link_layer) == 0 : strcmp(a->dev, b->dev) == 0;
}

static int comparable(const npkit_mach_port *p) { return npkit_mach_port_is_data(p) && p->rate_mbps > 0; }

/* What the ports of p's kind run at across the job's hosts: the most common rate (ties to the
 * higher), its width, how many ports have it and how many hosts; the count of ports compared. */
typedef struct peer_norm {
  uint64_t rate_mbps;
  int width, at_rate, compared;
  uint32_t example_host;
  char rate_text[64];
} peer_norm;

static void peers(const npkit_report *rep, const npkit_mach_port *p, peer_norm *pn) {
  memset(pn, 0, sizeof *pn);
  for (uint32_t h = 0; h < rep->job.n_hosts; h++) {
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    for (size_t i = 0; m != NULL && i < m->n_ports; i++) {
      const npkit_mach_port *q = &m->ports[i];
      if (!same_kind(p, q) || !comparable(q)) continue;
      pn->compared++;
      int count = 0;
      for (uint32_t h2 = 0; h2 < rep->job.n_hosts; h2++) {
        const npkit_machine *m2 = npkit_report_host_machine(rep, h2);
        for (size_t j = 0; m2 != NULL && j < m2->n_ports; j++)
          count += same_kind(p, &m2->ports[j]) && comparable(&m2->ports[j]) && m2->ports[j].rate_mbps == q->rate_mbps;
      }
      if (count > pn->at_rate || (count == pn->at_rate && q->rate_mbps > pn->rate_mbps)) {
        pn->at_rate = count;
        pn->rate_mbps = q->rate_mbps;
        pn->width = q->width;
        pn->example_host = h;
        snprintf(pn->rate_text, sizeof pn->rate_text, "%s", q->type == NPKIT_PORT_IB ? q->rate : "");
      }
    }
  }
}

/* Another host on which the port of the same name is up; UINT32_MAX if none. */
static uint32_t up_elsewhere(const npkit_report *rep, uint32_t h, const npkit_mach_port *p) {
  for (uint32_t h2 = 0; h2 < rep->job.n_hosts; h2++) {
    const npkit_machine *m = npkit_report_host_machine(rep, h2);
    for (size_t i = 0; h2 != h && m != NULL && i < m->n_ports; i++)
      if (m->ports[i].type == p->type && strcmp(m->ports[i].name, p->name) == 0 && m->ports[i].up == 1) return h2;
  }
  return UINT32_MAX;
}

static void gbps_text(uint64_t mbps, char *buf, size_t len) { snprintf(buf, len, "%.4g Gb/s", (double)mbps / 1000.0); }

/* The cross-host collectives on host h: those the host's network caps add their evidence and
 * the time they would save at the peers' rate (peer_gbs: the host's capacity with its ports at it). */
static double capped_rows(const npkit_report *rep, uint32_t h, double peer_gbs, char *ev, size_t len) {
  const npkit_machine *m = npkit_report_host_machine(rep, h);
  int ib, ports;
  double slowest, stake = 0;
  if (m == NULL || npkit_host_net(m, &ib, &ports, &slowest) != 0) return 0;
  double cap = ports * slowest / 8.0;
  char row[64], lim[96];
  if (ports == 1)
    snprintf(lim, sizeof lim, "a %.4g Gb/s port (%.3g GB/s)", slowest, cap);
  else
    snprintf(lim, sizeof lim, "%d ports at the slowest one's %.4g Gb/s (%.3g GB/s)", ports, slowest, cap);
  for (uint32_t c = 0; c < rep->job.n_comms; c++) {
    int on_h;
    if (comm_hosts(rep, c, h, &on_h) < 2 || !on_h) continue;
    const npkit_table_row *rows[16];
    size_t n = largest_rows(rep, c, rows, 16);
    for (size_t i = 0; i < n; i++) {
      npkit_row_label(rows[i], row, sizeof row);
      if (rows[i]->busbw_gbs > BEYOND * cap) {
        npkit_appendf(ev, len, " Cross-host %s reaches %.3g GB/s busbw, more than %s carries: its data did not go "
                      "through these ports alone.", row, rows[i]->busbw_gbs, lim);
      } else if (rows[i]->busbw_gbs >= CAPPED * cap) {
        npkit_appendf(ev, len, " Cross-host %s reaches %.3g GB/s busbw, the limit of %s.", row, rows[i]->busbw_gbs, lim);
        double wall = npkit_row_wall_ns(rows[i]);
        if (peer_gbs > cap && !isnan(wall)) stake += wall * (1.0 - cap / peer_gbs);
      } else {
        npkit_appendf(ev, len, " Cross-host %s reaches %.3g GB/s busbw, below the %.3g GB/s of %s.", row,
                      rows[i]->busbw_gbs, cap, lim);
      }
    }
  }
  return stake;
}

static int port_finding(npkit_report *rep, uint32_t h, const npkit_mach_port *p) {
  npkit_finding *f;
  peer_norm pn;
  char host[160], have[32], want[32];
  peers(rep, p, &pn);
  int slow = comparable(p) && pn.compared >= 2 && p->rate_mbps < pn.rate_mbps;
  int narrow = comparable(p) && p->type == NPKIT_PORT_IB && strcmp(p->link_layer, "InfiniBand") == 0 && p->width > 0 &&
               (p->width == 1 || (pn.width > p->width && pn.compared >= 2));
  uint32_t up_at = (p->up == 0 && (p->type == NPKIT_PORT_IB || p->physical == 1)) ? up_elsewhere(rep, h, p) : UINT32_MAX;
  int half = comparable(p) && p->type == NPKIT_PORT_ETH && strcmp(p->duplex, "half") == 0;
  if (!slow && !narrow && up_at == UINT32_MAX && !half) return 0;
  host_label(rep, h, host, sizeof host);
  gbps_text(p->rate_mbps, have, sizeof have);
  gbps_text(pn.rate_mbps, want, sizeof want);
  if (slow || narrow) {
    /* the host's capacity had its ports run at the peers' rate */
    int ib, ports;
    double slowest;
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    double peer_gbs = m != NULL && npkit_host_net(m, &ib, &ports, &slowest) == 0 ? ports * (double)pn.rate_mbps / 8000.0 : 0;
    ADD(NPKIT_FIND_PORT, NAN);
    if (p->width > 0 && pn.width > 0 && slow)
      SET(f->title, "Port %s of %s runs at %s (%dX) where the others run at %s (%dX)", p->name, host,
               have, p->width, want, pn.width);
    else if (slow)
      SET(f->title, "Port %s of %s runs at %s where the others run at %s", p->name, host, have, want);
    else
      SET(f->title, "Port %s of %s runs at %dX, below the 4X width of an InfiniBand port", p->name,
               host, p->width);
    if (p->type == NPKIT_PORT_IB)
      SET(f->evidence, "/sys/class/infiniband/%s/ports/%u/rate reads \"%s\" on %s", p->dev, p->port,
               p->rate, host_name(rep, h));
    else
      SET(f->evidence, "/sys/class/net/%s/speed reads %" PRId64 " Mb/s on %s", p->dev, p->speed,
               host_name(rep, h));
    if (pn.compared >= 2)
      npkit_appendf(f->evidence, sizeof f->evidence, "; %d of the %d %s ports compared run at %s%s%s%s (e.g. on host %s).",
                    pn.at_rate, pn.compared, p->type == NPKIT_PORT_IB ? p->link_layer : p->dev, want,
                    pn.rate_text[0] ? " (\"" : "", pn.rate_text, pn.rate_text[0] ? "\")" : "", host_name(rep, pn.example_host));
    else
      npkit_appendf(f->evidence, sizeof f->evidence, ".");
    if (narrow) npkit_appendf(f->evidence, sizeof f->evidence, " A %dX link is a port whose link came up with fewer lanes.", p->width);
    int used_ib = 0, n_used;
    double slow_used;
    if (m != NULL && npkit_host_net(m, &used_ib, &n_used, &slow_used) == 0 && used_ib != (p->type == NPKIT_PORT_IB)) {
      npkit_appendf(f->evidence, sizeof f->evidence, " NCCL moves this host's data over its %s ports, not this one "
                    "(unless NCCL_IB_DISABLE=1 or NCCL_NET=Socket).", used_ib ? "InfiniBand" : "Ethernet");
    } else {
      double stake = capped_rows(rep, h, peer_gbs, f->evidence, sizeof f->evidence);
      if (stake > 0) {
        char t[32];
        npkit_report_duration(stake, t, sizeof t);
        f->at_stake_ns = stake;
        npkit_appendf(f->evidence, sizeof f->evidence, " At the others' %s these calls would take about %s less.", want, t);
      }
    }
    snprintf(f->next_step, sizeof f->next_step,
             "Check the link of %s on %s: %s shows the rate and width it negotiated; reseat or replace the cable or "
             "transceiver, or fix the port's speed at the switch, then compare busbw again. A link that auto-negotiated "
             "down slows every collective that crosses it.", p->name, host_name(rep, h),
             p->type == NPKIT_PORT_IB ? "ibstat (or iblinkinfo, ibdiagnet)" : "ethtool");
  }
  if (up_at != UINT32_MAX) {
    ADD(NPKIT_FIND_PORT, NAN);
    SET(f->title, "Port %s of %s is down while it is up on host %s", p->name, host,
             host_name(rep, up_at));
    if (p->type == NPKIT_PORT_IB)
      SET(f->evidence, "state \"%s\", phys_state \"%s\" on %s.", p->state, p->phys_state,
               host_name(rep, h));
    else
      SET(f->evidence, "operstate \"%s\" on %s.", p->operstate, host_name(rep, h));
    snprintf(f->next_step, sizeof f->next_step,
             "Bring the port up (cable, switch port; an InfiniBand port in INIT waits for a subnet manager), or leave "
             "it out of NCCL_IB_HCA / NCCL_SOCKET_IFNAME so that every host uses the same ports.");
  }
  if (half) {
    ADD(NPKIT_FIND_PORT, NAN);
    SET(f->title, "Ethernet port %s of %s runs at half duplex", p->name, host);
    SET(f->evidence, "/sys/class/net/%s/duplex reads \"half\" at %s on %s: sending and "
             "receiving take turns.", p->dev, have, host_name(rep, h));
    snprintf(f->next_step, sizeof f->next_step,
             "Set full duplex on both ends (ethtool -s %s speed %" PRId64 " duplex full, and the switch port to match); "
             "a mismatch usually comes from auto-negotiation on one side only.", p->dev, p->speed);
  }
  return 0;
}

static int ports(npkit_report *rep) {
  for (uint32_t h = 0; h < rep->job.n_hosts; h++) {
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    for (size_t i = 0; m != NULL && i < m->n_ports; i++)
      if (port_finding(rep, h, &m->ports[i]) != 0) return -1;
  }
  return 0;
}

/* ---- NVLink ---- */

/* The most common number of active links of GPUs named like g in the job (ties to more). */
static int usual_links(const npkit_report *rep, const npkit_mach_gpu *g) {
  int best = 0, best_count = 0;
  for (uint32_t h = 0; h < rep->job.n_hosts; h++) {
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    for (size_t i = 0; m != NULL && i < m->n_gpus; i++) {
      if (strcmp(m->gpus[i].name, g->name) != 0 || m->gpus[i].nvlinks <= 0) continue;
      int a = npkit_mach_gpu_active_links(&m->gpus[i]), count = 0;
      for (uint32_t h2 = 0; h2 < rep->job.n_hosts; h2++) {
        const npkit_machine *m2 = npkit_report_host_machine(rep, h2);
        for (size_t j = 0; m2 != NULL && j < m2->n_gpus; j++)
          count += strcmp(m2->gpus[j].name, g->name) == 0 && m2->gpus[j].nvlinks > 0 &&
                   npkit_mach_gpu_active_links(&m2->gpus[j]) == a;
      }
      if (count > best_count || (count == best_count && a > best)) {
        best = a;
        best_count = count;
      }
    }
  }
  return best;
}

static int nvlinks(npkit_report *rep) {
  npkit_finding *f;
  char host[160], users[160];
  for (uint32_t h = 0; h < rep->job.n_hosts; h++) {
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    for (size_t i = 0; m != NULL && i < m->n_gpus; i++) {
      const npkit_mach_gpu *g = &m->gpus[i];
      int active = npkit_mach_gpu_active_links(g), usual = usual_links(rep, g);
      int some_down = active > 0 && active < g->nvlinks;
      if (g->nvlinks <= 0 || (!some_down && active >= usual)) continue;
      users[0] = '\0';
      for (size_t l = 0; l < rep->job.n_logs; l++) { /* the ranks that use this GPU */
        const npkit_mach_gpu *b = npkit_machine_bound_gpu(&rep->logs[l].machine.snap);
        if (rep->job.logs[l].host == h && b != NULL && strcmp(b->uuid, g->uuid) == 0) {
          char lab[64];
          npkit_report_log_label(rep, l, lab, sizeof lab);
          npkit_appendf(users, sizeof users, "%s%s", users[0] ? ", " : " (used by ", lab);
        }
      }
      if (users[0]) npkit_appendf(users, sizeof users, ")");
      host_label(rep, h, host, sizeof host);
      ADD(NPKIT_FIND_NVLINK, NAN);
      SET(f->title, "NVLink: GPU %" PRId32 "%s of %s has %d of its %" PRId32 " links active", g->index,
               users, host, active, g->nvlinks);
      SET(f->evidence, "nvmlDeviceGetNvLinkState reports links");
      for (int l = 0; l < NPKIT_MACH_MAX_LINKS; l++)
        if ((g->link_known >> l & 1) && !(g->link_active >> l & 1)) npkit_appendf(f->evidence, sizeof f->evidence, " %d", l);
      npkit_appendf(f->evidence, sizeof f->evidence, " inactive on %s (%s, %s).", host_name(rep, h), g->name, g->bus_id);
      if (usual > active)
        npkit_appendf(f->evidence, sizeof f->evidence, " The other %s GPUs of the job have %d active.", g->name, usual);
      double per = npkit_nvlink_link_gbs(g->nvlink_version);
      if (per > 0)
        npkit_appendf(f->evidence, sizeof f->evidence, " It can move %.0f GB/s per direction instead of %.0f.", active * per,
                      g->nvlinks * per);
      snprintf(f->next_step, sizeof f->next_step,
               "nvidia-smi nvlink --status -i %" PRId32 " and nvidia-smi -q -i %" PRId32 " show the links; on NVSwitch "
               "systems check the fabric manager (nv-fabricmanager) and its log; a GPU reset or a reboot of the node "
               "often brings links back, else the GPU or baseboard needs service.", g->index, g->index);
    }
  }
  return 0;
}

/* ---- settings, host names, open files ---- */

/* The one finding of a kind that gathers every host or setting concerned: made at the first. */
static npkit_finding *gathering(npkit_report *rep, npkit_finding **f, npkit_finding_kind kind, const char *title,
                                const char *next_step) {
  if (*f != NULL) return *f;
  if ((*f = npkit_findings_add(&rep->findings, kind, NAN)) == NULL) return NULL;
  SET((*f)->title, "%s", title);
  SET((*f)->next_step, "%s", next_step);
  return *f;
}

/* The value NCCL uses for name on log l, "(unset)" when none. */
static const char *setting_of(const npkit_report *rep, size_t l, const char *name) {
  const npkit_mach_setting *s = npkit_machine_effective(&rep->logs[l].machine.snap, name);
  return s != NULL ? s->value : "(unset)";
}

static int settings(npkit_report *rep) {
  npkit_finding *f = NULL;
  size_t with = 0;
  for (size_t l = 0; l < rep->job.n_logs; l++) with += rep->logs[l].machine.snap.present != 0;
  if (with < 2) return 0;
  for (size_t l = 0; l < rep->job.n_logs; l++) {
    const npkit_machine *m = &rep->logs[l].machine.snap;
    for (size_t i = 0; m->present && i < m->n_settings; i++) {
      const char *name = m->settings[i].name;
      if (strncmp(name, "NCCL_", 5) != 0) continue;
      int first_here = 1; /* each name once: at its first log and setting */
      for (size_t l2 = 0; l2 <= l && first_here; l2++) {
        const npkit_machine *m2 = &rep->logs[l2].machine.snap;
        for (size_t j = 0; m2->present && j < (l2 == l ? i : m2->n_settings); j++)
          if (strcmp(m2->settings[j].name, name) == 0) first_here = 0;
      }
      if (!first_here) continue;
      const char *v0 = NULL;
      int differ = 0;
      for (size_t l2 = 0; l2 < rep->job.n_logs; l2++) {
        if (!rep->logs[l2].machine.snap.present) continue;
        const char *v = setting_of(rep, l2, name);
        if (v0 == NULL) v0 = v;
        else if (strcmp(v, v0) != 0) differ = 1;
      }
      if (!differ) continue;
      if (gathering(rep, &f, NPKIT_FIND_SETTINGS, "NCCL settings differ between ranks:",
                    "Give every rank the same NCCL settings: export them in the job script and pass them to every rank "
                    "(mpirun -x NAME, srun --export), and check NCCL_CONF_FILE, ~/.nccl.conf and /etc/nccl.conf on each "
                    "node. Ranks that disagree on algorithms, protocols, transports or interfaces can fail or hang at "
                    "the first collective, or run slower than any of them alone.") == NULL)
        return -1;
      npkit_appendf(f->title, sizeof f->title, " %s", name);
      npkit_appendf(f->evidence, sizeof f->evidence, "%s%s:", f->evidence[0] ? " " : "", name);
      for (size_t l2 = 0; l2 < rep->job.n_logs; l2++) { /* each distinct value once, with its ranks */
        if (!rep->logs[l2].machine.snap.present) continue;
        const char *v = setting_of(rep, l2, name);
        int seen = 0;
        for (size_t l3 = 0; l3 < l2 && !seen; l3++)
          seen = rep->logs[l3].machine.snap.present && strcmp(setting_of(rep, l3, name), v) == 0;
        if (seen) continue;
        npkit_appendf(f->evidence, sizeof f->evidence, " %s on", v);
        for (size_t l3 = l2; l3 < rep->job.n_logs; l3++) {
          if (!rep->logs[l3].machine.snap.present || strcmp(setting_of(rep, l3, name), v) != 0) continue;
          char lab[64];
          npkit_report_log_label(rep, l3, lab, sizeof lab);
          npkit_appendf(f->evidence, sizeof f->evidence, "%s %s (%s)", l3 == l2 ? "" : ",", lab,
                        host_name(rep, rep->job.logs[l3].host));
        }
        npkit_appendf(f->evidence, sizeof f->evidence, ";");
      }
    }
  }
  return 0;
}

static int host_names(npkit_report *rep) {
  npkit_finding *f = NULL;
  for (uint32_t h = 0; h < rep->job.n_hosts; h++) {
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    if (m == NULL || m->resolves != 0) continue;
    char host[160];
    host_label(rep, h, host, sizeof host);
    if (gathering(rep, &f, NPKIT_FIND_HOST_NAME, "Host names that do not resolve:",
                  "Every node needs the names of all nodes of the job (in /etc/hosts on every node, or in DNS): NCCL's "
                  "bootstrap, MPI and other launchers look them up, and a cross-node run fails or falls back when one "
                  "does not resolve.") == NULL)
      return -1;
    npkit_appendf(f->title, sizeof f->title, " %s", m->host);
    npkit_appendf(f->evidence, sizeof f->evidence, "%sgetaddrinfo(\"%s\") on %s: %s.", f->evidence[0] ? " " : "", m->host,
                  host, m->resolve_error[0] ? m->resolve_error : "no address");
  }
  return 0;
}

static int file_limits(npkit_report *rep) {
  npkit_finding *f = NULL;
  for (uint32_t h = 0; h < rep->job.n_hosts; h++) {
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    if (m == NULL || m->nofile_soft == 0 || m->nofile_soft == NPKIT_MACH_UNLIMITED || m->nofile_soft >= LOW_NOFILE) continue;
    char host[160];
    host_label(rep, h, host, sizeof host);
    if (gathering(rep, &f, NPKIT_FIND_FILE_LIMIT, "Low open-file limit (RLIMIT_NOFILE) on",
                  "Raise the soft limit to the hard one for the job (ulimit -n \"$(ulimit -Hn)\" in the job script; "
                  "scripts/npkit_launcher.sh does it), or the hard limit in /etc/security/limits.conf: NCCL opens "
                  "sockets and files per peer and channel, and jobs fail with \"Too many open files\" as they grow.") ==
        NULL)
      return -1;
    npkit_appendf(f->title, sizeof f->title, "%s %s", f->evidence[0] ? "," : "", host_name(rep, h));
    npkit_appendf(f->evidence, sizeof f->evidence, "%s%s: soft limit %" PRIu64 ", hard limit ", f->evidence[0] ? " " : "", host,
                  m->nofile_soft);
    if (m->nofile_hard == NPKIT_MACH_UNLIMITED)
      npkit_appendf(f->evidence, sizeof f->evidence, "unlimited.");
    else
      npkit_appendf(f->evidence, sizeof f->evidence, "%" PRIu64 ".", m->nofile_hard);
  }
  return 0;
}

/* ---- link use ---- */

static int link_use(npkit_report *rep) {
  npkit_finding *f;
  for (uint32_t c = 0; c < rep->job.n_comms; c++) {
    npkit_link_cap cap;
    npkit_comm_link_cap(rep, c, &cap);
    if (cap.kind == NPKIT_CAP_NONE || cap.gbs <= 0) continue;
    const npkit_table_row *rows[MAX_ROWS_QUOTED];
    size_t n = largest_rows(rep, c, rows, MAX_ROWS_QUOTED);
    if (n == 0) continue;
    const npkit_table_row *top = rows[0];
    for (size_t i = 1; i < n; i++)
      if (npkit_row_wall_ns(rows[i]) > npkit_row_wall_ns(top)) top = rows[i];
    char what[64], capt[160], where[64];
    npkit_link_cap_text(rep, &cap, capt, sizeof capt);
    if (cap.kind == NPKIT_CAP_NVLINK)
      snprintf(where, sizeof where, "on %" PRId32 " GPUs of one host", rep->job.comms[c].nranks);
    else
      snprintf(where, sizeof where, "across %" PRIu32 " hosts", cap.hosts);
    npkit_row_label(top, what, sizeof what);
    ADD(NPKIT_FIND_LINK_USE, NAN);
    f->comm = c;
    f->fn = top->key.fn;
    SET(f->title, "%s %s reaches %.0f %% of what %s allows", what, where,
             100.0 * top->busbw_gbs / cap.gbs, cap.kind == NPKIT_CAP_NVLINK ? "NVLink" : "the network");
    SET(f->evidence, "Capacity per rank and direction: %.4g GB/s (%s).", cap.gbs, capt);
    double worst = 1.0;
    for (size_t i = 0; i < n; i++) {
      const npkit_table_row *r = rows[i];
      double pct = r->busbw_gbs / cap.gbs;
      if (pct < worst) worst = pct;
      npkit_row_label(r, what, sizeof what);
      npkit_appendf(f->evidence, sizeof f->evidence, " %s: busbw %.3g GB/s, %.0f %%", what, r->busbw_gbs, 100.0 * pct);
      const npkit_row_links *l = &r->links;
      if (cap.kind == NPKIT_CAP_NET && !isnan(l->net_tx_gbps))
        npkit_appendf(f->evidence, sizeof f->evidence, " (the ports sent %.3g Gb/s meanwhile)", l->net_tx_gbps);
      if (cap.kind == NPKIT_CAP_NVLINK && !isnan(l->nvlink_tx_gbs))
        npkit_appendf(f->evidence, sizeof f->evidence, " (NVLink sent %.3g GB/s meanwhile)", l->nvlink_tx_gbs);
      npkit_appendf(f->evidence, sizeof f->evidence, ";");
    }
    if (worst >= 0.8)
      snprintf(f->next_step, sizeof f->next_step,
               "These collectives run near what the links allow: they get faster only with faster or more links, or "
               "with less data to move.");
    else
      snprintf(f->next_step, sizeof f->next_step,
               "There is room left on the links: compare protocols and algorithms at these sizes "
               "(scripts/nccl_matrix.sh), and see the other findings and the advice for what holds them back.");
  }
  return 0;
}

int npkit_report_machine_findings(npkit_report *rep) {
  if (ports(rep) != 0 || nvlinks(rep) != 0 || settings(rep) != 0 || host_names(rep) != 0 || file_limits(rep) != 0 ||
      link_use(rep) != 0)
    return -1;
  return 0;
}
