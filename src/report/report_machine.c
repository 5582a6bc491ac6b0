#include "report_machine.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

int npkit_mach_port_is_data(const npkit_mach_port *p) {
  if (p->up != 1) return 0;
  return p->type == NPKIT_PORT_IB || p->physical == 1;
}

int npkit_rep_machine_load(npkit_rep_machine *m, const npkit_log_reader *r, char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  return npkit_machine_load(r, &m->snap, err, errlen);
}

static void series_free(npkit_series *s) {
  free(s->v);
  memset(s, 0, sizeof *s);
}

void npkit_rep_machine_free(npkit_rep_machine *m) {
  npkit_machine_free(&m->snap);
  for (size_t i = 0; i < m->n_ports; i++) series_free(&m->ports[i].s);
  free(m->ports);
  series_free(&m->nvlink);
  memset(m, 0, sizeof *m);
}

static int series_add(npkit_series *s, uint64_t t, uint64_t a, uint64_t b) {
  if (s->n > 0 && t <= s->v[s->n - 1].t) return 0; /* out of order: the series stays sorted */
  if (NPKIT_GROW(s->v, s->cap, s->n + 1, 64) != 0) return -1;
  s->v[s->n++] = (npkit_sample){t, a, b};
  return 0;
}

static npkit_port_series *port_of(npkit_rep_machine *m, uint32_t port) {
  for (size_t i = 0; i < m->n_ports; i++)
    if (m->ports[i].port == port) return &m->ports[i];
  if (m->n_ports >= NPKIT_MACH_MAX_PORTS || NPKIT_GROW(m->ports, m->cap_ports, m->n_ports + 1, 8) != 0) return NULL;
  npkit_port_series *p = &m->ports[m->n_ports++];
  memset(p, 0, sizeof *p);
  p->port = port;
  p->data = port < m->snap.n_ports && npkit_mach_port_is_data(&m->snap.ports[port]);
  return p;
}

int npkit_rep_machine_event(npkit_rep_machine *m, const npkit_event *ev) {
  m->samples++;
  if (ev->kind == NPKIT_EV_MACHINE_PORT) {
    const npkit_ev_machine_port *p = &ev->u.machine_port;
    if (p->flags & (NPKIT_MPORT_TX_BAD | NPKIT_MPORT_RX_BAD)) return 0;
    npkit_port_series *ps = port_of(m, p->port);
    if (ps == NULL) return m->n_ports >= NPKIT_MACH_MAX_PORTS ? 0 : -1;
    return series_add(&ps->s, ev->end_ns, p->tx_bytes, p->rx_bytes);
  }
  if (ev->kind == NPKIT_EV_MACHINE_GPU) {
    const npkit_ev_machine_gpu *g = &ev->u.machine_gpu;
    if (!(g->valid & NPKIT_MGPU_NVLINK)) return 0;
    return series_add(&m->nvlink, ev->end_ns, g->nvlink_tx_kib, g->nvlink_rx_kib);
  }
  return 0;
}

/* Rates (per second) of the interval of s that holds t; 0 or -1. */
static int rate_at(const npkit_series *s, uint64_t t, double *ra, double *rb) {
  if (s->n < 2 || t < s->v[0].t || t > s->v[s->n - 1].t) return -1;
  size_t lo = 0, hi = s->n - 1; /* the last sample at or before t, below the last */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->v[mid].t <= t) lo = mid; else hi = mid;
  }
  const npkit_sample *x = &s->v[lo], *y = &s->v[lo + 1];
  *ra = npkit_counter_rate(x->a, x->t, y->a, y->t);
  *rb = npkit_counter_rate(x->b, x->t, y->b, y->t);
  return *ra >= 0 && *rb >= 0 ? 0 : -1;
}

int npkit_rep_machine_net_at(const npkit_rep_machine *m, uint64_t t, double *tx_gbps, double *rx_gbps) {
  double tx = 0, rx = 0;
  int any = 0;
  for (size_t i = 0; i < m->n_ports; i++) {
    double a, b;
    if (!m->ports[i].data || rate_at(&m->ports[i].s, t, &a, &b) != 0) continue;
    tx += a;
    rx += b;
    any = 1;
  }
  *tx_gbps = tx * 8 / 1e9;
  *rx_gbps = rx * 8 / 1e9;
  return any ? 0 : -1;
}

int npkit_rep_machine_nvlink_at(const npkit_rep_machine *m, uint64_t t, double *tx_gbs, double *rx_gbs) {
  double a, b;
  if (rate_at(&m->nvlink, t, &a, &b) != 0) return -1;
  *tx_gbs = a * 1024 / 1e9;
  *rx_gbs = b * 1024 / 1e9;
  return 0;
}
