/* The process's STRING table for names that events refer to by id: mark names and the symbolised
 * frames of call stacks.  Ids are process unique and handed out from 1 (the GPU source numbers its
 * kernel names from NPKIT_STRING_ID_GPU_BASE, so the two never meet).
 *
 * Interning looks a name up without a lock, so a mark named the same way a million times costs a
 * hash and a compare; only the first use of a name takes a mutex and appends a STRING block, so
 * that the name is in the log even if the process is killed later. */
#ifndef NPKIT_STACK_STRTAB_H
#define NPKIT_STACK_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "log_writer.h"

/* Distinct interned names kept; later new names get id 0 (rendered as unnamed). */
#define NPKIT_STRTAB_MAX_NAMES 4096
/* Longer names are cut to this many bytes. */
#define NPKIT_STRTAB_MAX_NAME 255

/* Where STRING blocks of interned names go; NULL detaches (before the log is closed: once this
 * returns no thread touches the old writer any more). */
void npkit_strings_attach_log(npkit_log_writer *log);

/* A fresh id, for strings the caller writes itself (frames at exit). */
uint32_t npkit_string_id_new(void);

/* The id of `text` (NUL terminated), storing it on first use.  0 when the table is full or memory
 * is short. */
uint32_t npkit_string_intern(const char *text);

#endif
