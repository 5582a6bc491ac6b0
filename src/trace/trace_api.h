/*
 * Formatting of NCCL API calls (NPKIT_EV_API events) and group slices as Chrome trace events: the
 * hot path of rendering.  Everything that does not change from one event to the next (the
 * function's name and class, the communicator's label and identity) is formatted once into
 * fragments, so an event costs a few copies and integer conversions.
 */
#ifndef NPKIT_TRACE_API_H
#define NPKIT_TRACE_API_H

#include <stdint.h>

#include "json_writer.h"
#include "log_reader.h"
#include "nccl_names.h"
#include "trace_tracks.h"

typedef struct npkit_comm_frag {
  uint32_t local_id;
  npkit_frag args;   /* ,"comm":"…","comm_id":"0x…","comm_rank":r,"comm_nranks":n */
  npkit_frag label;  /* "comm 1f2e3d4c (rank 3/4)" with its quotes */
} npkit_comm_frag;

typedef struct npkit_api_fmt {
  npkit_trace_ctx ctx;      /* pid, time base and offset */
  npkit_frag head[NPKIT_FN_COUNT]; /* {"name":"ncclX","cat":"nccl_api","ph":"X","pid":P,"tid": */
  npkit_frag cls[NPKIT_FN_COUNT];  /* ,"args":{"class":"coll" */
  const npkit_log_reader *r; /* the log: its communicators are looked up there */
  npkit_comm_frag *comms;   /* one per communicator of the log, in its order (by local_id) */
  size_t n_comms;
  size_t last_comm;         /* index of the latest lookup: calls cluster on one communicator */
  const struct npkit_stack_fmt *stacks; /* call stacks (trace_stacks.h): args.stack and sf; NULL */
} npkit_api_fmt;

/* Returns 0, or -1 if memory is short. */
int npkit_api_fmt_init(npkit_api_fmt *f, const npkit_log_reader *r, int64_t pid, uint64_t base_ns,
                       int64_t offset_ns);
void npkit_api_fmt_free(npkit_api_fmt *f);


/* Writes the call as one "X" element of the enclosing array. */
void npkit_api_fmt_event(npkit_api_fmt *f, npkit_json *w, const npkit_event *ev);
/* The same with more members appended to its args: `extra` is JSON text of the form
 * ,"key":value... (at most NPKIT_API_EXTRA_MAX bytes, else ignored). */
#define NPKIT_API_EXTRA_MAX 1024
void npkit_api_fmt_event_extra(npkit_api_fmt *f, npkit_json *w, const npkit_event *ev,
                               const char *extra, size_t extra_len);
/* Writes an ncclGroup slice on thread_index's track. */
void npkit_api_fmt_group(npkit_api_fmt *f, npkit_json *w, uint32_t thread_index, uint64_t group,
                         uint64_t start_ns, uint64_t end_ns, uint64_t calls);
/* Writes the label of communicator local_id as a JSON string value ("comm local 7" if unknown). */
void npkit_api_fmt_comm_label(npkit_api_fmt *f, npkit_json *w, uint32_t local_id);

/* "comm 1f2e3d4c (rank 3/4)" for a known communicator; needs 64 bytes. */
void npkit_comm_label(char *buf, size_t len, const npkit_comm_rec *c);

#endif /* NPKIT_TRACE_API_H */
