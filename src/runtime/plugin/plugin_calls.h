/* The calls of an NCCL that the wrappers never see.  Frameworks that dlopen NCCL and call it
 * through dlsym(handle, ...) pointers bypass LD_PRELOAD: from NCCL 2.28 on (profiler ABI v5+) the
 * plugin still gets a CollApi or P2pApi event inside each such call, with its function, count,
 * datatype, root and stream.  When no wrapped call runs on the thread, the event becomes the call's
 * record (an NPKIT_EV_API flagged NPKIT_API_FROM_PLUGIN) on a communicator made from what NCCL told
 * the plugin at init (commId, rank, size), with the same per-communicator sequence numbers as
 * wrapped collectives get, so the trace and the report work as for a wrapped job.  What NCCL's
 * events do not say stays unknown: the reduction operator, the peer of a Send/Recv (so no p2p
 * sequence), and an AlltoAll, Gather or Scatter shows as the P2p event NCCL 2.28 reports for it.
 * At the finish one line says that the wrappers saw no call, and what was recorded instead. */
#ifndef NPKIT_PLUGIN_CALLS_H
#define NPKIT_PLUGIN_CALLS_H

#include <stdint.h>

#include "api_call.h"
#include "plugin_descr.h"

/* A plugin context was initialised (any ABI). */
void npkit_plugin_calls_ctx(uint32_t ctx, const npkit_plugin_comm *c);

/* What a CollApi/P2pApi event said, at its stop. */
typedef struct npkit_plugin_call {
  uint32_t ctx;
  uint16_t fn;           /* npkit_fn of NCCL's function name */
  uint8_t kind;          /* NPKIT_PAPI_COLL or NPKIT_PAPI_P2P */
  int32_t datatype, root;
  uint64_t count, stream, user_tag;
  uint64_t group;        /* the GroupApi's id when it was a user's group (depth > 1), else 0 */
  uint64_t start_ns, end_ns;
} npkit_plugin_call;

/* Begins the call's record on the calling thread and returns its call_no (for the API record,
 * which is to be written before npkit_plugin_calls_end, as for a wrapped call); 0 when there is no
 * record to make (recording off, no context info, memory): npkit_plugin_calls_end is then not called. */
uint64_t npkit_plugin_calls_begin(const npkit_plugin_call *p, npkit_call *call);
void npkit_plugin_calls_end(npkit_call *call);

/* The communicator made for a context whose calls no wrapper sees (registered on first use), NULL
 * when NCCL did not say enough at init. */
npkit_comm *npkit_plugin_calls_comm(uint32_t ctx);

/* At the finish: when the wrappers saw no call, one line says what was recorded instead. */
void npkit_plugin_calls_finish(void);

#endif
