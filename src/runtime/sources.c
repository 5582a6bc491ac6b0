/* The sources the library is made of, in the order the life cycle attaches and finishes them
 * (core/source.h):
 *  - call stacks and the GPU source first: the wrappers' per-call extras (api) are set up from
 *    the stacks' depth, and CUPTI's last buffers are drained before the other sources finish;
 *  - the NPKit dump source reads the last dump while the string table still takes names;
 *  - the profiler plugin's statistics and notes;
 *  - the machine source (its thread's last samples and counters), then the NCCL API's;
 *  - the live metrics last: their final dump, at detach, sees what every other source wrote.
 * A new source describes itself with an npkit_source_ops in its folder and gets one line here.  The
 * list is handed to the life cycle when the library is loaded: a constructor that does nothing
 * else (the start itself waits for the first NCCL call, as lifecycle.h says). */
#include "api_source.h"
#include "cupti_source.h"
#include "lifecycle.h"
#include "machine_source.h"
#include "metrics_source.h"
#include "npkit_dump_source.h"
#include "plugin_core.h"
#include "stack_capture.h"

static const npkit_source_ops *const sources[] = {
    &npkit_source_stacks, &npkit_source_cupti,   &npkit_source_npkit_dump,
    &npkit_source_plugin, &npkit_source_machine, &npkit_source_api,     &npkit_source_metrics,
};

__attribute__((constructor)) static void npkit_sources_register(void) {
  npkit_lifecycle_sources(sources, sizeof sources / sizeof sources[0]);
}
