#include "machine_nvml.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_decl.h"

#define DEFAULT_LIBRARY "libnvidia-ml.so.1"

struct npkit_machine_nvml {
  char library[256];
  nvmlShutdown_fn shutdown;
  nvmlErrorString_fn error_string;
  nvmlSystemGetDriverVersion_fn driver_version;
  nvmlDeviceGetCount_v2_fn count;
  nvmlDeviceGetHandleByIndex_v2_fn by_index;
  nvmlDeviceGetName_fn name;
  nvmlDeviceGetUUID_fn uuid;
  nvmlDeviceGetPciInfo_v3_fn pci;
  nvmlDeviceGetNvLinkState_fn link_state;
  nvmlDeviceGetNvLinkVersion_fn link_version;
  nvmlDeviceGetClockInfo_fn clock;
  nvmlDeviceGetUtilizationRates_fn util;
  nvmlDeviceGetPowerUsage_fn power;
  nvmlDeviceGetTemperature_fn temp;
  nvmlDeviceGetPcieThroughput_fn pcie;
  nvmlDeviceGetFieldValues_fn fields;
};

static const char *err_text(const npkit_machine_nvml *n, nvmlReturn_t r, char *buf, size_t len) {
  const char *s = n->error_string != NULL ? n->error_string(r) : NULL;
  if (s != NULL)
    snprintf(buf, len, "%s (%d)", s, r);
  else
    snprintf(buf, len, "error %d", r);
  return buf;
}

npkit_machine_nvml *npkit_machine_nvml_open(const char *library, int *absent, char *why, size_t len) {
  const char *lib = library != NULL && library[0] != '\0' ? library : DEFAULT_LIBRARY;
  *absent = 0;
  /* RTLD_LOCAL: NVML's symbols stay out of the process's global scope, as if we were not here */
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    snprintf(why, len, "%s", e != NULL ? e : lib);
    *absent = 1;
    return NULL;
  }
  npkit_machine_nvml *n = calloc(1, sizeof *n);
  if (n == NULL) {
    snprintf(why, len, "out of memory");
    return NULL;
  }
  snprintf(n->library, sizeof n->library, "%s", lib);
  nvmlInit_v2_fn init = (nvmlInit_v2_fn)dlsym(h, "nvmlInit_v2");
  n->shutdown = (nvmlShutdown_fn)dlsym(h, "nvmlShutdown");
  n->error_string = (nvmlErrorString_fn)dlsym(h, "nvmlErrorString");
  n->driver_version = (nvmlSystemGetDriverVersion_fn)dlsym(h, "nvmlSystemGetDriverVersion");
  n->count = (nvmlDeviceGetCount_v2_fn)dlsym(h, "nvmlDeviceGetCount_v2");
  n->by_index = (nvmlDeviceGetHandleByIndex_v2_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  n->name = (nvmlDeviceGetName_fn)dlsym(h, "nvmlDeviceGetName");
  n->uuid = (nvmlDeviceGetUUID_fn)dlsym(h, "nvmlDeviceGetUUID");
  n->pci = (nvmlDeviceGetPciInfo_v3_fn)dlsym(h, "nvmlDeviceGetPciInfo_v3");
  n->link_state = (nvmlDeviceGetNvLinkState_fn)dlsym(h, "nvmlDeviceGetNvLinkState");
  n->link_version = (nvmlDeviceGetNvLinkVersion_fn)dlsym(h, "nvmlDeviceGetNvLinkVersion");
  n->clock = (nvmlDeviceGetClockInfo_fn)dlsym(h, "nvmlDeviceGetClockInfo");
  n->util = (nvmlDeviceGetUtilizationRates_fn)dlsym(h, "nvmlDeviceGetUtilizationRates");
  n->power = (nvmlDeviceGetPowerUsage_fn)dlsym(h, "nvmlDeviceGetPowerUsage");
  n->temp = (nvmlDeviceGetTemperature_fn)dlsym(h, "nvmlDeviceGetTemperature");
  n->pcie = (nvmlDeviceGetPcieThroughput_fn)dlsym(h, "nvmlDeviceGetPcieThroughput");
  n->fields = (nvmlDeviceGetFieldValues_fn)dlsym(h, "nvmlDeviceGetFieldValues");
  /* without these there is nothing to say about any GPU */
  if (init == NULL || n->shutdown == NULL || n->count == NULL || n->by_index == NULL) {
    snprintf(why, len, "%s lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2 or nvmlDeviceGetHandleByIndex_v2", lib);
    free(n);
    return NULL;
  }
  nvmlReturn_t r = init();
  if (r != NVML_SUCCESS) {
    char e[128];
    /* NVML_ERROR_DRIVER_NOT_LOADED: the library is installed, the driver is not running */
    snprintf(why, len, "nvmlInit_v2: %s", err_text(n, r, e, sizeof e));
    free(n);
    return NULL;
  }
  return n;
}

void npkit_machine_nvml_close(npkit_machine_nvml *n) {
  if (n == NULL) return;
  n->shutdown();
  free(n);
}

const char *npkit_machine_nvml_library(const npkit_machine_nvml *n) { return n->library; }

/* The NVLinks of one GPU: NOT_SUPPORTED on link 0 means no NVLink; links are asked in turn until
 * NVML refuses one (INVALID_ARGUMENT past the last link).  Returns the count. */
typedef struct link_info {
  int active;
  unsigned version; /* 0: unknown */
} link_info;

static int nvlinks(npkit_machine_nvml *n, nvmlDevice_t dev, link_info *links) {
  if (n->link_state == NULL) return 0;
  int count = 0;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
    nvmlEnableState_t st = NVML_FEATURE_DISABLED;
    if (n->link_state(dev, link, &st) != NVML_SUCCESS) break;
    unsigned int version = 0;
    if (n->link_version == NULL || n->link_version(dev, link, &version) != NVML_SUCCESS) version = 0;
    links[count].active = st == NVML_FEATURE_ENABLED;
    links[count].version = version;
    count++;
  }
  return count;
}

/* A query that failed is named once in the gpu record's error=. */
static void note_error(const npkit_machine_nvml *n, char *error, size_t len, const char *what, nvmlReturn_t r) {
  char e[96];
  if (error[0] == '\0') snprintf(error, len, "%s: %s", what, err_text(n, r, e, sizeof e));
}

static void one_gpu(npkit_machine_nvml *n, unsigned i, npkit_mtext *t, npkit_machine_gpu_id *id) {
  nvmlDevice_t dev;
  char error[160] = "", e[96];
  memset(id, 0, sizeof *id);
  id->index = i;
  nvmlReturn_t r = n->by_index(i, &dev);
  npkit_mtext_record(t, "gpu");
  npkit_mtext_u64(t, "index", i);
  if (r != NVML_SUCCESS) {
    snprintf(error, sizeof error, "nvmlDeviceGetHandleByIndex_v2: %s", err_text(n, r, e, sizeof e));
    npkit_mtext_str(t, "error", error);
    return;
  }
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "";
  if (n->name != NULL && (r = n->name(dev, name, sizeof name)) != NVML_SUCCESS) {
    note_error(n, error, sizeof error, "nvmlDeviceGetName", r);
    name[0] = '\0';
  }
  if (n->uuid != NULL && (r = n->uuid(dev, id->uuid, sizeof id->uuid)) != NVML_SUCCESS) {
    note_error(n, error, sizeof error, "nvmlDeviceGetUUID", r);
    id->uuid[0] = '\0';
  }
  nvmlPciInfo_t pci;
  memset(&pci, 0, sizeof pci);
  if (n->pci != NULL && (r = n->pci(dev, &pci)) == NVML_SUCCESS)
    snprintf(id->bus_id, sizeof id->bus_id, "%.*s", (int)sizeof pci.busId, pci.busId);
  else if (n->pci != NULL)
    note_error(n, error, sizeof error, "nvmlDeviceGetPciInfo_v3", r);
  npkit_mtext_str(t, "name", name);
  npkit_mtext_str(t, "uuid", id->uuid);
  npkit_mtext_str(t, "bus_id", id->bus_id);
  link_info links[NVML_NVLINK_MAX_LINKS];
  int count = nvlinks(n, dev, links);
  npkit_mtext_i64(t, "nvlinks", count);
  if (error[0] != '\0') npkit_mtext_str(t, "error", error);
  for (int l = 0; l < count; l++) {
    npkit_mtext_record(t, "nvlink");
    npkit_mtext_u64(t, "gpu", i);
    npkit_mtext_u64(t, "link", (uint64_t)l);
    npkit_mtext_bool(t, "active", links[l].active);
    if (links[l].version != 0) npkit_mtext_u64(t, "version", links[l].version);
  }
}

size_t npkit_machine_nvml_snapshot(npkit_machine_nvml *n, npkit_mtext *t, npkit_machine_gpu_id *ids, size_t max) {
  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "", e[96];
  unsigned int count = 0;
  nvmlReturn_t r = n->count(&count);
  npkit_mtext_record(t, "nvml");
  npkit_mtext_str(t, "status", r == NVML_SUCCESS ? "ok" : "error");
  npkit_mtext_str(t, "library", n->library);
  if (n->driver_version != NULL && n->driver_version(driver, sizeof driver) == NVML_SUCCESS)
    npkit_mtext_str(t, "driver", driver);
  if (r != NVML_SUCCESS) {
    char why[128];
    snprintf(why, sizeof why, "nvmlDeviceGetCount_v2: %s", err_text(n, r, e, sizeof e));
    npkit_mtext_str(t, "error", why);
    return 0;
  }
  npkit_mtext_u64(t, "gpus", count);
  size_t kept = 0;
  for (unsigned i = 0; i < count && kept < max; i++) one_gpu(n, i, t, &ids[kept++]);
  return kept;
}

/* A field's value as a count, by the type NVML says it has. */
static unsigned long long field_u64(const nvmlFieldValue_t *f) {
  switch (f->valueType) {
  case NVML_VALUE_TYPE_UNSIGNED_INT: return f->value.uiVal;
  case NVML_VALUE_TYPE_UNSIGNED_LONG: return f->value.ulVal;
  case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return f->value.sllVal > 0 ? (unsigned long long)f->value.sllVal : 0;
  case NVML_VALUE_TYPE_DOUBLE: return f->value.dVal > 0 ? (unsigned long long)f->value.dVal : 0;
  default: return f->value.ullVal;
  }
}

int npkit_machine_nvml_sample(npkit_machine_nvml *n, unsigned index, int pcie, npkit_ev_machine_gpu *out) {
  nvmlDevice_t dev;
  memset(out, 0, sizeof *out);
  out->gpu = index;
  if (n->by_index(index, &dev) != NVML_SUCCESS) return -1;
  unsigned int a, b;
  if (n->clock != NULL && n->clock(dev, NVML_CLOCK_SM, &a) == NVML_SUCCESS &&
      n->clock(dev, NVML_CLOCK_MEM, &b) == NVML_SUCCESS) {
    out->sm_mhz = a;
    out->mem_mhz = b;
    out->valid |= NPKIT_MGPU_CLOCKS;
  }
  nvmlUtilization_t u;
  if (n->util != NULL && n->util(dev, &u) == NVML_SUCCESS) {
    out->util_gpu = u.gpu;
    out->util_mem = u.memory;
    out->valid |= NPKIT_MGPU_UTIL;
  }
  if (n->power != NULL && n->power(dev, &a) == NVML_SUCCESS) {
    out->power_mw = a;
    out->valid |= NPKIT_MGPU_POWER;
  }
  if (n->temp != NULL && n->temp(dev, NVML_TEMPERATURE_GPU, &a) == NVML_SUCCESS) {
    out->temp_c = a;
    out->valid |= NPKIT_MGPU_TEMP;
  }
  if (pcie && n->pcie != NULL && n->pcie(dev, NVML_PCIE_UTIL_TX_BYTES, &a) == NVML_SUCCESS &&
      n->pcie(dev, NVML_PCIE_UTIL_RX_BYTES, &b) == NVML_SUCCESS) {
    out->pcie_tx_kbs = a;
    out->pcie_rx_kbs = b;
    out->valid |= NPKIT_MGPU_PCIE;
  }
  if (n->fields != NULL) {
    /* scope UINT_MAX: the sum over the GPU's links; each field has its own result */
    nvmlFieldValue_t f[2];
    memset(f, 0, sizeof f);
    f[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
    f[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
    f[0].scopeId = f[1].scopeId = UINT_MAX;
    if (n->fields(dev, 2, f) == NVML_SUCCESS && f[0].nvmlReturn == NVML_SUCCESS && f[1].nvmlReturn == NVML_SUCCESS) {
      out->nvlink_tx_kib = field_u64(&f[0]);
      out->nvlink_rx_kib = field_u64(&f[1]);
      out->valid |= NPKIT_MGPU_NVLINK;
    }
  }
  return 0;
}
