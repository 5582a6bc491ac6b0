/* Notes: warnings and facts the trace keeps (NOTE blocks) as well as printing them (diag.h), so
 * that whoever reads the trace later learns what the job's stderr said.  Before the log is
 * attached, and after a failure of the log, a note is only printed. */
#ifndef NPKIT_NOTES_H
#define NPKIT_NOTES_H

#include "log_writer.h"

/* Longest text kept; the printed line is cut at the diag line's length. */
#define NPKIT_NOTE_MAX 2048

/* Where notes go from now on (NULL: printed only). */
void npkit_notes_attach(npkit_log_writer *log);

/* level: an npkit_level (diag.h). */
void npkit_note(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
