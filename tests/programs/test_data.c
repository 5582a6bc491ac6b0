#include "test_data.h"

#include <math.h>
#include <nccl.h>
#include <string.h>

#include "test_names.h"

double npkit_test_pattern(npkit_test_pattern_kind kind, int datatype, int rank, unsigned call,
                          size_t i) {
  unsigned long long r = (unsigned long long)rank, k = call, x = i;
  switch (kind) {
  case NPKIT_TEST_PAT_BINARY:
    return (double)((r + k + x) % 2 + 1);
  case NPKIT_TEST_PAT_WIDE: {
    double v = (double)((r * 131 + k * 17 + x * 7) % 200);
    return npkit_test_dtype_is_unsigned(datatype) ? v : v - 100.0;
  }
  case NPKIT_TEST_PAT_SMALL:
  default:
    return (double)((r * 7 + k * 3 + x) % 5 + 1);
  }
}

static uint16_t float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; /* NaN stays NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static float bf16_to_float(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t fexp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (fexp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
  int exp = (int)fexp - 127 + 15;
  if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    unsigned shift = (unsigned)(14 - exp);
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry into the exponent: correct */
  return (uint16_t)h;
}

static float half_to_float(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  float v;
  if (exp == 0)
    v = ldexpf((float)mant, -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = ldexpf((float)(mant + 1024), exp - 25);
  return (h & 0x8000u) ? -v : v;
}

double npkit_test_load(const void *buf, int datatype, size_t i) {
  switch (datatype) {
  case ncclInt8: return ((const int8_t *)buf)[i];
  case ncclUint8: return ((const uint8_t *)buf)[i];
  case ncclInt32: return ((const int32_t *)buf)[i];
  case ncclUint32: return ((const uint32_t *)buf)[i];
  case ncclInt64: return (double)((const int64_t *)buf)[i];
  case ncclUint64: return (double)((const uint64_t *)buf)[i];
  case ncclFloat16: return half_to_float(((const uint16_t *)buf)[i]);
  case ncclFloat32: return ((const float *)buf)[i];
  case ncclFloat64: return ((const double *)buf)[i];
  case ncclBfloat16: return bf16_to_float(((const uint16_t *)buf)[i]);
  default: return NAN;
  }
}

void npkit_test_store(void *buf, int datatype, size_t i, double v) {
  switch (datatype) {
  case ncclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
  case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  case ncclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
  case ncclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
  case ncclFloat16: ((uint16_t *)buf)[i] = float_to_half((float)v); break;
  case ncclFloat32: ((float *)buf)[i] = (float)v; break;
  case ncclFloat64: ((double *)buf)[i] = v; break;
  case ncclBfloat16: ((uint16_t *)buf)[i] = float_to_bf16((float)v); break;
  default: break;
  }
}

double npkit_test_quantize(int datatype, double value) {
  unsigned char tmp[8];
  npkit_test_store(tmp, datatype, 0, value);
  return npkit_test_load(tmp, datatype, 0);
}

uint64_t npkit_test_fnv1a(const void *buf, size_t n, uint64_t h) {
  const unsigned char *p = buf;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
