/* CUPTI activity records → npkit events (kernel, memcpy, memset), without the NCCL call: the
 * record's own fields only.  Read through the CUDA 13 layouts (Kernel10, Memcpy6, MemcpyPtoP4,
 * Memset4); only fields that older record versions (CUDA 11 and 12) hold at the same offsets are
 * read, so those versions are read correctly too. */
#ifndef NPKIT_CUPTI_RECORDS_H
#define NPKIT_CUPTI_RECORDS_H

#include <cupti.h>

#include "log_writer.h"
#include "npkit/event_log.h"

/* Fills ev (kind, times, device, stream, correlation, graph and kind-specific fields; the call
 * fields zeroed, call_seq NPKIT_NO_SEQ) and returns 1 for a kernel, memcpy or memset record; 0 for
 * any other record.  A new kernel name goes to `log` as a STRING block. */
int npkit_cupti_record_event(const CUpti_Activity *rec, npkit_event *ev, npkit_log_writer *log);

#endif
