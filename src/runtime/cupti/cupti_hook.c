/* The wrapped calls' side of CUPTI's external correlation (cupti_hook.h): the push and pop around
 * a call that may launch GPU work, on the calling thread. */
#include "cupti_hook.h"

#include <string.h>

#include "cupti_corr.h"
#include "cupti_loader.h"
#include "fn_set.h"
#include "nccl_names.h"

_Atomic int npkit_cupti_active;

/* Functions whose calls may launch GPU work: everything but queries and ncclGroupStart. */
static npkit_fn_set push_set;

void npkit_cupti_hook_prepare(void) {
  memset(&push_set, 0, sizeof push_set);
  for (unsigned f = 1; f < NPKIT_FN_COUNT; f++)
    if (npkit_fn_class_of(f) != NPKIT_CLASS_query && f != NPKIT_FN_GroupStart) npkit_fn_set_add(&push_set, f);
}

void npkit_cupti_push_slow(npkit_event *ev) {
  if (!npkit_fn_set_has(&push_set, ev->func)) return;
  uint64_t id = npkit_cupti_corr_begin();
  if (npkit_cupti.ActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, id) !=
      CUPTI_SUCCESS) {
    npkit_cupti_corr_end();
    return;
  }
  ev->u.api.corr_id = id;
}

void npkit_cupti_pop_slow(void) {
  uint64_t last = 0;
  npkit_cupti.ActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &last);
  npkit_cupti_corr_end();
}

int npkit_cupti_push_launch(uint64_t ext) {
  if (ext == 0 || !atomic_load_explicit(&npkit_cupti_active, memory_order_relaxed) ||
      npkit_cupti_corr_current() != 0)
    return 0;
  if (npkit_cupti.ActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, ext) !=
      CUPTI_SUCCESS)
    return 0;
  npkit_cupti_corr_enter(ext);
  return 1;
}

void npkit_cupti_pop_launch(void) { npkit_cupti_pop_slow(); }
