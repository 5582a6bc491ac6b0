#include "merge_filter.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "trace_tracks.h"


/* ---- parsing ---- */

static int parse_int(const char *s, size_t n, int32_t *v) {
  if (n == 0 || n > 9) return -1;
  int32_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i])) return -1;
    x = x * 10 + (s[i] - '0');
  }
  *v = x;
  return 0;
}

int npkit_merge_parse_ranks(npkit_merge_filter *f, const char *s, char *err, size_t errlen) {
  const char *p = s;
  f->has_ranks = f->selects_logs = 1;
  f->n_ranges = 0;
  while (*p) {
    size_t n = strcspn(p, ",");
    const char *dash = memchr(p, '-', n);
    int32_t lo, hi;
    int bad = dash ? parse_int(p, (size_t)(dash - p), &lo) || parse_int(dash + 1, n - (size_t)(dash - p) - 1, &hi)
                   : parse_int(p, n, &lo);
    if (!dash) hi = lo;
    if (bad || lo > hi) {
      snprintf(err, errlen, "--ranks takes ranks and ranges such as 0-3,8, not '%s'", s);
      return -1;
    }
    if (f->n_ranges == NPKIT_MERGE_MAX_RANK_RANGES) {
      snprintf(err, errlen, "--ranks: at most %d ranges", NPKIT_MERGE_MAX_RANK_RANGES);
      return -1;
    }
    f->rank_lo[f->n_ranges] = lo;
    f->rank_hi[f->n_ranges++] = hi;
    p += n;
    if (*p == ',') p++;
  }
  if (f->n_ranges == 0) {
    snprintf(err, errlen, "--ranks needs at least one rank");
    return -1;
  }
  return 0;
}

int npkit_merge_parse_ops(npkit_merge_filter *f, const char *s, char *err, size_t errlen) {
  const char *p = s;
  f->has_ops = 1;
  memset(f->op, 0, sizeof(f->op));
  int any = 0;
  while (*p) {
    char name[64];
    size_t n = strcspn(p, ",");
    if (n == 0 || n >= sizeof(name)) goto bad;
    memcpy(name, p, n);
    name[n] = '\0';
    npkit_fn fn = npkit_fn_from_name(name);
    if (fn != NPKIT_FN_NONE) {
      f->op[fn] = 1;
    } else {
      int cls = npkit_class_from_name(name);
      if (cls < 0) {
        snprintf(err, errlen, "--ops: '%s' is neither an NCCL function (see 'npkit api') nor a class "
                 "(coll, p2p, group, comm, mem, query, misc)", name);
        return -1;
      }
      for (unsigned k = 1; k < NPKIT_FN_COUNT; k++)
        if ((int)npkit_fn_class_of(k) == cls) f->op[k] = 1;
    }
    any = 1;
    p += n;
    if (*p == ',') p++;
  }
  if (any) return 0;
bad:
  snprintf(err, errlen, "--ops takes names separated by commas, such as AllReduce,Send, not '%s'", s);
  return -1;
}

static int window_end(const char *s, size_t n, int64_t open, int64_t *out) {
  char buf[64];
  double ns;
  if (n == 0) {
    *out = open;
    return 0;
  }
  if (n >= sizeof(buf)) return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (npkit_parse_duration(buf, "s", &ns) != 0 || ns < -9.2e18 || ns > 9.2e18) return -1;
  *out = (int64_t)ns;
  return 0;
}

int npkit_merge_parse_window(npkit_merge_filter *f, const char *s, char *err, size_t errlen) {
  const char *colon = strchr(s, ':');
  if (colon == NULL || strchr(colon + 1, ':') != NULL ||
      window_end(s, (size_t)(colon - s), INT64_MIN, &f->window_start_ns) != 0 ||
      window_end(colon + 1, strlen(colon + 1), INT64_MAX, &f->window_end_ns) != 0 ||
      f->window_start_ns > f->window_end_ns) {
    snprintf(err, errlen, "--window takes START:END in trace time, such as 1.5s:2s, 200ms: or :10ms, not '%s'", s);
    return -1;
  }
  if (f->has_collective) {
    snprintf(err, errlen, "--collective sets the window itself (its instances and --context): leave out --window");
    return -1;
  }
  f->has_window = 1;
  return 0;
}

static int parse_seq(const char *s, const char *end, uint64_t *v) {
  if (s == end) return -1;
  uint64_t x = 0;
  for (; s < end; s++) {
    if (*s < '0' || *s > '9' || x > (UINT64_MAX - 9) / 10) return -1;
    x = 10 * x + (uint64_t)(*s - '0');
  }
  *v = x;
  return 0;
}

int npkit_merge_parse_collective(npkit_merge_filter *f, const char *s, char *err, size_t errlen) {
  const char *colon = strrchr(s, ':'), *end = s + strlen(s);
  const char *dash = colon != NULL ? strchr(colon, '-') : NULL;
  if (colon == NULL || colon == s || (size_t)(colon - s) >= sizeof(f->coll_comm) ||
      parse_seq(colon + 1, dash != NULL ? dash : end, &f->coll_seq_lo) != 0 ||
      (dash != NULL ? parse_seq(dash + 1, end, &f->coll_seq_hi) : (f->coll_seq_hi = f->coll_seq_lo, 0)) != 0 ||
      f->coll_seq_hi < f->coll_seq_lo) {
    snprintf(err, errlen, "--collective takes COMM:SEQ or COMM:SEQ-SEQ, the communicator as the report names it "
                          "(world:412, 1f2e3d4c:400-420), not '%s'", s);
    return -1;
  }
  if (f->has_window) {
    snprintf(err, errlen, "--collective sets the window itself (its instances and --context): leave out --window");
    return -1;
  }
  memcpy(f->coll_comm, s, (size_t)(colon - s));
  f->coll_comm[colon - s] = '\0';
  f->has_collective = f->selects_logs = 1;
  return 0;
}

int npkit_merge_parse_context(npkit_merge_filter *f, const char *s, char *err, size_t errlen) {
  double ns;
  if (npkit_parse_duration(s, "ms", &ns) != 0 || ns < 0 || ns > 3.6e12) {
    snprintf(err, errlen, "--context takes a duration such as 2ms, 500us or 1s (at most an hour), not '%s'", s);
    return -1;
  }
  f->context_ns = (int64_t)ns;
  f->has_context = 1;
  return 0;
}

int npkit_merge_rank_selected(const npkit_merge_filter *f, int32_t rank) {
  if (!f->has_ranks) return 1;
  for (size_t i = 0; i < f->n_ranges; i++)
    if (rank >= f->rank_lo[i] && rank <= f->rank_hi[i]) return 1;
  return 0;
}

int npkit_merge_filters_events(const npkit_merge_filter *f) {
  return f->has_ops || f->has_window;
}

/* ---- the events kept ---- */

/* NCCL calls, and GPU activity and plugin tasks attributed to a call, follow the operation
 * filter; the rest (compute kernels, channel and proxy events, marks) passes it. */
static int op_selected(const npkit_merge_filter *f, const npkit_event *ev) {
  if (!f->has_ops) return 1;
  int attributed = ev->kind == NPKIT_EV_API ||
                   ((ev->kind == NPKIT_EV_CUPTI_KERNEL || ev->kind == NPKIT_EV_CUPTI_MEMCPY ||
                     ev->kind == NPKIT_EV_CUPTI_MEMSET || ev->kind == NPKIT_EV_PLUGIN_TASK) &&
                    ev->func != NPKIT_FN_NONE);
  return !attributed || (ev->func < NPKIT_FN_COUNT && f->op[ev->func]);
}

int npkit_merge_keeps(const npkit_merge_filter *f, const npkit_event *ev, int64_t offset_ns, uint64_t base_ns) {
  if (!op_selected(f, ev)) return 0;
  if (f->has_window) {
    int64_t s = npkit_trace_time(base_ns, offset_ns, ev->start_ns);
    int64_t e = npkit_trace_time(base_ns, offset_ns, ev->end_ns);
    if (e < f->window_start_ns || s > f->window_end_ns) return 0;
  }
  return 1;
}

/* Trace time w is log time w - offset + base (npkit_trace_time): the window's ends in log time,
 * clamped to the log's clock. */
static uint64_t log_time(int64_t w, int64_t offset_ns, uint64_t base_ns, uint64_t open) {
  if (w == INT64_MIN || w == INT64_MAX) return open;
  __int128 t = (__int128)w - offset_ns + (__int128)base_ns;
  return t < 0 ? 0 : t > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

void npkit_merge_log_window(const npkit_merge_filter *f, int64_t offset_ns, uint64_t base_ns, uint64_t *lo_ns,
                            uint64_t *hi_ns) {
  *lo_ns = f->has_window ? log_time(f->window_start_ns, offset_ns, base_ns, 0) : 0;
  *hi_ns = f->has_window ? log_time(f->window_end_ns, offset_ns, base_ns, UINT64_MAX) : UINT64_MAX;
}
