/* Recovering the events of a killed process from its event pool file (include/npkit/pool_file.h)
 * into its log: what the process had recorded but its writer had not appended yet.
 *
 * The pool is the one kept by a process that is gone (its lock is free), on this host, of this
 * user; its log is the one the pool names (same pid, same clock base) and was not closed.  An
 * incomplete block at the log's end (the process died inside a write) is cut off first; a block
 * the writer was appending when it died counts as written if it is complete in the log (the pool
 * says where it starts), else its events are recovered: none is lost and none comes twice.  The
 * events are appended as packed blocks in each thread's order, then the threads' final counters
 * (COUNTERS) and a RECOVERED block; the pool file is then marked and removed, which gives its
 * memory back.
 *
 * Used by the `npkit` tool before it reads a log, and by the library at a process's end for the
 * pools of other processes (a rank the OOM killer took, a job ended with SIGKILL).  Never prints;
 * a pool file is input like any other: every size in it is checked before it is used. */
#ifndef NPKIT_POOL_RECOVER_H
#define NPKIT_POOL_RECOVER_H

#include <stddef.h>
#include <stdint.h>

/* npkit_recovered_rec.by */
#define NPKIT_RECOVERED_BY_TOOL "npkit"
#define NPKIT_RECOVERED_BY_LIBRARY "library"

typedef struct npkit_pool_recovery {
  uint64_t events;     /* recovered into the log */
  uint64_t chunks;
  uint64_t cut_bytes;  /* an incomplete block removed from the log's end */
  uint32_t threads;
  int32_t pid;         /* the process that died */
  char log_path[1024];
  char pool_path[256];
} npkit_pool_recovery;

/* What a pool file holds, read without changing it (`npkit info`, before or instead of a recovery). */
typedef struct npkit_pool_summary {
  int owner_alive;         /* its process still holds the owner's lock */
  uint32_t state;          /* NPKIT_POOL_RECORDING, _CLOSED, _RECOVERED */
  int32_t pid;
  uint64_t pending_events; /* recorded and not in the log (a write under way counted as not) */
  uint32_t pending_threads, pending_chunks;
} npkit_pool_summary;
/* 0, or -1 with why not (no such file, not a pool, damaged). */
int npkit_pool_inspect(const char *pool_path, npkit_pool_summary *s, char *err, size_t errlen);

/* This host's boot id (/proc/sys/kernel/random/boot_id) into out (NUL terminated); 0, or -1 with
 * out "" where the kernel does not say. */
int npkit_pool_boot_id(char *out, size_t len);

/* The pool the log at log_path names (its POOL block), when there is one to recover.  1: events
 * were recovered (rec says what), 0: nothing to do (no pool named, another host's, gone, its
 * process still runs, nothing left in it), -1: a message in err (rec->pool_path says which). */
int npkit_pool_recover_log(const char *log_path, const char *by, npkit_pool_recovery *rec, char *err, size_t errlen);

/* The same for the pool file at pool_path, into the log it names.  Same returns; 0 also when that
 * log no longer exists (its folder was removed): the pool, whose events have nowhere to go, is
 * removed then. */
int npkit_pool_recover_file(const char *pool_path, const char *by, npkit_pool_recovery *rec, char *err, size_t errlen);

/* Every pool file of this user in dir whose process is gone: recovered, and `said` called for each
 * one that gave events (err NULL) or failed (err set).  A file of a pool's name that is no pool (the
 * remains of a process killed while it created its pool) is removed once it is a minute old, without
 * a word.  Returns how many gave events. */
int npkit_pool_recover_dir(const char *dir, const char *by,
                           void (*said)(void *ctx, const char *log, const npkit_pool_recovery *rec, const char *err),
                           void *ctx);

#endif
