/*
 * Findings: what the report tells a user to look at first, ranked by the time at stake (an
 * estimate of the wall-clock time the job would get back if the cause went away), each with its
 * evidence and a concrete next step.  Data-quality findings (lost events, truncated logs,
 * uncertain clock alignment) have no time at stake and come after the timed ones.
 */
#ifndef NPKIT_REPORT_FINDINGS_H
#define NPKIT_REPORT_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

typedef enum npkit_finding_kind {
  NPKIT_FIND_STRAGGLER = 0,  /* one rank arrives last at collectives most often */
  NPKIT_FIND_SYNC_DELAY,     /* arrival spread above the threshold, no single rank to blame */
  NPKIT_FIND_BANDWIDTH,      /* bandwidth falls as sizes grow */
  NPKIT_FIND_EXPOSED_COMM,   /* communication not hidden by computation */
  NPKIT_FIND_BUBBLES,        /* regular idle gaps on a GPU stream */
  NPKIT_FIND_LOST_EVENTS,    /* a source lost more than 3 % of its events */
  NPKIT_FIND_TRUNCATED,      /* a log ends without its END block */
  NPKIT_FIND_MISSING_RANKS,  /* communicators with ranks whose logs were not given */
  NPKIT_FIND_CLOCK,          /* clock alignment failed or is uncertain */
  NPKIT_FIND_NO_GPU,         /* overlap and idle need GPU activity */
  NPKIT_FIND_NO_APP_KERNELS, /* NCCL's own GPU stamps time collectives, the application's kernels are missing */
  NPKIT_FIND_NPKIT_SHARED,   /* NPKit dumps of processes that held several communicators at once */
  /* the machine (report_machine_find.c): its snapshot and sampled counters */
  NPKIT_FIND_PORT,           /* a network port below its peers or its rated width, down, half duplex */
  NPKIT_FIND_NVLINK,         /* NVLinks of a GPU down */
  NPKIT_FIND_SETTINGS,       /* ranks or hosts whose NCCL settings differ */
  NPKIT_FIND_HOST_NAME,      /* host names that do not resolve */
  NPKIT_FIND_FILE_LIMIT,     /* a low open-file limit */
  NPKIT_FIND_LINK_USE,       /* measured busbw against the capacity of the links crossed */
  /* NCCL tuning advice (report_advice.c): settings to test, with the evidence and expected gain */
  NPKIT_FIND_ADVICE_SOCKETS, /* socket transport far below the port's rate */
  NPKIT_FIND_ADVICE_SMALL,   /* many small collectives dominated by latency */
  NPKIT_FIND_ADVICE_CHANNELS,/* few channels on large messages */
  NPKIT_FIND_HANG,           /* a collective some rank did not complete (report_hang.h): ranked first */
} npkit_finding_kind;

typedef struct npkit_finding {
  npkit_finding_kind kind;
  double at_stake_ns;        /* NaN: not a matter of time (data quality) */
  int32_t log;               /* the log (rank) it is about, -1 if none */
  uint32_t comm;             /* the communicator, UINT32_MAX if none */
  uint32_t fn;               /* the operation, 0 if none */
  char title[256];
  char evidence[1024];
  char next_step[768];
  char command[768];         /* the `npkit merge` that shows its evidence, "" when none does */
} npkit_finding;

typedef struct npkit_findings {
  npkit_finding *f;
  size_t n, cap;
} npkit_findings;

/* Appends a finding (title, evidence and next step are copied); returns it, or NULL (memory). */
npkit_finding *npkit_findings_add(npkit_findings *fs, npkit_finding_kind kind, double at_stake_ns);
/* Hangs first (the job makes no progress: nothing else matters until they are gone), then timed
 * findings by decreasing time at stake, then the others in the order they were added. */
void npkit_findings_sort(npkit_findings *fs);
void npkit_findings_free(npkit_findings *fs);
const char *npkit_finding_kind_name(npkit_finding_kind k);
/* 1 for tuning advice: a setting to test, whose time at stake is the gain expected, not promised. */
int npkit_finding_is_advice(npkit_finding_kind k);

/* Appends to a fixed buffer (a finding's evidence), silently cut at its end. */
void npkit_appendf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* NPKIT_REPORT_FINDINGS_H */
