/*
 * Compact records of collective instances, for the joins across ranks (clock alignment,
 * arrival spread) and for attaching GPU times to the table.
 *
 * A member is one rank of one communicator (a process may hold several).  Each member keeps, per
 * sequence number, only what the joins need: the operation, the table row of the call, and one
 * start/end pair (17 bytes), in chunks that are allocated when first touched, so memory follows
 * the number of collectives stored and not the size of the logs.
 *
 * The pair holds the call's CPU times until GPU activity attributed to the same call arrives;
 * from then on it holds the union of that activity (the first start and the last end), whatever
 * order the two kinds of events come in.  A call whose CPU time does not time the collective (in a
 * group, non-blocking) and that has no GPU activity takes no part in the joins.
 *
 * Durations are kept exactly below 2^29 ns (0.5 s); longer ones (hangs) to the microsecond.
 *
 * A member is sealed once its log has been read (npkit_inst_seal): its records are encoded in
 * about 9 bytes each, in sequence order, into a spill (job_spill.h) whose older part is a
 * temporary file, and its chunks are freed.  So the store holds in memory the chunks of the log
 * being read and a few MB of sealed records, whatever the number of events of the job; the walks
 * below read sealed members back a buffer at a time.
 */
#ifndef NPKIT_REPORT_INSTANCES_H
#define NPKIT_REPORT_INSTANCES_H

#include <stddef.h>
#include <stdint.h>

/* Sequence numbers at or above this are refused (a corrupt record must not allocate memory). */
#define NPKIT_INST_MAX_SEQ (1ull << 32)
#define NPKIT_INST_NO_ROW UINT32_MAX

/* Where the times of a collective come from. */
typedef enum npkit_time_source {
  NPKIT_TIME_NONE = 0, /* no timed call: e.g. only calls inside groups, with API events alone */
  NPKIT_TIME_CPU,
  NPKIT_TIME_GPU,
} npkit_time_source;

typedef struct npkit_inst_entry {
  uint32_t member;
  uint32_t row;      /* table row of the call, NPKIT_INST_NO_ROW if the call was not seen */
  uint8_t gpu;       /* times come from GPU activity rather than the API call */
  uint8_t fn;        /* npkit_fn of the collective */
  uint64_t start_ns, end_ns;
} npkit_inst_entry;

typedef struct npkit_inst_store npkit_inst_store;

npkit_inst_store *npkit_inst_create(void);
void npkit_inst_free(npkit_inst_store *s);

/* A new member; its id (0, 1, ...) in *id.  Returns 0 or -1 (memory). */
int npkit_inst_add_member(npkit_inst_store *s, uint32_t *id);

/* The API call of collective `seq` (operation fn < 256, table row, CPU times; timed = 0 when the
 * CPU time is not the collective's).  GPU times already stored are kept.  Returns 0, 1 when seq is
 * out of range (ignored), or -1 when memory is short. */
int npkit_inst_put_call(npkit_inst_store *s, uint32_t member, uint64_t seq, unsigned fn, uint32_t row,
                        uint64_t start_ns, uint64_t end_ns, int timed);
/* GPU activity attributed to collective `seq`: widens the GPU span of the instance.  Returns as
 * npkit_inst_put_call(). */
int npkit_inst_put_gpu(npkit_inst_store *s, uint32_t member, uint64_t seq, unsigned fn, uint64_t start_ns,
                       uint64_t end_ns);

/* The member's records are complete: encoded into the spill and their chunks freed (a put
 * afterwards brings them back).  0, or -1 when memory is short (the chunks then stay). */
int npkit_inst_seal(npkit_inst_store *s, uint32_t member);
/* Sealed bytes kept in memory before they go to a file, and the folder of that file (NULL:
 * $TMPDIR or /tmp).  For tests and benchmarks; the default is NPKIT_SPILL_MEMORY_DEFAULT. */
void npkit_inst_spill_setup(npkit_inst_store *s, size_t memory_bytes, const char *dir);

/* Records stored for a member, and the bytes the store holds in memory. */
uint64_t npkit_inst_count(const npkit_inst_store *s, uint32_t member);
uint64_t npkit_inst_bytes(const npkit_inst_store *s);

/* fn returns 0 to go on; any other value stops the walk and is returned. */
typedef int (*npkit_inst_fn)(void *ctx, uint64_t seq, const npkit_inst_entry *e, size_t n);

/* Calls fn for every record of one member that has times (n = 1), in sequence order.  Returns
 * fn's non-zero value, 0, or -1 when memory is short or the spill cannot be read. */
int npkit_inst_each(const npkit_inst_store *s, uint32_t member, npkit_inst_fn fn, void *ctx);

/* Calls fn once per sequence number that at least one of the members recorded with times, in
 * increasing order, with the entries of those members (at most n_members), in the order of
 * `members`.  Returns fn's non-zero value, 0, or -1 when memory is short or the spill cannot be
 * read. */
int npkit_inst_join(const npkit_inst_store *s, const uint32_t *members, size_t n_members, npkit_inst_fn fn,
                    void *ctx);

#endif /* NPKIT_REPORT_INSTANCES_H */
