/*
 * An append-only byte store whose older part goes to a temporary file: what an analysis of
 * thousands of ranks keeps until every log has been read (job_instances.c), without its memory
 * growing with the events of the job.
 *
 * Bytes are appended at the end of one logical stream and read back at any offset.  The newest
 * bytes stay in memory; once more than `memory_max` are held, they are written to a file created
 * in the folder given (or $TMPDIR, or /tmp) and unlinked at once, so nothing is left behind
 * however the tool ends.  When no file can be created or written (read-only folder, full disk)
 * everything stays in memory: the store is slower to outgrow, never wrong.  One thread.
 */
#ifndef NPKIT_JOB_SPILL_H
#define NPKIT_JOB_SPILL_H

#include <stddef.h>
#include <stdint.h>

/* In memory until this many bytes (then to the file). */
#define NPKIT_SPILL_MEMORY_DEFAULT (16u << 20)

typedef struct npkit_spill {
  int fd;                /* the file; -1 none yet, -2 none to be had */
  uint64_t file_len;     /* bytes [0, file_len) of the stream are in the file */
  unsigned char *mem;    /* bytes [file_len, file_len + len) */
  size_t len, cap;
  size_t memory_max;
  const char *dir;       /* NULL: $TMPDIR or /tmp */
} npkit_spill;

void npkit_spill_init(npkit_spill *s, size_t memory_max, const char *dir);
void npkit_spill_free(npkit_spill *s);

/* The stream's length: where the next append lands. */
static inline uint64_t npkit_spill_size(const npkit_spill *s) {
  return s->file_len + s->len;
}

/* Room for n more bytes at the end of the stream: a pointer to write them to, then
 * npkit_spill_commit(n).  NULL when memory is short. */
unsigned char *npkit_spill_reserve(npkit_spill *s, size_t n);
/* The n bytes written after npkit_spill_reserve() become part of the stream; the memory part
 * may move to the file. */
void npkit_spill_commit(npkit_spill *s, size_t n);

/* n bytes of the stream from offset off into dst.  0, or -1 (outside the stream, or the file
 * could not be read). */
int npkit_spill_read(const npkit_spill *s, uint64_t off, void *dst, size_t n);

#endif /* NPKIT_JOB_SPILL_H */
