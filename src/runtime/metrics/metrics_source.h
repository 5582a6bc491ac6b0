/* The live metrics (NPKIT_METRICS=inspector,prometheus): what the log takes is watched as it is
 * written (a tap on the log writer, on the writer and CUPTI threads, never on a calling thread),
 * folded into completed operations (src/metrics/metrics_ops.h), and every NPKIT_METRICS_INTERVAL_S
 * seconds the source's own thread writes what completed since the last dump: NCCL Inspector's JSON
 * lines and a Prometheus textfile in NPKIT_METRICS_DIR (default: the trace folder).  The last dump
 * is written when the source is detached, which every end of the process that finishes the log
 * passes through (exit, a stop signal, _exit); after a SIGKILL `npkit metrics` writes the same
 * files from the log.  A failure to write is one note; the job and its log go on. */
#ifndef NPKIT_METRICS_SOURCE_H
#define NPKIT_METRICS_SOURCE_H

#include "source.h"

extern const npkit_source_ops npkit_source_metrics;

#endif
