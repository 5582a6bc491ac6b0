/* The application's entry points (include/npkit_preload.h): marks on the calling thread's track,
 * and pause/resume of recording.  A mark starts the library like an NCCL call would (the
 * application asked for it); while recording is paused, marks are not stored. */
#define NPKIT_PRELOAD_BUILDING_LIBRARY
#include "npkit_preload.h"

#include "emit.h"
#include "lifecycle.h"
#include "recorder.h"
#include "string_table.h"
#include "window.h"

#define EXPORT __attribute__((visibility("default")))

static void mark(uint16_t kind, const char *name) {
  if (!npkit_recording()) return;
  npkit_thread *t = npkit_thread_self();
  if (t == NULL) return;
  npkit_window_drain(t);
  if (npkit_window_paused()) return;
  npkit_event ev;
  npkit_event_now(&ev, kind);
  ev.u.mark.name = npkit_string_intern(name != NULL ? name : "(null)");
  npkit_emit_on(t, &ev);
}

EXPORT void npkit_mark_begin(const char *name) { mark(NPKIT_EV_MARK_BEGIN, name); }
EXPORT void npkit_mark_end(const char *name) { mark(NPKIT_EV_MARK_END, name); }
EXPORT void npkit_mark_instant(const char *name) { mark(NPKIT_EV_MARK_INSTANT, name); }

static void set_recording(int recording) {
  if (!npkit_recording()) return;
  npkit_window_set(npkit_thread_self(), recording, NPKIT_REC_API);
}

EXPORT void npkit_pause(void) { set_recording(0); }
EXPORT void npkit_resume(void) { set_recording(1); }
