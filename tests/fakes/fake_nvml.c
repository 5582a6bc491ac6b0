/*
 * Fake libnvidia-ml.so.1: the NVML functions the machine source uses, with NVML's documented
 * behaviour (nvml.h of NVML 12.8 and the NVML API Reference Guide, the same declarations as the
 * library: src/runtime/machine/nvml_decl.h), on GPUs described by a file, so that the snapshot and
 * the sampler can be tested without a GPU.
 *
 * FAKE_NVML_CONFIG names the file; without it nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
 * (the library installed, no driver running).  The file: "driver=VERSION", then one block per GPU,
 * each opened by a line "gpu" and followed by key=value lines (values may hold spaces):
 *   name= uuid= bus_id= (NVML's "%08X:%02X:%02X.0")   nvlinks=N (0: no NVLink)   nvlink_version=V
 *   (nvmlNvlinkVersion_t)   down=L,L,... (links not active)   sm_mhz= mem_mhz=   util_gpu= util_mem=
 *   power_mw= temp_c=   pcie_tx_kbs= pcie_rx_kbs= (absent: NOT_SUPPORTED)   nvlink_tx_kibs=
 *   nvlink_rx_kibs= (the rate at which the NVLink data counters grow, KiB/s, from nvmlInit_v2)
 *
 * As strict as NVML: every device query before nvmlInit_v2 (or after the last nvmlShutdown) gives
 * NVML_ERROR_UNINITIALIZED; a NULL result pointer, an unknown handle, an index or link past the
 * last, an unknown clock, sensor or counter give NVML_ERROR_INVALID_ARGUMENT; NVLink queries of a
 * GPU without NVLink give NVML_ERROR_NOT_SUPPORTED; a buffer shorter than the answer gives
 * NVML_ERROR_INSUFFICIENT_SIZE; nvmlDeviceGetPcieThroughput measures for 20 ms inside the call as
 * NVML says it does; nvmlDeviceGetFieldValues answers per field (nvmlReturn), scope UINT_MAX being
 * the sum over the links.  Init and shutdown are counted like NVML's.
 */
#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvml_decl.h"

#define FN_EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 16

typedef struct fake_gpu {
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  char bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
  unsigned nvlinks, nvlink_version;
  unsigned long long down;  /* bit l: link l is not active */
  unsigned sm_mhz, mem_mhz, util_gpu, util_mem, power_mw, temp_c;
  int has_pcie;
  unsigned pcie_tx_kbs, pcie_rx_kbs;
  unsigned long long nvlink_tx_kibs, nvlink_rx_kibs;
} fake_gpu;

/* The handles are the addresses of these. */
static fake_gpu gpus[MAX_GPUS];
static unsigned n_gpus;
static char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "550.54.15";
static int inits;            /* nvmlInit_v2 calls not yet shut down */
static struct timespec init_at;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned long long list_bits(const char *s) {
  unsigned long long bits = 0;
  while (*s) {
    while (*s == ',' || *s == ' ') s++;
    if (!isdigit((unsigned char)*s)) break;
    unsigned v = (unsigned)strtoul(s, (char **)&s, 10);
    if (v < 64) bits |= 1ull << v;
  }
  return bits;
}

static void set(fake_gpu *g, const char *key, const char *v) {
  unsigned long long u = strtoull(v, NULL, 10);
  if (!strcmp(key, "name")) snprintf(g->name, sizeof g->name, "%s", v);
  else if (!strcmp(key, "uuid")) snprintf(g->uuid, sizeof g->uuid, "%s", v);
  else if (!strcmp(key, "bus_id")) snprintf(g->bus_id, sizeof g->bus_id, "%s", v);
  else if (!strcmp(key, "nvlinks")) g->nvlinks = (unsigned)u;
  else if (!strcmp(key, "nvlink_version")) g->nvlink_version = (unsigned)u;
  else if (!strcmp(key, "down")) g->down = list_bits(v);
  else if (!strcmp(key, "sm_mhz")) g->sm_mhz = (unsigned)u;
  else if (!strcmp(key, "mem_mhz")) g->mem_mhz = (unsigned)u;
  else if (!strcmp(key, "util_gpu")) g->util_gpu = (unsigned)u;
  else if (!strcmp(key, "util_mem")) g->util_mem = (unsigned)u;
  else if (!strcmp(key, "power_mw")) g->power_mw = (unsigned)u;
  else if (!strcmp(key, "temp_c")) g->temp_c = (unsigned)u;
  else if (!strcmp(key, "pcie_tx_kbs")) g->pcie_tx_kbs = (unsigned)u, g->has_pcie = 1;
  else if (!strcmp(key, "pcie_rx_kbs")) g->pcie_rx_kbs = (unsigned)u, g->has_pcie = 1;
  else if (!strcmp(key, "nvlink_tx_kibs")) g->nvlink_tx_kibs = u;
  else if (!strcmp(key, "nvlink_rx_kibs")) g->nvlink_rx_kibs = u;
}

/* 0, or -1 when there is no configuration (no driver). */
static int load(void) {
  const char *path = getenv("FAKE_NVML_CONFIG");
  if (path == NULL || path[0] == '\0') return -1;
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  char line[512];
  n_gpus = 0;
  fake_gpu *g = NULL;
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0') continue;
    if (strcmp(line, "gpu") == 0) {
      g = n_gpus < MAX_GPUS ? &gpus[n_gpus++] : NULL;
      if (g != NULL) memset(g, 0, sizeof *g);
      continue;
    }
    char *eq = strchr(line, '=');
    if (eq == NULL) continue;
    *eq = '\0';
    if (strcmp(line, "driver") == 0)
      snprintf(driver, sizeof driver, "%s", eq + 1);
    else if (g != NULL)
      set(g, line, eq + 1);
  }
  fclose(f);
  return 0;
}

static int ready(void) {
  pthread_mutex_lock(&mu);
  int r = inits > 0;
  pthread_mutex_unlock(&mu);
  return r;
}

/* The GPU of a handle; NULL for anything we did not hand out. */
static fake_gpu *gpu_of(nvmlDevice_t d) {
  for (unsigned i = 0; i < n_gpus; i++)
    if ((void *)d == (void *)&gpus[i]) return &gpus[i];
  return NULL;
}

/* The checks every device query starts with. */
#define DEVICE_OR_RETURN(g, dev, out)                         \
  if (!ready()) return NVML_ERROR_UNINITIALIZED;              \
  fake_gpu *g = gpu_of(dev);                                  \
  if (g == NULL || (out) == NULL) return NVML_ERROR_INVALID_ARGUMENT

static nvmlReturn_t copy_out(char *out, unsigned int length, const char *s) {
  if (strlen(s) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(out, s, strlen(s) + 1);
  return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  pthread_mutex_lock(&mu);
  nvmlReturn_t r = NVML_SUCCESS;
  if (inits == 0) {
    if (load() != 0)
      r = NVML_ERROR_DRIVER_NOT_LOADED;
    else
      clock_gettime(CLOCK_MONOTONIC, &init_at);
  }
  if (r == NVML_SUCCESS) inits++;
  pthread_mutex_unlock(&mu);
  return r;
}

FN_EXPORT nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&mu);
  nvmlReturn_t r = inits > 0 ? (inits--, NVML_SUCCESS) : NVML_ERROR_UNINITIALIZED;
  pthread_mutex_unlock(&mu);
  return r;
}

FN_EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
  case NVML_SUCCESS: return "Success";
  case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
  case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
  case NVML_ERROR_NOT_FOUND: return "Not Found";
  case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
  case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
  default: return "Unknown Error";
  }
}

FN_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  if (!ready()) return NVML_ERROR_UNINITIALIZED;
  if (version == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  return copy_out(version, length, driver);
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
  if (!ready()) return NVML_ERROR_UNINITIALIZED;
  if (deviceCount == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = n_gpus;
  return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  if (!ready()) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || index >= n_gpus) return NVML_ERROR_INVALID_ARGUMENT;
  *device = (nvmlDevice_t)(void *)&gpus[index];
  return NVML_SUCCESS;
}

/* domain:bus:device.function, domain:bus:device or bus:device.function, all hexadecimal */
static int parse_bus(const char *s, unsigned v[3]) {
  unsigned d, b, dev, f;
  int n = 0;
  if (sscanf(s, "%x:%x:%x.%x%n", &d, &b, &dev, &f, &n) == 4 && s[n] == '\0') {
  } else if (sscanf(s, "%x:%x:%x%n", &d, &b, &dev, &n) == 3 && s[n] == '\0') {
  } else if (sscanf(s, "%x:%x.%x%n", &b, &dev, &f, &n) == 3 && s[n] == '\0') {
    d = 0;
  } else {
    return -1;
  }
  v[0] = d, v[1] = b, v[2] = dev;
  return 0;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
  unsigned want[3], have[3];
  if (!ready()) return NVML_ERROR_UNINITIALIZED;
  if (pciBusId == NULL || device == NULL || parse_bus(pciBusId, want) != 0) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < n_gpus; i++)
    if (parse_bus(gpus[i].bus_id, have) == 0 && !memcmp(want, have, sizeof want)) {
      *device = (nvmlDevice_t)(void *)&gpus[i];
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_FOUND;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
  DEVICE_OR_RETURN(g, device, name);
  return copy_out(name, length, g->name);
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  DEVICE_OR_RETURN(g, device, uuid);
  return copy_out(uuid, length, g->uuid);
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  DEVICE_OR_RETURN(g, device, pci);
  unsigned v[3] = {0, 0, 0};
  memset(pci, 0, sizeof *pci);
  parse_bus(g->bus_id, v);
  pci->domain = v[0], pci->bus = v[1], pci->device = v[2];
  pci->pciDeviceId = 0x233010deu; /* vendor 0x10de (NVIDIA) */
  snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", v[0], v[1], v[2]);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", v[0] & 0xffffu, v[1] & 0xffu, v[2] & 0xffu);
  return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive) {
  DEVICE_OR_RETURN(g, device, isActive);
  if (g->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= g->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
  *isActive = link < 64 && (g->down >> link & 1) ? NVML_FEATURE_DISABLED : NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link, unsigned int *version) {
  DEVICE_OR_RETURN(g, device, version);
  if (g->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= g->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
  *version = g->nvlink_version;
  return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock) {
  DEVICE_OR_RETURN(g, device, clock);
  if (type == NVML_CLOCK_SM) *clock = g->sm_mhz;
  else if (type == NVML_CLOCK_MEM) *clock = g->mem_mhz;
  else if (type == 0 || type == 3) *clock = g->sm_mhz; /* graphics, video */
  else return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
  DEVICE_OR_RETURN(g, device, utilization);
  utilization->gpu = g->util_gpu;
  utilization->memory = g->util_mem;
  return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
  DEVICE_OR_RETURN(g, device, power);
  *power = g->power_mw;
  return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                unsigned int *temp) {
  DEVICE_OR_RETURN(g, device, temp);
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = g->temp_c;
  return NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter,
                                                   unsigned int *value) {
  DEVICE_OR_RETURN(g, device, value);
  if (counter != NVML_PCIE_UTIL_TX_BYTES && counter != NVML_PCIE_UTIL_RX_BYTES) return NVML_ERROR_INVALID_ARGUMENT;
  if (!g->has_pcie) return NVML_ERROR_NOT_SUPPORTED;
  /* "querying a byte counter over a 20ms interval" */
  struct timespec ts = {0, 20000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  *value = counter == NVML_PCIE_UTIL_TX_BYTES ? g->pcie_tx_kbs : g->pcie_rx_kbs;
  return NVML_SUCCESS;
}

static double seconds_since_init(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  pthread_mutex_lock(&mu);
  double s = (double)(now.tv_sec - init_at.tv_sec) + (double)(now.tv_nsec - init_at.tv_nsec) / 1e9;
  pthread_mutex_unlock(&mu);
  return s;
}

static void nvlink_field(const fake_gpu *g, nvmlFieldValue_t *v, double s) {
  unsigned long long rate = v->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ? g->nvlink_tx_kibs : g->nvlink_rx_kibs;
  unsigned active = 0;
  for (unsigned l = 0; l < g->nvlinks; l++) active += !(l < 64 && (g->down >> l & 1));
  if (g->nvlinks == 0) {
    v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    return;
  }
  unsigned long long total = (unsigned long long)(s * (double)rate);
  if (v->scopeId == UINT_MAX) {
    v->value.ullVal = total;
  } else if (v->scopeId < g->nvlinks) { /* the links share the traffic */
    int up = !(v->scopeId < 64 && (g->down >> v->scopeId & 1));
    v->value.ullVal = up && active > 0 ? total / active : 0;
  } else {
    v->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
    return;
  }
  v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
  v->nvmlReturn = NVML_SUCCESS;
}

FN_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values) {
  DEVICE_OR_RETURN(g, device, values);
  if (valuesCount < 0) return NVML_ERROR_INVALID_ARGUMENT;
  double s = seconds_since_init();
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  for (int i = 0; i < valuesCount; i++) {
    nvmlFieldValue_t *v = &values[i];
    v->timestamp = (long long)now.tv_sec * 1000000LL + now.tv_nsec / 1000;
    v->latencyUsec = 0;
    if (v->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX || v->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX)
      nvlink_field(g, v, s);
    else
      v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
  }
  return NVML_SUCCESS;
}
