/* Self-test of the fake libnccl.so.2.
 *
 *   mpirun -np 4 fake_nccl_selftest           every call between processes and between threads
 *   FAKE_NCCL_NOOP=1 mpirun -np 2 ... --noop  data calls only check their arguments
 *   FAKE_NCCL_TIMEOUT_S=0.5 ... --timeout     a missing rank gives a clear error, not a hang
 *
 * Expected results are computed here from first principles: every input element is a function of
 * (rank, index, salt), small enough to be exact in every datatype, so each rank knows what every
 * other rank contributed and what each result must be.  float16/bfloat16 values are encoded and
 * decoded by this file's own code, not the library's.  ncclAvg on floating types is checked only
 * when the number of ranks is a power of two (1/nranks is then exact). */
#include <math.h>
#include <mpi.h>
#include <nccl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SELFTEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SELFTEST_ASAN 1
#endif
#endif
#ifdef SELFTEST_ASAN
#include <sanitizer/lsan_interface.h>
/* Open MPI leaks (from components it unloads, so they cannot be suppressed by name): its calls
 * are kept out of the leak check, which then only sees this test and the library. */
#define MPI_QUIET(call) (__lsan_disable(), (call), __lsan_enable())
/* The same for what Open MPI's progress thread allocates; Open MPI has no frame pointers, so
 * the slow unwinder is needed to see that thread's frames. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:event_base_loop\n"; }
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }
#else
#define MPI_QUIET(call) (call)
#endif

static int g_rank, g_size;
static _Atomic int g_fail, g_checks;

static void failf(int line, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "FAIL rank %d line %d: %s\n", g_rank, line, msg);
  atomic_fetch_add(&g_fail, 1);
}

#define CHECK(cond, ...)                                                                          \
  do {                                                                                            \
    atomic_fetch_add(&g_checks, 1);                                                               \
    if (!(cond)) failf(__LINE__, __VA_ARGS__);                                                    \
  } while (0)

#define NCCL_OK(call)                                                                             \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    CHECK(r_ == ncclSuccess, "%s returned %d: %s", #call, (int)r_, ncclGetLastError(NULL));       \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    abort();
  }
  return p;
}

/* The library's time model: latency + size * bus factor / bandwidth. */
static double env_or(const char *name, double def) {
  const char *s = getenv(name);
  return s && *s ? atof(s) : def;
}

static double model_seconds(double bytes, double bus_factor) {
  return env_or("FAKE_NCCL_LAT_US", 8) * 1e-6 +
         bytes * bus_factor / (env_or("FAKE_NCCL_BW_GBPS", 20) * 1e9);
}

/* ------------------------------------------------------------------ typed values */

static const ncclDataType_t all_types[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,
                                           ncclInt64,   ncclUint64,  ncclFloat16, ncclFloat32,
                                           ncclFloat64, ncclBfloat16};
#define NTYPES (sizeof all_types / sizeof all_types[0])

static size_t tsize(ncclDataType_t dt) {
  switch (dt) {
  case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  default: return 8;
  }
}

static int is_float(ncclDataType_t dt) { return dt >= ncclFloat16 && dt <= ncclBfloat16; }
static int is_unsigned(ncclDataType_t dt) {
  return dt == ncclUint8 || dt == ncclUint32 || dt == ncclUint64;
}

/* 16-bit floats with `mbits` mantissa bits and exponent bias `bias`; only exact values. */
static uint16_t enc16(double v, int mbits, int bias) {
  if (v == 0) return signbit(v) ? 0x8000 : 0;
  int e;
  double m = frexp(fabs(v), &e); /* |v| = m * 2^e, m in [0.5, 1) */
  unsigned f = (unsigned)((2 * m - 1) * (1 << mbits));
  return (uint16_t)((unsigned)(v < 0) << 15 | (unsigned)(e - 1 + bias) << mbits | f);
}

static double dec16(uint16_t h, int mbits, int bias) {
  int e = (h >> mbits) & ((1 << (15 - mbits)) - 1), f = h & ((1 << mbits) - 1);
  double v = e == 0 ? ldexp(f, 1 - bias - mbits) : ldexp((1 << mbits) + f, e - bias - mbits);
  return (h >> 15) ? -v : v;
}

static void put(void *buf, size_t i, ncclDataType_t dt, double v) {
  switch (dt) {
  case ncclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
  case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  case ncclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
  case ncclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
  case ncclFloat16: ((uint16_t *)buf)[i] = enc16(v, 10, 15); break;
  case ncclFloat32: ((float *)buf)[i] = (float)v; break;
  case ncclFloat64: ((double *)buf)[i] = v; break;
  case ncclBfloat16: ((uint16_t *)buf)[i] = enc16(v, 7, 127); break;
  default: break;
  }
}

static double get(const void *buf, size_t i, ncclDataType_t dt) {
  switch (dt) {
  case ncclInt8: return ((const int8_t *)buf)[i];
  case ncclUint8: return ((const uint8_t *)buf)[i];
  case ncclInt32: return ((const int32_t *)buf)[i];
  case ncclUint32: return ((const uint32_t *)buf)[i];
  case ncclInt64: return (double)((const int64_t *)buf)[i];
  case ncclUint64: return (double)((const uint64_t *)buf)[i];
  case ncclFloat16: return dec16(((const uint16_t *)buf)[i], 10, 15);
  case ncclFloat32: return ((const float *)buf)[i];
  case ncclFloat64: return ((const double *)buf)[i];
  case ncclBfloat16: return dec16(((const uint16_t *)buf)[i], 7, 127);
  default: return NAN;
  }
}

/* What rank r contributes at index i: small integers, exact in every type and for every result. */
static double gen(int r, size_t i, int salt, ncclRedOp_t op, ncclDataType_t dt) {
  unsigned h = (unsigned)r * 7u + (unsigned)(i % 100003) * 13u + (unsigned)salt * 5u;
  if (op == ncclProd) return 1 + h % 2; /* products are powers of two: exact in every float type */
  if (is_unsigned(dt)) return h % 16;
  return (double)(h % 16) - 8;
}

static void fill(void *buf, size_t count, int r, int salt, ncclRedOp_t op, ncclDataType_t dt) {
  for (size_t i = 0; i < count; i++) put(buf, i, dt, gen(r, i, salt, op, dt));
}

/* Integers wrap around in their type (products of many ranks overflow 8 bits). */
static double wrap(ncclDataType_t dt, double v) {
  uint64_t u = (uint64_t)(int64_t)v;
  switch (dt) {
  case ncclInt8: return (int8_t)(uint8_t)u;
  case ncclUint8: return (uint8_t)u;
  case ncclInt32: return (int32_t)(uint32_t)u;
  case ncclUint32: return (uint32_t)u;
  default: return v;
  }
}

/* The result of reducing every rank's gen() at index i; scal: per-rank PreMulSum scalars. */
static double expect_red(int n, size_t i, int salt, ncclRedOp_t op, ncclDataType_t dt,
                         const double *scal) {
  ncclRedOp_t g = scal ? ncclSum : op;
  double acc = gen(0, i, salt, g, dt) * (scal ? scal[0] : 1);
  for (int r = 1; r < n; r++) {
    double v = gen(r, i, salt, g, dt) * (scal ? scal[r] : 1);
    if (op == ncclProd) acc *= v;
    else if (op == ncclMax) acc = v > acc ? v : acc;
    else if (op == ncclMin) acc = v < acc ? v : acc;
    else acc += v;
  }
  if (op == ncclAvg) acc = is_float(dt) ? acc / n : (double)((int64_t)acc / n);
  return wrap(dt, acc);
}

/* Checks out[0..count) against expect_red from index `first`; reports the first difference. */
static void check_red(const char *what, const void *out, size_t count, size_t first, int salt,
                      ncclRedOp_t op, ncclDataType_t dt, const double *scal, int line) {
  atomic_fetch_add(&g_checks, 1);
  for (size_t i = 0; i < count; i++) {
    double want = expect_red(g_size, first + i, salt, op, dt, scal), got = get(out, i, dt);
    if (got != want) {
      failf(line, "%s type %d op %d count %zu: element %zu is %g, expected %g", what, (int)dt,
            (int)op, count, first + i, got, want);
      return;
    }
  }
}

/* Byte patterns for the calls that only move data. */
static unsigned char pat(int r, size_t j, int salt) {
  return (unsigned char)((unsigned)r * 31u + (unsigned)(j % 65521) * 7u + (unsigned)salt * 3u + 1u);
}

static void pfill(void *buf, size_t n, int r, size_t off, int salt) {
  for (size_t j = 0; j < n; j++) ((unsigned char *)buf)[j] = pat(r, off + j, salt);
}

static void pcheck(const char *what, const void *buf, size_t n, int r, size_t off, int salt,
                   int line) {
  atomic_fetch_add(&g_checks, 1);
  for (size_t j = 0; j < n; j++)
    if (((const unsigned char *)buf)[j] != pat(r, off + j, salt)) {
      failf(line, "%s: byte %zu of %zu (from rank %d) is %u, expected %u", what, j, n, r,
            ((const unsigned char *)buf)[j], pat(r, off + j, salt));
      return;
    }
}

/* ------------------------------------------------------------------ collectives */

static void test_allreduce(ncclComm_t comm) {
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  const int pow2 = (g_size & (g_size - 1)) == 0;
  int salt = 0;
  for (size_t t = 0; t < NTYPES; t++) {
    ncclDataType_t dt = all_types[t];
    size_t es = tsize(dt);
    for (size_t o = 0; o < 5; o++) {
      if (ops[o] == ncclAvg && is_float(dt) && !pow2) continue;
      const size_t counts[] = {1, 7, 1003};
      for (size_t c = 0; c < 3; c++) {
        for (int inplace = 0; inplace < 2; inplace++) {
          size_t n = counts[c];
          salt++;
          void *send = xmalloc(n * es), *recv = xmalloc(n * es);
          fill(send, n, g_rank, salt, ops[o], dt);
          memset(recv, 0xee, n * es);
          void *out = inplace ? send : recv;
          NCCL_OK(ncclAllReduce(send, out, n, dt, ops[o], comm, NULL));
          check_red(inplace ? "AllReduce in place" : "AllReduce", out, n, 0, salt, ops[o], dt,
                    NULL, __LINE__);
          free(send);
          free(recv);
        }
      }
    }
  }
  /* Large: several MB, each slice passing through the rings many times. */
  const struct { size_t n; ncclDataType_t dt; ncclRedOp_t op; int inplace; } big[] = {
      {1 << 20, ncclFloat32, ncclSum, 0}, {1 << 20, ncclInt64, ncclMax, 1},
      {3 << 20, ncclInt8, ncclSum, 0},    {(1 << 20) + 3, ncclBfloat16, ncclSum, 1}};
  for (size_t b = 0; b < sizeof big / sizeof big[0]; b++) {
    size_t n = big[b].n, es = tsize(big[b].dt);
    void *send = xmalloc(n * es), *recv = xmalloc(n * es);
    fill(send, n, g_rank, 77, big[b].op, big[b].dt);
    void *out = big[b].inplace ? send : recv;
    NCCL_OK(ncclAllReduce(send, out, n, big[b].dt, big[b].op, comm, NULL));
    check_red("large AllReduce", out, n, 0, 77, big[b].op, big[b].dt, NULL, __LINE__);
    free(send);
    free(recv);
  }
  /* Integers wrap around, as on a GPU. */
  int8_t s8 = 100, r8 = 0;
  uint8_t su8 = 200, ru8 = 0;
  NCCL_OK(ncclAllReduce(&s8, &r8, 1, ncclInt8, ncclSum, comm, NULL));
  NCCL_OK(ncclAllReduce(&su8, &ru8, 1, ncclUint8, ncclSum, comm, NULL));
  CHECK(r8 == (int8_t)(uint8_t)(100 * g_size), "int8 sum wrapped to %d", r8);
  CHECK(ru8 == (uint8_t)(200 * g_size), "uint8 sum wrapped to %u", ru8);
}

static void test_broadcast(ncclComm_t comm) {
  const size_t sizes[] = {1, 1003, 3 << 19};
  for (int root = 0; root < g_size; root += g_size > 1 ? g_size - 1 : 1) {
    for (size_t s = 0; s < 3; s++) {
      size_t n = sizes[s];
      int salt = root * 10 + (int)s;
      unsigned char *send = xmalloc(n), *recv = xmalloc(n);
      pfill(send, n, g_rank, 0, salt);
      memset(recv, 0, n);
      NCCL_OK(ncclBroadcast(send, recv, n, ncclUint8, root, comm, NULL));
      pcheck("Broadcast", recv, n, root, 0, salt, __LINE__);
      /* in place, as int32 */
      size_t words = (n + 3) / 4;
      unsigned char *buf = xmalloc(words * 4);
      pfill(buf, words * 4, g_rank, 0, salt + 1);
      NCCL_OK(ncclBroadcast(buf, buf, words, ncclInt32, root, comm, NULL));
      pcheck("Broadcast in place", buf, words * 4, root, 0, salt + 1, __LINE__);
      /* ncclBcast, as float16 */
      size_t halves = (n + 1) / 2;
      unsigned char *b2 = xmalloc(halves * 2);
      pfill(b2, halves * 2, g_rank, 0, salt + 2);
      NCCL_OK(ncclBcast(b2, halves, ncclFloat16, root, comm, NULL));
      pcheck("Bcast", b2, halves * 2, root, 0, salt + 2, __LINE__);
      free(send);
      free(recv);
      free(buf);
      free(b2);
    }
  }
}

static void test_reduce(ncclComm_t comm) {
  const struct { ncclDataType_t dt; ncclRedOp_t op; size_t n; } cases[] = {
      {ncclInt32, ncclSum, 1003},     {ncclFloat32, ncclMax, 1}, {ncclBfloat16, ncclProd, 1003},
      {ncclUint64, ncclMin, 300000}, {ncclFloat16, ncclAvg, 1003}, {ncclFloat64, ncclSum, 300000}};
  const int pow2 = (g_size & (g_size - 1)) == 0;
  int salt = 500;
  for (int root = 0; root < g_size; root += g_size > 2 ? 2 : 1) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      if (cases[c].op == ncclAvg && !pow2) continue;
      for (int inplace = 0; inplace < 2; inplace++) {
        ncclDataType_t dt = cases[c].dt;
        size_t n = cases[c].n, es = tsize(dt);
        salt++;
        unsigned char *send = xmalloc(n * es), *recv = xmalloc(n * es);
        fill(send, n, g_rank, salt, cases[c].op, dt);
        memset(recv, 0xab, n * es);
        void *out = inplace ? (void *)send : recv;
        NCCL_OK(ncclReduce(send, out, n, dt, cases[c].op, root, comm, NULL));
        if (g_rank == root) {
          check_red(inplace ? "Reduce in place" : "Reduce", out, n, 0, salt, cases[c].op, dt,
                    NULL, __LINE__);
        } else if (!inplace) {
          size_t j = 0;
          while (j < n * es && recv[j] == 0xab) j++;
          CHECK(j == n * es, "Reduce wrote the receive buffer of non-root rank %d", g_rank);
        }
        free(send);
        free(recv);
      }
    }
  }
}

static void test_allgather(ncclComm_t comm) {
  const size_t sizes[] = {1, 1003, 1 << 20};
  for (size_t s = 0; s < 3; s++) {
    size_t n = sizes[s];
    int salt = 600 + (int)s;
    unsigned char *send = xmalloc(n), *recv = xmalloc(n * (size_t)g_size);
    pfill(send, n, g_rank, 0, salt);
    memset(recv, 0, n * (size_t)g_size);
    NCCL_OK(ncclAllGather(send, recv, n, ncclInt8, comm, NULL));
    for (int r = 0; r < g_size; r++)
      pcheck("AllGather", recv + (size_t)r * n, n, r, 0, salt, __LINE__);
    /* in place: sendbuff is this rank's block of recvbuff */
    memset(recv, 0, n * (size_t)g_size);
    pfill(recv + (size_t)g_rank * n, n, g_rank, 0, salt + 10);
    NCCL_OK(ncclAllGather(recv + (size_t)g_rank * n, recv, n, ncclUint8, comm, NULL));
    for (int r = 0; r < g_size; r++)
      pcheck("AllGather in place", recv + (size_t)r * n, n, r, 0, salt + 10, __LINE__);
    free(send);
    free(recv);
  }
}

static void test_reducescatter(ncclComm_t comm) {
  const struct { ncclDataType_t dt; ncclRedOp_t op; size_t n; } cases[] = {
      {ncclFloat32, ncclSum, 1}, {ncclInt32, ncclMin, 1003}, {ncclFloat16, ncclSum, 1003},
      {ncclInt64, ncclAvg, 1003}, {ncclFloat32, ncclSum, 1 << 18}};
  int salt = 700;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    for (int inplace = 0; inplace < 2; inplace++) {
      ncclDataType_t dt = cases[c].dt;
      size_t n = cases[c].n, es = tsize(dt), total = n * (size_t)g_size;
      salt++;
      unsigned char *send = xmalloc(total * es), *recv = xmalloc(n * es);
      fill(send, total, g_rank, salt, cases[c].op, dt);
      void *out = inplace ? send + (size_t)g_rank * n * es : recv;
      NCCL_OK(ncclReduceScatter(send, out, n, dt, cases[c].op, comm, NULL));
      check_red(inplace ? "ReduceScatter in place" : "ReduceScatter", out, n,
                (size_t)g_rank * n, salt, cases[c].op, dt, NULL, __LINE__);
      free(send);
      free(recv);
    }
  }
}

static void test_alltoall_gather_scatter(ncclComm_t comm) {
  const size_t sizes[] = {1, 1003, 1 << 18};
  for (size_t s = 0; s < 3; s++) {
    size_t n = sizes[s], total = n * (size_t)g_size;
    int salt = 800 + (int)s * 10;
    unsigned char *send = xmalloc(total), *recv = xmalloc(total);
    /* AlltoAll: block p of rank r goes to rank p */
    pfill(send, total, g_rank, 0, salt);
    memset(recv, 0, total);
    NCCL_OK(ncclAlltoAll(send, recv, n, ncclUint8, comm, NULL));
    for (int r = 0; r < g_size; r++)
      pcheck("AlltoAll", recv + (size_t)r * n, n, r, (size_t)g_rank * n, salt, __LINE__);
    pfill(send, total, g_rank, 0, salt + 1);
    NCCL_OK(ncclAlltoAll(send, send, n, ncclInt8, comm, NULL));
    for (int r = 0; r < g_size; r++)
      pcheck("AlltoAll in place", send + (size_t)r * n, n, r, (size_t)g_rank * n, salt + 1,
             __LINE__);
    for (int root = 0; root < g_size; root += g_size > 1 ? g_size - 1 : 1) {
      /* Gather, then in place (the root's block of recvbuff is its sendbuff) */
      pfill(send, n, g_rank, 0, salt + 2);
      memset(recv, 0, total);
      NCCL_OK(ncclGather(send, recv, n, ncclUint8, root, comm, NULL));
      if (g_rank == root)
        for (int r = 0; r < g_size; r++)
          pcheck("Gather", recv + (size_t)r * n, n, r, 0, salt + 2, __LINE__);
      memset(recv, 0, total);
      pfill(recv + (size_t)g_rank * n, n, g_rank, 0, salt + 3);
      NCCL_OK(ncclGather(recv + (size_t)g_rank * n, recv, n, ncclUint8, root, comm, NULL));
      if (g_rank == root)
        for (int r = 0; r < g_size; r++)
          pcheck("Gather in place", recv + (size_t)r * n, n, r, 0, salt + 3, __LINE__);
      /* Scatter: rank p receives block p of the root */
      pfill(send, total, g_rank, 0, salt + 4);
      memset(recv, 0, total);
      NCCL_OK(ncclScatter(send, recv, n, ncclUint8, root, comm, NULL));
      pcheck("Scatter", recv, n, root, (size_t)g_rank * n, salt + 4, __LINE__);
      pfill(send, total, g_rank, 0, salt + 5);
      NCCL_OK(ncclScatter(send, send + (size_t)g_rank * n, n, ncclUint8, root, comm, NULL));
      pcheck("Scatter in place", send + (size_t)g_rank * n, n, root, (size_t)g_rank * n,
             salt + 5, __LINE__);
    }
    free(send);
    free(recv);
  }
}

/* ------------------------------------------------------------------ send/recv and groups */

/* Size of message k from rank a to rank b: varied, some larger than a ring. */
static size_t p2p_len(int a, int b, int k) {
  static const size_t lens[] = {1, 4096, 333333, 17, 700001};
  return lens[(size_t)(a * 3 + b * 5 + k) % 5];
}

static void test_p2p(ncclComm_t comm) {
  /* Every rank sends 3 messages to every rank (itself included) and receives 3 from each, all
   * in one group, both directions at once. */
  enum { K = 3, MAXR = 64 };
  unsigned char *sbuf[MAXR][K], *rbuf[MAXR][K];
  int n = g_size < MAXR ? g_size : MAXR;
  NCCL_OK(ncclGroupStart());
  for (int p = 0; p < n; p++)
    for (int k = 0; k < K; k++) {
      size_t ls = p2p_len(g_rank, p, k), lr = p2p_len(p, g_rank, k);
      sbuf[p][k] = xmalloc(ls);
      rbuf[p][k] = xmalloc(lr);
      pfill(sbuf[p][k], ls, g_rank, (size_t)p * 1000 + (size_t)k, 900);
      memset(rbuf[p][k], 0, lr);
      NCCL_OK(ncclSend(sbuf[p][k], ls, ncclUint8, p, comm, NULL));
      NCCL_OK(ncclRecv(rbuf[p][k], lr, ncclUint8, p, comm, NULL));
    }
  NCCL_OK(ncclGroupEnd());
  for (int p = 0; p < n; p++)
    for (int k = 0; k < K; k++) {
      pcheck("grouped Send/Recv", rbuf[p][k], p2p_len(p, g_rank, k), p,
             (size_t)g_rank * 1000 + (size_t)k, 900, __LINE__);
      free(sbuf[p][k]);
      free(rbuf[p][k]);
    }

  /* Outside a group: pairs exchange in opposite orders, matched per peer. */
  if (g_size >= 2 && !(g_size % 2 == 1 && g_rank == g_size - 1)) {
    int peer = g_rank ^ 1;
    size_t len = 100000;
    unsigned char *s = xmalloc(len), *r = xmalloc(len);
    pfill(s, len, g_rank, 0, 901);
    if (g_rank % 2 == 0) {
      NCCL_OK(ncclSend(s, len / 4, ncclFloat32, peer, comm, NULL));
      NCCL_OK(ncclRecv(r, len / 4, ncclFloat32, peer, comm, NULL));
    } else {
      NCCL_OK(ncclRecv(r, len / 4, ncclFloat32, peer, comm, NULL));
      NCCL_OK(ncclSend(s, len / 4, ncclFloat32, peer, comm, NULL));
    }
    pcheck("Send/Recv", r, len, peer, 0, 901, __LINE__);
    free(s);
    free(r);
  }
}

/* Several collectives and point-to-point calls in one group, and nested groups. */
static void test_group_mix(ncclComm_t comm) {
  size_t n = 50000;
  float *a = xmalloc(n * 4), *b = xmalloc(n * 4 * (size_t)g_size);
  unsigned char *c = xmalloc(n), *s = xmalloc(n), *r = xmalloc(n);
  fill(a, n, g_rank, 950, ncclSum, ncclFloat32);
  float *a0 = xmalloc(n * 4);
  memcpy(a0, a, n * 4);
  pfill(c, n, g_rank, 0, 951);
  pfill(s, n, g_rank, 0, 952);
  int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(a, a, n, ncclFloat32, ncclSum, comm, NULL));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(s, n, ncclUint8, next, comm, NULL));
  NCCL_OK(ncclRecv(r, n, ncclUint8, prev, comm, NULL));
  NCCL_OK(ncclGroupEnd()); /* nested: nothing runs yet */
  NCCL_OK(ncclBroadcast(c, c, n, ncclUint8, g_size - 1, comm, NULL));
  NCCL_OK(ncclAllGather(a0, b, n, ncclFloat32, comm, NULL));
  NCCL_OK(ncclGroupEnd());
  check_red("grouped AllReduce", a, n, 0, 950, ncclSum, ncclFloat32, NULL, __LINE__);
  for (int q = 0; q < g_size; q++) {
    atomic_fetch_add(&g_checks, 1);
    for (size_t i = 0; i < n; i++)
      if (b[(size_t)q * n + i] != (float)gen(q, i, 950, ncclSum, ncclFloat32)) {
        failf(__LINE__, "grouped AllGather: block %d element %zu is %g", q, i, b[(size_t)q * n + i]);
        break;
      }
  }
  pcheck("grouped Broadcast", c, n, g_size - 1, 0, 951, __LINE__);
  pcheck("grouped ring Send/Recv", r, n, prev, 0, 952, __LINE__);
  free(a);
  free(a0);
  free(b);
  free(c);
  free(s);
  free(r);
}

/* ------------------------------------------------------------------ communicators */

static void test_split(ncclComm_t comm) {
  /* Two colors, keys reversing the order. */
  ncclComm_t sub = NULL;
  int color = g_rank % 2;
  NCCL_OK(ncclCommSplit(comm, color, -g_rank, &sub, NULL));
  CHECK(sub != NULL, "CommSplit gave no communicator");
  if (sub == NULL) return;
  int n = 0, me = -1, members = 0, below = 0;
  for (int r = 0; r < g_size; r++)
    if (r % 2 == color) {
      members++;
      below += r > g_rank; /* key -r: higher parent ranks come first */
    }
  NCCL_OK(ncclCommCount(sub, &n));
  NCCL_OK(ncclCommUserRank(sub, &me));
  CHECK(n == members && me == below, "split comm: rank %d of %d, expected %d of %d", me, n, below,
        members);
  int64_t v = g_rank + 1, sum = 0, want = 0;
  for (int r = color; r < g_size; r += 2) want += r + 1;
  NCCL_OK(ncclAllReduce(&v, &sum, 1, ncclInt64, ncclSum, sub, NULL));
  CHECK(sum == want, "AllReduce on the split comm gave %lld, expected %lld", (long long)sum,
        (long long)want);
  /* A large call on the child while the parent is idle. */
  size_t big = 1 << 19;
  float *x = xmalloc(big * 4);
  fill(x, big, me, 960, ncclMax, ncclFloat32);
  NCCL_OK(ncclAllReduce(x, x, big, ncclFloat32, ncclMax, sub, NULL));
  atomic_fetch_add(&g_checks, 1);
  for (size_t i = 0; i < big; i++) {
    double w = gen(0, i, 960, ncclMax, ncclFloat32);
    for (int r = 1; r < members; r++) w = fmax(w, gen(r, i, 960, ncclMax, ncclFloat32));
    if (x[i] != w) {
      failf(__LINE__, "split AllReduce max: element %zu is %g, expected %g", i, x[i], w);
      break;
    }
  }
  free(x);
  NCCL_OK(ncclCommDestroy(sub));

  /* NCCL_SPLIT_NOCOLOR: rank 0 gets no communicator, the others one of size - 1. */
  ncclComm_t rest = (ncclComm_t)&rest; /* must be overwritten */
  NCCL_OK(ncclCommSplit(comm, g_rank == 0 ? NCCL_SPLIT_NOCOLOR : 7, g_rank, &rest, NULL));
  if (g_rank == 0) {
    CHECK(rest == NULL, "NCCL_SPLIT_NOCOLOR gave a communicator");
  } else {
    CHECK(rest != NULL, "split without rank 0 gave no communicator");
    if (rest != NULL) {
      NCCL_OK(ncclCommCount(rest, &n));
      NCCL_OK(ncclCommUserRank(rest, &me));
      CHECK(n == g_size - 1 && me == g_rank - 1, "NOCOLOR split: rank %d of %d", me, n);
      int one = 1, total = 0;
      NCCL_OK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, rest, NULL));
      CHECK(total == g_size - 1, "AllReduce without rank 0 gave %d", total);
      NCCL_OK(ncclCommDestroy(rest));
    }
  }
}

static void test_shrink(ncclComm_t comm) {
  if (g_size < 2) return;
  int excluded = g_size - 1;
  ncclComm_t small = NULL;
  if (g_rank == excluded) return; /* an excluded rank does not take part */
  NCCL_OK(ncclCommShrink(comm, &excluded, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
  CHECK(small != NULL, "CommShrink gave no communicator");
  if (small == NULL) return;
  int n = 0, me = -1;
  NCCL_OK(ncclCommCount(small, &n));
  NCCL_OK(ncclCommUserRank(small, &me));
  CHECK(n == g_size - 1 && me == g_rank, "shrunk comm: rank %d of %d", me, n);
  int v = 1 << g_rank, all = 0;
  NCCL_OK(ncclAllReduce(&v, &all, 1, ncclInt32, ncclSum, small, NULL));
  CHECK(all == (1 << (g_size - 1)) - 1, "AllReduce on the shrunk comm gave %d", all);
  NCCL_OK(ncclCommDestroy(small));
}

/* The recovery path: revoke a communicator, then shrink it without the "failed" rank. */
static void test_revoke_shrink(ncclComm_t comm) {
  if (g_size < 2) return;
  ncclComm_t c = NULL;
  NCCL_OK(ncclCommSplit(comm, 0, g_rank, &c, NULL));
  if (c == NULL) return;
  NCCL_OK(ncclCommRevoke(c, NCCL_REVOKE_DEFAULT));
  int x = 1;
  CHECK(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, c, NULL) == ncclInvalidUsage,
        "a revoked communicator accepted a call");
  CHECK(ncclCommRevoke(c, 5) == ncclInvalidArgument, "bad revoke flags accepted");
  int gone = 0; /* rank 0 plays the failed rank */
  if (g_rank != gone) {
    ncclComm_t s = NULL;
    NCCL_OK(ncclCommShrink(c, &gone, 1, &s, NULL, NCCL_SHRINK_ABORT));
    int n = 0, me = -1, v = g_rank, sum = 0;
    if (s != NULL) {
      NCCL_OK(ncclCommCount(s, &n));
      NCCL_OK(ncclCommUserRank(s, &me));
      NCCL_OK(ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, s, NULL));
      NCCL_OK(ncclCommDestroy(s));
    }
    CHECK(n == g_size - 1 && me == g_rank - 1 && sum == g_size * (g_size - 1) / 2,
          "shrunk after revoke: rank %d of %d, sum %d", me, n, sum);
  }
  NCCL_OK(ncclCommAbort(c));
}

static void test_premulsum(ncclComm_t comm) {
  double scal[64];
  for (int r = 0; r < g_size && r < 64; r++) scal[r] = r + 1;
  /* int32, scalar copied at creation */
  int32_t si = g_rank + 1;
  ncclRedOp_t op;
  NCCL_OK(ncclRedOpCreatePreMulSum(&op, &si, ncclInt32, ncclScalarHostImmediate, comm));
  CHECK(op >= ncclNumOps, "PreMulSum op %d is a built-in id", (int)op);
  si = 1000; /* must not matter any more */
  size_t n = 1003;
  int32_t *a = xmalloc(n * 4), *b = xmalloc(n * 4);
  fill(a, n, g_rank, 970, ncclSum, ncclInt32);
  NCCL_OK(ncclAllReduce(a, b, n, ncclInt32, op, comm, NULL));
  check_red("PreMulSum int32", b, n, 0, 970, ncclSum, ncclInt32, scal, __LINE__);
  int32_t *big = xmalloc(n * 4 * (size_t)g_size);
  fill(big, n * (size_t)g_size, g_rank, 971, ncclSum, ncclInt32);
  NCCL_OK(ncclReduceScatter(big, b, n, ncclInt32, op, comm, NULL));
  check_red("PreMulSum ReduceScatter", b, n, (size_t)g_rank * n, 971, ncclSum, ncclInt32, scal,
            __LINE__);
  NCCL_OK(ncclRedOpDestroy(op, comm));
  CHECK(ncclAllReduce(a, b, n, ncclInt32, op, comm, NULL) == ncclInvalidArgument,
        "a destroyed operator was accepted");
  /* float, scalar read through the pointer when the call runs */
  float sf = 0;
  ncclRedOp_t opf;
  NCCL_OK(ncclRedOpCreatePreMulSum(&opf, &sf, ncclFloat32, ncclScalarDevice, comm));
  sf = 0.5f * (float)(g_rank + 1);
  for (int r = 0; r < g_size && r < 64; r++) scal[r] = 0.5 * (r + 1);
  float *f = xmalloc(n * 4);
  fill(f, n, g_rank, 972, ncclSum, ncclFloat32);
  NCCL_OK(ncclAllReduce(f, f, n, ncclFloat32, opf, comm, NULL));
  check_red("PreMulSum float (device scalar)", f, n, 0, 972, ncclSum, ncclFloat32, scal,
            __LINE__);
  CHECK(ncclAllReduce(a, b, n, ncclInt32, opf, comm, NULL) == ncclInvalidArgument,
        "a float PreMulSum was accepted for int32");
  NCCL_OK(ncclRedOpDestroy(opf, comm));
  CHECK(ncclRedOpDestroy(ncclSum, comm) == ncclInvalidArgument, "destroyed a built-in op");
  free(a);
  free(b);
  free(big);
  free(f);
}

/* Ranks that pass different counts get an error, not garbage or a hang. */
static void test_mismatch(void) {
  ncclUniqueId id;
  if (g_rank == 0) NCCL_OK(ncclGetUniqueId(&id));
  MPI_QUIET(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  ncclComm_t c = NULL;
  NCCL_OK(ncclCommInitRank(&c, g_size, id, g_rank));
  if (c == NULL || g_size < 2) {
    ncclCommDestroy(c);
    return;
  }
  float buf[40] = {0};
  double t0 = now();
  ncclResult_t r = ncclAllReduce(buf, buf, g_rank == 0 ? 10 : 20, ncclFloat32, ncclSum, c, NULL);
  /* Ranks that see the bad data say so; the others learn that a peer failed. */
  CHECK(r == ncclInvalidUsage || r == ncclRemoteError, "mismatched counts returned %d", (int)r);
  CHECK(now() - t0 < 10, "the mismatch took %.1f s to report", now() - t0);
  int saw = strstr(ncclGetLastError(NULL), "different counts") != NULL, seen = 0;
  MPI_QUIET(MPI_Allreduce(&saw, &seen, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(seen > 0, "no rank explained the mismatch; rank %d says: %s", g_rank,
        ncclGetLastError(NULL));
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(c, &async));
  CHECK(async != ncclSuccess, "the broken communicator reports no error");
  CHECK(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, c, NULL) != ncclSuccess,
        "a broken communicator accepted a call");
  NCCL_OK(ncclCommDestroy(c));

  /* Different operations: rank 0 broadcasts (and is done once its data is sent), the others
   * reduce and must not take the broadcast data for theirs. */
  if (g_rank == 0) NCCL_OK(ncclGetUniqueId(&id));
  MPI_QUIET(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  c = NULL;
  NCCL_OK(ncclCommInitRank(&c, g_size, id, g_rank));
  if (c == NULL) return;
  if (g_rank == 0) {
    NCCL_OK(ncclBroadcast(buf, buf, 8, ncclFloat32, 0, c, NULL));
  } else {
    r = ncclAllReduce(buf, buf, 8, ncclFloat32, ncclSum, c, NULL);
    CHECK(r == ncclInvalidUsage || r == ncclRemoteError, "different operations returned %d",
          (int)r);
  }
  saw = strstr(ncclGetLastError(NULL), "different operations") != NULL;
  MPI_QUIET(MPI_Allreduce(&saw, &seen, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(seen > 0, "no rank explained the different operations; rank %d says: %s", g_rank,
        ncclGetLastError(NULL));
  NCCL_OK(ncclCommDestroy(c));
}

static void test_errors(ncclComm_t comm) {
  float x[4] = {0};
  CHECK(ncclAllReduce(x, x, 1, ncclFloat32, ncclSum, NULL, NULL) == ncclInvalidArgument,
        "NULL comm accepted");
  CHECK(strstr(ncclGetLastError(NULL), "comm") != NULL, "last error: %s", ncclGetLastError(NULL));
  CHECK(ncclAllReduce(x, x, 1, ncclNumTypes, ncclSum, comm, NULL) == ncclInvalidArgument,
        "bad datatype accepted");
  CHECK(strstr(ncclGetLastError(NULL), "invalid type") != NULL, "last error: %s",
        ncclGetLastError(NULL));
  CHECK(ncclAllReduce(x, x, 1, ncclFloat32, (ncclRedOp_t)99, comm, NULL) == ncclInvalidArgument,
        "bad op accepted");
  CHECK(ncclAllReduce(x, x, 1, ncclFloat8e4m3, ncclSum, comm, NULL) == ncclInvalidArgument,
        "fp8 reduction accepted");
  CHECK(ncclBroadcast(x, x, 1, ncclFloat32, g_size, comm, NULL) == ncclInvalidArgument,
        "root out of range accepted");
  CHECK(ncclReduce(x, x, 1, ncclFloat32, ncclSum, -1, comm, NULL) == ncclInvalidArgument,
        "negative root accepted");
  CHECK(ncclSend(x, 1, ncclFloat32, g_size, comm, NULL) == ncclInvalidArgument,
        "peer out of range accepted");
  CHECK(ncclRecv(x, 1, ncclFloat32, -1, comm, NULL) == ncclInvalidArgument, "bad peer accepted");
  CHECK(ncclAllReduce(NULL, x, 1, ncclFloat32, ncclSum, comm, NULL) == ncclInvalidArgument,
        "NULL sendbuff accepted");
  CHECK(ncclGroupEnd() == ncclInvalidUsage, "ncclGroupEnd outside a group accepted");
  CHECK(ncclCommCount(comm, NULL) == ncclInvalidArgument, "NULL out pointer accepted");
  CHECK(ncclGetUniqueId(NULL) == ncclInvalidArgument, "NULL id accepted");
  ncclComm_t bad = NULL;
  ncclUniqueId zero;
  memset(&zero, 0, sizeof zero);
  CHECK(ncclCommInitRank(&bad, 2, zero, 0) == ncclInvalidArgument && bad == NULL,
        "a zero unique id accepted");
  CHECK(ncclCommInitRank(&bad, 2, zero, 2) == ncclInvalidArgument, "rank >= nranks accepted");
  ncclConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  CHECK(ncclCommSplit(comm, 0, 0, &bad, &cfg) == ncclInvalidArgument,
        "an uninitialized config accepted");
  /* fp8 can still be moved */
  unsigned char f8[8];
  pfill(f8, 8, g_rank, 0, 990);
  NCCL_OK(ncclBroadcast(f8, f8, 8, ncclFloat8e5m2, 0, comm, NULL));
  pcheck("fp8 Broadcast", f8, 8, 0, 0, 990, __LINE__);
  /* A failed call in a group fails the group: nothing of it runs, on any rank. */
  float keep = 5;
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(&keep, &keep, 1, ncclFloat32, ncclSum, comm, NULL));
  CHECK(ncclAllReduce(x, x, 1, ncclNumTypes, ncclSum, comm, NULL) == ncclInvalidArgument,
        "bad datatype accepted in a group");
  CHECK(ncclGroupEnd() == ncclInvalidArgument, "a group with a failed call succeeded");
  CHECK(keep == 5, "a call of a failed group ran");
  /* Strings and version */
  CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0, "error string of success");
  CHECK(strcmp(ncclGetErrorString(ncclRemoteError),
               "remote process exited or there was a network error") == 0,
        "error string of ncclRemoteError");
  CHECK(strcmp(ncclGetErrorString((ncclResult_t)42), "unknown result code") == 0,
        "error string of an unknown code");
  int v = 0;
  NCCL_OK(ncclGetVersion(&v));
  CHECK(v == NCCL_VERSION_CODE, "version %d", v);
  /* The communicator is still fine after all that. */
  int one = 1, n = 0;
  NCCL_OK(ncclAllReduce(&one, &n, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(n == g_size, "AllReduce after the errors gave %d", n);
}

static void test_misc(ncclComm_t comm) {
  int dev = -1;
  NCCL_OK(ncclCommCuDevice(comm, &dev));
  const char *env = getenv("FAKE_NCCL_DEVICE");
  int want = env ? atoi(env) : g_rank % 8;
  CHECK(dev == want, "device %d, expected %d", dev, want);
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async));
  CHECK(async == ncclSuccess, "async error %d", (int)async);

  void *mem = NULL;
  NCCL_OK(ncclMemAlloc(&mem, 10000));
  CHECK(mem != NULL && ((uintptr_t)mem & 4095) == 0, "ncclMemAlloc gave %p", mem);
  if (mem) memset(mem, 1, 10000);
  void *handle = NULL;
  NCCL_OK(ncclCommRegister(comm, mem, 10000, &handle));
  CHECK(handle != NULL, "no registration handle");
  NCCL_OK(ncclCommDeregister(comm, handle));
  int junk[8] = {0};
  CHECK(ncclCommDeregister(comm, junk) == ncclInvalidArgument, "a bogus handle was accepted");
  ncclWindow_t win = NULL;
  NCCL_OK(ncclCommWindowRegister(comm, mem, 8192, &win, NCCL_WIN_COLL_SYMMETRIC));
  CHECK(win != NULL, "no window");
  NCCL_OK(ncclCommWindowDeregister(comm, win));
  NCCL_OK(ncclMemFree(mem));

  /* GroupSimulateEnd estimates and runs nothing. */
  size_t n = 1 << 20;
  float *buf = xmalloc(n * 4);
  buf[0] = 42;
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, NULL));
  NCCL_OK(ncclGroupSimulateEnd(&sim));
  double us = model_seconds(n * 4.0, 2.0 * (g_size - 1) / g_size) * 1e6;
  CHECK(fabs(sim.estimatedTime - us) < 0.01 * us, "estimated %g us, expected %g",
        sim.estimatedTime, us);
  CHECK(buf[0] == 42, "GroupSimulateEnd ran the call");
  ncclSimInfo_t bad_sim = {0};
  CHECK(ncclGroupSimulateEnd(&bad_sim) == ncclInvalidArgument, "uninitialized simInfo accepted");
  free(buf);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit(); /* deprecated in nccl.h but exported */
#pragma GCC diagnostic pop
}

/* The call takes at least latency + size / bandwidth, and a late rank holds the others up. */
static void test_timing(ncclComm_t comm) {
  size_t n = 1 << 20;
  float *buf = xmalloc(n * 4);
  fill(buf, n, g_rank, 980, ncclSum, ncclFloat32);
  MPI_QUIET(MPI_Barrier(MPI_COMM_WORLD));
  double t0 = now();
  NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, NULL));
  double took = now() - t0, model = model_seconds(n * 4.0, 2.0 * (g_size - 1) / g_size);
  CHECK(took >= model * 0.999, "a 4 MB AllReduce took %.1f us, less than the simulated %.1f us",
        took * 1e6, model * 1e6);
  float one = 1, sum = 0;
  MPI_QUIET(MPI_Barrier(MPI_COMM_WORLD));
  if (g_rank == 0) sleep_s(0.05);
  t0 = now();
  NCCL_OK(ncclAllReduce(&one, &sum, 1, ncclFloat32, ncclSum, comm, NULL));
  double t1 = now(), late_start = t0;
  /* No rank finishes before the late one started (CLOCK_MONOTONIC is the host's: the ranks share
   * it).  Measured from each rank's own start this would also count how far apart the ranks left
   * the barrier, which a loaded machine stretches by milliseconds. */
  MPI_QUIET(MPI_Bcast(&late_start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  if (g_rank != 0)
    CHECK(t1 >= late_start, "AllReduce finished %.1f ms before the rank 50 ms late joined it",
          (late_start - t1) * 1e3);
  CHECK(sum == g_size, "late AllReduce gave %g", sum);
  free(buf);
}

/* ------------------------------------------------------------------ threads */

typedef struct thread_arg {
  ncclComm_t comm;
  int idx, n;
} thread_arg;

static void *thread_body(void *p) {
  thread_arg *a = p;
  size_t n = 40000;
  float *x = xmalloc(n * 4);
  unsigned char *s = xmalloc(n), *r = xmalloc(n), *all = xmalloc(n * (size_t)a->n);
  for (int iter = 0; iter < 4; iter++) {
    int salt = 1100 + iter;
    fill(x, n, a->idx, salt, ncclSum, ncclFloat32);
    NCCL_OK(ncclAllReduce(x, x, n, ncclFloat32, ncclSum, a->comm, NULL));
    atomic_fetch_add(&g_checks, 1);
    for (size_t i = 0; i < n; i++) {
      double w = 0;
      for (int q = 0; q < a->n; q++) w += gen(q, i, salt, ncclSum, ncclFloat32);
      if (x[i] != w) {
        failf(__LINE__, "thread %d AllReduce: element %zu is %g, expected %g", a->idx, i, x[i],
              w);
        break;
      }
    }
    pfill(s, n, a->idx, 0, salt);
    NCCL_OK(ncclAllGather(s, all, n, ncclUint8, a->comm, NULL));
    for (int q = 0; q < a->n; q++)
      pcheck("thread AllGather", all + (size_t)q * n, n, q, 0, salt, __LINE__);
    int next = (a->idx + 1) % a->n, prev = (a->idx + a->n - 1) % a->n;
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(s, n, ncclUint8, next, a->comm, NULL));
    NCCL_OK(ncclRecv(r, n, ncclUint8, prev, a->comm, NULL));
    NCCL_OK(ncclGroupEnd());
    pcheck("thread Send/Recv", r, n, prev, 0, salt, __LINE__);
  }
  free(x);
  free(s);
  free(r);
  free(all);
  return NULL;
}

static void check_comms(ncclComm_t *comms, int n, const int *devs) {
  for (int i = 0; i < n; i++) {
    int c = 0, r = -1, d = -1;
    NCCL_OK(ncclCommCount(comms[i], &c));
    NCCL_OK(ncclCommUserRank(comms[i], &r));
    NCCL_OK(ncclCommCuDevice(comms[i], &d));
    if (devs != NULL)
      CHECK(c == n && r == i && d == devs[i], "comm %d: rank %d of %d on device %d", i, r, c, d);
    else
      CHECK(c == n && r == i, "comm %d: rank %d of %d", i, r, c);
  }
}

/* One thread drives every communicator, inside a group. */
static void drive_all_in_group(ncclComm_t *comms, int n, const char *what) {
  size_t len = 300000;
  int64_t *v[8];
  unsigned char *s[8], *r[8];
  NCCL_OK(ncclGroupStart());
  for (int i = 0; i < n; i++) {
    v[i] = xmalloc(len * 8);
    s[i] = xmalloc(len);
    r[i] = xmalloc(len);
    fill(v[i], len, i, 1200, ncclMin, ncclInt64);
    pfill(s[i], len, i, 0, 1201);
    NCCL_OK(ncclAllReduce(v[i], v[i], len, ncclInt64, ncclMin, comms[i], NULL));
    NCCL_OK(ncclSend(s[i], len, ncclUint8, (i + n - 1) % n, comms[i], NULL));
    NCCL_OK(ncclRecv(r[i], len, ncclUint8, (i + 1) % n, comms[i], NULL));
  }
  NCCL_OK(ncclGroupEnd());
  for (int i = 0; i < n; i++) {
    atomic_fetch_add(&g_checks, 1);
    for (size_t k = 0; k < len; k++) {
      double w = gen(0, k, 1200, ncclMin, ncclInt64);
      for (int q = 1; q < n; q++) w = fmin(w, gen(q, k, 1200, ncclMin, ncclInt64));
      if ((double)v[i][k] != w) {
        failf(__LINE__, "%s: comm %d element %zu is %lld, expected %g", what, i, k,
              (long long)v[i][k], w);
        break;
      }
    }
    pcheck(what, r[i], len, (i + 1) % n, 0, 1201, __LINE__);
    free(v[i]);
    free(s[i]);
    free(r[i]);
  }
}

static void test_threads(void) {
  enum { N = 4 };
  ncclComm_t comms[N];
  const int devs[N] = {4, 5, 6, 7};
  NCCL_OK(ncclCommInitAll(comms, N, devs));
  check_comms(comms, N, devs);
  pthread_t th[N];
  thread_arg args[N];
  for (int i = 0; i < N; i++) {
    args[i] = (thread_arg){comms[i], i, N};
    pthread_create(&th[i], NULL, thread_body, &args[i]);
  }
  for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
  drive_all_in_group(comms, N, "one thread, ncclCommInitAll comms");
  /* Split every communicator from this thread, in one group. */
  ncclComm_t halves[N];
  NCCL_OK(ncclGroupStart());
  for (int i = 0; i < N; i++) NCCL_OK(ncclCommSplit(comms[i], i / 2, i, &halves[i], NULL));
  NCCL_OK(ncclGroupEnd());
  for (int i = 0; i < N; i++) {
    int c = 0, r = -1;
    NCCL_OK(ncclCommCount(halves[i], &c));
    NCCL_OK(ncclCommUserRank(halves[i], &r));
    CHECK(c == 2 && r == i % 2, "grouped split: comm %d is rank %d of %d", i, r, c);
  }
  int vals[N], sums[N];
  NCCL_OK(ncclGroupStart());
  for (int i = 0; i < N; i++) {
    vals[i] = 10 * i + 1;
    NCCL_OK(ncclAllReduce(&vals[i], &sums[i], 1, ncclInt32, ncclSum, halves[i], NULL));
  }
  NCCL_OK(ncclGroupEnd());
  for (int i = 0; i < N; i++) {
    int w = i < 2 ? 1 + 11 : 21 + 31;
    CHECK(sums[i] == w, "grouped split AllReduce on comm %d gave %d, expected %d", i, sums[i], w);
    NCCL_OK(ncclCommDestroy(halves[i]));
  }
  for (int i = 0; i < N; i++) NCCL_OK(ncclCommDestroy(comms[i]));

  /* ncclCommInitRank for every rank from one thread, inside a group. */
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  NCCL_OK(ncclGroupStart());
  for (int i = 0; i < N; i++) NCCL_OK(ncclCommInitRank(&comms[i], N, id, i));
  NCCL_OK(ncclGroupEnd());
  check_comms(comms, N, NULL);
  drive_all_in_group(comms, N, "one thread, grouped ncclCommInitRank comms");
  for (int i = 0; i < N; i++) NCCL_OK(ncclCommDestroy(comms[i]));
}

/* ncclCommAbort from another thread stops a call blocked waiting for a rank that never comes. */
typedef struct blocked_arg {
  ncclComm_t comm;
  _Atomic int started;
  ncclResult_t result;
} blocked_arg;

static void *blocked_body(void *p) {
  blocked_arg *a = p;
  float x[100] = {0};
  atomic_store(&a->started, 1);
  a->result = ncclAllReduce(x, x, 100, ncclFloat32, ncclSum, a->comm, NULL);
  return NULL;
}

static void test_abort(void) {
  ncclComm_t comms[2];
  NCCL_OK(ncclCommInitAll(comms, 2, NULL));
  blocked_arg a = {comms[0], 0, ncclSuccess};
  pthread_t th;
  pthread_create(&th, NULL, blocked_body, &a);
  while (!atomic_load(&a.started)) sleep_s(0.001);
  sleep_s(0.05);
  double t0 = now();
  NCCL_OK(ncclCommAbort(comms[0]));
  pthread_join(th, NULL);
  CHECK(now() - t0 < 5, "ncclCommAbort took %.1f s", now() - t0);
  CHECK(a.result != ncclSuccess, "the aborted call succeeded");
  NCCL_OK(ncclCommDestroy(comms[1]));
}

/* ------------------------------------------------------------------ modes */

static int shm_exists(const ncclUniqueId *id) {
  /* The id holds the segment name ("/fnccl-...") after an 8-byte tag. */
  char path[200];
  snprintf(path, sizeof path, "/dev/shm%s", id->internal + 8);
  struct stat st;
  return stat(path, &st) == 0;
}

static void run_noop(void) {
  ncclUniqueId id;
  if (g_rank == 0) NCCL_OK(ncclGetUniqueId(&id));
  MPI_QUIET(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  ncclComm_t comm = NULL;
  NCCL_OK(ncclCommInitRank(&comm, g_size, id, g_rank));
  size_t n = 1 << 20;
  float *buf = xmalloc(n * 4);
  buf[0] = 42;
  int iters = 2000;
  double t0 = now();
  for (int i = 0; i < iters; i++)
    NCCL_OK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, NULL));
  double per = (now() - t0) / iters;
  CHECK(per < 20e-6, "a no-op AllReduce took %.2f us", per * 1e6);
  CHECK(buf[0] == 42, "a no-op AllReduce changed the buffer");
  /* Unmatched point-to-point calls return at once too. */
  NCCL_OK(ncclSend(buf, n, ncclFloat32, (g_rank + 1) % g_size, comm, NULL));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclRecv(buf, n, ncclFloat32, 0, comm, NULL));
  NCCL_OK(ncclGroupEnd());
  CHECK(buf[0] == 42, "a no-op Recv changed the buffer");
  CHECK(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, NULL, NULL) == ncclInvalidArgument,
        "no-op mode accepted a NULL comm");
  CHECK(ncclBroadcast(buf, buf, 1, ncclFloat32, g_size, comm, NULL) == ncclInvalidArgument,
        "no-op mode accepted a bad root");
  NCCL_OK(ncclCommDestroy(comm));
  free(buf);
  if (g_rank == 0) printf("no-op AllReduce: %.3f us per call\n", per * 1e6);
}

static void run_timeout(void) {
  /* A rank that never comes: init fails after FAKE_NCCL_TIMEOUT_S, leaving nothing behind. */
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclComm_t c = (ncclComm_t)&c;
  double t0 = now();
  ncclResult_t r = ncclCommInitRank(&c, 2, id, 0);
  double took = now() - t0;
  CHECK(r == ncclSystemError && c == NULL, "init without the other rank returned %d", (int)r);
  CHECK(took > 0.3 && took < 10, "init gave up after %.2f s", took);
  CHECK(strstr(ncclGetLastError(NULL), "timed out") != NULL, "message: %s",
        ncclGetLastError(NULL));
  CHECK(!shm_exists(&id), "the shared memory of the failed init is left in /dev/shm");
  /* A collective whose peer never calls. */
  ncclComm_t comms[2];
  NCCL_OK(ncclCommInitAll(comms, 2, NULL));
  float x[1000] = {0};
  r = ncclAllReduce(x, x, 1000, ncclFloat32, ncclSum, comms[0], NULL);
  CHECK(r == ncclSystemError, "AllReduce without its peer returned %d", (int)r);
  CHECK(strstr(ncclGetLastError(NULL), "rank 1") != NULL, "message: %s", ncclGetLastError(NULL));
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(comms[0], &async));
  CHECK(async == ncclSystemError, "async error after the timeout: %d", (int)async);
  NCCL_OK(ncclCommDestroy(comms[0]));
  NCCL_OK(ncclCommDestroy(comms[1]));

  /* A peer process that exits: the call fails with ncclRemoteError, before the timeout. */
  NCCL_OK(ncclGetUniqueId(&id));
  pid_t child = fork();
  if (child == 0) {
    ncclComm_t cc = NULL;
    _exit(ncclCommInitRank(&cc, 2, id, 1) == ncclSuccess ? 0 : 1);
  }
  c = NULL;
  NCCL_OK(ncclCommInitRank(&c, 2, id, 0));
  int status = -1;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child could not join");
  if (c != NULL) {
    t0 = now();
    r = ncclAllReduce(x, x, 1000, ncclFloat32, ncclSum, c, NULL);
    CHECK(r == ncclRemoteError, "AllReduce with an exited peer returned %d", (int)r);
    CHECK(strstr(ncclGetLastError(NULL), "exited") != NULL, "message: %s",
          ncclGetLastError(NULL));
    CHECK(now() - t0 < 0.45, "noticing the exited peer took %.2f s", now() - t0);
    NCCL_OK(ncclCommDestroy(c));
  }
}

typedef struct named_test {
  const char *name;
  void (*fn)(ncclComm_t);
} named_test;

static void run_all(void) {
  double t0 = now();
  ncclUniqueId id;
  if (g_rank == 0) NCCL_OK(ncclGetUniqueId(&id));
  MPI_QUIET(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  ncclComm_t comm = NULL;
  NCCL_OK(ncclCommInitRank(&comm, g_size, id, g_rank));
  if (comm == NULL) return;
  CHECK(!shm_exists(&id), "the segment is still linked once every rank joined");
  int n = 0, me = -1;
  NCCL_OK(ncclCommCount(comm, &n));
  NCCL_OK(ncclCommUserRank(comm, &me));
  CHECK(n == g_size && me == g_rank, "comm is rank %d of %d", me, n);
  const named_test tests[] = {
      {"allreduce", test_allreduce},   {"broadcast", test_broadcast},
      {"reduce", test_reduce},         {"allgather", test_allgather},
      {"reducescatter", test_reducescatter},
      {"alltoall/gather/scatter", test_alltoall_gather_scatter},
      {"p2p", test_p2p},               {"group", test_group_mix},
      {"split", test_split},           {"shrink", test_shrink},
      {"revoke+shrink", test_revoke_shrink},
      {"premulsum", test_premulsum},   {"errors", test_errors},
      {"misc", test_misc},             {"timing", test_timing}};
  for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
    double t1 = now();
    tests[t].fn(comm);
    MPI_QUIET(MPI_Barrier(MPI_COMM_WORLD));
    if (g_rank == 0) printf("%-24s %.2f s\n", tests[t].name, now() - t1);
  }
  const struct { const char *name; void (*fn)(void); } local[] = {
      {"mismatch", test_mismatch}, {"threads", test_threads}, {"abort", test_abort}};
  for (size_t t = 0; t < sizeof local / sizeof local[0]; t++) {
    double t1 = now();
    local[t].fn();
    MPI_QUIET(MPI_Barrier(MPI_COMM_WORLD));
    if (g_rank == 0) printf("%-24s %.2f s\n", local[t].name, now() - t1);
  }
  NCCL_OK(ncclCommFinalize(comm));
  NCCL_OK(ncclCommDestroy(comm));
  if (g_rank == 0) printf("total %.2f s\n", now() - t0);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int mpi = strcmp(mode, "--timeout") != 0; /* the timeout check is one process, no MPI */
  if (mpi) {
    MPI_QUIET(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  }
  if (!mpi)
    run_timeout();
  else if (strcmp(mode, "--noop") == 0)
    run_noop();
  else
    run_all();
  int fails = atomic_load(&g_fail), checks = atomic_load(&g_checks), all_fails = fails;
  if (mpi) {
    MPI_QUIET(MPI_Allreduce(&fails, &all_fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_QUIET(MPI_Finalize());
  }
  if (g_rank == 0)
    printf("%s: %d checks on rank 0, %d failures on all ranks\n", all_fails ? "FAILED" : "PASSED",
           checks, all_fails);
  return all_fails ? 1 : 0;
}
