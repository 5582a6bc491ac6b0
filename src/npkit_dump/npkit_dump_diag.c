#include "npkit_dump_diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void rank_set_flush(npkit_rank_set *s) {
  if (!s->has || s->full) return;
  size_t n = strlen(s->text);
  char part[32];
  if (s->first == s->last)
    snprintf(part, sizeof(part), "%s%u", n ? "," : "", s->first);
  else
    snprintf(part, sizeof(part), "%s%u-%u", n ? "," : "", s->first, s->last);
  if (n + strlen(part) + 4 >= sizeof(s->text)) {
    snprintf(s->text + n, sizeof(s->text) - n, ",...");
    s->full = 1;
    return;
  }
  memcpy(s->text + n, part, strlen(part) + 1);
}

void npkit_rank_set_add(npkit_rank_set *s, uint32_t rank) {
  if (s->has && rank == s->last) return;
  if (s->has && rank == s->last + 1) {
    s->last = rank;
    return;
  }
  rank_set_flush(s);
  s->first = s->last = rank;
  s->has = 1;
}

const char *npkit_rank_set_text(npkit_rank_set *s) {
  rank_set_flush(s);
  s->has = 0;
  return s->text;
}

/* What changed in the counters while one rank was read, recorded per kind of problem. */
void npkit_dump_diags_note_rank(npkit_dump_diags *g, const npkit_dump_counters *before, const npkit_dump_counters *c,
                                uint32_t rank) {
  if (c->unknown_ids > before->unknown_ids) npkit_rank_set_add(&g->unknown, rank);
  if (c->invalid_events > before->invalid_events) npkit_rank_set_add(&g->invalid, rank);
  if (c->unpaired_entries + c->unpaired_exits > before->unpaired_entries + before->unpaired_exits)
    npkit_rank_set_add(&g->unpaired, rank);
  if (c->out_of_order > before->out_of_order) npkit_rank_set_add(&g->out_of_order, rank);
  if (c->bad_times > before->bad_times) npkit_rank_set_add(&g->bad_times, rank);
  if (c->truncated_files > before->truncated_files) npkit_rank_set_add(&g->truncated, rank);
  if (c->stack_overflows > before->stack_overflows) npkit_rank_set_add(&g->overflow, rank);
}

/* The message is formatted here, then handed to emit. */
static void say(npkit_dump_emit_fn emit, void *ctx, npkit_dump_severity sev, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(npkit_dump_emit_fn emit, void *ctx, npkit_dump_severity sev, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  emit(ctx, sev, msg);
}

void npkit_dump_diags_report(npkit_dump_diags *g, const npkit_dump_counters *start, const npkit_dump_counters *c,
                             const npkit_dump_event_table *table, npkit_dump_emit_fn emit, void *ctx) {
  if (g->absent_ranks > 0)
    say(emit, ctx, NPKIT_DIAG_WARNING, "%llu selected rank(s) are not in the dump: %s",
        (unsigned long long)g->absent_ranks, npkit_rank_set_text(&g->absent));
#define UNALIGNED_TAIL                                                                                    \
  "so GPU clock ticks cannot be put on the host clock. Their %llu events were placed relative to the rank's " \
  "first GPU event and marked unaligned: they cannot be compared with CPU events or with other ranks"
  if (g->unaligned_buffers > 0) {
    int table_has_sync = npkit_dump_table_find(table, "TIME_SYNC_CPU") >= 0;
    say(emit, ctx, NPKIT_DIAG_WARNING, "%llu GPU buffer(s) (ranks %s) hold no TIME_SYNC_CPU event: %s, " UNALIGNED_TAIL,
        (unsigned long long)g->unaligned_buffers, npkit_rank_set_text(&g->unaligned),
        table_has_sync ? "the NCCL build lacks -DENABLE_NPKIT_EVENT_TIME_SYNC_CPU and "
                         "-DENABLE_NPKIT_EVENT_TIME_SYNC_GPU (add both to NPKIT_FLAGS)"
                       : "the event table defines no TIME_SYNC_CPU event",
        (unsigned long long)g->unaligned_events);
  }
  /* The build has the flags when a TIME_SYNC_CPU is there: what went wrong is its value, or where
   * the buffer's events start. */
  if (g->bad_sync_buffers > 0)
    say(emit, ctx, NPKIT_DIAG_WARNING,
        "%llu GPU buffer(s) (ranks %s) have TIME_SYNC_CPU events whose host clock value does not convert to "
        "nanoseconds with the rank's cpu_clock_period files (corrupt event files, or clock values from another "
        "clock), " UNALIGNED_TAIL,
        (unsigned long long)g->bad_sync_buffers, npkit_rank_set_text(&g->bad_sync), (unsigned long long)g->bad_sync_events);
  if (g->late_sync_buffers > 0)
    say(emit, ctx, NPKIT_DIAG_WARNING,
        "%llu GPU buffer(s) (ranks %s) have events before their first TIME_SYNC_CPU event (the buffer does not "
        "start at a kernel's beginning), " UNALIGNED_TAIL,
        (unsigned long long)g->late_sync_buffers, npkit_rank_set_text(&g->late_sync), (unsigned long long)g->late_sync_events);
#undef UNALIGNED_TAIL
  if (g->no_sync_gpu_buffers > 0)
    say(emit, ctx, NPKIT_DIAG_WARNING,
        "%llu GPU buffer(s) (ranks %s) have TIME_SYNC_CPU but no TIME_SYNC_GPU events (NCCL built without "
        "-DENABLE_NPKIT_EVENT_TIME_SYNC_GPU): each time base starts at the first event after TIME_SYNC_CPU, as in "
        "NPKit's converter, so GPU times may be early by up to the kernel's start-up time",
        (unsigned long long)g->no_sync_gpu_buffers, npkit_rank_set_text(&g->no_sync_gpu));
  if (c->unknown_ids > start->unknown_ids) {
    char ids[160];
    size_t n = 0;
    int shown = 0, more = 0;
    for (int id = 0; id < NPKIT_DUMP_NUM_IDS; id++) {
      if (!(g->unknown_bits[id / 64] >> (id % 64) & 1)) continue;
      if (shown < 16)
        n += (size_t)snprintf(ids + n, sizeof(ids) - n, "%s0x%02x", shown ? " " : "", id);
      else
        more++;
      shown++;
    }
    if (more) snprintf(ids + n, sizeof(ids) - n, " and %d more", more);
    say(emit, ctx, NPKIT_DIAG_WARNING,
        "%llu events with ids that the event table does not define were skipped (ids %s; ranks %s): if the NCCL "
        "build is a fork of NPKit's patch, give its npkit_event.h as the event header",
        (unsigned long long)(c->unknown_ids - start->unknown_ids), ids, npkit_rank_set_text(&g->unknown));
  }
  if (c->invalid_events > start->invalid_events)
    say(emit, ctx, NPKIT_DIAG_WARNING, "%llu INVALID (id 0) records were skipped (ranks %s)",
        (unsigned long long)(c->invalid_events - start->invalid_events), npkit_rank_set_text(&g->invalid));
  if (c->unpaired_entries + c->unpaired_exits > start->unpaired_entries + start->unpaired_exits)
    say(emit, ctx, NPKIT_DIAG_WARNING,
        "%llu ENTRY events without their EXIT and %llu EXIT events without an open ENTRY (ranks %s): kept as "
        "unpaired events, never matched with another partner",
        (unsigned long long)(c->unpaired_entries - start->unpaired_entries),
        (unsigned long long)(c->unpaired_exits - start->unpaired_exits), npkit_rank_set_text(&g->unpaired));
  if (c->stack_overflows > start->stack_overflows)
    say(emit, ctx, NPKIT_DIAG_WARNING,
        "%llu ENTRY events were given up as unpaired because more than %d were open at once (ranks %s)",
        (unsigned long long)(c->stack_overflows - start->stack_overflows), NPKIT_DUMP_MAX_OPEN,
        npkit_rank_set_text(&g->overflow));
  if (c->out_of_order > start->out_of_order)
    say(emit, ctx, NPKIT_DIAG_WARNING,
        "%llu events are earlier than the event before them in the same buffer (ranks %s)",
        (unsigned long long)(c->out_of_order - start->out_of_order), npkit_rank_set_text(&g->out_of_order));
  if (c->bad_times > start->bad_times)
    say(emit, ctx, NPKIT_DIAG_ERROR,
        "%llu events have timestamps that do not convert to 64-bit nanoseconds and were skipped (ranks %s): "
        "corrupt event files or clock values",
        (unsigned long long)(c->bad_times - start->bad_times), npkit_rank_set_text(&g->bad_times));
  if (c->truncated_files > start->truncated_files)
    say(emit, ctx, NPKIT_DIAG_ERROR,
        "%llu event file(s) are cut short (size not a multiple of 16 bytes; first: %s; ranks %s): the partial "
        "event at their end was ignored",
        (unsigned long long)(c->truncated_files - start->truncated_files), g->truncated_example,
        npkit_rank_set_text(&g->truncated));
}
