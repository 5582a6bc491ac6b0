/* A stand-in for the CUDA driver, libcuda.so.1, for the tests in which a process "has a CUDA
 * driver loaded" (npkit-preload looks for libcupti under the toolkit's usual names only then).  It
 * only answers cuDriverGetVersion (cuda.h of CUDA 13, line 5245: the CUDA version the driver
 * supports, 1000 * major + 10 * minor), with FAKE_CUDA_DRIVER_VERSION (13000), the variable the
 * fake libcupti asks to decide whether the driver is recent enough for it.  Tests put its folder
 * on LD_LIBRARY_PATH and cupti_job --driver loads it, as the CUDA runtime loads the driver. */
#include <cuda.h>
#include <stdlib.h>

#define FD_EXPORT __attribute__((visibility("default")))

/* Marks this library as the fake, so that test code never loads a real driver by mistake. */
FD_EXPORT int npkitFakeCudaDriver = 1;

FD_EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
  if (driverVersion == NULL) return CUDA_ERROR_INVALID_VALUE;
  const char *v = getenv("FAKE_CUDA_DRIVER_VERSION");
  *driverVersion = v != NULL && *v != '\0' ? atoi(v) : 13000;
  return CUDA_SUCCESS;
}
