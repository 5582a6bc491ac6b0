#include "report_machine_view.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "nccl_names.h"
#include "report_html_util.h"
#include "report_links.h"
#include "report_svg.h"

#define ESC(s) npkit_html_escape(o, (s))

void npkit_finding_label(const npkit_finding *f, char *buf, size_t len) {
  char t[32];
  buf[0] = '\0';
  if (npkit_finding_is_advice(f->kind)) {
    if (isnan(f->at_stake_ns)) {
      snprintf(buf, len, "advice");
    } else {
      npkit_report_duration(f->at_stake_ns, t, sizeof t);
      snprintf(buf, len, "advice: up to %s", t);
    }
  } else if (f->kind >= NPKIT_FIND_PORT && f->kind <= NPKIT_FIND_LINK_USE && isnan(f->at_stake_ns)) {
    snprintf(buf, len, "machine");
  }
}

static int any_snapshot(const npkit_report *rep) {
  for (size_t i = 0; i < rep->job.n_logs; i++)
    if (rep->logs[i].machine.snap.present) return 1;
  return 0;
}

static int any_link_rows(const npkit_report *rep) {
  for (size_t i = 0; i < rep->table.n; i++)
    if (!isnan(rep->table.rows[i].links.net_tx_gbps) || !isnan(rep->table.rows[i].links.nvlink_tx_gbs)) return 1;
  return 0;
}

/* The ranks of host h that use GPU g, as "rank 0, rank 1"; "" when none does. */
static void gpu_users(const npkit_report *rep, uint32_t h, const npkit_mach_gpu *g, char *buf, size_t len) {
  buf[0] = '\0';
  for (size_t l = 0; l < rep->job.n_logs; l++) {
    const npkit_mach_gpu *b = npkit_machine_bound_gpu(&rep->logs[l].machine.snap);
    if (rep->job.logs[l].host != h || b == NULL || strcmp(b->uuid, g->uuid) != 0) continue;
    char lab[64];
    npkit_report_log_label(rep, l, lab, sizeof lab);
    npkit_appendf(buf, len, "%s%s", buf[0] ? ", " : "", lab);
  }
}

static void nvlink_text(const npkit_mach_gpu *g, char *buf, size_t len) {
  buf[0] = '\0';
  if (g->nvlinks == 0) {
    snprintf(buf, len, "no NVLink");
    return;
  }
  if (g->nvlinks < 0) return;
  const char *v = npkit_nvlink_version_name(g->nvlink_version);
  npkit_appendf(buf, len, "NVLink%s%s %d/%" PRId32 " links", v ? " " : "", v ? v : "", npkit_mach_gpu_active_links(g),
                g->nvlinks);
  if (npkit_mach_gpu_active_links(g) < g->nvlinks) {
    npkit_appendf(buf, len, " (down:");
    for (int l = 0; l < NPKIT_MACH_MAX_LINKS; l++)
      if ((g->link_known >> l & 1) && !(g->link_active >> l & 1)) npkit_appendf(buf, len, " %d", l);
    npkit_appendf(buf, len, ")");
  }
}

static void port_text(const npkit_mach_port *p, char *buf, size_t len) {
  buf[0] = '\0';
  if (p->rate_mbps > 0) npkit_appendf(buf, len, "%.4g Gb/s", (double)p->rate_mbps / 1000.0);
  else npkit_appendf(buf, len, "rate unknown");
  if (p->type == NPKIT_PORT_IB) {
    if (p->width > 0) npkit_appendf(buf, len, " %dX", p->width);
    npkit_appendf(buf, len, ", %s, %s, %s", p->state, p->phys_state, p->link_layer);
  } else {
    npkit_appendf(buf, len, ", %s duplex, %s%s", p->duplex[0] ? p->duplex : "?", p->operstate[0] ? p->operstate : "?",
                  p->physical == 0 ? ", virtual" : "");
  }
}

static void host_head(const npkit_report *rep, uint32_t h, const npkit_machine *m, char *buf, size_t len) {
  char ranks[96];
  npkit_report_host_ranks(rep, h, ranks, sizeof ranks);
  buf[0] = '\0';
  npkit_appendf(buf, len, "host %s (ranks %s): name %s", rep->job.hosts[h].name, ranks,
                m->resolves == 1 ? "resolves" : m->resolves == 0 ? "does NOT resolve" : "not looked up");
  if (m->nccl_version != 0)
    npkit_appendf(buf, len, ", NCCL %u.%u.%u", m->nccl_version / 10000, m->nccl_version % 10000 / 100, m->nccl_version % 100);
  if (m->driver[0]) npkit_appendf(buf, len, ", driver %s", m->driver);
  else if (m->nvml_status[0]) npkit_appendf(buf, len, ", NVML %s", m->nvml_status);
  if (m->nofile_soft == NPKIT_MACH_UNLIMITED) npkit_appendf(buf, len, ", open files unlimited");
  else if (m->nofile_soft > 0) npkit_appendf(buf, len, ", open files %" PRIu64, m->nofile_soft);
}

static void link_row_label(const npkit_report *rep, const npkit_table_row *r, char *what, size_t wl, char *cl, size_t cll) {
  npkit_row_label(r, what, wl);
  npkit_report_comm_label(rep, r->key.comm, cl, cll);
}

static uint64_t sample_period(const npkit_report *rep) {
  for (size_t i = 0; i < rep->job.n_logs; i++)
    if (rep->logs[i].machine.snap.gpu_sample_us > 0) return rep->logs[i].machine.snap.gpu_sample_us;
  return 0;
}

int npkit_report_machine_text(npkit_report *rep, FILE *o) {
  if (!any_snapshot(rep)) return 0;
  char line[512], a[160], b[160];
  fprintf(o, "\n== Machine (each host's snapshot at the start; its ports and GPUs are the host's)\n");
  for (uint32_t h = 0; h < rep->job.n_hosts; h++) {
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    if (m == NULL) continue;
    host_head(rep, h, m, line, sizeof line);
    fprintf(o, "  %s\n", line);
    for (size_t i = 0; i < m->n_gpus; i++) {
      const npkit_mach_gpu *g = &m->gpus[i];
      nvlink_text(g, a, sizeof a);
      gpu_users(rep, h, g, b, sizeof b);
      fprintf(o, "    GPU %-3" PRId32 " %-26.26s %-16s %s%s%s\n", g->index, g->name, g->bus_id, a, b[0] ? "  used by " : "", b);
    }
    for (size_t i = 0; i < m->n_ports; i++) {
      const npkit_mach_port *p = &m->ports[i];
      port_text(p, a, sizeof a);
      fprintf(o, "    port %-14.14s %-4s %s\n", p->name, p->type == NPKIT_PORT_IB ? "ib" : "eth", a);
    }
  }
  if (any_link_rows(rep)) {
    fprintf(o, "  Link throughput while the collectives ran (sampled every %" PRIu64 " us; the rank's host ports and GPU):\n",
            sample_period(rep));
    fprintf(o, "    %-22s %-30s %12s %12s %14s %14s\n", "collective", "communicator", "net tx Gb/s", "net rx Gb/s",
            "NVLink tx GB/s", "NVLink rx GB/s");
    for (size_t i = 0; i < rep->table.n; i++) {
      const npkit_table_row *r = &rep->table.rows[i];
      const npkit_row_links *l = &r->links;
      if (isnan(l->net_tx_gbps) && isnan(l->nvlink_tx_gbs)) continue;
      link_row_label(rep, r, a, sizeof a, b, sizeof b);
      fprintf(o, "    %-22.22s %-30.30s", a, b);
      double v[4] = {l->net_tx_gbps, l->net_rx_gbps, l->nvlink_tx_gbs, l->nvlink_rx_gbs};
      for (int k = 0; k < 4; k++) {
        if (isnan(v[k])) fprintf(o, " %*s", k < 2 ? 12 : 14, "-");
        else fprintf(o, " %*.3f", k < 2 ? 12 : 14, v[k]);
      }
      fprintf(o, "\n");
    }
  }
  return ferror(o) ? -1 : 0;
}

int npkit_report_machine_html(npkit_report *rep, FILE *o) {
  if (!any_snapshot(rep)) return 0;
  char line[512], a[160], b[160];
  fputs("<section id=\"machine\"><h2>Machine</h2>\n<p class=\"note\">Each host's snapshot at the start; its ports and "
        "GPUs are the host's.</p>\n<table id=\"machine-hosts\">", o);
  NPKIT_HTML_HEAD(o, "host", "what", "state");
  for (uint32_t h = 0; h < rep->job.n_hosts; h++) {
    const npkit_machine *m = npkit_report_host_machine(rep, h);
    if (m == NULL) continue;
    host_head(rep, h, m, line, sizeof line);
    fputs("<tr>", o);
    npkit_html_td(o, 1, rep->job.hosts[h].name);
    npkit_html_td(o, 1, "host");
    npkit_html_td(o, 1, line);
    fputs("</tr>\n", o);
    for (size_t i = 0; i < m->n_gpus; i++) {
      const npkit_mach_gpu *g = &m->gpus[i];
      nvlink_text(g, a, sizeof a);
      gpu_users(rep, h, g, b, sizeof b);
      snprintf(line, sizeof line, "GPU %" PRId32 " %s (%s)", g->index, g->name, g->bus_id);
      if (b[0]) npkit_appendf(a, sizeof a, "; used by %s", b);
      fputs("<tr>", o);
      npkit_html_td(o, 1, rep->job.hosts[h].name);
      npkit_html_td(o, 1, line);
      npkit_html_td(o, 1, a);
      fputs("</tr>\n", o);
    }
    for (size_t i = 0; i < m->n_ports; i++) {
      const npkit_mach_port *p = &m->ports[i];
      port_text(p, a, sizeof a);
      snprintf(line, sizeof line, "port %s (%s)", p->name, p->type == NPKIT_PORT_IB ? "InfiniBand" : "Ethernet");
      fputs("<tr>", o);
      npkit_html_td(o, 1, rep->job.hosts[h].name);
      npkit_html_td(o, 1, line);
      npkit_html_td(o, 1, a);
      fputs("</tr>\n", o);
    }
  }
  fputs("</table>\n", o);
  if (any_link_rows(rep)) {
    fprintf(o, "<p>Link throughput while the collectives ran (sampled every %" PRIu64 " us).</p>\n<table id=\"link-throughput\">",
            sample_period(rep));
    NPKIT_HTML_HEAD(o, "collective", "communicator", "net tx Gb/s", "net rx Gb/s", "NVLink tx GB/s", "NVLink rx GB/s");
    for (size_t i = 0; i < rep->table.n; i++) {
      const npkit_table_row *r = &rep->table.rows[i];
      const npkit_row_links *l = &r->links;
      if (isnan(l->net_tx_gbps) && isnan(l->nvlink_tx_gbs)) continue;
      link_row_label(rep, r, a, sizeof a, b, sizeof b);
      fputs("<tr>", o);
      npkit_html_td(o, 1, a);
      npkit_html_td(o, 1, b);
      npkit_html_td_gbs(o, l->net_tx_gbps);
      npkit_html_td_gbs(o, l->net_rx_gbps);
      npkit_html_td_gbs(o, l->nvlink_tx_gbs);
      npkit_html_td_gbs(o, l->nvlink_rx_gbs);
      fputs("</tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  fputs("</section>\n", o);
  return ferror(o) ? -1 : 0;
}
