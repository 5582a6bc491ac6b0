/* NCCL's own events through its profiler plugin interface (NCCL 2.23+): the core.
 *
 * The library exports the tables ncclProfiler_v1 ... ncclProfiler_v7 (plugin_adapters.c): each
 * version's adapter turns NCCL's descriptor into the version-independent npkit_plugin_descr
 * (plugin_descr.h) and calls this core, which turns events into records (event kinds
 * NPKIT_EV_PLUGIN_* of include/npkit/event_log.h) through the recorder.  A constructor
 * (plugin_register.c) points NCCL_PROFILER_PLUGIN at the library when the user has not set it, so
 * LD_PRELOAD alone enables it; naming the library in NCCL_PROFILER_PLUGIN without preloading it
 * works too.
 *
 * Handles given to NCCL are never pointers: an event's handle encodes a tag, and either a task id
 * (Coll/P2p, whose children refer to it after it stopped) or the index and generation of a slot
 * holding the state of an event that is still running (plugin_slots.h).  A handle that is stale
 * (a state after stop, a second stop) or garbage is detected and ignored, never dereferenced.
 * Every entry point returns success.
 *
 * Threads: init, Coll/P2p and the API-level events come from the thread that creates the
 * communicator or launches work; proxy ops, steps, kernel channels and proxy control from NCCL's
 * proxy thread.  Recording is lock-free (npkit_thread_self + npkit_record). */
#ifndef NPKIT_PLUGIN_CORE_H
#define NPKIT_PLUGIN_CORE_H

#include <stdint.h>

#include "plugin_descr.h"
#include "source.h"

/* The plugin's entry in the life cycle's table: its finish writes the clock maps' last state,
 * the plugin's counters (NPKIT_EV_PLUGIN_STATS) and what it could not record. */
extern const npkit_source_ops npkit_source_plugin;

/* The core.  All return 0 (ncclSuccess). */
int npkit_plugin_init(void **ctx, int *mask, const npkit_plugin_comm *comm);
int npkit_plugin_start(void *ctx, void **handle, const npkit_plugin_descr *d);
int npkit_plugin_stop(void *handle);
int npkit_plugin_record_state(void *handle, int state, const npkit_plugin_state *s);
int npkit_plugin_finalize(void *ctx);

/* ncclProfile* mask for the events selected by NPKIT_PLUGIN_EVENTS (npkit_cfg.plugin_events)
 * that ABI version abi knows. */
int npkit_plugin_nccl_mask(uint32_t plugin_events, unsigned abi);

#endif
