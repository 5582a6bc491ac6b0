/* The completion path: completed CUPTI buffers → GPU events in the event log.
 *
 * Each drain takes every buffer CUPTI has handed back since the last one and reads its records in
 * order: EXTERNAL_CORRELATION records (CUPTI correlation id → npkit external id) feed the map, and
 * kernels, copies and memsets get the description of the NCCL call that launched them
 * (cupti_corr.h) and are appended to the log in EVENTS blocks.  Activity whose correlation record
 * has not been read yet, or whose call is still running (its description is published when it
 * returns), is held and tried again at the end of the drain and at later ones, so the result does
 * not depend on the order in which CUPTI fills and returns buffers; the final drain writes whatever
 * still waits.
 *
 * GPU events go straight to the log rather than through the per-thread recorder: they are produced
 * in bulk on one thread, already batched, and carry their own counters (source NPKIT_SRC_CUPTI). */
#ifndef NPKIT_CUPTI_DRAIN_H
#define NPKIT_CUPTI_DRAIN_H

#include <stdint.h>

#include "log_writer.h"

/* Where events go; NULL detaches (later records are discarded). */
void npkit_cupti_drain_attach(npkit_log_writer *log);

typedef enum npkit_drain_mode {
  NPKIT_DRAIN_EARLY = 0,   /* CUPTI is short of buffers: process what it handed back so far */
  NPKIT_DRAIN_FLUSHED = 1, /* right after a flush */
  NPKIT_DRAIN_FINAL = 2,   /* the last drain: nothing may wait any more */
} npkit_drain_mode;

/* Processes the completed buffers.  Activity that has no correlation record yet waits until every
 * buffer CUPTI had been given when the activity's own buffer came back has been read (the record,
 * written at the launch, is in one of them), at most a few seconds; the final drain waits for
 * nothing. */
void npkit_cupti_drain(npkit_drain_mode mode);

typedef struct npkit_cupti_counts {
  uint64_t kernels, memcpys, memsets; /* stored in the log */
  uint64_t attributed;   /* of those, tied to an NCCL call */
  uint64_t untimed;      /* kernels CUPTI could not time */
  uint64_t calls_lost;   /* tied to a call whose description was overwritten */
  uint64_t write_failed; /* events the log did not take */
  uint64_t discarded;    /* records that arrived after the log was closed */
  uint64_t cupti_dropped;/* records CUPTI lost (no buffer, device buffer full) */
  uint64_t held_call;    /* activity tied to its call after waiting for the call to return */
  uint64_t held_record;  /* ... after waiting for its correlation record */
  uint64_t api_records;  /* driver/runtime API records read (they carry the correlation) */
} npkit_cupti_counts;

void npkit_cupti_drain_counts(npkit_cupti_counts *c);

#endif
