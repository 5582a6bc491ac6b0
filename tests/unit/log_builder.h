/*
 * Writes syntactically valid event logs (include/npkit/event_log.h) with chosen content, for tests:
 * any events, communicators, threads, notes; a later writer's longer header and records; raw blocks
 * of any type and size to build corrupt or unknown blocks.  Truncation is done on the finished file
 * with the block offsets the builder reports.
 */
#ifndef NPKIT_TEST_LOG_BUILDER_H
#define NPKIT_TEST_LOG_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "npkit/event_log.h"

typedef struct npkit_lb_options {
  uint64_t clock_base_ns;
  uint64_t mono_base_ns;
  int32_t pid, rank, world_size, local_rank;
  uint32_t nccl_header_version;
  const char *host, *launcher, *library_version;
  uint32_t version;      /* written as is; 1: no CHECK blocks (the format of npkit-preload 0.1, 0.2) */
  uint32_t header_size;  /* > 256: zero padding after the known header (a later writer) */
  uint32_t record_size;  /* > 96: zero padding after each event */
  uint32_t endian;
  int packed;            /* events as EVENTS_PACKED blocks (version 5), by the builder's own encoder */
} npkit_lb_options;

/* A block as written: its type, the offset of its header and the offset just after its payload
 * (after its CHECK block, which belongs to it, in logs of version 2 and later). */
typedef struct npkit_lb_block {
  uint16_t type;
  uint64_t offset, end;
} npkit_lb_block;

typedef struct npkit_lb npkit_lb;

/* Defaults: the current version (blocks with their CHECK blocks), base 1764671234567890123 ns,
 * pid 4242, rank 3 of 4 (local 1), host "node1", launcher "ompi", NCCL 2.28.9. */
void npkit_lb_defaults(npkit_lb_options *o);

/* NULL on error (errno set). */
npkit_lb *npkit_lb_create(const char *path, const npkit_lb_options *o);
/* Flushes and closes; returns 0, or -1 if any write failed. */
int npkit_lb_close(npkit_lb *b);

/* One block each (EVENTS, or EVENTS_PACKED with the option `packed`).  Return 0 or -1. */
int npkit_lb_events(npkit_lb *b, const npkit_event *ev, size_t n);
int npkit_lb_comms(npkit_lb *b, const npkit_comm_rec *c, size_t n);
int npkit_lb_threads(npkit_lb *b, const npkit_thread_rec *t, size_t n);
int npkit_lb_process(npkit_lb *b, const npkit_process_rec *p);
int npkit_lb_counters(npkit_lb *b, const npkit_counter_rec *c, size_t n);
int npkit_lb_strings(npkit_lb *b, const uint32_t *ids, const char *const *texts, const size_t *lengths, size_t n);
int npkit_lb_note(npkit_lb *b, uint64_t time_ns, uint32_t level, const char *text, size_t len);
int npkit_lb_end(npkit_lb *b, const npkit_end_rec *e);
/* A MACHINE block holding `len` bytes of text, padded with NULs to 8. */
int npkit_lb_machine(npkit_lb *b, const char *text, size_t len);
/* Any block: the header says count and size; payload (size bytes, may be NULL for zeros) follows
 * unpadded, so a size that is not a multiple of 8 is written as such. */
int npkit_lb_raw_block(npkit_lb *b, uint16_t type, uint32_t count, const void *payload, uint32_t size);

/* Logs of version 2 and later get a CHECK block after every block; off: the blocks that follow
 * get none (damage for tests). */
void npkit_lb_set_checksums(npkit_lb *b, int on);

/* Where the next block will start. */
uint64_t npkit_lb_offset(const npkit_lb *b);
/* The blocks written so far, in order. */
const npkit_lb_block *npkit_lb_blocks(const npkit_lb *b, size_t *n);

/* An NPKIT_EV_API event with "none" in every optional field (peer, datatype, redop -1, seq
 * NPKIT_NO_SEQ). */
npkit_event npkit_lb_api_event(unsigned fn, uint32_t thread, uint64_t start_ns, uint64_t end_ns);

/* The whole of a file the test wrote or rendered, NUL-terminated (a text can be searched as a
 * string); its length in *len unless len is NULL.  NULL when it cannot be read.  Free it. */
char *npkit_lb_read_file(const char *path, size_t *len);

#endif
