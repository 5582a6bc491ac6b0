/*
 * Reader of the raw dump files that NCCL builds with NPKit's patch (microsoft/NPKit's for NCCL
 * 2.17.1, and forward ports that keep its files) write into NPKIT_DUMP_DIR, shared by
 * `npkit convert` and the preloaded library.
 *
 * Layers, each usable alone:
 *  - the event table: id (8 bits) -> name and role (ENTRY, EXIT, TIME_SYNC_*, point event); the
 *    table of the 2.17.1 patch is built in, a fork's npkit_event.h can replace or extend it;
 *  - the dump directory: which ranks, GPU buffers and CPU channels exist, and each rank's clocks;
 *  - the converter: streams every buffer file in fixed-size blocks (memory does not depend on the
 *    size of the dump), converts timestamps to CLOCK_REALTIME nanoseconds with exact integer
 *    arithmetic, pairs ENTRY and EXIT events and hands complete slices to a callback.
 *
 * Nothing here prints or exits: fatal problems are returned as a status with a message, and
 * per-rank problems (a bad clock file, a truncated buffer, missing TIME_SYNC events) are reported
 * through the diagnostic callback and counted, while the rest of the dump is still converted.
 */
#ifndef NPKIT_DUMP_H
#define NPKIT_DUMP_H

#include <stddef.h>
#include <stdint.h>

/* One event in a dump file: type (8 bits), size (32), rsvd (24), timestamp (64), little endian. */
#define NPKIT_DUMP_EVENT_BYTES 16
#define NPKIT_DUMP_NUM_IDS 256
/* Longest event name kept (without the NPKIT_EVENT_ prefix), including the terminating NUL. */
#define NPKIT_DUMP_NAME_MAX 96
/* Ranks, buffer and channel numbers in file names must be below this. */
#define NPKIT_DUMP_MAX_INDEX (1u << 24)
/* A header file larger than this is not an npkit_event.h. */
#define NPKIT_DUMP_MAX_HEADER_BYTES (16u << 20)

typedef enum npkit_dump_status {
  NPKIT_DUMP_OK = 0,
  NPKIT_DUMP_EIO = -1,     /* a file or the directory cannot be opened or read */
  NPKIT_DUMP_EFORMAT = -2, /* bad header text, bad clock value, bad argument */
  NPKIT_DUMP_ENOMEM = -3,
  NPKIT_DUMP_ENOENT = -4,   /* the directory holds no dump files (of the selected ranks) */
  NPKIT_DUMP_ESTOPPED = -5, /* a callback asked to stop */
} npkit_dump_status;

/* ---- event table ---- */

typedef enum npkit_dump_role {
  NPKIT_ROLE_UNKNOWN = 0,   /* id not in the table */
  NPKIT_ROLE_ENTRY,         /* name ends in _ENTRY */
  NPKIT_ROLE_EXIT,          /* name ends in _EXIT */
  NPKIT_ROLE_POINT,         /* any other name: an instant */
  NPKIT_ROLE_TIME_SYNC_CPU, /* carries the host clock; starts a new time base in a GPU buffer */
  NPKIT_ROLE_TIME_SYNC_GPU, /* carries the GPU clock at the same moment */
  NPKIT_ROLE_INVALID,       /* NPKIT_EVENT_INVALID: a record that was never written */
} npkit_dump_role;

typedef struct npkit_dump_event_table {
  char name[NPKIT_DUMP_NUM_IDS][NPKIT_DUMP_NAME_MAX]; /* without "NPKIT_EVENT_"; "" if unknown */
  uint8_t role[NPKIT_DUMP_NUM_IDS];                   /* npkit_dump_role */
  /* Pairing key: for an ENTRY its own id; for an EXIT the id of the ENTRY with the same kind name
   * (the name without _ENTRY/_EXIT), or its own id if there is none. */
  uint8_t kind[NPKIT_DUMP_NUM_IDS];
  /* Length of the kind name: name[kind] up to kind_len is e.g. "ALL_REDUCE_RING". */
  uint8_t kind_len[NPKIT_DUMP_NUM_IDS];
  unsigned n_defined;
} npkit_dump_event_table;

/* The table of NPKit's npkit-for-nccl-2.17.1-1.diff (also used for 2.18). */
void npkit_dump_table_builtin(npkit_dump_event_table *t);

typedef enum npkit_dump_header_mode {
  NPKIT_HEADER_REPLACE = 0, /* the header is the whole table (what a fork's npkit_event.h is) */
  NPKIT_HEADER_EXTEND = 1,  /* the header adds to / overrides the table it is applied to */
} npkit_dump_header_mode;

/* Applies the `#define NPKIT_EVENT_<NAME> <id>` lines of a C header to t.  Ids may be decimal,
 * hex (0x..) or octal, optionally in parentheses and with U/L suffixes; comments are skipped;
 * other lines (include guards, code, other macros) are ignored.  Errors, with `name:line:` in
 * the message: an id that is not an integer or does not fit 8 bits, one name with two ids, one id
 * with two names, a name too long, NUL bytes, no NPKIT_EVENT_ definition at all.  On error t is
 * left unchanged.  `name` is used in messages only. */
int npkit_dump_table_parse_header(npkit_dump_event_table *t, const char *text, size_t len, npkit_dump_header_mode mode,
                                  const char *name, char *err, size_t errlen);
/* The same, reading the header from a file. */
int npkit_dump_table_load_header(npkit_dump_event_table *t, const char *path, npkit_dump_header_mode mode, char *err,
                                 size_t errlen);
/* Recomputes role, kind and kind_len from the names (after editing names by hand). */
void npkit_dump_table_finish(npkit_dump_event_table *t);
/* Id of a name (without prefix), or -1. */
int npkit_dump_table_find(const npkit_dump_event_table *t, const char *name);

/* ---- clocks and time conversion ---- */

typedef struct npkit_dump_clock {
  uint64_t gpu_khz;          /* SM clock rate in kHz (cudaDeviceProp.clockRate) */
  uint64_t cpu_num, cpu_den; /* host clock period = num/den seconds */
} npkit_dump_clock;

/* Parses the text of a clock file: an unsigned decimal integer, surrounding white space allowed.
 * Returns 0, or NPKIT_DUMP_EFORMAT with a message (empty, not a number, negative, too large). */
int npkit_dump_parse_uint(const char *text, size_t len, uint64_t *value, char *err, size_t errlen);
/* Checks that the values are plausible: GPU 1 MHz..10 GHz, host clock 1 Hz..10 GHz. */
int npkit_dump_check_clock(const npkit_dump_clock *c, char *err, size_t errlen);

/* Host clock ticks -> ns (ticks × num/den s), rounded to nearest.  0, or -1 if the result does
 * not fit in int64. */
int npkit_dump_cpu_ns(const npkit_dump_clock *c, uint64_t ticks, int64_t *ns);
/* base_ns + (ticks - base_ticks) × 1e6 / gpu_khz, rounded to nearest (halves away from zero).
 * 0, or -1 if the result does not fit in int64. */
int npkit_dump_gpu_ns(const npkit_dump_clock *c, int64_t base_ns, uint64_t base_ticks, uint64_t ticks, int64_t *ns);

/* ---- dump directory ---- */

typedef enum npkit_dump_source {
  NPKIT_SOURCE_GPU = 0, /* gpu_events_rank_<r>_buf_<i> */
  NPKIT_SOURCE_CPU = 1, /* cpu_events_rank_<r>_channel_<c> */
} npkit_dump_source;

typedef struct npkit_dump_file {
  uint32_t rank;
  uint32_t index; /* buffer or channel */
  uint8_t source; /* npkit_dump_source */
  uint64_t size;  /* bytes, at discovery */
} npkit_dump_file;

typedef struct npkit_dump_rank {
  uint32_t rank;
  size_t first_file, n_files; /* its files in npkit_dump.files: GPU buffers, then CPU channels */
  size_t n_gpu, n_cpu;        /* files of each kind */
  uint64_t gpu_bytes, cpu_bytes;
  npkit_dump_clock clock;
  int clock_ok;          /* all three clock files present and plausible */
  char clock_error[256]; /* why not, when clock_ok is 0 */
} npkit_dump_rank;

typedef struct npkit_dump {
  char *dir;
  npkit_dump_file *files; /* sorted by rank, source, index */
  size_t n_files;
  npkit_dump_rank *ranks; /* sorted by rank; every rank with an event file or a clock file */
  size_t n_ranks;
  uint64_t total_bytes;
  uint64_t n_empty_files;
  uint64_t n_bad_names;   /* dump-like names with an index too large or leading zeros */
  uint64_t n_not_regular; /* dump names that are not regular files */
} npkit_dump;

/* Lists a dump directory and reads the clock files.  Fails only if the directory cannot be read,
 * memory is short, or there is no gpu_events_* / cpu_events_* file at all; a rank with bad clock
 * files is kept with clock_ok = 0 and its reason. */
int npkit_dump_open(const char *dir, npkit_dump **out, char *err, size_t errlen);
/* Frees a dump of npkit_dump_open, or one built by hand of malloc'd dir, files and ranks. */
void npkit_dump_close(npkit_dump *d);
const npkit_dump_rank *npkit_dump_find_rank(const npkit_dump *d, uint32_t rank);
/* The order of npkit_dump.files (rank, source, index), for qsort. */
int npkit_dump_file_cmp(const void *a, const void *b);
/* Whether rank is one of ranks[0..n), sorted ascending (a selection of ranks). */
int npkit_dump_rank_listed(const uint32_t *ranks, size_t n, uint32_t rank);

/* The numbers of an event file's name, "gpu_events_rank_<r>_buf_<i>" or
 * "cpu_events_rank_<r>_channel_<c>" (decimal, no sign, no leading zero, below
 * NPKIT_DUMP_MAX_INDEX).  0 on a match, -1 for any other name, -2 for a name of that form whose
 * numbers this reader refuses. */
int npkit_dump_parse_event_name(const char *name, uint32_t *rank, npkit_dump_source *source, uint32_t *index);

/* Reads the three clock files of rank r->rank in the dump folder dfd (an open directory) into
 * r->clock and sets r->clock_ok, or leaves in r->clock_error which file failed and why.  Each file
 * is opened non-blocking and must be a regular file: a FIFO or a device under a clock file's name
 * is "not a regular file", never a read that waits. */
void npkit_dump_read_clocks(int dfd, npkit_dump_rank *r);

/* ---- conversion ---- */

typedef enum npkit_dump_slice_type {
  NPKIT_SLICE_COMPLETE = 0,       /* ENTRY + EXIT */
  NPKIT_SLICE_UNPAIRED_ENTRY = 1, /* an ENTRY whose EXIT never came (end_ns = start_ns) */
  NPKIT_SLICE_UNPAIRED_EXIT = 2,  /* an EXIT without an open ENTRY (start_ns = end_ns) */
  NPKIT_SLICE_POINT = 3,          /* an event that is neither ENTRY nor EXIT */
} npkit_dump_slice_type;

/* Set when the GPU buffer had no TIME_SYNC_CPU event before this event: times are then
 * nanoseconds since the rank's first GPU event, not CLOCK_REALTIME. */
#define NPKIT_SLICE_UNALIGNED 1u

typedef struct npkit_dump_slice {
  uint32_t rank;
  uint32_t buffer;  /* GPU buffer or CPU channel */
  uint32_t lane;    /* slices on one lane of one buffer nest properly (CPU: never overlap) */
  uint8_t source;   /* npkit_dump_source */
  uint8_t type;     /* npkit_dump_slice_type */
  uint8_t flags;    /* NPKIT_SLICE_UNALIGNED */
  uint8_t id;       /* ENTRY id (COMPLETE, UNPAIRED_ENTRY) or the event's id */
  const char *name; /* COMPLETE: the kind name ("ALL_REDUCE_RING"); others: the event name */
  size_t name_len;  /* not NUL terminated for COMPLETE */
  int64_t start_ns, end_ns;
  uint32_t size, rsvd;             /* of the EXIT (or the single event); rsvd is the slot on CPU */
  uint32_t entry_size, entry_rsvd; /* of the ENTRY (COMPLETE only) */
  uint64_t seq;                    /* COMPLETE: n-th slice of this kind on this buffer, from 0 */
} npkit_dump_slice;

typedef struct npkit_dump_counters {
  uint64_t files;  /* non-empty event files read */
  uint64_t bytes;  /* bytes of events read */
  uint64_t events; /* 16-byte records read */
  uint64_t slices; /* ENTRY/EXIT pairs */
  uint64_t point_events;
  uint64_t unpaired_entries;
  uint64_t unpaired_exits;
  uint64_t unknown_ids;    /* records with an id the table does not name (skipped) */
  uint64_t invalid_events; /* NPKIT_EVENT_INVALID records (skipped) */
  uint64_t out_of_order;   /* records earlier than the record before them in the same buffer */
  uint64_t time_sync_cpu, time_sync_gpu;
  uint64_t unaligned_events; /* GPU records converted without a TIME_SYNC_CPU base */
  uint64_t bad_times;        /* records whose time does not fit in int64 ns (skipped) */
  uint64_t truncated_files;  /* size not a multiple of 16: the partial record is ignored */
  uint64_t unreadable_files;
  uint64_t skipped_ranks;    /* selected ranks not converted because of their clock files */
  uint64_t stack_overflows;  /* open ENTRYs pushed out by NPKIT_DUMP_MAX_OPEN (counted unpaired) */
  uint64_t warnings, errors; /* diagnostics issued */
} npkit_dump_counters;

/* Limits that keep memory bounded for hostile input: open ENTRYs per kind per GPU buffer, open
 * slots per CPU channel, lanes per GPU buffer. */
#define NPKIT_DUMP_MAX_OPEN 1024
#define NPKIT_DUMP_MAX_OPEN_SLOTS 65536
#define NPKIT_DUMP_MAX_GPU_LANES 16

typedef enum npkit_dump_severity {
  NPKIT_DIAG_WARNING = 1, /* the output is complete but deserves attention */
  NPKIT_DIAG_ERROR = 2,   /* part of the dump could not be converted */
} npkit_dump_severity;

typedef struct npkit_dump_info {
  int64_t base_ns;   /* earliest CLOCK_REALTIME time found by a quick scan of each file's
                        first block (exact for dumps whose buffers are in time order) */
  int has_aligned;   /* some events have CLOCK_REALTIME times (base_ns is meaningful) */
  int has_unaligned; /* some GPU buffers lack TIME_SYNC_CPU */
} npkit_dump_info;

typedef struct npkit_dump_callbacks {
  /* Called once before the first slice. */
  int (*begin)(void *user, const npkit_dump_info *info);
  /* Every slice, buffer after buffer (all slices of one buffer are delivered together). */
  int (*slice)(void *user, const npkit_dump_slice *s);
  /* Warnings and per-rank errors; the message names the rank and file. */
  void (*diag)(void *user, npkit_dump_severity severity, const char *message);
  void *user;
} npkit_dump_callbacks; /* a callback that returns nonzero stops the conversion */

typedef struct npkit_dump_options {
  const npkit_dump_event_table *table; /* NULL: the built-in one */
  const uint32_t *ranks;               /* sorted list of ranks to convert; NULL: all */
  size_t n_ranks;
  size_t block_bytes; /* read size, rounded to 16 bytes; 0: 1 MiB */
} npkit_dump_options;

/* Converts the selected ranks of an opened dump.  Returns 0 when everything selected was read
 * (diagnostics may still have been issued: see counters->errors), or a status < 0 with a message
 * (memory, a stopping callback, no selected rank present). */
int npkit_dump_convert(const npkit_dump *d, const npkit_dump_options *opts, const npkit_dump_callbacks *cb,
                       npkit_dump_counters *counters, char *err, size_t errlen);

/* Converts one buffer held in memory, as if it were the file of (rank, source, index), with the
 * given clock and, for unaligned GPU events, anchor_ticks as time zero.  Used for buffers that never
 * reach a file and by the fuzz tests.  The begin callback is not called.  Returns 0,
 * NPKIT_DUMP_EFORMAT for an implausible clock, or the statuses of npkit_dump_convert(). */
int npkit_dump_convert_memory(const npkit_dump_event_table *table, const npkit_dump_clock *clock, uint32_t rank,
                              npkit_dump_source source, uint32_t index, uint64_t anchor_ticks, const void *data,
                              size_t len, const npkit_dump_callbacks *cb, npkit_dump_counters *counters, char *err,
                              size_t errlen);

/* "rank 3 GPU buf 5" style label of a file, for messages. */
void npkit_dump_file_label(char *out, size_t outlen, uint32_t rank, npkit_dump_source source, uint32_t index);

#endif /* NPKIT_DUMP_H */
