/* NVML, loaded at run time (libnvidia-ml.so.1, or NPKIT_NVML_LIBRARY; never linked): the GPUs of
 * the host for the snapshot, and one sample of a GPU's counters for the sampler.  A machine
 * without NVML (no driver) or an NVML that fails gives a reason, never an error of the job. */
#ifndef NPKIT_MACHINE_NVML_H
#define NPKIT_MACHINE_NVML_H

#include <stddef.h>

#include "machine_text.h"
#include "npkit/event_log.h"

typedef struct npkit_machine_nvml npkit_machine_nvml;

/* What the snapshot keeps of a GPU to find the process's GPU later (machine_bind.h). */
typedef struct npkit_machine_gpu_id {
  unsigned index;
  char uuid[96];
  char bus_id[32];
} npkit_machine_gpu_id;

/* Loads and initialises NVML: NULL with one sentence in `why` when there is none or it fails
 * (`library` "" for libnvidia-ml.so.1).  *absent is 1 when no library could be loaded at all. */
npkit_machine_nvml *npkit_machine_nvml_open(const char *library, int *absent, char *why, size_t len);
/* nvmlShutdown; the library stays loaded (another user in the process may hold it). */
void npkit_machine_nvml_close(npkit_machine_nvml *n);
/* The name NVML was loaded by. */
const char *npkit_machine_nvml_library(const npkit_machine_nvml *n);

/* Writes the `nvml`, `gpu` and `nvlink` records; fills ids (up to max) and returns their count. */
size_t npkit_machine_nvml_snapshot(npkit_machine_nvml *n, npkit_mtext *t, npkit_machine_gpu_id *ids, size_t max);

/* One sample of GPU `index` (NVML index): the fields NVML answers, with NPKIT_MGPU_* in valid.
 * With pcie, the two PCIe readings (20 ms each inside NVML).  0, or -1 when the GPU is gone. */
int npkit_machine_nvml_sample(npkit_machine_nvml *n, unsigned index, int pcie, npkit_ev_machine_gpu *out);

#endif
