/*
 * The flight recorder's events in a trace (docs/trace-format.md, "Dumps and work in flight"), on
 * one track of the process, "npkit in flight at dumps" (tid band 999):
 *  - NPKIT_EV_INFLIGHT → an "X" slice from when the work started (or last moved) to the snapshot,
 *    named after its operation ("AllReduce #14 in flight"), with args what, where, seq, comm, rank,
 *    nranks, channel, peer, step, dump and hang (the work the watchdog found stuck);
 *  - NPKIT_EV_FLIGHT → an instant "npkit dump 2 (hang)" with args trigger, reason, signal, dump,
 *    in_flight, and for a ring its size and the events it kept and overwrote.
 */
#ifndef NPKIT_TRACE_FLIGHT_H
#define NPKIT_TRACE_FLIGHT_H

#include "trace_source.h"

#endif /* NPKIT_TRACE_FLIGHT_H */
