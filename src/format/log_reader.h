/*
 * Reader of the binary event log (include/npkit/event_log.h).
 *
 * Opening a log validates the header and makes one pass over the block headers, reading every
 * block except the event payloads: communicators, threads, identity, counters, notes, strings and
 * the END record are then available as plain sorted arrays.  Events are read afterwards, in file
 * order, by an iterator that holds a small fixed buffer, so memory does not depend on the number of
 * events.
 *
 * A corrupt block (one whose checksum does not match, in logs of version 2 and later, or whose
 * header or records make no sense) is skipped: the reader looks for the next block magic that
 * starts an intact block and goes on from there, and counts what it skipped (`skipped_blocks`,
 * `skipped_bytes`).  A log cut short (a killed process, a full disk) is read up to its last
 * complete block: when no intact block follows a bad one, the log ends there and `truncated` says
 * why.  Every size and count in the file is checked against the file's size before anything is
 * allocated or read.  Errors are returned with a message, never printed.
 */
#ifndef NPKIT_LOG_READER_H
#define NPKIT_LOG_READER_H

#include <stddef.h>
#include <stdint.h>

#include "event_pack.h"
#include "npkit/event_log.h"
#include "npkit/pool_file.h"

typedef enum npkit_reader_status {
  NPKIT_READER_OK = 0,
  NPKIT_READER_EIO = -1,     /* the file cannot be opened or read */
  NPKIT_READER_EFORMAT = -2, /* not an npkit log, or a header this reader cannot use */
  NPKIT_READER_ENOMEM = -3,
} npkit_reader_status;

/* Notes kept in memory; later ones are counted in notes_omitted. */
#define NPKIT_READER_MAX_NOTES 10000
/* Distinct communicators, threads, counters or strings kept; a log with more is treated as
 * corrupt from the block that exceeds it (real logs have a few hundred at most). */
#define NPKIT_READER_MAX_KEYS (1u << 20)
/* A non-event block larger than this is treated as corrupt (real ones are a few KiB). */
#define NPKIT_READER_MAX_META_BLOCK (64u << 20)

typedef struct npkit_log_note {
  uint64_t time_ns;
  uint32_t level;  /* 1 error, 2 warning, 3 info */
  uint32_t length; /* bytes of text, which is also NUL terminated */
  char *text;
} npkit_log_note;

typedef struct npkit_log_string {
  uint32_t id;
  uint32_t length;
  char *text;      /* NUL terminated copy */
} npkit_log_string;

/* The times of an event block's events, known from the full scan (checksummed plain blocks, and
 * packed blocks, whose check decodes them): the earliest start and the latest end. */
typedef struct npkit_block_span {
  uint64_t offset;       /* of the block's header */
  uint64_t first_ns, last_ns;
} npkit_block_span;

/* An event filter of the iterator (npkit_reader_filter): 1 keeps the event. */
typedef int (*npkit_reader_keep_fn)(void *ctx, const npkit_event *ev);

/* A stretch of the file the scan skipped: from a corrupt block to the next intact one. */
typedef struct npkit_reader_skip {
  uint64_t from, to;
} npkit_reader_skip;

typedef struct npkit_reader_cursor {
  int packed;            /* decoding the packed block in buf */
  npkit_unpacker unpack;
  uint64_t *lanes, *rec; /* the decoder's state and the event it returns */
  uint64_t next_block;   /* position of the block walk (npkit_reader_next_block) */
  uint64_t next_record;  /* offset of the next record of the current EVENTS block */
  uint64_t block_left;   /* records of the current block not yet read into buf */
  unsigned char *buf;
  size_t buf_records;    /* capacity of buf in records */
  size_t n, pos;         /* records in buf, and the next one to return */
  npkit_event event;     /* copy when records are longer than npkit_event */
} npkit_reader_cursor;

typedef struct npkit_log_reader {
  char path[256];               /* for messages */
  npkit_log_header header;      /* the fields this build knows; strings NUL terminated */
  uint64_t file_size;           /* at open; nothing beyond it is read */
  uint32_t header_size, record_size;

  /* Identity: the header's, overridden by the latest PROCESS record's known (>= 0) values. */
  int32_t rank, world_size, local_rank, device;
  char rank_source[17];         /* PROCESS source, or the header's launcher */
  int has_process;
  npkit_process_rec process;    /* the latest one */

  /* Latest record per key, sorted by key. */
  npkit_comm_rec *comms;        /* key: local_id */
  size_t n_comms;
  npkit_thread_rec *threads;    /* key: index */
  size_t n_threads;
  npkit_counter_rec *counters;  /* key: (thread, source); COUNTERS are cumulative snapshots */
  size_t n_counters;
  npkit_log_string *strings;    /* key: id */
  size_t n_strings;

  npkit_log_note *notes;        /* in file order */
  size_t n_notes;
  uint64_t notes_omitted;

  int has_end;                  /* an END block was read: the log was closed cleanly */
  npkit_end_rec end;
  int has_pool;                 /* version 6: the process kept its event pool in a file */
  npkit_pool_rec pool;
  uint32_t n_recovered;         /* RECOVERED blocks: events of a killed process recovered from its pool */
  npkit_recovered_rec recovered; /* the latest */
  uint64_t recovered_events;    /* all of them */

  uint64_t n_events;            /* in complete EVENTS and EVENTS_PACKED blocks */
  uint64_t n_blocks;            /* complete blocks */
  uint64_t n_event_blocks;      /* EVENTS and EVENTS_PACKED */
  uint64_t n_packed_blocks;     /* EVENTS_PACKED (version 5) */
  uint64_t event_blocks_read;   /* event blocks (EVENTS and EVENTS_PACKED) the event iterator has
                                   entered since the log was opened: n_event_blocks per pass over
                                   the events (the report's tests count its passes with it) */
  uint64_t n_unknown_blocks;    /* skipped: types this build does not know */
  uint64_t n_machine_blocks;    /* MACHINE blocks (version 3): read by machine_info.h */
  uint64_t n_stack_blocks;      /* STACK blocks: read by stack_table.h */
  uint64_t recorded, dropped;   /* from the counters (or END, when it says more) */

  int truncated;                /* the log ends with an incomplete or corrupt block */
  uint64_t truncated_at;        /* its offset */
  char truncation[128];         /* why, e.g. "incomplete block: 100 of 2896 payload bytes" */
  uint64_t data_end;            /* end of the last complete block */

  int checksums;                /* version 2 and later: every block is followed by its CHECK */
  int newer_version;            /* the log's version is later than NPKIT_LOG_VERSION */
  uint64_t skipped_blocks;      /* corrupt blocks skipped in the middle of the log */
  uint64_t skipped_bytes;       /* bytes they and the garbage around them took */
  uint64_t first_skip_at;       /* offset of the first one */
  char skip_reason[128];        /* why the first one was skipped, e.g. "bad checksum" */
  npkit_reader_skip *skips;     /* the skipped stretches, in file order */
  size_t n_skips;

  npkit_block_span *spans;      /* the event blocks whose span is known, by offset */
  size_t n_spans;
  uint64_t filter_kept;         /* events the filter kept since the last rewind */

  int lazy;                     /* opened by npkit_reader_open_lazy and not completed: event blocks
                                   counted by their headers, not checksummed nor decoded (damage in
                                   them is not yet known); events cannot be read */

  /* private */
  int fd;
  int own_fd;
  npkit_reader_keep_fn keep;
  void *keep_ctx;
  uint64_t filter_lo, filter_hi;
  size_t notes_cap;
  npkit_reader_cursor cursor;
} npkit_log_reader;

/* Opens and scans a log.  On error returns a npkit_reader_status < 0, *out is NULL and err holds
 * a message naming the file. */
int npkit_reader_open(const char *path, npkit_log_reader **out, char *err, size_t errlen);
/* The same on an open descriptor, read with pread(2) only; fd stays the caller's.  `name` is used
 * in messages. */
int npkit_reader_open_fd(int fd, const char *name, npkit_log_reader **out, char *err, size_t errlen);
void npkit_reader_close(npkit_log_reader *r);

/* For a caller that may only need what identifies a log (header, communicators, threads,
 * identity, counters, notes: every block but the events, checked as npkit_reader_open does):
 * event blocks are counted from their headers, without reading them, so a job of thousands of
 * logs is identified at a fraction of the cost.  npkit_reader_complete() makes the full scan on
 * the same descriptor when its events are wanted after all (0 at once if the reader is not lazy;
 * the tables are then those of the full scan, its damage counts included). */
int npkit_reader_open_lazy(const char *path, npkit_log_reader **out, char *err, size_t errlen);
/* same (may be NULL) judges whether the full scan may replace the lazy one (a caller that indexes
 * the lazy tables needs them unchanged); when it says no, r stays lazy and NPKIT_READER_EFORMAT is
 * returned with a message. */
typedef int (*npkit_reader_same_fn)(void *ctx, const npkit_log_reader *lazy, const npkit_log_reader *full);
int npkit_reader_complete(npkit_log_reader *r, npkit_reader_same_fn same, void *ctx, char *err, size_t errlen);

/* Restarts the event iterator at the first event. */
void npkit_reader_rewind(npkit_log_reader *r);
/* For a caller done, for now, with the events of a log whose tables (strings, communicators,
 * threads, counters, notes) it still reads: gives back the iterator's buffers, so that a job of
 * thousands of logs does not hold 256 KiB per log it has read.  The descriptor stays (a log is
 * opened once: a view that reads the events again rewinds, and the buffers come back). */
void npkit_reader_release(npkit_log_reader *r);
/* For a caller done for good with the events and blocks of a log whose tables it still reads:
 * npkit_reader_release(), and the descriptor closed (when the reader opened it), so that a job of
 * thousands of logs does not hold a descriptor per log it has read.  Reading events afterwards
 * fails with NPKIT_READER_EIO. */
void npkit_reader_done(npkit_log_reader *r);
/* Until cleared (keep NULL): the iterator passes over the events keep() refuses, and does not
 * read event blocks whose span lies wholly before lo_ns or after hi_ns (log time; 0 and
 * UINT64_MAX for no bound), so a window of a long log costs the blocks it touches.  keep() must
 * refuse every event outside [lo_ns, hi_ns] (an event outside is one that ends before lo_ns or
 * starts after hi_ns): blocks of unknown span are read and filtered event by event. */
void npkit_reader_filter(npkit_log_reader *r, npkit_reader_keep_fn keep, void *ctx, uint64_t lo_ns, uint64_t hi_ns);
/* Next event in file order: returns 1 and sets *ev (valid until the next call), 0 at the end, or
 * a npkit_reader_status < 0 with a message (the file shrank or changed after it was opened). */
int npkit_reader_next(npkit_log_reader *r, const npkit_event **ev, char *err, size_t errlen);

/* The blocks the scan found intact, in file order, for readers of block types it does not keep
 * (STACK): set *pos to 0 to start; returns 1 with the block's header and the offset of its
 * payload, 0 after the last block, or NPKIT_READER_EIO when the file no longer matches its scan.
 * CHECK blocks and skipped stretches are passed over.  Reads with pread only: the event iterator
 * is undisturbed. */
int npkit_reader_next_block(const npkit_log_reader *r, uint64_t *pos, npkit_block_header *bh, uint64_t *payload);

/* One sentence on what is wrong with the log, for messages and trace metadata: skipped blocks,
 * then truncation ("2 corrupt blocks (4160 bytes) skipped, the first at offset 448: corrupt EVENTS
 * block: bad checksum; truncated at offset 9000: incomplete EVENTS block: 100 of 131072 payload
 * bytes"); "" when nothing is.  Returns buf. */
char *npkit_reader_damage(const npkit_log_reader *r, char *buf, size_t len);

/* For a log of a later version than NPKIT_LOG_VERSION: "event-log format version 3 is newer than
 * this npkit's (2): the parts it does not know are left out"; "" otherwise.  Returns buf. */
char *npkit_reader_version_note(const npkit_log_reader *r, char *buf, size_t len);

/* Position of a communicator (its local id) in r->comms, SIZE_MAX if absent.  `hint` (may be
 * NULL) remembers the latest position found: a log's events name the same communicator in runs. */
size_t npkit_reader_comm_pos(const npkit_log_reader *r, uint32_t local_id, size_t *hint);
/* Lookups by key; NULL if absent. */
const npkit_comm_rec *npkit_reader_comm(const npkit_log_reader *r, uint32_t local_id);
const npkit_thread_rec *npkit_reader_thread(const npkit_log_reader *r, uint32_t index);
const npkit_log_string *npkit_reader_string(const npkit_log_reader *r, uint32_t id);

/* Reads exactly n bytes at off with pread (EINTR retried): 0, or -1 with errno (EIO for a short
 * read, the file having ended).  The one read of every reader of the log's files: the reader
 * itself, the stack table, the merge's spill files. */
int npkit_read_at(int fd, void *buf, size_t n, uint64_t off);

/* Whether a block of this type holds packed events: EVENTS_PACKED in a log of version 5 or later.
 * Versions 3 and 4 of the format were taken by the machine snapshot and the flight recorder before
 * events were packed, so in an
 * earlier log the type is one the reader does not know, skipped by size. */
static inline int npkit_reader_is_packed(const npkit_log_reader *r, unsigned type) {
  return type == NPKIT_BLOCK_EVENTS_PACKED && r->header.version >= NPKIT_LOG_VERSION_PACKED;
}

/* "EVENTS", "COMM", ..., "unknown". */
const char *npkit_block_type_name(unsigned type);

#endif /* NPKIT_LOG_READER_H */
