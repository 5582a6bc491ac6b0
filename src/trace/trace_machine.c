/* The machine's sampled counters (NPKIT_EV_MACHINE_*) as Chrome counter tracks ("ph":"C") of the
 * rank's process: per GPU its clocks, utilisation, power, temperature, PCIe and NVLink throughput;
 * per network port its throughput; the process's CPU use.  Throughputs and CPU use are rates
 * between two samples of a cumulative counter, drawn at the later one; a counter that went back
 * (a reset) starts over.  Names and units: docs/trace-format.md.  Written through the trace sink
 * only (trace_sink.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine_info.h"
#include "trace_source.h"
#include "trace_tracks.h"

#define MAX_PORTS 256
#define MAX_GPUS 64

typedef struct prev_sample {
  int has;
  uint64_t t, a, b;
} prev_sample;

typedef struct machine_render {
  npkit_trace_ctx ctx;
  prev_sample port[MAX_PORTS];
  prev_sample gpu[MAX_GPUS];
  prev_sample cpu;
} machine_render;

static int kinds(unsigned kind) { return kind >= NPKIT_EV_MACHINE_GPU && kind <= NPKIT_EV_MACHINE_LAST; }

static void *create(const npkit_log_reader *r, npkit_api_fmt *fmt) {
  (void)r;
  machine_render *m = calloc(1, sizeof *m);
  if (m != NULL) m->ctx = fmt->ctx;
  return m;
}

/* One counter event with one or two values (k2 NULL: one). */
static void counter(npkit_sink *s, const machine_render *m, const char *name, uint64_t t, const char *k1, double v1,
                    const char *k2, double v2) {
  npkit_sink_counter(s, name, "machine", m->ctx.pid, npkit_trace_rel(&m->ctx, t));
  npkit_sink_args(s);
  npkit_sink_arg_double(s, k1, v1);
  if (k2 != NULL) npkit_sink_arg_double(s, k2, v2);
  npkit_sink_end(s);
}

/* Rates of two cumulative counters since the previous sample (scale: per second to the unit);
 * 0 when there is no previous sample or a counter went back. */
static int rates(prev_sample *p, uint64_t t, uint64_t a, uint64_t b, double scale, double *ra, double *rb) {
  int ok = 0;
  if (p->has) {
    *ra = npkit_counter_rate(p->a, p->t, a, t);
    *rb = npkit_counter_rate(p->b, p->t, b, t);
    ok = *ra >= 0 && *rb >= 0;
    *ra *= scale;
    *rb *= scale;
  }
  *p = (prev_sample){1, t, a, b};
  return ok;
}

static void gpu_event(machine_render *m, npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_machine_gpu *g = &ev->u.machine_gpu;
  char name[64];
  uint64_t t = ev->end_ns;
  if (g->valid & NPKIT_MGPU_CLOCKS) {
    snprintf(name, sizeof name, "GPU %" PRIu32 " clocks (MHz)", g->gpu);
    counter(s, m, name, t, "sm", g->sm_mhz, "memory", g->mem_mhz);
  }
  if (g->valid & NPKIT_MGPU_UTIL) {
    snprintf(name, sizeof name, "GPU %" PRIu32 " utilization (%%)", g->gpu);
    counter(s, m, name, t, "gpu", g->util_gpu, "memory", g->util_mem);
  }
  if (g->valid & NPKIT_MGPU_POWER) {
    snprintf(name, sizeof name, "GPU %" PRIu32 " power (W)", g->gpu);
    counter(s, m, name, t, "power", g->power_mw / 1000.0, NULL, 0);
  }
  if (g->valid & NPKIT_MGPU_TEMP) {
    snprintf(name, sizeof name, "GPU %" PRIu32 " temperature (C)", g->gpu);
    counter(s, m, name, t, "gpu", g->temp_c, NULL, 0);
  }
  if (g->valid & NPKIT_MGPU_PCIE) { /* as NVML gives it: KB/s over its 20 ms window */
    snprintf(name, sizeof name, "GPU %" PRIu32 " PCIe (KB/s)", g->gpu);
    counter(s, m, name, t, "tx", g->pcie_tx_kbs, "rx", g->pcie_rx_kbs);
  }
  double tx, rx;
  if ((g->valid & NPKIT_MGPU_NVLINK) && g->gpu < MAX_GPUS &&
      rates(&m->gpu[g->gpu], t, g->nvlink_tx_kib, g->nvlink_rx_kib, 1024.0 / 1e9, &tx, &rx)) {
    snprintf(name, sizeof name, "GPU %" PRIu32 " NVLink (GB/s)", g->gpu);
    counter(s, m, name, t, "tx", tx, "rx", rx);
  }
}

static void port_event(machine_render *m, npkit_sink *s, const npkit_event *ev) {
  const npkit_ev_machine_port *p = &ev->u.machine_port;
  char name[80];
  double tx, rx;
  if (p->port >= MAX_PORTS) return;
  if (p->flags & (NPKIT_MPORT_TX_BAD | NPKIT_MPORT_RX_BAD)) {
    m->port[p->port].has = 0; /* no reading: the next one starts over */
    return;
  }
  if (!rates(&m->port[p->port], ev->end_ns, p->tx_bytes, p->rx_bytes, 8.0 / 1e9, &tx, &rx)) return;
  snprintf(name, sizeof name, "port %.*s (Gb/s)", (int)strnlen(p->name, sizeof p->name), p->name);
  counter(s, m, name, ev->end_ns, "tx", tx, "rx", rx);
}

static void cpu_event(machine_render *m, npkit_sink *s, const npkit_event *ev) {
  double user, sys;
  const npkit_ev_machine_cpu *c = &ev->u.machine_cpu;
  /* CPU ns per wall ns, in percent of one CPU (above 100 with several threads busy) */
  if (rates(&m->cpu, ev->end_ns, c->user_ns, c->system_ns, 100.0 / 1e9, &user, &sys))
    counter(s, m, "process CPU (%)", ev->end_ns, "user", user, "system", sys);
}

static int event(void *self, npkit_sink *s, const npkit_event *ev) {
  machine_render *m = self;
  switch (ev->kind) {
  case NPKIT_EV_MACHINE_GPU: gpu_event(m, s, ev); return 1;
  case NPKIT_EV_MACHINE_PORT: port_event(m, s, ev); return 1;
  case NPKIT_EV_MACHINE_CPU: cpu_event(m, s, ev); return 1;
  default: return 0;
  }
}

static void finish(void *self, npkit_sink *s) {
  (void)self;
  (void)s;
}

static void destroy(void *self) { free(self); }

const npkit_trace_source npkit_machine_trace_source = {"machine", kinds, create, event, NULL, finish, destroy, NULL};
