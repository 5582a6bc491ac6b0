/* What the report's scan keeps for the hang analysis (report_hang.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "report_hang.h"

int npkit_hang_scan_init(npkit_hang_scan *s, size_t n_members, size_t n_logs) {
  memset(s, 0, sizeof *s);
  s->members = calloc(n_members ? n_members : 1, sizeof *s->members);
  s->logs = calloc(n_logs ? n_logs : 1, sizeof *s->logs);
  if (s->members == NULL || s->logs == NULL) {
    npkit_hang_scan_free(s);
    return -1;
  }
  s->n_members = n_members;
  s->n_logs = n_logs;
  for (size_t i = 0; i < n_members; i++) s->members[i].entered = s->members[i].failed_at = -1;
  return 0;
}

void npkit_hang_scan_free(npkit_hang_scan *s) {
  for (size_t i = 0; s->logs != NULL && i < s->n_logs; i++) free(s->logs[i].items);
  free(s->members);
  free(s->logs);
  memset(s, 0, sizeof *s);
}

void npkit_hang_scan_call(npkit_hang_scan *s, uint32_t member, const npkit_event *ev) {
  const npkit_ev_api *a = &ev->u.api;
  if (member >= s->n_members) return;
  uint64_t seq = a->seq != NPKIT_NO_SEQ ? a->seq : (a->flags & NPKIT_API_SEQ_AT) ? a->aux : NPKIT_NO_SEQ;
  if (seq == NPKIT_NO_SEQ || seq > INT64_MAX) return;
  npkit_hang_member_scan *m = &s->members[member];
  if ((int64_t)seq > m->entered) m->entered = (int64_t)seq;
  int failed = a->seq == NPKIT_NO_SEQ;
  if (failed && (m->failed_at < 0 || (int64_t)seq < m->failed_at)) {
    m->failed_at = (int64_t)seq;
    m->failed_result = a->result;
  }
  npkit_hang_call *c = &m->window[m->n_calls++ % NPKIT_HANG_WINDOW];
  *c = (npkit_hang_call){.seq = seq, .count = a->count, .start_ns = ev->start_ns, .end_ns = ev->end_ns,
                         .fn = ev->func, .datatype = a->datatype, .redop = a->redop, .root = a->peer,
                         .result = a->result};
}

int npkit_hang_scan_item(npkit_hang_scan *s, uint32_t log, uint32_t member, const npkit_event *ev) {
  if (log >= s->n_logs) return 0;
  npkit_hang_log_scan *l = &s->logs[log];
  uint32_t dump = ev->u.inflight.dump;
  if (dump < l->dump) return 0; /* an earlier snapshot: the latest one tells */
  if (dump > l->dump) {         /* a later one: it replaces what was kept */
    l->dump = dump;
    l->n_items = l->items_omitted = 0;
    l->snapshot_ns = ev->end_ns;
  }
  if (l->n_items == NPKIT_HANG_ITEMS) {
    l->items_omitted++;
    return 0;
  }
  if (NPKIT_GROW(l->items, l->cap_items, l->n_items + 1, 8) != 0) return -1;
  l->items[l->n_items++] = (npkit_hang_item){*ev, member};
  return 0;
}

void npkit_hang_scan_flight(npkit_hang_scan *s, uint32_t log, const npkit_event *ev) {
  if (log >= s->n_logs) return;
  npkit_hang_log_scan *l = &s->logs[log];
  const npkit_ev_flight *f = &ev->u.flight;
  if (f->trigger == NPKIT_FLIGHT_HANG) l->hang_dumps++;
  if (f->dump < l->dump) return;
  if (f->dump > l->dump) { /* a dump without items: nothing was in flight then */
    l->dump = f->dump;
    l->n_items = l->items_omitted = 0;
  }
  l->snapshot_ns = ev->end_ns;
  l->trigger = f->trigger;
  l->signal = f->signal;
  l->overwritten = f->events_overwritten;
}
