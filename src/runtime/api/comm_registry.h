/* Communicators learnt from the init/split/shrink calls, looked up by ncclComm_t on the hot path
 * without a lock (open addressing over atomic keys; inserts are rare and take a mutex).  Entries are
 * never freed: a destroyed communicator is only marked, and a handle value that NCCL reuses simply
 * points to the newer entry. */
#ifndef NPKIT_COMM_REGISTRY_H
#define NPKIT_COMM_REGISTRY_H

#include <stdatomic.h>
#include <stdint.h>

#include "log_writer.h"

/* Cache-line aligned: communicators driven from different threads must not share the line of
 * their sequence counters. */
typedef struct npkit_comm {
  _Alignas(64) uint32_t local_id;
  int rank, nranks;
  uint64_t comm_id;
  _Atomic uint64_t coll_seq;    /* next collective sequence number */
  _Atomic uint64_t *send_seq;   /* [nranks]: next send sequence to each peer */
  _Atomic uint64_t *recv_seq;   /* [nranks]: next receive sequence from each peer */
  _Atomic uint32_t splits;      /* ordinal of the next split/shrink of this communicator */
  _Atomic int alive;
} npkit_comm;

typedef struct npkit_comm_info {
  const void *handle;
  uint64_t comm_id;
  int rank, nranks, device;
  uint32_t parent;       /* local id, 0 if none */
  uint16_t created_by;   /* npkit_fn */
  const char *name;      /* may be NULL */
} npkit_comm_info;

/* Sets where COMM blocks go. */
void npkit_comms_attach_log(npkit_log_writer *log);
/* Registers (or re-registers) a communicator and logs its COMM block.  NULL when out of memory or
 * when the table is full (more than 16k communicators alive in one process). */
npkit_comm *npkit_comm_register(const npkit_comm_info *info);
/* Lock-free; NULL for an unknown handle. */
npkit_comm *npkit_comm_find(const void *handle);
/* Lock-free, from any thread; NULL for an unknown id (or one beyond the first 16k). */
npkit_comm *npkit_comm_by_id(uint32_t local_id);
/* Number of communicators registered so far. */
uint32_t npkit_comm_count(void);

#endif
