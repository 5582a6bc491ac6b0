#include "notes.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "clock.h"
#include "diag.h"

static npkit_log_writer *_Atomic notes_log;

void npkit_notes_attach(npkit_log_writer *log) { atomic_store(&notes_log, log); }

void npkit_note(int level, const char *fmt, ...) {
  struct {
    npkit_note_rec rec;
    char text[NPKIT_NOTE_MAX];
  } note;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(note.text, sizeof note.text, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof note.text) n = (int)sizeof note.text - 1;
  npkit_diag((npkit_level)level, "%s", note.text);
  npkit_log_writer *log = atomic_load(&notes_log);
  if (log == NULL) return;
  note.rec.time_ns = npkit_now_ns();
  note.rec.level = (uint32_t)level;
  note.rec.length = (uint32_t)n;
  npkit_logw_append(log, NPKIT_BLOCK_NOTE, 1, &note, sizeof note.rec + (size_t)n);
}
