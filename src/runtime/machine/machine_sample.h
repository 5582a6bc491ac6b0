/* The sampler of NPKIT_GPU_SAMPLE_RATE: on the machine thread, every period, one NPKIT_EV_MACHINE_GPU
 * event for the process's GPU (once known) and one NPKIT_EV_MACHINE_PORT per network port, and every
 * NPKIT_CPU_SAMPLE_INTERVAL one NPKIT_EV_MACHINE_CPU; gathered in a batch (core/batch.h) that goes
 * to the log as one EVENTS block when full or every NPKIT_FLUSH_MS.  Never on an application
 * thread, so NCCL calls do not wait for NVML (whose PCIe reading alone takes 2 × 20 ms). */
#ifndef NPKIT_MACHINE_SAMPLE_H
#define NPKIT_MACHINE_SAMPLE_H

#include <stdint.h>

#include "batch.h"
#include "machine_nvml.h"
#include "machine_sysfs.h"

/* PCIe throughput is read only at periods this long or longer: each reading holds NVML 20 ms. */
#define NPKIT_MACHINE_PCIE_MIN_US 100000u

typedef struct npkit_machine_sampler {
  npkit_machine_nvml *nvml;            /* NULL: no GPU samples */
  int gpu;                     /* NVML index of the process's GPU, -1 while unknown */
  int pcie;                    /* read PCIe throughput */
  const npkit_machine_ports *ports;
  npkit_batch batch;
  npkit_event slots[128];
  uint64_t flush_ns, last_flush_ns; /* CLOCK_MONOTONIC */
  uint64_t samples;            /* GPU/port passes made */
} npkit_machine_sampler;

void npkit_machine_sampler_init(npkit_machine_sampler *s, npkit_log_writer *log, uint64_t flush_ms);
/* One pass over the GPU and the ports. */
void npkit_machine_sample_devices(npkit_machine_sampler *s);
/* The process's CPU time. */
void npkit_machine_sample_cpu(npkit_machine_sampler *s);
/* Writes the batch when it is due (force: now). */
void npkit_machine_sampler_flush(npkit_machine_sampler *s, int force);

#endif
