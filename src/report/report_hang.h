/*
 * Hangs: which rank, which communicator, which collective, and where inside it.
 *
 * The scan hands every collective call (with its sequence number, also the one a failed call was
 * made at: NPKIT_API_SEQ_AT), every item of the libraries' in-flight snapshots (NPKIT_EV_INFLIGHT)
 * and every dump (NPKIT_EV_FLIGHT) to the hang tracker; per rank of each communicator it keeps the
 * last collective entered, the first one that failed, the last NPKIT_HANG_WINDOW calls (their
 * operation, size, datatype, root) and the work the log's latest snapshot found in flight.
 *
 * The analysis (report_hang_find.c) then finds, per communicator, the first collective some rank
 * did not complete: the one after the lowest "completed" of its ranks, where a rank completed what
 * it entered unless its snapshot holds work of an earlier collective or a call of one failed.
 * Ranks that never entered it are missing (also those without any log); ranks that entered it and
 * did not finish it wait in it (every rank waits once one is missing: a collective needs them
 * all); a different operation, count, datatype, reduction or root at the same sequence number is
 * a mismatch (a desync); for the waiting ranks the snapshot says where they are stuck (a call that
 * has not returned, a kernel that never started, a kernel channel, a network step and its peer),
 * and the ranks stuck on their own side (their kernel never started while the others' did, a
 * network step waiting for their own GPU or their network, or the peer others' receives wait for)
 * are named as the likely culprits.  A collective counts as hung when a rank waited in it for at
 * least NPKIT_HANG_AFTER_NS until its snapshot or the end of its log, or some rank failed in it or
 * disagreed about it: ranks of a live job dumped at slightly different moments are not a hang.
 */
#ifndef NPKIT_REPORT_HANG_H
#define NPKIT_REPORT_HANG_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "npkit/event_log.h"

/* Calls of each rank kept for the comparison across ranks: a rank that ran further ahead than this
 * past the stuck collective (NCCL's launches are asynchronous) shows no mismatch. */
#define NPKIT_HANG_WINDOW 64u
/* Items of one log's latest snapshot kept. */
#define NPKIT_HANG_ITEMS 512u
/* How long a rank must have waited before its collective counts as hung. */
#define NPKIT_HANG_AFTER_NS 1000000000ull
/* "where" lines kept per rank. */
#define NPKIT_HANG_WHERE 4u

/* A collective call as the comparison needs it. */
typedef struct npkit_hang_call {
  uint64_t seq, count, start_ns, end_ns;
  int32_t fn, datatype, redop, root, result;
  uint32_t pad;
} npkit_hang_call;

/* ---- what the scan keeps ---- */

typedef struct npkit_hang_member_scan {
  int64_t entered;         /* highest sequence number entered, -1 */
  int64_t failed_at;       /* lowest one whose call failed, -1 */
  int32_t failed_result;
  uint32_t n_calls;        /* calls seen; the window holds the last NPKIT_HANG_WINDOW */
  npkit_hang_call window[NPKIT_HANG_WINDOW];
} npkit_hang_member_scan;

typedef struct npkit_hang_item {
  npkit_event ev;          /* the NPKIT_EV_INFLIGHT event */
  uint32_t member;         /* job member, NPKIT_JOB_NONE when its communicator is unknown */
} npkit_hang_item;

typedef struct npkit_hang_log_scan {
  uint32_t dump;           /* the latest dump seen (items are of it) */
  uint64_t snapshot_ns;    /* its time */
  uint32_t trigger;        /* its NPKIT_FLIGHT_*, 0 if the log has none */
  int32_t signal;
  uint64_t overwritten;    /* ring: events lost before it */
  uint32_t hang_dumps;     /* dumps the watchdog asked for */
  npkit_hang_item *items;
  size_t n_items, cap_items, items_omitted;
} npkit_hang_log_scan;

typedef struct npkit_hang_scan {
  npkit_hang_member_scan *members; /* by job member */
  size_t n_members;
  npkit_hang_log_scan *logs;       /* by job log */
  size_t n_logs;
} npkit_hang_scan;

/* For the job's members and logs; 0 or -1 (memory). */
int npkit_hang_scan_init(npkit_hang_scan *s, size_t n_members, size_t n_logs);
/* A collective call of `member` (class coll, with a sequence number or NPKIT_API_SEQ_AT). */
void npkit_hang_scan_call(npkit_hang_scan *s, uint32_t member, const npkit_event *ev);
/* An in-flight item or a dump of log `log`; member as above.  0 or -1 (memory). */
int npkit_hang_scan_item(npkit_hang_scan *s, uint32_t log, uint32_t member, const npkit_event *ev);
void npkit_hang_scan_flight(npkit_hang_scan *s, uint32_t log, const npkit_event *ev);
void npkit_hang_scan_free(npkit_hang_scan *s);

/* ---- what the analysis finds ---- */

typedef enum npkit_hang_status {
  NPKIT_HANG_DONE = 0,     /* completed the collective */
  NPKIT_HANG_MISSING,      /* its log shows it never entered it */
  NPKIT_HANG_NO_LOG,       /* no log at all: a process that wrote nothing (dead, or not given) */
  NPKIT_HANG_WAITING,      /* entered it and did not finish it */
  NPKIT_HANG_FAILED,       /* its call of it returned an error */
} npkit_hang_status;

typedef struct npkit_hang_rank {
  int32_t rank;            /* in the communicator */
  int32_t log;             /* job log, -1 without one */
  npkit_hang_status status;
  uint8_t mismatched;      /* called something else at this sequence number */
  uint8_t stuck;           /* likely culprit: stuck on its own side (see above) */
  uint8_t has_call;        /* `call` holds its call of the collective */
  int64_t last_entered, last_completed; /* -1: none */
  uint64_t since_ns;       /* when it entered the collective (call or snapshot), 0 */
  uint64_t waited_ns;      /* until its snapshot or the end of its log */
  npkit_hang_call call;
  char where[NPKIT_HANG_WHERE][176];
  uint32_t n_where;
} npkit_hang_rank;

typedef struct npkit_hang {
  uint32_t comm;           /* job communicator */
  unsigned fn;             /* the collective (npkit_fn), from the ranks that entered it */
  uint64_t seq;
  uint64_t since_ns;       /* the earliest entry of a waiting rank */
  uint64_t stuck_ns;       /* the longest wait */
  npkit_hang_rank *ranks;  /* one per comm rank */
  size_t n_ranks;
  char title[640];
} npkit_hang;

typedef struct npkit_hang_progress {
  uint32_t comm;
  size_t n_ranks;
  int32_t *log;            /* per comm rank: job log, -1 */
  int64_t *entered, *completed; /* per comm rank, -1: none */
} npkit_hang_progress;

typedef struct npkit_hangs {
  npkit_hang *h;           /* ordered: the earliest stuck first */
  size_t n, cap;
  npkit_hang_progress *progress; /* per communicator with collectives */
  size_t n_progress, cap_progress;
} npkit_hangs;

void npkit_hangs_free(npkit_hangs *h);
/* The ranks of a hang with a status (or, for status < 0, mismatched (-1) or stuck (-2)), as
 * "1", "0 and 2", "0, 2 and 5"; "" for none.  Returns buf. */
char *npkit_hang_rank_list(const npkit_hang *h, int status, char *buf, size_t len);

#endif /* NPKIT_REPORT_HANG_H */
