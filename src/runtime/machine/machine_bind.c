#include "machine_bind.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) (cuda.h; CUdevice is an int) */
typedef int (*bus_id_fn)(char *pci_bus_id, int len, int dev);

int npkit_machine_parse_bus_id(const char *text, unsigned *domain, unsigned *bus, unsigned *device,
                               unsigned *function) {
  unsigned d = 0, b, v, f;
  int used = 0;
  if (text == NULL) return -1;
  /* NVML accepts "%x:%x:%x.%x" and "%x:%x.%x" (nvmlDeviceGetHandleByPciBusId_v2) */
  if (sscanf(text, "%x:%x:%x.%x%n", &d, &b, &v, &f, &used) == 4 && text[used] == '\0') {
  } else if (sscanf(text, "%x:%x.%x%n", &b, &v, &f, &used) == 3 && text[used] == '\0') {
    d = 0;
  } else {
    return -1;
  }
  *domain = d;
  *bus = b;
  *device = v;
  *function = f;
  return 0;
}

static int same_bus(const char *a, const char *b) {
  unsigned d1, b1, v1, f1, d2, b2, v2, f2;
  return npkit_machine_parse_bus_id(a, &d1, &b1, &v1, &f1) == 0 && npkit_machine_parse_bus_id(b, &d2, &b2, &v2, &f2) == 0 &&
         d1 == d2 && b1 == b2 && v1 == v2 && f1 == f2;
}

/* The bus id from the CUDA driver the process has loaded; 0 or -1. */
static int driver_bus_id(int dev, char *out, size_t len) {
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL) return -1;
  bus_id_fn f = (bus_id_fn)dlsym(h, "cuDeviceGetPCIBusId");
  int rc = f != NULL && f(out, (int)len, dev) == 0 ? 0 : -1;
  dlclose(h); /* only drops the reference RTLD_NOLOAD took */
  if (rc == 0) out[len - 1] = '\0';
  return rc;
}

/* Entry `dev` of a comma separated list into out; 0 or -1. */
static int list_entry(const char *list, int dev, char *out, size_t len) {
  const char *p = list;
  for (int i = 0; i < dev && p != NULL; i++) {
    p = strchr(p, ',');
    if (p != NULL) p++;
  }
  if (p == NULL) return -1;
  while (isspace((unsigned char)*p)) p++;
  size_t n = strcspn(p, ", \t");
  if (n == 0 || n >= len) return -1;
  memcpy(out, p, n);
  out[n] = '\0';
  return 0;
}

static int by_visible(const char *visible, int dev, const npkit_machine_gpu_id *ids, size_t n, npkit_machine_binding *out) {
  char entry[128];
  if (list_entry(visible, dev, entry, sizeof entry) != 0) {
    snprintf(out->error, sizeof out->error, "CUDA_VISIBLE_DEVICES=%.60s has no entry %d", visible, dev);
    return -1;
  }
  snprintf(out->how, sizeof out->how, "cuda_visible_devices");
  if (strncmp(entry, "GPU-", 4) == 0) { /* a UUID, or a unique prefix of one, as CUDA accepts */
    for (size_t i = 0; i < n; i++)
      if (strncmp(ids[i].uuid, entry, strlen(entry)) == 0) return out->gpu = (int)ids[i].index, 0;
    snprintf(out->error, sizeof out->error, "no GPU has the UUID %.80s of CUDA_VISIBLE_DEVICES", entry);
    return -1;
  }
  char *end;
  long v = strtol(entry, &end, 10);
  if (*end != '\0' || v < 0) {
    snprintf(out->error, sizeof out->error, "CUDA_VISIBLE_DEVICES entry '%.60s' is not a GPU index or UUID", entry);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (ids[i].index == (unsigned)v) return out->gpu = (int)v, 0;
  snprintf(out->error, sizeof out->error, "CUDA_VISIBLE_DEVICES entry %ld is not one of NVML's %zu GPUs", v, n);
  return -1;
}

void npkit_machine_bind(int cuda_device, const npkit_machine_gpu_id *ids, size_t n, const char *visible,
                        npkit_machine_binding *out) {
  memset(out, 0, sizeof *out);
  out->gpu = -1;
  if (cuda_device < 0) {
    snprintf(out->error, sizeof out->error, "NCCL did not say the communicator's CUDA device");
    return;
  }
  if (driver_bus_id(cuda_device, out->bus_id, sizeof out->bus_id) == 0) {
    snprintf(out->how, sizeof out->how, "pci_bus_id");
    for (size_t i = 0; i < n; i++)
      if (same_bus(ids[i].bus_id, out->bus_id)) {
        out->gpu = (int)ids[i].index;
        return;
      }
    snprintf(out->error, sizeof out->error, "no GPU of NVML is at the CUDA device's bus id %s", out->bus_id);
    return;
  }
  if (visible != NULL && visible[0] != '\0') {
    by_visible(visible, cuda_device, ids, n, out);
    return;
  }
  snprintf(out->how, sizeof out->how, "index");
  for (size_t i = 0; i < n; i++)
    if (ids[i].index == (unsigned)cuda_device) {
      out->gpu = cuda_device;
      return;
    }
  snprintf(out->error, sizeof out->error, "NVML has no GPU %d", cuda_device);
}
