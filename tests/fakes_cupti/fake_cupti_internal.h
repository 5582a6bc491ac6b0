/* Internal interfaces of the fake libcupti (see README.md in this folder), built twice: as CUDA
 * 13's libcupti.so.13 (FC_CUDA_MAJOR 13) and as CUDA 12's libcupti.so.12 (FC_CUDA_MAJOR 12).
 *
 *   fake_cupti_api.c    the CUPTI functions a client calls: version, subscribe and callbacks,
 *                       activity kinds, external correlation push/pop, flush, record iteration
 *   fake_cupti_emit.c   writing records into the client's buffers, completing buffers, drops
 *   fake_cupti_work.c   the test hooks (fake_cupti_hooks.h): kernels, copies, memsets, graphs,
 *                       and the completion of in-flight work in end-time order
 *
 * One recursive lock protects everything: callbacks into the client are made with it held, and
 * the client may call back into CUPTI from them (cuptiActivityGetNumDroppedRecords in its
 * completion callback), as real CUPTI allows. */
#ifndef NPKIT_FAKE_CUPTI_INTERNAL_H
#define NPKIT_FAKE_CUPTI_INTERNAL_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

#define FC_EXPORT __attribute__((visibility("default")))

#ifndef FC_CUDA_MAJOR
#define FC_CUDA_MAJOR 13
#endif

typedef struct fc_settings {
  int busy;               /* FAKE_CUPTI_BUSY=1: another subscriber holds CUPTI */
  uint64_t drop_every;    /* FAKE_CUPTI_DROP_EVERY=N: every N-th kernel record is lost */
  uint64_t untimed_every; /* FAKE_CUPTI_UNTIMED_EVERY=N: every N-th kernel has no start time */
  int ext_late;           /* FAKE_CUPTI_EXT_LATE=1: correlation records are written after the
                             kernel records they describe: at the next flush, or in the next
                             buffer before the full one is handed back (fake_cupti_emit.c) */
  int kernel_version;     /* FAKE_CUPTI_KERNEL_VERSION: 10 (CUDA 13) or 9 (CUDA 12); the
                             default follows the build */
  uint32_t api_version;   /* FAKE_CUPTI_API_VERSION: what cuptiGetVersion says (130001; 28 for
                             the CUDA 12 build) */
  int driver_version;     /* FAKE_CUDA_DRIVER_VERSION: the CUDA version of the driver, as
                             cuDriverGetVersion gives it (13000) */
  int old_driver_at_enable; /* FAKE_CUPTI_OLD_DRIVER_AT=enable: with too old a driver,
                               cuptiSubscribe succeeds and cuptiActivityEnable fails */
  int api_filter;         /* FAKE_CUPTI_API_FILTER=0: cuptiActivityEnableDriverApi/RuntimeApi
                             fail with CUPTI_ERROR_NOT_SUPPORTED, like a CUPTI before them */
} fc_settings;

const fc_settings *fc_cfg(void);
void fc_lock(void);
void fc_unlock(void);
uint64_t fc_now_ns(void); /* CLOCK_REALTIME, CUPTI's default clock */
/* 1 when the driver is recent enough for this CUPTI (a CUDA driver of at least its major version). */
int fc_driver_ok(void);
/* The clock of records written now: 1 with a reading (CLOCK_REALTIME r, callback clock c) when a
 * client registered a timestamp callback; 0 when records keep CLOCK_REALTIME. */
int fc_clock_reading(uint64_t *r, uint64_t *c);
/* CLOCK_REALTIME stamp t in the callback's clock, given a reading of fc_clock_reading. */
uint64_t fc_clock_stamp(uint64_t t, uint64_t r, uint64_t c);

/* ---- api ---- */
int fc_kind_enabled(CUpti_ActivityKind kind);
/* Whether CUPTI writes an API record for a call of callback id cbid of the driver
 * (NPKIT_FAKE_API_DRIVER) or runtime (_RUNTIME) domain: its kind is enabled, or that one cbid. */
int fc_api_traced(int domain, uint32_t cbid);
/* The calling thread's innermost pushed id of each external correlation kind: fills kinds/ids,
 * returns how many. */
int fc_pushed_ids(CUpti_ExternalCorrelationKind kinds[8], uint64_t ids[8]);
/* Raises a resource callback if the client subscribed to it. */
void fc_resource_callback(CUpti_CallbackId cbid, CUpti_GraphData *data);
uint32_t fc_next_correlation(void);
/* The client's buffer callbacks (NULL before cuptiActivityRegisterCallbacks). */
CUpti_BuffersCallbackRequestFunc fc_request_fn(void);
CUpti_BuffersCallbackCompleteFunc fc_complete_fn(void);

/* ---- emit (lock held) ---- */
size_t fc_record_size(const CUpti_Activity *rec);
/* Appends a record, completing the current buffer first when it does not fit. */
void fc_emit(const void *rec, size_t size);
/* Hands the current buffer back to the client if it holds records (forced flush). */
void fc_complete_current(void);
/* Keeps a correlation record for later (ext-late mode): written at the next flush, or at the next
 * buffer switch into the new buffer. */
void fc_emit_late(const CUpti_ActivityExternalCorrelation *x);
/* Writes the correlation records kept for later (at a flush). */
void fc_release_late(void);
void fc_count_dropped(uint64_t n);
uint64_t fc_take_dropped(void);
int fc_has_client(void);

/* ---- work (lock held) ---- */
/* Writes the records of work that has completed by now (all of it when `all`), in end order. */
void fc_retire(int all);
/* 1 while some work has not ended (a kernel launched and not done, a record whose end is to come). */
int fc_work_in_flight(void);
/* A forced flush: the records of unfinished work written now, without times, and lost later. */
void fc_flush_incomplete(void);
/* Graph node and graph handles given to the client encode their ids. */
#define FC_NODE_HANDLE_BASE 0x100000ull

#endif
