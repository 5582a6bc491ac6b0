/* The Perfetto sink (src/trace/trace_sink_perfetto.c) read back by this test's own decoder, with the
 * rules Perfetto's trace processor enforces (../shared/reference/perfetto.md): one sequence, the
 * first packet that defines interned entries flagged 3 (cleared | needs) and every later one 2;
 * every interned id defined on the sequence before (or in the packet of) its first use; every
 * track described before its first event; a thread track below its process track; slices as
 * BEGIN and END pairs; arguments as debug annotations with their values; counters on counter
 * tracks; absolute timestamps.  And by `protoc --decode_raw` where protoc is installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "trace_sink_perfetto.h"

#define BASE 1700000000000000000ull

static void write_events(npkit_sink *s) {
  npkit_sink_meta_str(s, "process_name", 3, -1, "name", "rank 2");
  npkit_sink_meta_int(s, "process_sort_index", 3, -1, "sort_index", 2);
  npkit_sink_track(s, 3, 3001, "thread 1", 1);
  /* a slice through the generic calls, every kind of argument */
  static const char from_log[] = {'a', '"', 'b', '\x01'};
  const uint64_t grid[3] = {4, 2, 1};
  const char *const names[2] = {"Coll", "P2p"};
  npkit_sink_head h = {.name = "k\"1", .cat = "kernel", .ph = NPKIT_SINK_SLICE, .pid = 3, .tid = 3001, .has_ts = 1,
                       .ts = 1500, .has_dur = 1, .dur = 2000};
  npkit_sink_begin(s, &h);
  npkit_sink_args(s);
  npkit_sink_arg_str(s, "s", "x");
  npkit_sink_arg_strn(s, "log", from_log, sizeof from_log);
  npkit_sink_arg_int(s, "i", -7);
  npkit_sink_arg_uint(s, "u", 18446744073709551615ull);
  npkit_sink_arg_double(s, "d", 0.5);
  npkit_sink_arg_bool(s, "b", 1);
  npkit_sink_arg_hex(s, "h", 0x1f, 4);
  npkit_sink_arg_uints(s, "grid", grid, 3);
  npkit_sink_arg_strs(s, "events", names, 2);
  npkit_sink_end(s);
  /* a process-scoped instant on a process that was never named */
  npkit_sink_head in = {.name = "mark", .ph = NPKIT_SINK_INSTANT, .scope = 'p', .pid = 9, .tid = -1, .has_ts = 1,
                        .ts = 100};
  npkit_sink_begin(s, &in);
  npkit_sink_end(s);
  /* a counter with two values */
  npkit_sink_counter(s, "pool", NULL, 3, 50);
  npkit_sink_args(s);
  npkit_sink_arg_uint(s, "used", 10);
  npkit_sink_arg_int(s, "free", 20);
  npkit_sink_end(s);
  /* whole slices with interned strings, a set, and the same name twice */
  npkit_sink_str name = npkit_sink_intern_name(s, "ncclAllReduce"), cat = npkit_sink_intern_name(s, "nccl_api");
  npkit_sink_str k_cls = npkit_sink_intern_name(s, "class"), coll = npkit_sink_intern_name(s, "coll");
  npkit_sink_str k_rank = npkit_sink_intern_name(s, "comm_rank"), k_t = npkit_sink_intern_name(s, "algo");
  npkit_sink_arg members[1] = {{.key = k_rank, .type = NPKIT_SINK_ARG_INT, .v.i = 3}};
  npkit_sink_str set = npkit_sink_intern_args(s, members, 1);
  for (int i = 0; i < 2; i++) {
    npkit_sink_arg a[3] = {{.key = k_cls, .type = NPKIT_SINK_ARG_STR, .v.str = coll},
                           {.type = NPKIT_SINK_ARG_SET, .v.str = set},
                           {.key = k_t, .type = NPKIT_SINK_ARG_TEXT, .len = 4, .v.text = from_log}};
    npkit_sink_slice e = {.name = name, .cat = cat, .pid = 3, .tid = 3002, .ts = 5000 + 100 * i, .dur = 50,
                          .args = a, .nargs = 3};
    npkit_sink_slice_write(s, &e);
  }
}

/* ---- the decoder ---- */

typedef struct field {
  unsigned num, wire;
  uint64_t v;                /* varint or fixed64 */
  const unsigned char *p;    /* length-delimited */
  size_t n;
} field;

static int next_field(const unsigned char **p, const unsigned char *end, field *f) {
  uint64_t tag = 0, v = 0;
  int s;
  for (s = 0; *p < end && s < 70; s += 7) {
    unsigned char c = *(*p)++;
    tag |= (uint64_t)(c & 0x7f) << s;
    if (!(c & 0x80)) break;
  }
  f->num = (unsigned)(tag >> 3);
  f->wire = (unsigned)(tag & 7);
  if (f->wire == 0 || f->wire == 2) {
    for (s = 0; *p < end && s < 70; s += 7) {
      unsigned char c = *(*p)++;
      v |= (uint64_t)(c & 0x7f) << s;
      if (!(c & 0x80)) break;
    }
    f->v = v;
    if (f->wire == 2) {
      if (v > (uint64_t)(end - *p)) return -1;
      f->p = *p;
      f->n = (size_t)v;
      *p += v;
    }
    return 0;
  }
  if (f->wire == 1) {
    if (end - *p < 8) return -1;
    f->v = 0;
    for (int k = 0; k < 8; k++) f->v |= (uint64_t)(*p)[k] << (8 * k);
    *p += 8;
    return 0;
  }
  return -1;
}

#define MAXN 64
typedef struct state {
  char names[4][MAXN][64]; /* interned: [kind][iid], kind 1..3 as InternedData numbers them, 0 for
                              debug_annotation_string_values (29) */
  uint64_t tracks[MAXN];
  uint64_t parent[MAXN];
  char track_name[MAXN][64];
  size_t n_tracks;
  int packets, seq_bad, flags3, flags_bad, first_interned_seen;
  int undefined_iid, undescribed_track, begins, ends, instants, counters;
  char found[2048]; /* "name|cat|annotation=value;..." of every event with a name, one per line */
} state;

static int track_known(const state *st, uint64_t uuid) {
  for (size_t i = 0; i < st->n_tracks; i++)
    if (st->tracks[i] == uuid) return 1;
  return 0;
}

static void interned(state *st, const field *f) {
  const unsigned char *p = f->p, *end = f->p + f->n;
  field e, x;
  while (p < end && next_field(&p, end, &e) == 0) {
    if (e.wire != 2 || (e.num > 3 && e.num != 29)) continue;
    const unsigned char *q = e.p, *qe = e.p + e.n;
    uint64_t iid = 0;
    char name[64] = "";
    while (q < qe && next_field(&q, qe, &x) == 0) {
      if (x.num == 1) iid = x.v;
      if (x.num == 2) snprintf(name, sizeof name, "%.*s", (int)x.n, (const char *)x.p);
    }
    if (iid > 0 && iid < MAXN) snprintf(st->names[e.num == 29 ? 0 : e.num][iid], 64, "%s", name);
  }
}

static const char *iid_name(state *st, unsigned kind, uint64_t iid) {
  if (iid == 0 || iid >= MAXN || st->names[kind][iid][0] == '\0') {
    st->undefined_iid++;
    return "?";
  }
  return st->names[kind][iid];
}

static void annotation(state *st, const field *f, char *out, size_t len) {
  const unsigned char *p = f->p, *end = f->p + f->n;
  field x;
  char name[64] = "?", value[128] = "";
  while (p < end && next_field(&p, end, &x) == 0) {
    if (x.num == 1) snprintf(name, sizeof name, "%s", iid_name(st, 3, x.v));
    else if (x.num == 2 || x.num == 3) snprintf(value, sizeof value, "%llu", (unsigned long long)x.v);
    else if (x.num == 4) snprintf(value, sizeof value, "%lld", (long long)x.v);
    else if (x.num == 5) {
      double d;
      memcpy(&d, &x.v, sizeof d);
      snprintf(value, sizeof value, "%g", d);
    } else if (x.num == 6) snprintf(value, sizeof value, "%.*s", (int)x.n, (const char *)x.p);
    else if (x.num == 17) snprintf(value, sizeof value, "%s", iid_name(st, 0, x.v)); /* string_value_iid */
    else if (x.num == 12) strncat(value, "[]", sizeof value - strlen(value) - 1);
  }
  size_t k = strlen(out);
  snprintf(out + k, len - k, "%s=%s;", name, value);
}

static void track_event(state *st, const field *f, uint64_t ts) {
  const unsigned char *p = f->p, *end = f->p + f->n;
  field x;
  char line[512] = "";
  uint64_t type = 0;
  while (p < end && next_field(&p, end, &x) == 0) {
    size_t k = strlen(line);
    if (x.num == 9) type = x.v;
    else if (x.num == 11 && !track_known(st, x.v)) st->undescribed_track++;
    else if (x.num == 10) snprintf(line + k, sizeof line - k, "%s|", iid_name(st, 2, x.v));
    else if (x.num == 3) snprintf(line + k, sizeof line - k, "%s|", iid_name(st, 1, x.v));
    else if (x.num == 4) annotation(st, &x, line, sizeof line);
    else if (x.num == 44) {
      double d;
      memcpy(&d, &x.v, sizeof d);
      snprintf(line + k, sizeof line - k, "counter=%g;", d);
    }
  }
  st->begins += type == 1;
  st->ends += type == 2;
  st->instants += type == 3;
  st->counters += type == 4;
  if (type != 2) {
    size_t k = strlen(st->found);
    snprintf(st->found + k, sizeof st->found - k, "%llu:%s\n", (unsigned long long)(ts - BASE), line);
  }
}

static void descriptor(state *st, const field *f) {
  const unsigned char *p = f->p, *end = f->p + f->n;
  field x, y;
  uint64_t uuid = 0, parent = 0;
  char name[64] = "";
  while (p < end && next_field(&p, end, &x) == 0) {
    if (x.num == 1) uuid = x.v;
    else if (x.num == 5) parent = x.v;
    else if (x.num == 2) snprintf(name, sizeof name, "%.*s", (int)x.n, (const char *)x.p);
    else if (x.num == 3 || x.num == 4) {
      const unsigned char *q = x.p, *qe = x.p + x.n;
      while (q < qe && next_field(&q, qe, &y) == 0)
        if ((x.num == 3 && y.num == 6) || (x.num == 4 && y.num == 5))
          snprintf(name, sizeof name, "%.*s", (int)y.n, (const char *)y.p);
    }
  }
  if (parent != 0 && !track_known(st, parent)) st->undescribed_track++;
  for (size_t i = 0; i < st->n_tracks; i++)
    if (st->tracks[i] == uuid) {
      snprintf(st->track_name[i], 64, "%s", name);
      return;
    }
  if (st->n_tracks < MAXN) {
    st->parent[st->n_tracks] = parent;
    snprintf(st->track_name[st->n_tracks], 64, "%s", name);
    st->tracks[st->n_tracks++] = uuid;
  }
}

static void decode(const unsigned char *b, size_t n, state *st) {
  const unsigned char *p = b, *end = b + n;
  field pk, x;
  while (p < end && next_field(&p, end, &pk) == 0 && pk.num == 1 && pk.wire == 2) {
    st->packets++;
    const unsigned char *q = pk.p, *qe = pk.p + pk.n;
    uint64_t ts = 0, flags = 0, seq = 0;
    field ev = {0}, id = {0}, td = {0};
    while (q < qe && next_field(&q, qe, &x) == 0) {
      if (x.num == 8) ts = x.v;
      else if (x.num == 10) seq = x.v;
      else if (x.num == 13) flags = x.v;
      else if (x.num == 12) id = x;
      else if (x.num == 11) ev = x;
      else if (x.num == 60) td = x;
    }
    st->seq_bad += seq != 1;
    if (id.p != NULL) {
      if (!st->first_interned_seen) st->flags_bad += flags != 3, st->first_interned_seen = 1;
      else st->flags_bad += flags != 2;
      interned(st, &id);
    }
    if (td.p != NULL) descriptor(st, &td);
    if (ev.p != NULL) track_event(st, &ev, ts);
  }
}

/* ---- lanes: slices that would not nest on one track ---- */

typedef struct pe {
  uint64_t ts, track;
  int type;
  size_t index;
} pe;

static int pe_cmp(const void *a, const void *b) {
  const pe *x = a, *y = b;
  if (x->track != y->track) return x->track < y->track ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index; /* equal times: file order, as Perfetto sorts */
}

/* The slices as Perfetto pairs them (an END closes the innermost open slice of its track), as
 * "start+dur" of each, sorted, into out. */
static void paired(const unsigned char *b, size_t n, char *out, size_t len) {
  pe evs[64];
  size_t ne = 0;
  const unsigned char *p = b, *end = b + n;
  field pk, x, y;
  while (p < end && next_field(&p, end, &pk) == 0) {
    uint64_t ts = 0;
    const unsigned char *q = pk.p, *qe = pk.p + pk.n;
    field te = {0};
    while (q < qe && next_field(&q, qe, &x) == 0) {
      if (x.num == 8) ts = x.v;
      if (x.num == 11) te = x;
    }
    if (te.p == NULL || ne == 64) continue;
    pe e = {ts - BASE, 0, 0, ne};
    const unsigned char *r = te.p, *re = te.p + te.n;
    while (r < re && next_field(&r, re, &y) == 0) {
      if (y.num == 9) e.type = (int)y.v;
      if (y.num == 11) e.track = y.v;
    }
    evs[ne++] = e;
  }
  qsort(evs, ne, sizeof evs[0], pe_cmp);
  uint64_t starts[64], found[64][2];
  size_t depth = 0, nf = 0;
  uint64_t track = UINT64_MAX;
  for (size_t i = 0; i < ne; i++) {
    if (evs[i].track != track) depth = 0, track = evs[i].track;
    if (evs[i].type == 1) starts[depth++] = evs[i].ts;
    else if (evs[i].type == 2 && depth > 0) found[nf][0] = starts[--depth], found[nf][1] = evs[i].ts - found[nf][0], nf++;
  }
  for (size_t i = 0; i < nf; i++) /* sort by start, then duration */
    for (size_t j = i + 1; j < nf; j++)
      if (found[j][0] < found[i][0] || (found[j][0] == found[i][0] && found[j][1] < found[i][1])) {
        uint64_t t0 = found[i][0], t1 = found[i][1];
        found[i][0] = found[j][0], found[i][1] = found[j][1], found[j][0] = t0, found[j][1] = t1;
      }
  out[0] = '\0';
  for (size_t i = 0; i < nf; i++) {
    size_t k = strlen(out);
    snprintf(out + k, len - k, "%llu+%llu ", (unsigned long long)found[i][0], (unsigned long long)found[i][1]);
  }
}

/* Slices written in an order that one track cannot hold: the same start with the longer one
 * after, one that ends where a slice written before starts, one that starts inside another and
 * ends after it.  Each comes back with its own times. */
static void test_lanes(void) {
  FILE *f = tmpfile();
  npkit_perfetto_sink *ps = f != NULL ? npkit_perfetto_sink_open(fileno(f), BASE) : NULL;
  CHECK(ps != NULL);
  if (ps == NULL) return;
  npkit_sink *s = npkit_perfetto_sink_base(ps);
  static const int64_t sl[][2] = {{0, 5}, {0, 10}, {30, 10}, {20, 10}, {50, 20}, {60, 20}, {100, 10}, {102, 3}};
  for (size_t i = 0; i < sizeof sl / sizeof sl[0]; i++) {
    npkit_sink_head h = {.name = "k", .ph = NPKIT_SINK_SLICE, .pid = 3, .tid = 3400, .has_ts = 1, .ts = sl[i][0],
                         .has_dur = 1, .dur = sl[i][1]};
    npkit_sink_begin(s, &h);
    npkit_sink_end(s);
  }
  char err[64];
  CHECK(npkit_perfetto_sink_finish(ps, NULL, err, sizeof err) == 0);
  long n = (fseek(f, 0, SEEK_END), ftell(f));
  unsigned char *b = malloc((size_t)n);
  CHECK(b != NULL && fseek(f, 0, SEEK_SET) == 0 && fread(b, 1, (size_t)n, f) == (size_t)n);
  char got[512];
  paired(b, (size_t)n, got, sizeof got);
  CHECK_STR(got, "0+5 0+10 20+10 30+10 50+20 60+20 100+10 102+3 ");
  free(b);
  fclose(f);
}

int main(void) {
  test_lanes();
  char path[] = "/tmp/npkit_pf_XXXXXX";
  int fd = mkstemp(path);
  npkit_perfetto_sink *ps = npkit_perfetto_sink_open(fd, BASE);
  CHECK(ps != NULL);
  if (ps == NULL) return check_exit_code("test_trace_sink_perfetto");
  write_events(npkit_perfetto_sink_base(ps));
  uint64_t bytes = 0;
  char err[128];
  CHECK(npkit_perfetto_sink_finish(ps, &bytes, err, sizeof err) == 0);
  off_t n = lseek(fd, 0, SEEK_END);
  CHECK_EQ_U64((uint64_t)n, bytes);
  unsigned char *b = malloc((size_t)n);
  CHECK(b != NULL && pread(fd, b, (size_t)n, 0) == n);
  state st;
  memset(&st, 0, sizeof st);
  decode(b, (size_t)n, &st);
  CHECK_EQ_U64(st.seq_bad, 0);
  CHECK_EQ_U64(st.flags_bad, 0);
  CHECK_EQ_U64(st.undefined_iid, 0);
  CHECK_EQ_U64(st.undescribed_track, 0);
  CHECK_EQ_U64(st.begins, 3);
  CHECK_EQ_U64(st.ends, 3);
  CHECK_EQ_U64(st.instants, 1);
  CHECK_EQ_U64(st.counters, 2);
  CHECK_STR(st.found, "1500:k\"1|kernel|s=x;log=a\"b\x01;i=-7;u=18446744073709551615;d=0.5;b=1;h=0x001f;grid=[][][];"
                      "events=[][];\n"
                      "100:mark|\n"
                      "50:counter=10;\n"
                      "50:counter=20;\n"
                      "5000:ncclAllReduce|nccl_api|class=coll;comm_rank=3;algo=a\"b\x01;\n"
                      "5100:ncclAllReduce|nccl_api|class=coll;comm_rank=3;algo=a\"b\x01;\n");
  /* names of the tracks: the process, its named thread, the second thread, the unnamed process 9,
   * the two counters */
  int named = 0;
  for (size_t i = 0; i < st.n_tracks; i++)
    named += !strcmp(st.track_name[i], "rank 2") + !strcmp(st.track_name[i], "thread 1") +
             !strcmp(st.track_name[i], "pool used") + !strcmp(st.track_name[i], "pool free");
  CHECK_EQ_U64(named, 4);
  CHECK_EQ_U64(st.n_tracks, 6);
  free(b);
  if (access("/usr/bin/protoc", X_OK) == 0) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "/usr/bin/protoc --decode_raw < %s > /dev/null", path);
    CHECK(system(cmd) == 0);
  }
  close(fd);
  unlink(path);
  return check_exit_code("test_trace_sink_perfetto");
}
