/*
 * The text of a MACHINE block (include/npkit/event_log.h, "The MACHINE block"): records of one
 * line each, "KIND key=value ...", values %XX-escaped so that lines split at spaces.  The writer
 * builds the text in a growing buffer (the library's machine source); the reader walks it line by
 * line (the snapshot parser, machine_info.c).  Nothing here allocates while reading, prints or
 * fails on bad input: a line that makes no sense is skipped.
 */
#ifndef NPKIT_MACHINE_TEXT_H
#define NPKIT_MACHINE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* ---- writing ---- */

typedef struct npkit_mtext {
  char *buf;     /* the text, NUL terminated while len > 0 */
  size_t len, cap;
  int open;      /* a record line is open */
  int failed;    /* memory ran out: the text is incomplete */
} npkit_mtext;

/* Starts a record line (ending the open one). */
void npkit_mtext_record(npkit_mtext *t, const char *kind);
void npkit_mtext_str(npkit_mtext *t, const char *key, const char *value);
void npkit_mtext_strn(npkit_mtext *t, const char *key, const char *value, size_t n);
void npkit_mtext_u64(npkit_mtext *t, const char *key, uint64_t value);
void npkit_mtext_i64(npkit_mtext *t, const char *key, int64_t value);
void npkit_mtext_bool(npkit_mtext *t, const char *key, int value); /* yes / no */
/* Appends the complete lines of another text (its open line is ended first). */
void npkit_mtext_append(npkit_mtext *t, npkit_mtext *lines);
/* Ends the open line; the text is then complete lines. */
void npkit_mtext_end(npkit_mtext *t);
void npkit_mtext_free(npkit_mtext *t);

/* ---- reading ---- */

#define NPKIT_MTEXT_MAX_FIELDS 32
#define NPKIT_MTEXT_MAX_LINE 8192 /* longer lines are skipped */

typedef struct npkit_mtext_line {
  const char *kind;
  size_t n;
  const char *key[NPKIT_MTEXT_MAX_FIELDS];
  const char *value[NPKIT_MTEXT_MAX_FIELDS]; /* decoded, NUL terminated (a %00 ends it early) */
  char buf[NPKIT_MTEXT_MAX_LINE + 1];
} npkit_mtext_line;

/* The next record of text[0..len) from *pos (0 at the start): 1 with *line filled, 0 at the end
 * (the text's end or its first NUL byte, the padding).  Empty and overlong lines are skipped;
 * fields beyond NPKIT_MTEXT_MAX_FIELDS are dropped. */
int npkit_mtext_next(const char *text, size_t len, size_t *pos, npkit_mtext_line *line);
/* The value of key in the line, NULL when absent (the first of repeated keys). */
const char *npkit_mtext_get(const npkit_mtext_line *line, const char *key);

#endif /* NPKIT_MACHINE_TEXT_H */
