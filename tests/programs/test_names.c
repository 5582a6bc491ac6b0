#include "test_names.h"

#include <nccl.h>

static const struct {
  const char *name;
  size_t size;
  int is_float;
  int is_unsigned;
} dtypes[] = {
  [ncclInt8] = {"int8", 1, 0, 0},         [ncclUint8] = {"uint8", 1, 0, 1},
  [ncclInt32] = {"int32", 4, 0, 0},       [ncclUint32] = {"uint32", 4, 0, 1},
  [ncclInt64] = {"int64", 8, 0, 0},       [ncclUint64] = {"uint64", 8, 0, 1},
  [ncclFloat16] = {"float16", 2, 1, 0},   [ncclFloat32] = {"float32", 4, 1, 0},
  [ncclFloat64] = {"float64", 8, 1, 0},   [ncclBfloat16] = {"bfloat16", 2, 1, 0},
  [ncclFloat8e4m3] = {"float8e4m3", 1, 0, 0}, [ncclFloat8e5m2] = {"float8e5m2", 1, 0, 0},
};

static int dtype_known(int datatype) {
  return datatype >= 0 && datatype < (int)(sizeof dtypes / sizeof dtypes[0]);
}

const char *npkit_test_dtype_name(int datatype) {
  return dtype_known(datatype) ? dtypes[datatype].name : "?";
}

size_t npkit_test_dtype_size(int datatype) {
  return dtype_known(datatype) ? dtypes[datatype].size : 0;
}

int npkit_test_dtype_is_float(int datatype) {
  return dtype_known(datatype) && dtypes[datatype].is_float;
}

int npkit_test_dtype_is_unsigned(int datatype) {
  return dtype_known(datatype) && dtypes[datatype].is_unsigned;
}

const char *npkit_test_op_name(int op) {
  static const char *const names[] = {"sum", "prod", "max", "min", "avg"};
  if (op >= 0 && op < ncclNumOps) return names[op];
  return op >= ncclNumOps ? "premulsum" : "?";
}

const char *npkit_test_result_name(int result) {
  static const char *const names[] = {
    "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
    "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
  };
  if (result >= 0 && result < (int)(sizeof names / sizeof names[0])) return names[result];
  return "?";
}
