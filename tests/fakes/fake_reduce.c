/* Datatypes and element-wise arithmetic.
 *
 * Integers wrap (computed in the unsigned type, so overflow is defined).  float16 and bfloat16 are
 * computed in float and rounded back to the type after every step, as a GPU reducing in that type
 * would; conversions round to nearest even.  The fp8 types can be moved but not reduced. */
#include "fake_internal.h"

#include <string.h>

#define BLOCK 256 /* elements accumulated on the stack at a time */

size_t npkit_fake_type_size(ncclDataType_t dt) {
  switch (dt) {
  case ncclInt8:
  case ncclUint8:
  case ncclFloat8e4m3:
  case ncclFloat8e5m2:
    return 1;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32:
    return 4;
  case ncclInt64:
  case ncclUint64:
  case ncclFloat64:
    return 8;
  default:
    return 0;
  }
}

bool npkit_fake_type_reducible(ncclDataType_t dt) {
  return npkit_fake_type_size(dt) != 0 && dt != ncclFloat8e4m3 && dt != ncclFloat8e5m2;
}

uint16_t npkit_fake_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return (uint16_t)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
  uint32_t h, rem, halfway;
  if (a >= 0x38800000u) { /* normal half: rebias the exponent, drop 13 mantissa bits */
    uint32_t r = a - (112u << 23);
    h = r >> 13;
    rem = r & 0x1fffu;
    halfway = 0x1000u;
  } else { /* subnormal half: count units of 2^-24 */
    uint32_t e = a >> 23;
    if (e < 102) return sign; /* below 2^-25 */
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* 14 .. 24 */
    h = mant >> shift;
    rem = mant & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1u);
  }
  if (rem > halfway || (rem == halfway && (h & 1u))) h++; /* a carry correctly bumps the exponent */
  return (uint16_t)(sign | h);
}

float npkit_fake_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0) {
    float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
    return sign ? -v : v;
  }
  if (e == 31)
    x = sign | 0x7f800000u | (m << 13);
  else
    x = sign | ((e + 112u) << 23) | (m << 13);
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

uint16_t npkit_fake_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

float npkit_fake_bf16_to_float(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* Integer reduction: T is the type, U its unsigned twin used for wrapping arithmetic. */
#define INT_REDUCE(NAME, T, U)                                                                   \
  static void NAME(void *outv, const void *const *in, int nin, size_t count, int op) {            \
    T acc[BLOCK];                                                                                 \
    for (size_t b = 0; b < count; b += BLOCK) {                                                   \
      size_t m = count - b < BLOCK ? count - b : BLOCK;                                           \
      memcpy(acc, (const T *)in[0] + b, m * sizeof(T));                                           \
      for (int r = 1; r < nin; r++) {                                                             \
        const T *x = (const T *)in[r] + b;                                                        \
        switch (op) {                                                                             \
        case NPKIT_FAKE_SUM:                                                                      \
          for (size_t i = 0; i < m; i++) acc[i] = (T)(U)((U)acc[i] + (U)x[i]);                     \
          break;                                                                                  \
        case NPKIT_FAKE_PROD:                                                                     \
          for (size_t i = 0; i < m; i++) acc[i] = (T)(U)((U)acc[i] * (U)x[i]);                     \
          break;                                                                                  \
        case NPKIT_FAKE_MAX:                                                                      \
          for (size_t i = 0; i < m; i++) acc[i] = x[i] > acc[i] ? x[i] : acc[i];                  \
          break;                                                                                  \
        default:                                                                                  \
          for (size_t i = 0; i < m; i++) acc[i] = x[i] < acc[i] ? x[i] : acc[i];                  \
          break;                                                                                  \
        }                                                                                         \
      }                                                                                           \
      memcpy((T *)outv + b, acc, m * sizeof(T));                                                  \
    }                                                                                             \
  }

/* 8-bit products are promoted to int: widen to unsigned int first so nothing can overflow. */
INT_REDUCE(reduce_i8, int8_t, unsigned int)
INT_REDUCE(reduce_u8, uint8_t, unsigned int)
INT_REDUCE(reduce_i32, int32_t, uint32_t)
INT_REDUCE(reduce_u32, uint32_t, uint32_t)
INT_REDUCE(reduce_i64, int64_t, uint64_t)
INT_REDUCE(reduce_u64, uint64_t, uint64_t)

/* Floating reduction: T is the storage type, LOAD/STORE convert to and from float (or identity). */
#define FLOAT_REDUCE(NAME, T, A, LOAD, STORE)                                                     \
  static void NAME(void *outv, const void *const *in, int nin, size_t count, int op) {            \
    A acc[BLOCK];                                                                                 \
    for (size_t b = 0; b < count; b += BLOCK) {                                                   \
      size_t m = count - b < BLOCK ? count - b : BLOCK;                                           \
      const T *x0 = (const T *)in[0] + b;                                                         \
      for (size_t i = 0; i < m; i++) acc[i] = LOAD(x0[i]);                                        \
      for (int r = 1; r < nin; r++) {                                                             \
        const T *x = (const T *)in[r] + b;                                                        \
        for (size_t i = 0; i < m; i++) {                                                          \
          A v = LOAD(x[i]), s;                                                                    \
          switch (op) {                                                                           \
          case NPKIT_FAKE_SUM: s = acc[i] + v; break;                                             \
          case NPKIT_FAKE_PROD: s = acc[i] * v; break;                                            \
          case NPKIT_FAKE_MAX: s = v > acc[i] ? v : acc[i]; break;                                \
          default: s = v < acc[i] ? v : acc[i]; break;                                            \
          }                                                                                       \
          acc[i] = LOAD(STORE(s)); /* round to the type after every step */                      \
        }                                                                                         \
      }                                                                                           \
      T *out = (T *)outv + b;                                                                     \
      for (size_t i = 0; i < m; i++) out[i] = STORE(acc[i]);                                      \
    }                                                                                             \
  }

#define SAME(v) (v)
FLOAT_REDUCE(reduce_f32, float, float, SAME, SAME)
FLOAT_REDUCE(reduce_f64, double, double, SAME, SAME)
FLOAT_REDUCE(reduce_f16, uint16_t, float, npkit_fake_half_to_float, npkit_fake_float_to_half)
FLOAT_REDUCE(reduce_bf16, uint16_t, float, npkit_fake_bf16_to_float, npkit_fake_float_to_bf16)

void npkit_fake_reduce(void *out, const void *const *in, int nin, size_t count, ncclDataType_t dt,
                       int op) {
  switch (dt) {
  case ncclInt8: reduce_i8(out, in, nin, count, op); break;
  case ncclUint8: reduce_u8(out, in, nin, count, op); break;
  case ncclInt32: reduce_i32(out, in, nin, count, op); break;
  case ncclUint32: reduce_u32(out, in, nin, count, op); break;
  case ncclInt64: reduce_i64(out, in, nin, count, op); break;
  case ncclUint64: reduce_u64(out, in, nin, count, op); break;
  case ncclFloat16: reduce_f16(out, in, nin, count, op); break;
  case ncclFloat32: reduce_f32(out, in, nin, count, op); break;
  case ncclFloat64: reduce_f64(out, in, nin, count, op); break;
  case ncclBfloat16: reduce_bf16(out, in, nin, count, op); break;
  default: break; /* rejected by the argument checks */
  }
}

#define INT_PREMUL(T, U)                                                                          \
  do {                                                                                            \
    T s;                                                                                          \
    memcpy(&s, scalar, sizeof s);                                                                 \
    const T *x = src;                                                                             \
    T *y = dst;                                                                                   \
    for (size_t i = 0; i < count; i++) y[i] = (T)(U)((U)x[i] * (U)s);                             \
  } while (0)

#define FLOAT_PREMUL(T, A, LOAD, STORE)                                                           \
  do {                                                                                            \
    T s;                                                                                          \
    memcpy(&s, scalar, sizeof s);                                                                 \
    A sv = LOAD(s);                                                                               \
    const T *x = src;                                                                             \
    T *y = dst;                                                                                   \
    for (size_t i = 0; i < count; i++) y[i] = STORE(LOAD(x[i]) * sv);                             \
  } while (0)

void npkit_fake_premul(void *dst, const void *src, size_t count, ncclDataType_t dt,
                       const void *scalar) {
  switch (dt) {
  case ncclInt8: INT_PREMUL(int8_t, unsigned int); break;
  case ncclUint8: INT_PREMUL(uint8_t, unsigned int); break;
  case ncclInt32: INT_PREMUL(int32_t, uint32_t); break;
  case ncclUint32: INT_PREMUL(uint32_t, uint32_t); break;
  case ncclInt64: INT_PREMUL(int64_t, uint64_t); break;
  case ncclUint64: INT_PREMUL(uint64_t, uint64_t); break;
  case ncclFloat16: FLOAT_PREMUL(uint16_t, float, npkit_fake_half_to_float, npkit_fake_float_to_half); break;
  case ncclFloat32: FLOAT_PREMUL(float, float, SAME, SAME); break;
  case ncclFloat64: FLOAT_PREMUL(double, double, SAME, SAME); break;
  case ncclBfloat16: FLOAT_PREMUL(uint16_t, float, npkit_fake_bf16_to_float, npkit_fake_float_to_bf16); break;
  default: break;
  }
}

#define INT_DIVIDE(T)                                                                             \
  do {                                                                                            \
    T *y = buf;                                                                                   \
    for (size_t i = 0; i < count; i++) y[i] = (T)(y[i] / (T)n);                                   \
  } while (0)

void npkit_fake_divide(void *buf, size_t count, ncclDataType_t dt, int n) {
  switch (dt) {
  case ncclInt8: INT_DIVIDE(int8_t); break;
  case ncclUint8: INT_DIVIDE(uint8_t); break;
  case ncclInt32: INT_DIVIDE(int32_t); break;
  case ncclUint32: INT_DIVIDE(uint32_t); break;
  case ncclInt64: INT_DIVIDE(int64_t); break;
  case ncclUint64: INT_DIVIDE(uint64_t); break;
  default: break;
  }
}

void npkit_fake_scalar_from_double(ncclDataType_t dt, double v, void *out) {
  switch (dt) {
  case ncclFloat16: {
    uint16_t h = npkit_fake_float_to_half((float)v);
    memcpy(out, &h, sizeof h);
    break;
  }
  case ncclBfloat16: {
    uint16_t h = npkit_fake_float_to_bf16((float)v);
    memcpy(out, &h, sizeof h);
    break;
  }
  case ncclFloat32: {
    float f = (float)v;
    memcpy(out, &f, sizeof f);
    break;
  }
  case ncclFloat64: memcpy(out, &v, sizeof v); break;
  default: break;
  }
}
