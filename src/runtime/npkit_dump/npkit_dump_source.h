/* The NPKit dump source: NCCL builds with NPKit's patch (microsoft/NPKit's for NCCL 2.17.1, and
 * forward ports that keep its files) write raw GPU and network event buffers into NPKIT_DUMP_DIR
 * when a communicator is torn down (commDestroySync, reached from ncclCommDestroy,
 * ncclCommFinalize and ncclCommAbort).  When that variable is set, the library reads the dump right
 * after the real ncclCommDestroy or ncclCommAbort returned (a teardown call, never the hot path) and
 * once more at exit (which finds what ncclCommFinalize wrote), converts it with the shared parser
 * (src/npkit_dump/npkit_dump.h: exact CLOCK_REALTIME nanoseconds, explicit ENTRY/EXIT pairing) and
 * appends the slices to the event log as NPKIT_EV_NPKIT_DUMP_SLICE events, each reading summarised by
 * an NPKIT_EV_NPKIT_DUMP_READ event, with COUNTERS of source NPKIT_SRC_NPKIT_DUMP and the parser's
 * warnings (missing TIME_SYNC events, bad clock files...) as NOTE blocks.
 *
 * Which files: NPKit names them after a rank number only.  After destroying a communicator the
 * process reads the files of its rank in that communicator; if none changed, those of the other
 * ranks it holds in its communicators (NPKit names its dump after the communicator initialised
 * last).  A file is read only when it changed since this process last looked at it and is not
 * older than the process, so nothing is merged twice and a previous job's dump is left alone.
 * Memory does not depend on the dump's size (the parser streams); NPKIT_DUMP_MAX_MB bounds what
 * one process reads in total.
 *
 * NPKit keeps one state per process, which every communicator's setup re-initialises
 * (NpKit::Init in devCommSetup): with two communicators alive at once the dump holds the GPU
 * events of the one set up last and the network events of both, and only the first teardown
 * dumps.  A reading after such an overlap is flagged (NPKIT_DUMP_READ_SHARED) and a note says it
 * once. */
#ifndef NPKIT_NPKIT_DUMP_SOURCE_H
#define NPKIT_NPKIT_DUMP_SOURCE_H

#include <stdint.h>

#include "source.h"

/* The source's entry in the life cycle's table.  Attaching starts it for the log (nothing happens
 * when NPKIT_DUMP_DIR is unset or NPKIT_DUMP_MAX_MB is 0): events without a time base are placed
 * at the log's clock base, and files older than it are a previous job's.  The finish reads what is
 * new (unless it runs on the writer thread on a signal, where time is short) and writes the final
 * notes and counters. */
extern const npkit_source_ops npkit_source_npkit_dump;

/* The process holds `rank` in a new communicator: NPKit may name a dump after it. */
void npkit_dump_source_comm_created(int rank);

/* The real ncclCommDestroy (aborted = 0) or ncclCommAbort (1) returned `result` for the
 * communicator with local id `comm` and this process's `rank` in it (0 and -1: unknown), on the
 * host thread with index `thread`; `ended`: the call ended a communicator that
 * npkit_dump_source_comm_created counted.  Reads the dump NCCL has just written. */
void npkit_dump_source_comm_gone(uint32_t comm, int rank, int ended, int aborted, int result,
                                 uint32_t thread);

#endif
