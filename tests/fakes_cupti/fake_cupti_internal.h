/* Internal interfaces of the fake libcupti.so.13 (see README.md in this folder).
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

typedef struct fc_settings {
  int busy;               /* FAKE_CUPTI_BUSY=1: another subscriber holds CUPTI */
  uint64_t drop_every;    /* FAKE_CUPTI_DROP_EVERY=N: every N-th kernel record is lost */
  uint64_t untimed_every; /* FAKE_CUPTI_UNTIMED_EVERY=N: every N-th kernel has no start time */
  int ext_late;           /* FAKE_CUPTI_EXT_LATE=1: correlation records are written at the next
                             flush, after the kernel records they describe */
  int kernel_version;     /* FAKE_CUPTI_KERNEL_VERSION: 10 (CUDA 13, default) or 9 (CUDA 12) */
  uint32_t api_version;   /* FAKE_CUPTI_API_VERSION: what cuptiGetVersion says (130001) */
  int api_filter;         /* FAKE_CUPTI_API_FILTER=0: cuptiActivityEnableDriverApi/RuntimeApi
                             fail with CUPTI_ERROR_NOT_SUPPORTED, like a CUPTI before them */
} fc_settings;

const fc_settings *fc_cfg(void);
void fc_lock(void);
void fc_unlock(void);
uint64_t fc_now_ns(void); /* CLOCK_REALTIME, CUPTI's default clock */

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
void fc_count_dropped(uint64_t n);
uint64_t fc_take_dropped(void);
int fc_has_client(void);

/* ---- work (lock held) ---- */
/* Writes the records of work that has completed by now (all of it when `all`), in end order, and
 * the correlation records held back in ext-late mode. */
void fc_retire(int all);
/* Writes the correlation records held back in ext-late mode (at a flush). */
void fc_release_late(void);
/* Graph node and graph handles given to the client encode their ids. */
#define FC_NODE_HANDLE_BASE 0x100000ull

#endif
