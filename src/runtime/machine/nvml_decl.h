/*
 * The few parts of NVML's C API the machine source uses, declared from NVML's documented
 * interface (nvml.h of NVML 12.8, as NVIDIA publishes it with the driver and in its Go bindings,
 * NVIDIA/go-nvml pkg/nvml/nvml.h; the NVML API Reference Guide): nvml.h is not needed to build,
 * and libnvidia-ml.so.1 is opened at run time, never linked.  Only what is used is here, with
 * NVML's own names, values and layouts; the fake NVML of the tests (tests/fakes/fake_nvml.c)
 * is built against this file too.
 */
#ifndef NPKIT_NVML_DECL_H
#define NPKIT_NVML_DECL_H

/* nvmlReturn_t (nvml.h, "nvmlReturn_enum") */
typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_UNKNOWN 999

typedef struct nvmlDevice_st *nvmlDevice_t;

/* Buffer sizes (nvml.h "Buffer size guaranteed to be large enough for ..."). */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_NVLINK_MAX_LINKS 36

/* nvmlPciInfo_t (nvml.h "nvmlPciInfo_st", the layout nvmlDeviceGetPciInfo_v3 fills). */
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "%04X:%02X:%02X.0" */
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;    /* device id << 16 | vendor id */
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];         /* "%08X:%02X:%02X.0" */
} nvmlPciInfo_t;

/* nvmlUtilization_t: percent of the past sample period. */
typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

/* nvmlEnableState_t */
typedef int nvmlEnableState_t;
#define NVML_FEATURE_DISABLED 0
#define NVML_FEATURE_ENABLED 1

/* nvmlClockType_t */
typedef int nvmlClockType_t;
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2

/* nvmlTemperatureSensors_t */
typedef int nvmlTemperatureSensors_t;
#define NVML_TEMPERATURE_GPU 0

/* nvmlPcieUtilCounter_t: throughput over 20 ms measured inside the call, KB/s. */
typedef int nvmlPcieUtilCounter_t;
#define NVML_PCIE_UTIL_TX_BYTES 0
#define NVML_PCIE_UTIL_RX_BYTES 1

/* nvmlValueType_t, nvmlValue_t and nvmlFieldValue_t (nvmlDeviceGetFieldValues). */
typedef int nvmlValueType_t;
#define NVML_VALUE_TYPE_DOUBLE 0
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
#define NVML_VALUE_TYPE_UNSIGNED_LONG 2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG 4

typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;        /* NVLink fields: the link, UINT_MAX for the sum over links */
  long long timestamp;         /* CPU time of the value, µs since 1970 */
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;     /* this field's result; value is valid only on NVML_SUCCESS */
  nvmlValue_t value;
} nvmlFieldValue_t;

/* NVLink data counters, KiB since the driver loaded (nvml.h "NVLink throughput counters field
 * values"; they replace the deprecated NVML_FI_DEV_NVLINK_BANDWIDTH_* fields). */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139

/* The functions, by the names the library exports (the _v2/_v3 symbols the current nvml.h maps
 * the plain names to). */
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char *(*nvmlErrorString_fn)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char *version, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int *deviceCount);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index, nvmlDevice_t *device);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByPciBusId_v2_fn)(const char *pciBusId, nvmlDevice_t *device);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t device, char *name, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t device, char *uuid, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_v3_fn)(nvmlDevice_t device, nvmlPciInfo_t *pci);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t device, unsigned int link,
                                                    nvmlEnableState_t *isActive);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkVersion_fn)(nvmlDevice_t device, unsigned int link, unsigned int *version);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t device, nvmlUtilization_t *utilization);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t device, unsigned int *power); /* mW */
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                    unsigned int *temp);
typedef nvmlReturn_t (*nvmlDeviceGetPcieThroughput_fn)(nvmlDevice_t device, nvmlPcieUtilCounter_t counter,
                                                       unsigned int *value);
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values);

#endif /* NPKIT_NVML_DECL_H */
