#include "machine_sample.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "clock.h"
#include "emit.h"

void npkit_machine_sampler_init(npkit_machine_sampler *s, npkit_log_writer *log, uint64_t flush_ms) {
  memset(s, 0, sizeof *s);
  s->gpu = -1;
  s->batch = (npkit_batch)NPKIT_BATCH_OF(s->slots);
  s->batch.log = log;
  s->flush_ns = flush_ms * 1000000u;
  s->last_flush_ns = npkit_mono_ns();
}

static void add(npkit_machine_sampler *s, const npkit_event *ev) {
  if (npkit_batch_add(&s->batch, ev)) npkit_machine_sampler_flush(s, 1);
}

void npkit_machine_sample_devices(npkit_machine_sampler *s) {
  npkit_event ev;
  s->samples++;
  if (s->nvml != NULL && s->gpu >= 0) {
    uint64_t t0 = npkit_now_ns();
    npkit_ev_machine_gpu g;
    if (npkit_machine_nvml_sample(s->nvml, (unsigned)s->gpu, s->pcie, &g) == 0) {
      npkit_event_init(&ev, NPKIT_EV_MACHINE_GPU, t0, npkit_now_ns());
      ev.u.machine_gpu = g;
      add(s, &ev);
    }
  }
  for (size_t i = 0; s->ports != NULL && i < s->ports->n; i++) {
    const npkit_machine_port *p = &s->ports->port[i];
    npkit_event_now(&ev, NPKIT_EV_MACHINE_PORT);
    npkit_ev_machine_port *mp = &ev.u.machine_port;
    mp->port = p->record;
    mp->flags = p->ib ? NPKIT_MPORT_IB : 0;
    if (npkit_machine_port_bytes(p->tx, p->ib, &mp->tx_bytes) != 0) mp->flags |= NPKIT_MPORT_TX_BAD;
    if (npkit_machine_port_bytes(p->rx, p->ib, &mp->rx_bytes) != 0) mp->flags |= NPKIT_MPORT_RX_BAD;
    snprintf(mp->name, sizeof mp->name, "%s", p->name);
    add(s, &ev);
  }
}

void npkit_machine_sample_cpu(npkit_machine_sampler *s) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return;
  npkit_event ev;
  npkit_event_now(&ev, NPKIT_EV_MACHINE_CPU);
  ev.u.machine_cpu.user_ns = (uint64_t)ru.ru_utime.tv_sec * 1000000000u + (uint64_t)ru.ru_utime.tv_usec * 1000u;
  ev.u.machine_cpu.system_ns = (uint64_t)ru.ru_stime.tv_sec * 1000000000u + (uint64_t)ru.ru_stime.tv_usec * 1000u;
  add(s, &ev);
}

void npkit_machine_sampler_flush(npkit_machine_sampler *s, int force) {
  uint64_t now = npkit_mono_ns();
  if (!force && now - s->last_flush_ns < s->flush_ns) return;
  s->last_flush_ns = now;
  npkit_batch_flush(&s->batch);
}
