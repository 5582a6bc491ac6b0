/* Settings from the environment, clocks, waiting and the last-error message. */
#include "fake_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static npkit_fake_settings settings;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;
static _Atomic int debug_flag = -1;

/* Parses a number; bad or out-of-range text keeps the default and says so (in debug mode). */
static double env_num(const char *name, double def, double lo, double hi) {
  const char *s = getenv(name);
  if (s == NULL || *s == '\0') return def;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) {
    npkit_fake_debug_log("ignoring %s=%s (expected a number in [%g, %g])", name, s, lo, hi);
    return def;
  }
  return v;
}

/* The number given for the protocol NCCL_PROTO forces in a list "LL=2,LL128=4,SIMPLE=500" (names
 * in any case); def when NCCL_PROTO is unset or the list has no entry for it. */
static double per_proto(const char *name, double def, double lo, double hi) {
  const char *proto = getenv("NCCL_PROTO"), *list = getenv(name);
  if (proto == NULL || list == NULL) return def;
  size_t n = strlen(proto);
  for (const char *p = list; p != NULL && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    if (strncasecmp(p, proto, n) != 0 || p[n] != '=') continue;
    char *end;
    double v = strtod(p + n + 1, &end);
    if (end != p + n + 1 && v >= lo && v <= hi) return v;
  }
  return def;
}

static void read_settings(void) {
  settings.timeout_s = env_num("FAKE_NCCL_TIMEOUT_S", 60.0, 0.001, 1e7);
  settings.lat_s = env_num("FAKE_NCCL_LAT_US", 8.0, 0.0, 1e9) * 1e-6;
  settings.bw_bytes_s = env_num("FAKE_NCCL_BW_GBPS", 20.0, 1e-6, 1e9) * 1e9;
  /* a protocol's own latency and bandwidth, when NCCL_PROTO forces one (scripts/nccl_matrix.sh) */
  settings.lat_s = per_proto("FAKE_NCCL_PROTO_LAT_US", settings.lat_s * 1e6, 0.0, 1e9) * 1e-6;
  settings.bw_bytes_s = per_proto("FAKE_NCCL_PROTO_BW_GBPS", settings.bw_bytes_s / 1e9, 1e-6, 1e9) * 1e9;
  settings.noop = (int)env_num("FAKE_NCCL_NOOP", 0.0, 0.0, 1.0);
  settings.device = (int)env_num("FAKE_NCCL_DEVICE", -1.0, 0.0, 1 << 20);
  settings.ndev = (int)env_num("FAKE_NCCL_NDEV", 8.0, 1.0, 1 << 20);
  settings.version = (int)env_num("FAKE_NCCL_VERSION",
                                  FAKE_NCCL_OLD ? 21703 : FAKE_NCCL_NEW ? 23102 : NCCL_VERSION_CODE, 0.0, 1e9);
  settings.gpu_offset_ns = env_num("FAKE_NCCL_GPU_OFFSET_US", 7000.0, -1e9, 1e9) * 1e3;
  settings.gpu_drift = env_num("FAKE_NCCL_GPU_DRIFT_PPM", 20.0, -1000.0, 1000.0) * 1e-6;
  settings.launch_s = env_num("FAKE_NCCL_LAUNCH_US", 4.0, 0.0, 1e6) * 1e-6;
  settings.queue_s = env_num("FAKE_NCCL_QUEUE_US", 0.0, 0.0, 1e7) * 1e-6;
  double ring = env_num("FAKE_NCCL_RING_BYTES", 256.0 * 1024, 4096.0, 1024.0 * 1024 * 1024);
  size_t pow2 = 4096;
  while (pow2 * 2 <= (size_t)ring) pow2 *= 2; /* the ring index arithmetic needs a power of two */
  settings.ring_bytes = pow2;
}

const npkit_fake_settings *npkit_fake_cfg(void) {
  pthread_once(&settings_once, read_settings);
  return &settings;
}

void npkit_fake_reread_debug(void) {
  const char *s = getenv("FAKE_NCCL_DEBUG");
  atomic_store(&debug_flag, s != NULL && strcmp(s, "1") == 0);
}

bool npkit_fake_debug(void) {
  if (atomic_load_explicit(&debug_flag, memory_order_relaxed) < 0) npkit_fake_reread_debug();
  return atomic_load_explicit(&debug_flag, memory_order_relaxed) > 0;
}

void npkit_fake_debug_log(const char *fmt, ...) {
  if (!npkit_fake_debug()) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "fake-nccl[%ld]: %s\n", (long)getpid(), line);
}

double npkit_fake_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void npkit_fake_sleep_until(double t) {
  if (!(t > 0)) return;
  struct timespec ts;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

void npkit_fake_backoff_wait(npkit_fake_backoff *b) {
  /* A handful of yields keeps small messages fast when cores are free; after that, sleeping lets
   * an oversubscribed peer run.  The sleep stays short because it adds to every step's latency. */
  if (b->idle < 32) {
    b->idle++;
    sched_yield();
    return;
  }
  long ns = 2000L << (b->idle - 32 < 5 ? b->idle - 32 : 5); /* 2 us .. 64 us */
  if (b->idle < 64) b->idle++;
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

/* ncclGetLastError has no comm-independent storage that is safe to share between threads, so the
 * message is kept per thread. */
static _Thread_local char last_error[512];

ncclResult_t npkit_fake_fail(ncclResult_t res, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  npkit_fake_debug_log("%s", last_error);
  return res;
}

const char *npkit_fake_last_error(void) { return last_error; }
