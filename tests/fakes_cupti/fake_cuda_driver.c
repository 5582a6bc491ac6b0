/* A stand-in for the CUDA driver, libcuda.so.1, for the tests in which a process "has a CUDA
 * driver loaded" (npkit-preload looks for libcupti under the toolkit's usual names only then).  It
 * answers cuDriverGetVersion (cuda.h of CUDA 13, line 5245: the CUDA version the driver
 * supports, 1000 * major + 10 * minor), with FAKE_CUDA_DRIVER_VERSION (13000), the variable the
 * fake libcupti asks to decide whether the driver is recent enough for it, and
 * cuDeviceGetPCIBusId (the machine source's way from a CUDA device to NVML's GPU), with the
 * entries of FAKE_CUDA_BUS_IDS ("0000:3B:00.0,0000:1B:00.0": CUDA device 0, 1, ...).  Tests put
 * its folder on LD_LIBRARY_PATH and cupti_job --driver loads it, as the CUDA runtime loads the
 * driver, or preload it. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_EXPORT __attribute__((visibility("default")))

/* Marks this library as the fake, so that test code never loads a real driver by mistake. */
FD_EXPORT int npkitFakeCudaDriver = 1;

FD_EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
  if (driverVersion == NULL) return CUDA_ERROR_INVALID_VALUE;
  const char *v = getenv("FAKE_CUDA_DRIVER_VERSION");
  *driverVersion = v != NULL && *v != '\0' ? atoi(v) : 13000;
  return CUDA_SUCCESS;
}

/* cuda.h: "Returns a PCI Bus Id string for the device ... [domain]:[bus]:[device].[function]",
 * CUDA_ERROR_INVALID_VALUE for a NULL or too short buffer, CUDA_ERROR_INVALID_DEVICE for a
 * device that does not exist. */
FD_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
  const char *ids = getenv("FAKE_CUDA_BUS_IDS");
  if (pciBusId == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (ids == NULL || dev < 0) return CUDA_ERROR_INVALID_DEVICE;
  const char *p = ids;
  for (int i = 0; i < dev && p != NULL; i++) {
    p = strchr(p, ',');
    if (p != NULL) p++;
  }
  if (p == NULL || *p == '\0') return CUDA_ERROR_INVALID_DEVICE;
  size_t n = strcspn(p, ",");
  if (n + 1 > (size_t)len) return CUDA_ERROR_INVALID_VALUE;
  memcpy(pciBusId, p, n);
  pciBusId[n] = '\0';
  return CUDA_SUCCESS;
}
