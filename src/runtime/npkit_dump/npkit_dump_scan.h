/* Which NPKit dump files are new for this process (see npkit_dump_source.h).
 *
 * NCCL writes its dump with file names that carry only a rank number, into a folder that every
 * process of the job usually shares, and rewrites the same names when it dumps again.  A scan
 * therefore lists the folder, keeps the event files of the wanted ranks that changed since this
 * process last looked at them (size, inode or modification time) and are not older than the
 * process (a previous job's), and builds an npkit_dump (npkit_dump.h) of just those files with
 * their ranks' clocks, ready for npkit_dump_convert() (and freed by npkit_dump_close()).  Only the wanted ranks' files are looked at
 * beyond their names, so a folder shared by thousands of ranks costs one listing. */
#ifndef NPKIT_NPKIT_DUMP_SCAN_H
#define NPKIT_NPKIT_DUMP_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "npkit_dump.h"

/* What was seen of every file looked at so far. */
typedef struct npkit_dump_seen npkit_dump_seen;

npkit_dump_seen *npkit_dump_seen_new(void);
void npkit_dump_seen_free(npkit_dump_seen *s);

typedef struct npkit_dump_scan_opts {
  const uint32_t *ranks;  /* ranks to look at, sorted, distinct */
  size_t n_ranks;
  int64_t not_before_ns;  /* files last modified before this (CLOCK_REALTIME) are left alone */
  uint64_t max_bytes;     /* new files are taken whole, in order, while their sizes fit */
} npkit_dump_scan_opts;

typedef struct npkit_dump_scan_result {
  npkit_dump *dump;          /* the new non-empty files and their ranks; NULL if there are none */
  uint64_t bytes;            /* their size */
  uint64_t files_over_limit; /* new files left out because of max_bytes */
  uint64_t bytes_over_limit;
  uint64_t stale_files;      /* files of the wanted ranks older than not_before_ns */
  uint64_t new_empty_files;  /* new files without events (NPKit writes every buffer) */
} npkit_dump_scan_result;

/* Scans dir.  Every file looked at is remembered in `seen`, whether it was taken or not, so that
 * it is looked at again only once it changes.  Returns 0 (res->dump may be NULL), or -1 with a
 * message when the folder cannot be read or memory is short. */
int npkit_dump_scan_new_files(const char *dir, npkit_dump_seen *seen, const npkit_dump_scan_opts *opts,
                         npkit_dump_scan_result *res, char *err, size_t errlen);

#endif
