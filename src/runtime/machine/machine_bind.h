/* Which of the host's GPUs (NVML's numbering) is the CUDA device NCCL uses (ncclCommCuDevice):
 * never assumed to be NVML's GPU 0 or the same number.  In order:
 *  - by PCI bus id: the CUDA driver already loaded in the process (libcuda.so.1, not loaded by us)
 *    gives the device's bus id (cuDeviceGetPCIBusId), compared with NVML's;
 *  - by CUDA_VISIBLE_DEVICES: the device's entry, a GPU UUID (or its prefix) compared with
 *    NVML's, or a number taken as NVML's index;
 *  - by index: the CUDA device number as NVML's index.
 * The last two hold where CUDA numbers GPUs in PCI order, as NVML does (CUDA_DEVICE_ORDER=PCI_BUS_ID,
 * or all GPUs of one model): `how` says which was used. */
#ifndef NPKIT_MACHINE_BIND_H
#define NPKIT_MACHINE_BIND_H

#include <stddef.h>

#include "machine_nvml.h"

typedef struct npkit_machine_binding {
  int gpu;          /* NVML index, -1 when none matched */
  char how[24];     /* "pci_bus_id", "cuda_visible_devices", "index" */
  char bus_id[32];  /* the CUDA driver's, "" */
  char error[128];  /* why none matched */
} npkit_machine_binding;

/* `visible` is CUDA_VISIBLE_DEVICES as the process started (NULL when unset). */
void npkit_machine_bind(int cuda_device, const npkit_machine_gpu_id *ids, size_t n, const char *visible,
                        npkit_machine_binding *out);

/* "0000:3B:00.0", "00000000:3b:00.0" or "3b:00.0" as numbers; 0, or -1 when it is none of them. */
int npkit_machine_parse_bus_id(const char *text, unsigned *domain, unsigned *bus, unsigned *device,
                               unsigned *function);

#endif
