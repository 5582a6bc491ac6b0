/*
 * A job: the event logs of its ranks, each opened once and kept open for the layers above
 * (report, merge), with what the logs say together: who each log is, which hosts they ran on,
 * the communicators and their members (one rank of one communicator), the collective instances
 * the ranks share (job_instances.h) and the clock offsets of the hosts estimated from them.
 *
 * npkit_job_open() reads the logs' metadata only (the reader scans block headers); the events are
 * read by whoever walks them: the report's scan, or npkit_job_scan_collectives() when only the
 * clock alignment is wanted (npkit merge).  Both hand each event to npkit_job_collective(), the
 * one place that decides what a collective instance is.  Nothing here prints or exits.
 */
#ifndef NPKIT_JOB_H
#define NPKIT_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "clock_align.h"
#include "job_instances.h"
#include "log_reader.h"
#include "slots.h"
#include "stats_quantile.h"

/* Sources with loss counters kept per log. */
#define NPKIT_JOB_MAX_SOURCES 8
/* "no communicator / no member" in the per-log maps */
#define NPKIT_JOB_NONE UINT32_MAX

typedef struct npkit_job_loss {
  uint32_t source;      /* npkit_source, or a pseudo source of the layer above */
  uint64_t recorded, dropped;
} npkit_job_loss;

/* One log: one process, usually one rank. */
typedef struct npkit_job_log {
  char *path;
  npkit_log_reader *reader;     /* open until npkit_job_free */
  uint32_t host;
  int32_t rank, world_size, local_rank, pid, device;
  uint64_t clock_base_ns;
  uint64_t events, recorded, dropped;
  int truncated, closed_cleanly;
  int simulated;                /* recorded with NPKIT_SIMULATED (fake NCCL and CUPTI) */
  char truncation[160];
  uint32_t log_version;         /* the format version the log says it has */
  uint64_t skipped_blocks, skipped_bytes; /* corrupt blocks the reader skipped (log_reader.h) */
  npkit_job_loss loss[NPKIT_JOB_MAX_SOURCES];
  uint32_t n_loss;
  /* the log's communicators (index = position in reader->comms): job communicator and member
   * ids, NPKIT_JOB_NONE when unknown */
  uint32_t *comm_of, *member_of;
} npkit_job_log;

typedef struct npkit_job_host {
  char name[64];
  uint32_t n_logs;
  int32_t min_rank;             /* smallest known rank on it, -1 if none */
  npkit_align_host align;
} npkit_job_host;

typedef struct npkit_job_comm {
  uint64_t comm_id;
  int32_t nranks;
  char name[32];
  uint32_t *members;            /* member ids, by comm rank */
  uint32_t n_members;
  uint64_t collectives;         /* collective calls recorded, all ranks */
} npkit_job_comm;

typedef struct npkit_job_member {
  uint32_t comm, log;
  int32_t comm_rank;
} npkit_job_member;

typedef struct npkit_job {
  npkit_job_log *logs;          /* sorted by rank (unknown ranks last, by host and pid) */
  size_t n_logs;
  npkit_job_host *hosts;
  size_t n_hosts;
  npkit_job_comm *comms;        /* in order of first sight */
  size_t n_comms;
  npkit_job_member *members;
  size_t n_members;
  npkit_inst_store *inst;
  uint64_t input_bytes;

  /* clock alignment (npkit_job_align) */
  int align_done;               /* estimated (several hosts, alignment on) */
  npkit_time_source align_source; /* GPU activity or API call ends */
  npkit_align_summary align;
  npkit_quantile host_end_spread; /* end spread of one instance among the ranks of one host */

  char **warnings;              /* about the input (unreadable files, duplicates) */
  size_t n_warnings;

  /* Set before npkit_job_open, or NULL: called for each log that was not closed and names an
   * event pool file (its process may have been killed with events still in the pool); returns 1
   * when it changed the log (recovered them into it: the log is read again), else 0.  So a log
   * closed cleanly is opened once, and a killed one is whole before it is read. */
  int (*recover)(void *ctx, const char *log);
  void *recover_ctx;
  /* Set before npkit_job_open: the logs are opened for their identity only
   * (npkit_reader_open_lazy), for a caller that reads the events of a few of them; it calls
   * npkit_job_complete() on each before reading its events. */
  int lazy;

  /* private */
  size_t cap_hosts, cap_comms, cap_members, cap_warnings;
  npkit_slots comm_index;       /* of comms, by comm_id */
} npkit_job;

/* Expands directories (their *.npkit files, not recursive) and files into a sorted list of log
 * paths.  Returns the count (>= 1), or -1 with a message (nothing found, unreadable folder). */
int npkit_job_inputs(char *const *args, size_t n_args, char ***paths, size_t *n_paths, char *err, size_t errlen);
void npkit_job_free_inputs(char **paths, size_t n);

/* Opens every log once, sorts them by rank, drops duplicates of one process and maps their
 * communicators.  Logs that cannot be read are skipped with a warning; returns 0, or -1 with a
 * message when none could be read or memory is short (then npkit_job_free still applies). */
int npkit_job_open(npkit_job *job, char *const *paths, size_t n_paths, char *err, size_t errlen);
void npkit_job_free(npkit_job *job);

/* Appends a warning about the input.  0 or -1 (memory). */
int npkit_job_warn(npkit_job *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Position of a log's communicator (its local id) in the log's reader->comms; SIZE_MAX if unknown. */
size_t npkit_job_comm_pos(const npkit_job *job, uint32_t log, uint32_t local_id, size_t *hint);

/* One event of log `log` as the collective instances see it: an API call of a collective (with
 * `row`, the caller's index for it, or NPKIT_INST_NO_ROW) or a kernel attributed to one.  `pos` is
 * the position of the event's communicator (npkit_job_comm_pos) or SIZE_MAX.  Counts the
 * communicator's collectives.  Returns 0, or -1 when memory is short. */
int npkit_job_collective(npkit_job *job, uint32_t log, const npkit_event *ev, size_t pos, uint32_t row);

/* The full scan of a log opened lazily (a no-op otherwise): its events checked, its damage
 * warned about, its counts updated.  0, or -1 with a message (the log can then not be read). */
int npkit_job_complete(npkit_job *job, uint32_t log, char *err, size_t errlen);

/* Log `log` has been read to its end: its members' instances are complete and sealed
 * (job_instances.h), so that the memory of the instances does not grow with the logs read.
 * 0 or -1 (memory). */
int npkit_job_log_read(npkit_job *job, uint32_t log);

/* Walks the events of every log (of those with which[i] set, when which is not NULL) into
 * npkit_job_collective(), for a caller that needs the instances and nothing else; completes
 * lazily opened logs first.  0, or -1 with a message. */
int npkit_job_scan_collectives(npkit_job *job, const unsigned char *which, char *err, size_t errlen);

/* How the report and `npkit merge --collective` name a communicator in a command: its name when
 * no other communicator of the job has it, else the first 8 hex digits of its id when those are
 * unique, else its whole id (16 hex digits).  Returns buf. */
char *npkit_job_comm_ref(const npkit_job *job, uint32_t comm, char *buf, size_t len);
/* The communicator a reference names (a name, 8 or 16 hex digits, with or without 0x): its
 * index, or UINT32_MAX when none or several match. */
uint32_t npkit_job_find_comm(const npkit_job *job, const char *ref);

/* Member ids of a communicator, in comm-rank order, without the ranks that have no log; out has
 * room for c->n_members.  Returns the count. */
size_t npkit_job_comm_members(const npkit_job_comm *c, uint32_t *out);

/* Host clock offsets from the ends of shared collectives when `estimate` (and there are several
 * hosts), and with `spread` the end spread among the ranks of one host.  0 or -1 (memory). */
int npkit_job_align(npkit_job *job, int estimate, int spread);

/* "rank 3" or "host:pid" */
void npkit_job_log_label(const npkit_job *job, size_t log, char *buf, size_t len);

#endif /* NPKIT_JOB_H */
