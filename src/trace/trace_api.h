/*
 * NCCL API calls (NPKIT_EV_API events) and group slices as trace slices: the hot path of
 * rendering.  Everything that does not change from one event to the next (the function's name
 * and class, the keys, each communicator's label) is interned in the sink once, so an event is an
 * array of typed arguments handed to the sink whole (trace_sink.h).
 */
#ifndef NPKIT_TRACE_API_H
#define NPKIT_TRACE_API_H

#include <stdint.h>

#include "log_reader.h"
#include "nccl_names.h"
#include "trace_sink.h"
#include "trace_tracks.h"

/* The keys of a call's arguments, interned once (npkit_api_fmt.key). */
#define NPKIT_API_KEYS(X)                                                                          \
  X(CLASS, "class") X(FUNC, "func") X(COUNT, "count") X(DATATYPE, "datatype") X(BYTES, "bytes")   \
  X(OP, "op") X(ROOT, "root") X(PEER, "peer") X(COMM, "comm") X(COMM_ID, "comm_id")               \
  X(COMM_RANK, "comm_rank") X(COMM_NRANKS, "comm_nranks") X(SEQ, "seq") X(STREAM, "stream")         \
  X(RESULT, "result") X(GROUP, "group") X(NEW_COMM, "new_comm") X(SIZE, "size")                     \
  X(VERSION, "version") X(USER_TAG, "user_tag") X(MISSING, "missing")                               \
  X(FROM_NCCL_EVENTS, "from_nccl_events") X(STACK, "stack") X(CALLS, "calls")
#define NPKIT_API_KEY_ENUM(id, text) NPKIT_API_KEY_##id,
enum { NPKIT_API_KEYS(NPKIT_API_KEY_ENUM) NPKIT_API_N_KEYS };

typedef struct npkit_api_comm {
  uint32_t local_id;
  npkit_sink_str label; /* "comm 1f2e3d4c (rank 3/4)" */
  npkit_sink_str args;  /* the set comm, comm_id, comm_rank, comm_nranks */
} npkit_api_comm;

/* Values a call names by a word of this build (datatype, reduction, result), interned when first
 * used; beyond the last index the words are those of unknown values. */
#define NPKIT_API_DATATYPES 32
#define NPKIT_API_REDOPS 8
#define NPKIT_API_RESULTS 16

typedef struct npkit_api_fmt {
  npkit_trace_ctx ctx;      /* pid, time base and offset */
  npkit_sink *sink;
  npkit_sink_str name[NPKIT_FN_COUNT]; /* ncclX */
  npkit_sink_str cls[NPKIT_FN_COUNT];  /* its class: coll, p2p, ... */
  npkit_sink_str key[NPKIT_API_N_KEYS];
  npkit_sink_str cat_api, cat_group, group_name;
  npkit_sink_str datatype[NPKIT_API_DATATYPES + 1], redop[NPKIT_API_REDOPS + 1], result[NPKIT_API_RESULTS + 1];
  const npkit_log_reader *r; /* the log: its communicators are looked up there */
  npkit_api_comm *comms;    /* one per communicator of the log, in its order (by local_id) */
  size_t n_comms;
  size_t last_comm;         /* index of the latest lookup: calls cluster on one communicator */
  const struct npkit_stack_fmt *stacks; /* call stacks (trace_stacks.h): args.stack and sf; NULL */
} npkit_api_fmt;

/* Interns what the calls of log r will repeat in sink.  Returns 0, or -1 if memory is short. */
int npkit_api_fmt_init(npkit_api_fmt *f, const npkit_log_reader *r, npkit_sink *sink, int64_t pid,
                       uint64_t base_ns, int64_t offset_ns);
void npkit_api_fmt_free(npkit_api_fmt *f);

/* Writes the call as one slice. */
void npkit_api_fmt_event(npkit_api_fmt *f, npkit_sink *s, const npkit_event *ev);
/* The same with more arguments after its own (at most NPKIT_API_EXTRA_MAX, else none). */
#define NPKIT_API_EXTRA_MAX 16
void npkit_api_fmt_event_extra(npkit_api_fmt *f, npkit_sink *s, const npkit_event *ev, const npkit_sink_arg *extra,
                               size_t n_extra);
/* Writes an ncclGroup slice on thread_index's track. */
void npkit_api_fmt_group(npkit_api_fmt *f, npkit_sink *s, uint32_t thread_index, uint64_t group,
                         uint64_t start_ns, uint64_t end_ns, uint64_t calls);

/* "comm 1f2e3d4c (rank 3/4)" for a known communicator; needs 64 bytes. */
void npkit_comm_label(char *buf, size_t len, const npkit_comm_rec *c);

#endif /* NPKIT_TRACE_API_H */
