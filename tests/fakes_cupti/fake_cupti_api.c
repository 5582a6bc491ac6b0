/* The CUPTI API functions of the fake, with the prototypes of the real cupti.h. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cupti_hooks.h"
#include "fake_cupti_internal.h"

static pthread_mutex_t lock;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static fc_settings settings;

static uint64_t env_u64(const char *name, uint64_t def) {
  const char *v = getenv(name);
  return v != NULL && *v != '\0' ? strtoull(v, NULL, 10) : def;
}

static void init(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&lock, &a);
  pthread_mutexattr_destroy(&a);
  settings.busy = (int)env_u64("FAKE_CUPTI_BUSY", 0);
  settings.drop_every = env_u64("FAKE_CUPTI_DROP_EVERY", 0);
  settings.untimed_every = env_u64("FAKE_CUPTI_UNTIMED_EVERY", 0);
  settings.ext_late = (int)env_u64("FAKE_CUPTI_EXT_LATE", 0);
  /* The record layout and the version follow the library (cupti_activity.h of CUDA 13 names
   * Kernel10 for CONCURRENT_KERNEL, CUDA 12's Kernel9; cupti_version.h: API 28 is CUDA 12.9
   * Update 1, 130001 CUDA 13.0 Update 1). */
  settings.kernel_version = (int)env_u64("FAKE_CUPTI_KERNEL_VERSION", FC_CUDA_MAJOR >= 13 ? 10 : 9);
  if (settings.kernel_version != 9) settings.kernel_version = 10;
  settings.api_version = (uint32_t)env_u64("FAKE_CUPTI_API_VERSION", FC_CUDA_MAJOR >= 13 ? 130001 : 28);
  settings.api_filter = (int)env_u64("FAKE_CUPTI_API_FILTER", 1) != 0;
  settings.driver_version = (int)env_u64("FAKE_CUDA_DRIVER_VERSION", 13000);
  const char *at = getenv("FAKE_CUPTI_OLD_DRIVER_AT");
  settings.old_driver_at_enable = at != NULL && strcmp(at, "enable") == 0;
}

/* A CUPTI needs a driver of its CUDA generation: with an older one it cannot connect to it, and
 * its calls fail with CUPTI_ERROR_NOT_INITIALIZED, "CUPTI is unable to initialize its connection
 * to the CUDA driver" (cupti_result.h of CUDA 13, lines 145-149).  Reports of that error from a
 * CUPTI newer than the driver: cuptiSubscribe (NVlabs/SASSI#19), a later activity call
 * (HPCToolkit/hpctoolkit#375, cuptiActivitySetAttribute), which FAKE_CUPTI_OLD_DRIVER_AT=enable
 * plays.  Modelled by major version: a CUDA 13 CUPTI needs a driver for CUDA 13.0 or later. */
int fc_driver_ok(void) { return fc_cfg()->driver_version >= FC_CUDA_MAJOR * 1000; }

const fc_settings *fc_cfg(void) {
  pthread_once(&once, init);
  return &settings;
}

void fc_lock(void) {
  pthread_once(&once, init);
  pthread_mutex_lock(&lock);
}

void fc_unlock(void) { pthread_mutex_unlock(&lock); }

uint64_t fc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- version and errors ---- */

FC_EXPORT CUptiResult cuptiGetVersion(uint32_t *version) {
  if (version == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = fc_cfg()->api_version;
  return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
  static const struct { CUptiResult r; const char *s; } names[] = {
      {CUPTI_SUCCESS, "CUPTI_SUCCESS"},
      {CUPTI_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER"},
      {CUPTI_ERROR_INVALID_OPERATION, "CUPTI_ERROR_INVALID_OPERATION"},
      {CUPTI_ERROR_MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED"},
      {CUPTI_ERROR_QUEUE_EMPTY, "CUPTI_ERROR_QUEUE_EMPTY"},
      {CUPTI_ERROR_INVALID_KIND, "CUPTI_ERROR_INVALID_KIND"},
      {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
      {CUPTI_ERROR_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED"},
      {CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED"},
  };
  if (str == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].r == result) {
      *str = names[i].s;
      return CUPTI_SUCCESS;
    }
  *str = "CUPTI_ERROR_UNKNOWN";
  return CUPTI_SUCCESS;
}

/* ---- subscriber and callbacks ---- */

static int subscribed;
static CUpti_CallbackFunc callback;
static void *callback_data;
static unsigned char resource_enabled[64];

FC_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc cb,
                                     void *userdata) {
  if (subscriber == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  if (fc_cfg()->busy) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  if (!fc_driver_ok() && !fc_cfg()->old_driver_at_enable) return CUPTI_ERROR_NOT_INITIALIZED;
  fc_lock();
  CUptiResult r = CUPTI_SUCCESS;
  if (subscribed) {
    r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  } else {
    subscribed = 1;
    callback = cb;
    callback_data = userdata;
    *subscriber = (CUpti_SubscriberHandle)(uintptr_t)0x5ab5c41be5ull;
  }
  fc_unlock();
  return r;
}

/* For test code choosing among loaded copies (fake_cupti_hooks.h): 1 while a client subscribes. */
FC_EXPORT int npkitFakeCuptiInUse(void) {
  fc_lock();
  int in_use = subscribed;
  fc_unlock();
  return in_use;
}

FC_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  (void)subscriber;
  fc_lock();
  subscribed = 0;
  callback = NULL;
  memset(resource_enabled, 0, sizeof resource_enabled);
  fc_unlock();
  return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                          CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  (void)subscriber;
  if (!subscribed) return CUPTI_ERROR_INVALID_PARAMETER;
  if (domain != CUPTI_CB_DOMAIN_RESOURCE) return CUPTI_SUCCESS; /* accepted, never raised */
  if (cbid >= sizeof resource_enabled) return CUPTI_ERROR_INVALID_PARAMETER;
  fc_lock();
  resource_enabled[cbid] = enable != 0;
  fc_unlock();
  return CUPTI_SUCCESS;
}

void fc_resource_callback(CUpti_CallbackId cbid, CUpti_GraphData *data) {
  if (!subscribed || callback == NULL || cbid >= sizeof resource_enabled || !resource_enabled[cbid])
    return;
  CUpti_ResourceData rd;
  memset(&rd, 0, sizeof rd);
  rd.resourceDescriptor = data;
  callback(callback_data, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}

FC_EXPORT CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t *nodeId) {
  uint64_t h = (uint64_t)(uintptr_t)node;
  if (nodeId == NULL || h <= FC_NODE_HANDLE_BASE) return CUPTI_ERROR_INVALID_PARAMETER;
  *nodeId = h - FC_NODE_HANDLE_BASE;
  return CUPTI_SUCCESS;
}

/* ---- activity ---- */

static unsigned char kinds[64];
static CUpti_BuffersCallbackRequestFunc on_request;
static CUpti_BuffersCallbackCompleteFunc on_complete;

CUpti_BuffersCallbackRequestFunc fc_request_fn(void) { return on_request; }
CUpti_BuffersCallbackCompleteFunc fc_complete_fn(void) { return on_complete; }

FC_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                                     CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  if (funcBufferRequested == NULL || funcBufferCompleted == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  fc_lock();
  on_request = funcBufferRequested;
  on_complete = funcBufferCompleted;
  fc_unlock();
  return CUPTI_SUCCESS;
}

int fc_has_client(void) { return on_request != NULL && on_complete != NULL; }

/* API records per callback id (cupti_activity.h of CUDA 13, cuptiActivityEnableDriverApi):
 * enabling the DRIVER (RUNTIME) kind traces every call of its domain, disabling it none, and
 * overrides what cuptiActivityEnableDriverApi (RuntimeApi) set before; those then switch single
 * callback ids on or off. */
#define FC_CBIDS 1024
static unsigned char api_on[2][FC_CBIDS]; /* [0] driver, [1] runtime */

static int api_domain_of(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_DRIVER ? 0 : kind == CUPTI_ACTIVITY_KIND_RUNTIME ? 1 : -1;
}

/* Switching tracing off once the application has destroyed its streams (a communicator's): on an
 * H200 the real CUPTI 13.0 (API 130001, driver 580.159) crashed in cuptiActivityDisable called
 * from an exit handler after ncclCommDestroy and cudaStreamDestroy (tests/gpu device check,
 * 2026-12-04), while cuptiActivityFlushAll there worked.  Which of the two conditions it needs is
 * not known: the fake crashes on either, stricter than the real one. */
static _Atomic int streams_destroyed;

FC_EXPORT void npkitFakeCuptiStreamsDestroyed(void) { atomic_store(&streams_destroyed, 1); }

static void crash_if_torn_down(const char *fn) {
  if (!atomic_load(&streams_destroyed)) return;
  fprintf(stderr, "fake CUPTI: %s after the application destroyed its streams: the real CUPTI "
          "13.0 crashed here\n", fn);
  raise(SIGSEGV);
}

static CUptiResult set_kind(CUpti_ActivityKind kind, unsigned char on) {
  if (!on) crash_if_torn_down("cuptiActivityDisable");
  if ((unsigned)kind >= sizeof kinds) return CUPTI_ERROR_INVALID_KIND;
  fc_lock();
  kinds[kind] = on;
  int d = api_domain_of(kind);
  if (d >= 0) memset(api_on[d], on, sizeof api_on[d]);
  fc_unlock();
  return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (!fc_driver_ok()) return CUPTI_ERROR_NOT_INITIALIZED; /* see fc_driver_ok */
  return set_kind(kind, 1);
}
FC_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) { return set_kind(kind, 0); }

static CUptiResult set_api(int d, CUpti_CallbackId cbid, uint8_t enable) {
  if (!enable) crash_if_torn_down(d == 0 ? "cuptiActivityEnableDriverApi(0)" : "cuptiActivityEnableRuntimeApi(0)");
  if (!fc_cfg()->api_filter) return CUPTI_ERROR_NOT_SUPPORTED;
  if (cbid == 0 || cbid >= FC_CBIDS) return CUPTI_ERROR_INVALID_PARAMETER;
  fc_lock();
  api_on[d][cbid] = enable != 0;
  fc_unlock();
  return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  return set_api(0, cbid, enable);
}

FC_EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  return set_api(1, cbid, enable);
}

int fc_kind_enabled(CUpti_ActivityKind kind) {
  return (unsigned)kind < sizeof kinds && kinds[kind] && fc_has_client();
}

int fc_api_traced(int domain, uint32_t cbid) {
  int d = domain == NPKIT_FAKE_API_DRIVER ? 0 : domain == NPKIT_FAKE_API_RUNTIME ? 1 : -1;
  return d >= 0 && cbid > 0 && cbid < FC_CBIDS && api_on[d][cbid] && fc_has_client();
}

FC_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                 CUpti_Activity **record) {
  if (buffer == NULL || record == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t *p;
  if (*record == NULL) {
    p = buffer;
  } else {
    size_t size = fc_record_size(*record);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    p = (uint8_t *)*record + size;
  }
  if (p < buffer || (size_t)(p - buffer) + sizeof(CUpti_Activity) > validBufferSizeBytes)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  size_t size = fc_record_size((CUpti_Activity *)(void *)p);
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if ((size_t)(p - buffer) + size > validBufferSizeBytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (CUpti_Activity *)(void *)p;
  return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                        size_t *dropped) {
  (void)context;
  (void)streamId;
  if (dropped == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  fc_lock();
  *dropped = (size_t)fc_take_dropped();
  fc_unlock();
  return CUPTI_SUCCESS;
}

/* cupti_activity.h of CUDA 13, cuptiActivityFlushAll: a default flush (flag 0) returns the buffers
 * whose records are all complete, "buffers need not to be full", and none that holds an
 * incomplete record; a forced flush returns them all, unfinished records included.  The fake's
 * buffer holds the records of unfinished work once they end, so a default flush keeps it back
 * while any work is unfinished (stricter: CUPTI may have put that record in a later buffer). */
FC_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  fc_lock();
  fc_retire(0);
  fc_release_late();
  if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) {
    fc_flush_incomplete();
    fc_complete_current();
  } else if (!fc_work_in_flight()) {
    fc_complete_current();
  }
  fc_unlock();
  return CUPTI_SUCCESS;
}

/* ---- the clock of the records ----
 *
 * CLOCK_REALTIME ns, CUPTI's default on Linux, until a client registers a timestamp callback
 * (cupti_activity.h of CUDA 13, cuptiActivityRegisterTimestampCallback, lines 8111-8150).  The
 * callback is process-wide: every record written afterwards carries its clock, also the records
 * of other clients.  GPU stamps are converted "by linear interpolation ... during
 * post-processing", the callback being called then (lines 8125-8131): here, when a record is
 * written into a buffer, between a reading taken at the registration and one taken then; records
 * written before keep CLOCK_REALTIME (lines 8138-8142).  cuptiGetTimestamp gives the records'
 * clock (lines 7271-7283). */

static CUpti_TimestampCallbackFunc ts_fn;
static uint64_t ts_r0, ts_c0; /* the reading at the registration */

/* CLOCK_REALTIME and the callback's clock at about the same moment: the best of three tries. */
static void read_both(CUpti_TimestampCallbackFunc fn, uint64_t *r, uint64_t *c) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; i++) {
    uint64_t a = fc_now_ns(), v = fn(), b = fc_now_ns();
    if (b - a < best) {
      best = b - a;
      *r = a + (b - a) / 2;
      *c = v;
    }
  }
}

FC_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp) {
  if (funcTimestamp == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  if (!fc_driver_ok()) return CUPTI_ERROR_NOT_INITIALIZED;
  uint64_t r0 = 0, c0 = 0;
  read_both(funcTimestamp, &r0, &c0);
  /* The rate of the new clock is measured from this reading to the one of each record: wait
   * long enough (2 ms) that a reading's own uncertainty (tens of ns) does not make it noisy. */
  while (fc_now_ns() < r0 + 2000000) {
  }
  fc_lock();
  ts_fn = funcTimestamp;
  ts_r0 = r0;
  ts_c0 = c0;
  fc_unlock();
  return CUPTI_SUCCESS;
}

int fc_clock_reading(uint64_t *r, uint64_t *c) {
  if (ts_fn == NULL) return 0;
  read_both(ts_fn, r, c);
  return 1;
}

uint64_t fc_clock_stamp(uint64_t t, uint64_t r, uint64_t c) {
  if (t == 0 || r <= ts_r0) return t; /* 0: "not timed" stays so */
  __int128 d = (__int128)t - (__int128)ts_r0;
  __int128 v = (__int128)ts_c0 + d * ((__int128)c - (__int128)ts_c0) / ((__int128)r - (__int128)ts_r0);
  return v < 0 ? 0 : (uint64_t)v;
}

FC_EXPORT CUptiResult cuptiGetTimestamp(uint64_t *timestamp) {
  if (timestamp == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  fc_lock();
  CUpti_TimestampCallbackFunc fn = ts_fn;
  fc_unlock();
  *timestamp = fn != NULL ? fn() : fc_now_ns();
  return CUPTI_SUCCESS;
}

/* ---- external correlation: a stack per kind and thread ---- */

#define EXT_KINDS 8
#define EXT_DEPTH 16
static __thread uint64_t ext_stack[EXT_KINDS][EXT_DEPTH];
static __thread int ext_depth[EXT_KINDS];

FC_EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                             uint64_t id) {
  if ((unsigned)kind >= EXT_KINDS) return CUPTI_ERROR_INVALID_PARAMETER;
  if (ext_depth[kind] == EXT_DEPTH) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  ext_stack[kind][ext_depth[kind]++] = id;
  return CUPTI_SUCCESS;
}

FC_EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                            uint64_t *lastId) {
  if ((unsigned)kind >= EXT_KINDS) return CUPTI_ERROR_INVALID_PARAMETER;
  if (ext_depth[kind] == 0) return CUPTI_ERROR_QUEUE_EMPTY;
  uint64_t id = ext_stack[kind][--ext_depth[kind]];
  if (lastId != NULL) *lastId = id;
  return CUPTI_SUCCESS;
}

int fc_pushed_ids(CUpti_ExternalCorrelationKind out_kinds[8], uint64_t ids[8]) {
  int n = 0;
  for (int k = 0; k < EXT_KINDS; k++)
    if (ext_depth[k] > 0) {
      out_kinds[n] = (CUpti_ExternalCorrelationKind)k;
      ids[n] = ext_stack[k][ext_depth[k] - 1];
      n++;
    }
  return n;
}

static uint32_t correlation;

uint32_t fc_next_correlation(void) { return ++correlation; }
