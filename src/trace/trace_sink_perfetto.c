#include "trace_sink_perfetto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "slots.h"
#include "trace_tracks.h"

/* Field numbers, google/perfetto protos/perfetto/trace/perfetto_trace.proto (commit ec5d16b). */
enum {
  TRACE_PACKET = 1,                 /* Trace.packet */
  PKT_TIMESTAMP = 8,                /* TracePacket.timestamp */
  PKT_SEQUENCE_ID = 10,             /* TracePacket.trusted_packet_sequence_id */
  PKT_TRACK_EVENT = 11,             /* TracePacket.track_event */
  PKT_INTERNED_DATA = 12,           /* TracePacket.interned_data */
  PKT_SEQUENCE_FLAGS = 13,          /* TracePacket.sequence_flags */
  PKT_TRACK_DESCRIPTOR = 60,        /* TracePacket.track_descriptor */
  SEQ_CLEARED = 1,                  /* SEQ_INCREMENTAL_STATE_CLEARED */
  SEQ_NEEDS = 2,                    /* SEQ_NEEDS_INCREMENTAL_STATE */
  TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
  TD_CHILD_ORDERING = 11, TD_SIBLING_ORDER_RANK = 12, ORDER_EXPLICIT = 3,  /* TrackDescriptor */
  PD_PID = 1, PD_SORT_INDEX = 3, PD_NAME = 6, PD_LABELS = 8,     /* ProcessDescriptor */
  THD_PID = 1, THD_TID = 2, THD_SORT_INDEX = 3, THD_NAME = 5,    /* ThreadDescriptor */
  TE_CATEGORY_IIDS = 3, TE_DEBUG_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11,
  TE_COUNTER_VALUE = 30, TE_DOUBLE_COUNTER_VALUE = 44, TE_FLOW_IDS = 47, TE_TERMINATING_FLOW_IDS = 48, /* TrackEvent */
  TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4,
  DA_NAME_IID = 1, DA_BOOL = 2, DA_UINT = 3, DA_INT = 4, DA_DOUBLE = 5, DA_STRING = 6, DA_ARRAY = 12,
  DA_STRING_IID = 17,
  ID_CATEGORIES = 1, ID_EVENT_NAMES = 2, ID_ANNOTATION_NAMES = 3, ID_STRING_VALUES = 29, /* InternedData */
  INTERNED_IID = 1, INTERNED_NAME = 2,                            /* EventName, EventCategory, ... */
};

#define SEQUENCE 1 /* the one sequence of this writer: any non-zero value */
/* String values up to this long are interned (a communicator, an algorithm, a call stack repeat
 * from call to call); longer ones are written in place. */
#define INTERN_VALUE_MAX 4096

/* a + b and a - b held to the int64 range: a log's times may be anything */
static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
static int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

/* The slot of an InternedData kind in pstr.iid and next_iid. */
static int slot_of(int kind) { return kind == ID_STRING_VALUES ? 3 : kind - 1; }
#define MAX_ARGS 64
#define MAX_FLOWS 1024 /* flows starting on one slice (a group's launch on as many GPUs) */

/* An interned string: its text, and its iid as each kind once it was defined on the sequence. */
typedef struct pstr {
  char *text;      /* the bytes as given: what a lookup compares */
  size_t len;
  char *utf8;      /* as written (utf8_copy): the same bytes, or a copy when they were not UTF-8 */
  size_t utf8_len;
  uint32_t iid[4]; /* its iid as each kind of interned data (slot_of), 0: not defined yet */
} pstr;

/* A flow told ahead (npkit_sink_flow_ahead): where on its track it starts. */
typedef struct pflow {
  int64_t at;
  uint64_t id;
  uint8_t exact, used;
} pflow;

/* A track: its uuid and what its descriptor says. */
typedef struct ptrack {
  uint64_t uuid;
  int64_t pid, tid; /* tid -1: the process's track; -2: a counter track */
  int64_t key_tid;  /* what it was asked for by (track_get) */
  uint32_t counter;
  char *name;
  char *labels;
  int64_t sort_index;
  int has_sort;
  int described;
  pflow *flows;     /* the flows that start on its slices, sorted by `at` once all are told */
  size_t n_flows, cap_flows;
  int flows_sorted;
  /* Lanes: a track's slices must nest (an END closes the innermost open slice), and the JSON may
   * draw slices that overlap on one track (two kernels of a communicator, as NCCL's profiler
   * times them).  A slice that would break the nesting goes to the track's next lane, a track of
   * the same name beside it.  Each lane keeps its recent slices (lane_prune), sorted by start
   * and by end. */
  uint32_t lane;      /* 0: the track itself */
  size_t next_lane;   /* index + 1 of its next lane, 0: none */
  int64_t *by_start;  /* [2k] start, [2k + 1] end: by start, then longest first */
  int64_t *by_end;    /* [2k] end, [2k + 1] start: by end, then latest start first */
  size_t n_kept, cap_kept, prune_at;
  int64_t max_start;
  int64_t max_lag;    /* the most a slice started before max_start when it came */
} ptrack;

typedef struct parg {
  uint32_t key; /* pstr id */
  uint32_t value; /* a string's pstr id when it is interned (track_event), 0: written in place */
  int type;
  int64_t i;
  uint64_t u;
  double d;
  char *text;          /* owned copy */
  const char *ref;     /* or a borrowed string (an interned one) */
  uint64_t *list;      /* owned copy */
  char **strs;         /* owned copies */
  size_t n;
} parg;

struct npkit_perfetto_sink {
  npkit_sink base;
  npkit_pb pb;
  uint64_t base_ns;
  int first_packet;
  uint32_t next_iid[4];
  pstr *strs;
  size_t n_strs, cap_strs;
  npkit_slots str_index;
  ptrack *tracks;
  size_t n_tracks, cap_tracks;
  npkit_slots track_index;
  /* the event between begin and end */
  npkit_sink_head head;
  uint32_t head_name, head_cat;
  parg args[MAX_ARGS];
  size_t nargs;
  npkit_tree discard; /* the metadata tree: not written yet */
  uint8_t long_packet[MAX_ARGS + 1]; /* by number of arguments: whether the last event's packet was
                                        128 bytes or more (two bytes kept for its length) */
  npkit_sink_arg **sets; /* intern_args: each set's arguments (copies) */
  size_t *set_n;
  size_t n_sets, cap_sets, cap_set_n;
};

/* ---- strings ---- */

static uint64_t text_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

typedef struct text_key {
  const char *s;
  size_t n;
} text_key;

static int str_is(const void *owner, size_t pos, const void *key) {
  const pstr *e = &((const npkit_perfetto_sink *)owner)->strs[pos];
  const text_key *k = key;
  return e->len == k->n && memcmp(e->text, k->s, k->n) == 0;
}
static uint64_t str_key_hash(const void *key) { return text_hash(((const text_key *)key)->s, ((const text_key *)key)->n); }
static uint64_t str_pos_hash(const void *ctx, size_t pos) {
  const pstr *e = &((const npkit_perfetto_sink *)ctx)->strs[pos];
  return text_hash(e->text, e->len);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 when it is not one (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len;
  unsigned lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k < len; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  return len;
}

/* A copy of at most n bytes of s, up to a NUL, as valid UTF-8: Perfetto's string fields are
 * UTF-8, and a reader that checks (protobuf's own parsers) refuses the packet otherwise.  Each
 * byte that does not start a valid sequence becomes U+FFFD, as a browser shows it.  *outlen gets
 * the length. */
static char *utf8_copy(const char *s, size_t n, size_t *outlen) {
  n = strnlen(s, n);
  const unsigned char *u = (const unsigned char *)s;
  size_t bad = 0;
  for (size_t i = 0; i < n;) {
    size_t k = utf8_seq(u + i, n - i);
    if (k == 0) bad++, k = 1;
    i += k;
  }
  char *c = malloc(n + 2 * bad + 1), *q = c;
  if (c == NULL) return NULL;
  if (bad == 0) {
    memcpy(c, s, n);
    q = c + n;
  } else {
    for (size_t i = 0; i < n;) {
      size_t k = utf8_seq(u + i, n - i);
      if (k == 0) {
        memcpy(q, "\xEF\xBF\xBD", 3);
        q += 3;
        i++;
      } else {
        memcpy(q, s + i, k);
        q += k;
        i += k;
      }
    }
  }
  *q = '\0';
  if (outlen != NULL) *outlen = (size_t)(q - c);
  return c;
}

static char *utf8_dup(const char *s, size_t n) { return utf8_copy(s, n, NULL); }

/* The id (1 + position) of a string, added when new; 0 when memory is short.  Strings are kept as
 * their UTF-8 copies: the lookup is by the bytes given. */
static uint32_t str_id(npkit_perfetto_sink *p, const char *s, size_t n) {
  n = strnlen(s, n);
  text_key k = {s, n};
  size_t pos = npkit_slots_find(&p->str_index, p, &k, str_is, str_key_hash);
  if (pos != SIZE_MAX) return (uint32_t)pos + 1;
  if (NPKIT_GROW(p->strs, p->cap_strs, p->n_strs + 1, 64) != 0 ||
      npkit_slots_reserve(&p->str_index, p->n_strs, 256, str_pos_hash, p) != 0)
    return 0;
  size_t ulen;
  char *copy = malloc(n + 1), *utf8 = utf8_copy(s, n, &ulen);
  if (copy == NULL || utf8 == NULL) {
    free(copy);
    free(utf8);
    return 0;
  }
  memcpy(copy, s, n);
  copy[n] = '\0';
  if (ulen == n && memcmp(utf8, copy, n) == 0) {
    free(utf8);
    utf8 = copy;
  }
  p->strs[p->n_strs] = (pstr){copy, n, utf8, ulen, {0, 0, 0, 0}};
  npkit_slots_put(&p->str_index, text_hash(s, n), p->n_strs);
  return (uint32_t)++p->n_strs;
}

/* ---- tracks ---- */

/* A track is found by what names it (pid, tid, counter), and its uuid is its position + 1: a small
 * number takes one or two bytes in each of its events. */
typedef struct track_key {
  int64_t pid, tid;
  uint32_t counter, lane;
} track_key;

static uint64_t key_hash(int64_t pid, int64_t tid, uint32_t counter, uint32_t lane) {
  return (uint64_t)pid * 0x9e3779b97f4a7c15ull ^ ((uint64_t)tid + 3) * 0xff51afd7ed558ccdull ^
         (uint64_t)counter * 0xc4ceb9fe1a85ec53ull ^ (uint64_t)lane * 0x94d049bb133111ebull;
}

static int track_is(const void *owner, size_t pos, const void *key) {
  const ptrack *t = &((const npkit_perfetto_sink *)owner)->tracks[pos];
  const track_key *k = key;
  return t->pid == k->pid && t->key_tid == k->tid && t->counter == k->counter && t->lane == k->lane;
}
static uint64_t track_key_hash(const void *key) {
  const track_key *k = key;
  return key_hash(k->pid, k->tid, k->counter, k->lane);
}
static uint64_t track_pos_hash(const void *ctx, size_t pos) {
  const ptrack *t = &((const npkit_perfetto_sink *)ctx)->tracks[pos];
  return key_hash(t->pid, t->key_tid, t->counter, t->lane);
}

/* The track of (pid, tid) (-1: the process's own), counter track `counter`, or lane `lane`; made
 * when new, its process's track first: so a pointer this returns stays valid until the next track
 * is made (the process's is made before, never after). */
static ptrack *track_get_lane(npkit_perfetto_sink *p, int64_t pid, int64_t tid, uint32_t counter, uint32_t lane) {
  track_key k = {pid, tid, counter, lane};
  size_t pos = npkit_slots_find(&p->track_index, p, &k, track_is, track_key_hash);
  if (pos != SIZE_MAX) return &p->tracks[pos];
  if ((tid != -1 || counter != 0 || lane != 0) && track_get_lane(p, pid, -1, 0, 0) == NULL) return NULL;
  if (NPKIT_GROW(p->tracks, p->cap_tracks, p->n_tracks + 1, 64) != 0 ||
      npkit_slots_reserve(&p->track_index, p->n_tracks, 256, track_pos_hash, p) != 0)
    return NULL;
  ptrack *t = &p->tracks[p->n_tracks];
  memset(t, 0, sizeof *t);
  t->uuid = p->n_tracks + 1;
  t->pid = pid;
  t->key_tid = tid;
  t->counter = counter;
  t->lane = lane;
  t->tid = counter != 0 ? -2 : tid;
  npkit_slots_put(&p->track_index, key_hash(pid, tid, counter, lane), p->n_tracks++);
  return t;
}

static ptrack *track_get(npkit_perfetto_sink *p, int64_t pid, int64_t tid, uint32_t counter) {
  return track_get_lane(p, pid, tid, counter, 0);
}

/* A packet; `long`: one likely of 128 bytes or more (an event with arguments). */
static void packet_begin(npkit_perfetto_sink *p, int incremental, int long_one) {
  if (long_one) npkit_pb_begin_long(&p->pb, TRACE_PACKET);
  else npkit_pb_begin(&p->pb, TRACE_PACKET);
  npkit_pb_uint(&p->pb, PKT_SEQUENCE_ID, SEQUENCE);
  if (incremental) {
    npkit_pb_uint(&p->pb, PKT_SEQUENCE_FLAGS, p->first_packet ? SEQ_CLEARED | SEQ_NEEDS : SEQ_NEEDS);
    p->first_packet = 0;
  }
}

/* Whether a track of the trace is a host thread's (trace_tracks.h: the band below the GPU streams);
 * the others (GPU streams, NCCL channels, proxy lanes, NPKit dump lanes, the flight recorder) are
 * tracks of their own below their process, not threads of the OS. */
static int is_thread(int64_t pid, int64_t tid) {
  int64_t slot = tid - pid * 1000;
  return slot >= 0 && slot < NPKIT_TRACE_GPU_BAND;
}

/* sibling_order_rank is an int32 */
static int64_t rank_of(int64_t v) { return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v; }

/* The descriptor of a track (again, when what it says changed). */
static void describe(npkit_perfetto_sink *p, ptrack *t, uint32_t counter) {
  ptrack *proc = t->tid != -1 ? track_get(p, t->pid, -1, 0) : NULL;
  if (proc != NULL && !proc->described) describe(p, proc, 0);
  packet_begin(p, 0, 0);
  npkit_pb_begin(&p->pb, PKT_TRACK_DESCRIPTOR);
  npkit_pb_uint(&p->pb, TD_UUID, t->uuid);
  if (proc != NULL) npkit_pb_uint(&p->pb, TD_PARENT, proc->uuid);
  if (t->tid == -1) npkit_pb_uint(&p->pb, TD_CHILD_ORDERING, ORDER_EXPLICIT); /* by the tracks' sort indexes */
  else if (t->has_sort) npkit_pb_int(&p->pb, TD_SIBLING_ORDER_RANK, rank_of(t->sort_index));
  if (t->tid == -1) {
    npkit_pb_begin(&p->pb, TD_PROCESS);
    npkit_pb_int(&p->pb, PD_PID, (int32_t)t->pid);
    if (t->has_sort) npkit_pb_int(&p->pb, PD_SORT_INDEX, t->sort_index);
    if (t->name != NULL) npkit_pb_string(&p->pb, PD_NAME, t->name);
    if (t->labels != NULL) npkit_pb_string(&p->pb, PD_LABELS, t->labels);
    npkit_pb_end(&p->pb);
  } else if (t->tid == -2) {
    if (counter != 0 && counter <= p->n_strs) npkit_pb_string(&p->pb, TD_NAME, p->strs[counter - 1].utf8);
    npkit_pb_begin(&p->pb, TD_COUNTER);
    npkit_pb_end(&p->pb);
  } else if (!is_thread(t->pid, t->tid) || t->lane != 0) {
    if (t->name != NULL) npkit_pb_string(&p->pb, TD_NAME, t->name);
  } else {
    npkit_pb_begin(&p->pb, TD_THREAD);
    npkit_pb_int(&p->pb, THD_PID, (int32_t)t->pid);
    npkit_pb_int(&p->pb, THD_TID, t->tid);
    if (t->has_sort) npkit_pb_int(&p->pb, THD_SORT_INDEX, t->sort_index);
    if (t->name != NULL) npkit_pb_string(&p->pb, THD_NAME, t->name);
    npkit_pb_end(&p->pb);
  }
  npkit_pb_end(&p->pb);
  npkit_pb_end(&p->pb);
  t->described = 1;
}

static int set_text(char **field, const char *v) {
  char *c = strdup(v);
  if (c == NULL) return -1;
  free(*field);
  *field = c;
  return 0;
}

/* ---- events ---- */

/* Each argument is zeroed when it is taken (arg_new, take_arg); clearing frees what they own. */
static void args_clear(npkit_perfetto_sink *p) {
  for (size_t i = 0; i < p->nargs; i++) {
    parg *a = &p->args[i];
    if (a->text == NULL && a->list == NULL && a->strs == NULL) continue; /* the common case: owns nothing */
    free(a->text);
    free(a->list);
    for (size_t k = 0; a->strs != NULL && k < a->n; k++) free(a->strs[k]);
    free(a->strs);
  }
  p->nargs = 0;
}

static parg *arg_new(npkit_perfetto_sink *p, const char *key, int type) {
  uint32_t k = str_id(p, key, strlen(key));
  if (k == 0 || p->nargs >= MAX_ARGS) return NULL;
  parg *a = &p->args[p->nargs++];
  memset(a, 0, sizeof *a);
  a->key = k;
  a->type = type;
  return a;
}

/* Writes the interned entries the event needs that the sequence does not have yet: its name (as
 * an event name), its category, its argument names. */
static void intern_needed(npkit_perfetto_sink *p, uint32_t name, uint32_t cat, const parg *args, size_t nargs) {
  int open = 0;
  uint32_t ids[2 + 2 * MAX_ARGS];
  int kinds[2 + 2 * MAX_ARGS];
  size_t n = 0;
  if (name != 0) ids[n] = name, kinds[n++] = ID_EVENT_NAMES;
  if (cat != 0) ids[n] = cat, kinds[n++] = ID_CATEGORIES;
  for (size_t i = 0; i < nargs; i++) {
    ids[n] = args[i].key, kinds[n++] = ID_ANNOTATION_NAMES;
    if (args[i].value != 0) ids[n] = args[i].value, kinds[n++] = ID_STRING_VALUES;
  }
  for (size_t i = 0; i < n; i++) {
    pstr *s = &p->strs[ids[i] - 1];
    int k = slot_of(kinds[i]);
    if (s->iid[k] != 0) continue;
    s->iid[k] = ++p->next_iid[k];
    if (!open) npkit_pb_begin(&p->pb, PKT_INTERNED_DATA);
    open = 1;
    /* EventName, EventCategory, DebugAnnotationName and InternedString: iid 1, name or str 2 */
    npkit_pb_begin(&p->pb, (uint32_t)kinds[i]);
    npkit_pb_uint(&p->pb, INTERNED_IID, s->iid[k]);
    npkit_pb_bytes(&p->pb, INTERNED_NAME, s->utf8, s->utf8_len);
    npkit_pb_end(&p->pb);
  }
  if (open) npkit_pb_end(&p->pb);
}

static void annotation(npkit_perfetto_sink *p, const parg *a) {
  npkit_pb_begin(&p->pb, TE_DEBUG_ANNOTATIONS);
  npkit_pb_uint(&p->pb, DA_NAME_IID, p->strs[a->key - 1].iid[slot_of(ID_ANNOTATION_NAMES)]);
  switch (a->type) {
  case NPKIT_SINK_ARG_INT: npkit_pb_int(&p->pb, DA_INT, a->i); break;
  case NPKIT_SINK_ARG_UINT: npkit_pb_uint(&p->pb, DA_UINT, a->u); break;
  case NPKIT_SINK_ARG_BOOL: npkit_pb_bool(&p->pb, DA_BOOL, (int)a->i); break;
  case 'd': npkit_pb_double(&p->pb, DA_DOUBLE, a->d); break;
  case 'l':
    for (size_t k = 0; k < a->n; k++) {
      npkit_pb_begin(&p->pb, DA_ARRAY);
      npkit_pb_uint(&p->pb, DA_UINT, a->list[k]);
      npkit_pb_end(&p->pb);
    }
    break;
  case 's':
    for (size_t k = 0; k < a->n; k++) {
      npkit_pb_begin(&p->pb, DA_ARRAY);
      npkit_pb_string(&p->pb, DA_STRING, a->strs[k]);
      npkit_pb_end(&p->pb);
    }
    break;
  default:
    if (a->value != 0) npkit_pb_uint(&p->pb, DA_STRING_IID, p->strs[a->value - 1].iid[slot_of(ID_STRING_VALUES)]);
    else npkit_pb_string(&p->pb, DA_STRING, a->text != NULL ? a->text : a->ref != NULL ? a->ref : "");
    break;
  }
  npkit_pb_end(&p->pb);
}

/* The flows of an event: those starting on it, the one ending on it (0: none). */
typedef struct flows {
  uint64_t out[MAX_FLOWS];
  size_t n;
  uint64_t in;
} flows;

/* One TrackEvent packet: its interned entries first, then the event. */
static void track_event(npkit_perfetto_sink *p, const ptrack *t, int type, int64_t ts, uint32_t name, uint32_t cat,
                        parg *args, size_t nargs, const double *counter, const flows *f) {
  for (size_t i = 0; i < nargs; i++) {
    parg *a = &args[i];
    if (a->value != 0 || a->type != 't') continue;
    const char *v = a->text != NULL ? a->text : a->ref != NULL ? a->ref : "";
    size_t len = strlen(v);
    if (len <= INTERN_VALUE_MAX) a->value = str_id(p, v, len);
  }
  /* a packet that defines or uses interned data says that it needs the sequence's */
  /* whether its packet will be long: as the last one with as many arguments was */
  int long_one = p->long_packet[nargs < MAX_ARGS ? nargs : MAX_ARGS];
  uint64_t before = npkit_pb_size(&p->pb);
  packet_begin(p, name != 0 || cat != 0 || nargs > 0, long_one);
  npkit_pb_uint(&p->pb, PKT_TIMESTAMP, p->base_ns + (uint64_t)ts); /* modulo 2^64: a negative ts is before the base */
  intern_needed(p, name, cat, args, nargs);
  if (long_one) npkit_pb_begin_long(&p->pb, PKT_TRACK_EVENT);
  else npkit_pb_begin(&p->pb, PKT_TRACK_EVENT);
  npkit_pb_uint(&p->pb, TE_TYPE, (uint64_t)type);
  npkit_pb_uint(&p->pb, TE_TRACK_UUID, t->uuid);
  if (name != 0) npkit_pb_uint(&p->pb, TE_NAME_IID, p->strs[name - 1].iid[slot_of(ID_EVENT_NAMES)]);
  if (cat != 0) npkit_pb_uint(&p->pb, TE_CATEGORY_IIDS, p->strs[cat - 1].iid[slot_of(ID_CATEGORIES)]);
  if (counter != NULL) npkit_pb_double(&p->pb, TE_DOUBLE_COUNTER_VALUE, *counter);
  for (size_t i = 0; i < nargs; i++) annotation(p, &args[i]);
  for (size_t i = 0; f != NULL && i < f->n; i++) npkit_pb_fixed64(&p->pb, TE_FLOW_IDS, f->out[i]);
  if (f != NULL && f->in != 0) npkit_pb_fixed64(&p->pb, TE_TERMINATING_FLOW_IDS, f->in);
  npkit_pb_end(&p->pb);
  npkit_pb_end(&p->pb);
  p->long_packet[nargs < MAX_ARGS ? nargs : MAX_ARGS] = npkit_pb_size(&p->pb) - before >= 140;
}

/* ---- flows told ahead ---- */

static int flow_cmp(const void *a, const void *b) {
  const pflow *x = a, *y = b;
  return x->at < y->at ? -1 : x->at > y->at ? 1 : x->id < y->id ? -1 : x->id > y->id;
}

static void flow_ahead(npkit_sink *s, int64_t pid, int64_t tid, int64_t at, int exact, uint64_t id) {
  npkit_perfetto_sink *p = (npkit_perfetto_sink *)s;
  ptrack *t = track_get(p, pid, tid, 0);
  if (t == NULL || id == 0 || NPKIT_GROW(t->flows, t->cap_flows, t->n_flows + 1, 16) != 0) return;
  t->flows[t->n_flows++] = (pflow){at, id, (uint8_t)(exact != 0), 0};
  t->flows_sorted = 0;
}

/* The flows that start on a slice ts .. ts + dur of track t: those told at its middle, and those
 * told anywhere inside it that no slice written before took. */
static void flows_of(ptrack *t, int64_t ts, int64_t dur, flows *f) {
  f->n = 0;
  if (t->n_flows == 0) return;
  if (!t->flows_sorted) {
    qsort(t->flows, t->n_flows, sizeof *t->flows, flow_cmp);
    t->flows_sorted = 1;
  }
  size_t lo = 0, hi = t->n_flows;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->flows[mid].at < ts) lo = mid + 1;
    else hi = mid;
  }
  int64_t middle = sat_add(ts, dur / 2), end = sat_add(ts, dur);
  for (size_t i = lo; i < t->n_flows && t->flows[i].at <= end && f->n < MAX_FLOWS; i++) {
    pflow *x = &t->flows[i];
    if (x->used || (x->exact && x->at != middle)) continue;
    x->used = 1;
    f->out[f->n++] = x->id;
  }
}

/* What is kept of a log's tracks for its rendering: its flows, its lanes' slices. */
static void flows_forget(npkit_perfetto_sink *p) {
  for (size_t i = 0; i < p->n_tracks; i++) {
    ptrack *t = &p->tracks[i];
    free(t->flows);
    free(t->by_start);
    free(t->by_end);
    t->flows = NULL;
    t->by_start = t->by_end = NULL;
    t->n_flows = t->cap_flows = t->n_kept = t->cap_kept = 0;
  }
}

/* The first pair of a sorted array of n (key, other) pairs after (k, o) in the order: by key,
 * then by `other` descending (desc) or ascending. */
static size_t pair_bound(const int64_t *a, size_t n, int64_t k, int64_t o, int desc) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int64_t mk = a[2 * mid], mo = a[2 * mid + 1];
    int after = mk > k || (mk == k && (desc ? mo < o : mo > o));
    if (after) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

static void pair_insert(int64_t *a, size_t n, size_t at, int64_t k, int64_t o) {
  memmove(a + 2 * at + 2, a + 2 * at, 2 * (n - at) * sizeof *a);
  a[2 * at] = k;
  a[2 * at + 1] = o;
}

/* What a lane keeps to check a slice against: the slices that end less than twice the largest lag
 * it has seen (at least LANE_WINDOW_NS) before the latest start it took, and at most LANE_KEEP of
 * them.  Slices come in time order but for a lag (a group's slice after its calls, a copy's record
 * after the kernels that followed it): one that comes later than that is checked against what is
 * left.  Memory: 32 bytes a slice kept. */
#define LANE_WINDOW_NS 1000000ll
#define LANE_KEEP 16384u

static void lane_prune(ptrack *l) {
  int64_t window = l->max_lag < LANE_WINDOW_NS / 2 ? LANE_WINDOW_NS : sat_add(l->max_lag, l->max_lag);
  size_t n = l->n_kept, drop = pair_bound(l->by_end, n, sat_sub(l->max_start, window), INT64_MAX, 0);
  if (n - drop > LANE_KEEP / 2) drop = n - LANE_KEEP / 2; /* still too many: those that end first go */
  while (drop > 0 && drop < n && l->by_end[2 * drop] == l->by_end[2 * drop - 2] &&
         l->by_end[2 * drop + 1] == l->by_end[2 * drop - 1])
    drop++; /* the same slice twice goes, or stays, in both orders alike */
  if (drop == 0) return;
  if (drop == n) {
    l->n_kept = 0;
    return;
  }
  memmove(l->by_end, l->by_end + 2 * drop, 2 * (n - drop) * sizeof *l->by_end);
  int64_t first_end = l->by_end[0], first_start = l->by_end[1]; /* the first kept in (end, start desc) order */
  size_t a = 0;
  for (size_t i = 0; i < n; i++) { /* the same slices in the order by start */
    int64_t ss = l->by_start[2 * i], se = l->by_start[2 * i + 1];
    if (se > first_end || (se == first_end && ss <= first_start))
      l->by_start[2 * a] = ss, l->by_start[2 * a + 1] = se, a++;
  }
  l->n_kept = a; /* == n - drop */
}

/* Whether a slice s .. e nests with the slices of lane l: no slice of the lane starts before s and
 * ends inside it, none starts inside it and ends after e (either would make Perfetto's END close
 * the wrong slice).  Only the slices within s .. e are looked at, found by start and by end, so a
 * check costs what the slice holds.  When it nests, the lane takes it. */
static int lane_takes(ptrack *l, int64_t s, int64_t e) {
  size_t n = l->n_kept;
  /* in time order, the common case: no slice starts after s, and the latest end is the one to see */
  int after_all = n == 0 || s > l->by_start[2 * n - 2];
  /* Perfetto sorts equal times in file order, where the lane's slices come first: one that starts
   * where this one ends (and ends later) would be closed by this one's END, and so would one that
   * starts with it and ends inside it */
  if (!after_all)
    for (size_t i = pair_bound(l->by_start, n, s, INT64_MIN, 0); i < n && l->by_start[2 * i] <= e; i++)
      if (l->by_start[2 * i] > s && l->by_start[2 * i + 1] > e) return 0; /* starts inside or at e, ends after */
  if (n > 0 && l->by_end[2 * n - 2] > s)
    for (size_t i = pair_bound(l->by_end, n, s, INT64_MAX, 0); i < n && l->by_end[2 * i] < e; i++)
      if (l->by_end[2 * i + 1] <= s) return 0; /* starts before or with it, ends inside */
  if (n >= l->prune_at) {
    lane_prune(l);
    n = l->n_kept;
    l->prune_at = 2 * n > 1024 ? 2 * n : 1024; /* amortized: pruning costs O(1) a slice */
  }
  size_t cap = l->cap_kept;
  if (NPKIT_GROW(l->by_start, cap, 2 * n + 2, 64) != 0 || NPKIT_GROW(l->by_end, l->cap_kept, 2 * n + 2, 64) != 0)
    return 1; /* memory is short: taken unchecked */
  int end_last = n == 0 || e > l->by_end[2 * n - 2] || (e == l->by_end[2 * n - 2] && s <= l->by_end[2 * n - 1]);
  pair_insert(l->by_start, n, after_all ? n : pair_bound(l->by_start, n, s, e, 1), s, e);
  pair_insert(l->by_end, n, end_last ? n : pair_bound(l->by_end, n, e, s, 1), e, s);
  l->n_kept = n + 1;
  if (s > l->max_start || n == 0) l->max_start = s;
  else if (sat_sub(l->max_start, s) > l->max_lag) l->max_lag = sat_sub(l->max_start, s);
  return 1;
}

#define MAX_LANES 64

/* The lane of track t that slice s .. e nests in: t itself, or a lane beside it (made and
 * described when first needed).  The last lane takes what no other does. */
static ptrack *lane_for(npkit_perfetto_sink *p, ptrack *t, int64_t s, int64_t e) {
  size_t base = (size_t)(t - p->tracks), i = base;
  if (t->tid < 0) return t; /* a process's own track (no source draws slices there): no lanes */
  for (uint32_t k = 1;; k++) {
    if (lane_takes(&p->tracks[i], s, e) || k == MAX_LANES) return &p->tracks[i];
    if (p->tracks[i].next_lane == 0) {
      ptrack *n = track_get_lane(p, p->tracks[base].pid, p->tracks[base].key_tid, 0, k); /* may move the array */
      if (n == NULL) return &p->tracks[i];
      const ptrack *b = &p->tracks[base];
      if (b->name != NULL) set_text(&n->name, b->name);
      n->sort_index = b->sort_index, n->has_sort = b->has_sort;
      n->tid = b->tid;
      p->tracks[i].next_lane = (size_t)(n - p->tracks) + 1;
      describe(p, n, 0);
    }
    i = p->tracks[i].next_lane - 1;
  }
}

/* A slice as its SLICE_BEGIN and SLICE_END, or an instant, with its flows. */
static void write_slice(npkit_perfetto_sink *p, ptrack *t, int instant, int64_t ts, int64_t dur, uint32_t name,
                        uint32_t cat, uint64_t flow_in) {
  flows f;
  flows_of(t, ts, instant ? 0 : dur, &f);
  f.in = flow_in;
  if (instant) {
    track_event(p, t, TYPE_INSTANT, ts, name, cat, p->args, p->nargs, NULL, &f);
  } else {
    t = lane_for(p, t, ts, sat_add(ts, dur));
    track_event(p, t, TYPE_SLICE_BEGIN, ts, name, cat, p->args, p->nargs, NULL, &f);
    track_event(p, t, TYPE_SLICE_END, sat_add(ts, dur), 0, 0, NULL, 0, NULL, NULL);
  }
}

static ptrack *described(npkit_perfetto_sink *p, int64_t pid, int64_t tid) {
  ptrack *t = track_get(p, pid, tid < 0 ? -1 : tid, 0);
  if (t != NULL && !t->described) describe(p, t, 0);
  return t;
}

/* A metadata event: the names, labels and sort indexes of tracks; the others are not kept yet. */
static void meta_event(npkit_perfetto_sink *p) {
  const npkit_sink_head *h = &p->head;
  ptrack *t = track_get(p, h->pid, h->tid < 0 ? -1 : h->tid, 0);
  if (t == NULL || p->nargs != 1) return;
  const parg *a = &p->args[0];
  int changed = 0;
  if ((!strcmp(h->name, "process_name") || !strcmp(h->name, "thread_name")) && a->text != NULL)
    changed = set_text(&t->name, a->text) == 0;
  else if (!strcmp(h->name, "process_labels") && a->text != NULL)
    changed = set_text(&t->labels, a->text) == 0;
  else if (!strcmp(h->name, "process_sort_index") || !strcmp(h->name, "thread_sort_index"))
    t->sort_index = a->i, t->has_sort = 1, changed = 1;
  if (!changed) return;
  describe(p, t, 0);
  for (size_t i = t->next_lane; i != 0; i = p->tracks[i - 1].next_lane) { /* its lanes: the same name and place */
    ptrack *l = &p->tracks[i - 1];
    if (t->name != NULL) set_text(&l->name, t->name);
    l->sort_index = t->sort_index, l->has_sort = t->has_sort;
    describe(p, l, 0);
  }
}

static void counter_event(npkit_perfetto_sink *p) {
  const npkit_sink_head *h = &p->head;
  for (size_t i = 0; i < p->nargs; i++) {
    const parg *a = &p->args[i];
    char name[256];
    snprintf(name, sizeof name, "%s %s", h->name, p->strs[a->key - 1].text);
    uint32_t id = str_id(p, name, strlen(name));
    if (id == 0 || described(p, h->pid, -1) == NULL) continue;
    ptrack *t = track_get(p, h->pid, -2, id);
    if (t == NULL) continue;
    if (!t->described) describe(p, t, id);
    double v = a->type == NPKIT_SINK_ARG_INT ? (double)a->i : a->type == NPKIT_SINK_ARG_UINT ? (double)a->u : a->d;
    track_event(p, t, TYPE_COUNTER, h->ts, 0, 0, NULL, 0, &v, NULL);
  }
}

static void begin(npkit_sink *s, const npkit_sink_head *h) {
  npkit_perfetto_sink *p = (npkit_perfetto_sink *)s;
  args_clear(p);
  p->head = *h;
}

static void args(npkit_sink *s) { (void)s; }

static void end(npkit_sink *s) {
  npkit_perfetto_sink *p = (npkit_perfetto_sink *)s;
  const npkit_sink_head *h = &p->head;
  if (h->ph == NPKIT_SINK_META) {
    meta_event(p);
  } else if (h->ph == NPKIT_SINK_COUNTER) {
    counter_event(p);
  } else if (h->ph == NPKIT_SINK_SLICE || h->ph == NPKIT_SINK_INSTANT) {
    uint32_t name = str_id(p, h->name, strlen(h->name)), cat = h->cat != NULL ? str_id(p, h->cat, strlen(h->cat)) : 0;
    ptrack *t = described(p, h->pid, h->ph == NPKIT_SINK_INSTANT && h->scope == 'p' ? -1 : h->tid);
    if (t != NULL && name != 0) write_slice(p, t, h->ph == NPKIT_SINK_INSTANT, h->ts, h->dur, name, cat, h->flow_in);
  } /* flows' own events ('s', 'f'): their ids are on the slices already (flow_ahead, flow_in) */
  args_clear(p);
}

static void arg_str(npkit_sink *s, const char *key, const char *v) {
  parg *a = arg_new((npkit_perfetto_sink *)s, key, 't');
  if (a != NULL) a->text = utf8_dup(v, strlen(v));
}
static void arg_strn(npkit_sink *s, const char *key, const char *v, size_t n) {
  parg *a = arg_new((npkit_perfetto_sink *)s, key, 't');
  if (a != NULL) a->text = utf8_dup(v, n);
}
static void arg_int(npkit_sink *s, const char *key, int64_t v) {
  parg *a = arg_new((npkit_perfetto_sink *)s, key, NPKIT_SINK_ARG_INT);
  if (a != NULL) a->i = v;
}
static void arg_uint(npkit_sink *s, const char *key, uint64_t v) {
  parg *a = arg_new((npkit_perfetto_sink *)s, key, NPKIT_SINK_ARG_UINT);
  if (a != NULL) a->u = v;
}
static void arg_double(npkit_sink *s, const char *key, double v) {
  parg *a = arg_new((npkit_perfetto_sink *)s, key, 'd');
  if (a != NULL) a->d = v;
}
static void arg_bool(npkit_sink *s, const char *key, int v) {
  parg *a = arg_new((npkit_perfetto_sink *)s, key, NPKIT_SINK_ARG_BOOL);
  if (a != NULL) a->i = v != 0;
}
/* microseconds and thousandths as doubles: the JSON's numbers with three decimals */
static void arg_us(npkit_sink *s, const char *key, int64_t ns) { arg_double(s, key, (double)ns / 1000.0); }
static void arg_milli(npkit_sink *s, const char *key, int64_t m) { arg_double(s, key, (double)m / 1000.0); }
static void arg_fixed(npkit_sink *s, const char *key, double v, int decimals) {
  (void)decimals;
  arg_double(s, key, v);
}
static void arg_hex(npkit_sink *s, const char *key, uint64_t v, int width) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%0*llx", width, (unsigned long long)v);
  arg_str(s, key, buf);
}
static void arg_uints(npkit_sink *s, const char *key, const uint64_t *v, size_t n) {
  parg *a = arg_new((npkit_perfetto_sink *)s, key, 'l');
  if (a == NULL || (a->list = malloc((n ? n : 1) * sizeof *v)) == NULL) return;
  memcpy(a->list, v, n * sizeof *v);
  a->n = n;
}
static void arg_strs(npkit_sink *s, const char *key, const char *const *v, size_t n) {
  parg *a = arg_new((npkit_perfetto_sink *)s, key, 's');
  if (a == NULL || (a->strs = calloc(n ? n : 1, sizeof *a->strs)) == NULL) return;
  for (size_t k = 0; k < n && (a->strs[k] = utf8_dup(v[k], strlen(v[k]))) != NULL; k++) a->n = k + 1;
}

/* ---- interned strings, sets and whole slices ---- */

static npkit_sink_str intern(npkit_sink *s, const char *v, size_t n) { return str_id((npkit_perfetto_sink *)s, v, n); }

static npkit_sink_str intern_stack(npkit_sink *s, const char *const *frames, size_t depth) {
  size_t len = 1;
  for (size_t k = 0; k < depth; k++) len += strlen(frames[k]) + 1;
  char *text = malloc(len), *q = text;
  if (text == NULL) return 0;
  for (size_t k = 0; k < depth; k++) {
    if (k > 0) *q++ = '\n';
    size_t n = strlen(frames[k]);
    memcpy(q, frames[k], n);
    q += n;
  }
  *q = '\0';
  npkit_sink_str id = str_id((npkit_perfetto_sink *)s, text, (size_t)(q - text));
  free(text);
  return id;
}

static npkit_sink_str intern_args(npkit_sink *s, const npkit_sink_arg *args, size_t n) {
  npkit_perfetto_sink *p = (npkit_perfetto_sink *)s;
  for (size_t i = 0; i < n; i++)
    if (args[i].type == NPKIT_SINK_ARG_SET || args[i].type == NPKIT_SINK_ARG_TEXT) return 0; /* as the JSON sink: no nesting; no borrowed text */
  if (NPKIT_GROW(p->sets, p->cap_sets, p->n_sets + 1, 16) != 0 || NPKIT_GROW(p->set_n, p->cap_set_n, p->n_sets + 1, 16) != 0)
    return 0;
  npkit_sink_arg *copy = malloc((n ? n : 1) * sizeof *copy);
  if (copy == NULL) return 0;
  memcpy(copy, args, n * sizeof *copy);
  p->sets[p->n_sets] = copy;
  p->set_n[p->n_sets] = n;
  return (npkit_sink_str)++p->n_sets;
}

static const char *str_text(const npkit_perfetto_sink *p, npkit_sink_str id) {
  return id != 0 && id <= p->n_strs ? p->strs[id - 1].utf8 : "";
}

/* A typed argument of a whole slice as an argument of this sink (strings borrowed). */
static void take_arg(npkit_perfetto_sink *p, const npkit_sink_arg *a) {
  if (a->type == NPKIT_SINK_ARG_SET) {
    if (a->v.str != 0 && a->v.str <= p->n_sets)
      for (size_t k = 0; k < p->set_n[a->v.str - 1]; k++) take_arg(p, &p->sets[a->v.str - 1][k]);
    return;
  }
  if (a->key == 0 || a->key > p->n_strs || p->nargs >= MAX_ARGS) return;
  parg *x = &p->args[p->nargs++];
  memset(x, 0, sizeof *x);
  x->key = a->key;
  x->type = a->type;
  switch (a->type) {
  case NPKIT_SINK_ARG_INT:
  case NPKIT_SINK_ARG_BOOL: x->i = a->v.i; break;
  case NPKIT_SINK_ARG_UINT: x->u = a->v.u; break;
  case NPKIT_SINK_ARG_MILLI: x->type = 'd', x->d = (double)a->v.i / 1000.0; break;
  case NPKIT_SINK_ARG_STR:
    x->type = 't', x->ref = str_text(p, a->v.str);
    if (a->v.str != 0 && a->v.str <= p->n_strs && p->strs[a->v.str - 1].len <= INTERN_VALUE_MAX) x->value = a->v.str;
    break;
  case NPKIT_SINK_ARG_TEXT: x->type = 't', x->text = utf8_dup(a->v.text, a->len); break;
  case NPKIT_SINK_ARG_HEX: {
    char buf[24];
    snprintf(buf, sizeof buf, "0x%0*llx", a->width, (unsigned long long)a->v.u);
    x->type = 't';
    x->text = strdup(buf);
    break;
  }
  default: p->nargs--; break;
  }
}

static void slice(npkit_sink *s, const npkit_sink_slice *e) {
  npkit_perfetto_sink *p = (npkit_perfetto_sink *)s;
  args_clear(p);
  for (size_t i = 0; i < e->nargs; i++) take_arg(p, &e->args[i]);
  ptrack *t = e->name != 0 && e->name <= p->n_strs ? described(p, e->pid, e->tid) : NULL;
  uint32_t cat = e->cat <= p->n_strs ? e->cat : 0;
  if (t != NULL) write_slice(p, t, e->ph == NPKIT_SINK_INSTANT, e->ts, e->dur, e->name, cat, 0);
  args_clear(p);
}

/* ---- the document ---- */

static void nop(npkit_sink *s) { (void)s; }

static void tree_key(npkit_tree *t, const char *k) { (void)t, (void)k; }
static void tree_none(npkit_tree *t) { (void)t; }
static void tree_str(npkit_tree *t, const char *v) { (void)t, (void)v; }
static void tree_strn(npkit_tree *t, const char *v, size_t n) { (void)t, (void)v, (void)n; }
static void tree_i(npkit_tree *t, int64_t v) { (void)t, (void)v; }
static void tree_u(npkit_tree *t, uint64_t v) { (void)t, (void)v; }
static void tree_d(npkit_tree *t, double v) { (void)t, (void)v; }
static void tree_b(npkit_tree *t, int v) { (void)t, (void)v; }
static void tree_hex(npkit_tree *t, uint64_t v, int w) { (void)t, (void)v, (void)w; }
static const npkit_tree_ops discard_ops = {tree_key,  tree_none, tree_none, tree_none, tree_none, tree_str, tree_strn,
                                           tree_i,    tree_u,    tree_d,    tree_b,    tree_none, tree_hex, tree_none};

static npkit_tree *meta_begin(npkit_sink *s) { return &((npkit_perfetto_sink *)s)->discard; }
static void frame(npkit_sink *s, int64_t pid, uint32_t node, const char *name, uint32_t parent1) {
  (void)s, (void)pid, (void)node, (void)name, (void)parent1;
}
/* The strings stay (their iids are defined on the sequence); the flows told, the lanes' slices and
 * the argument sets go with their log (its renderers intern their sets again). */
static void forget(npkit_sink *s) {
  npkit_perfetto_sink *p = (npkit_perfetto_sink *)s;
  flows_forget(p);
  for (size_t i = 0; i < p->n_sets; i++) free(p->sets[i]);
  p->n_sets = 0;
}
static int failed(npkit_sink *s) { return ((npkit_perfetto_sink *)s)->pb.err != 0; }

static void sink_free(npkit_sink *s) { (void)s; /* npkit_perfetto_sink_finish frees */ }

static const npkit_sink_ops perfetto_ops = {
    .begin = begin,
    .args = args,
    .end = end,
    .arg_str = arg_str,
    .arg_strn = arg_strn,
    .arg_int = arg_int,
    .arg_uint = arg_uint,
    .arg_double = arg_double,
    .arg_bool = arg_bool,
    .arg_us = arg_us,
    .arg_hex = arg_hex,
    .arg_fixed = arg_fixed,
    .arg_uints = arg_uints,
    .arg_strs = arg_strs,
    .arg_milli = arg_milli,
    .intern = intern,
    .intern_stack = intern_stack,
    .intern_args = intern_args,
    .slice = slice,
    .free = sink_free,
    .open = nop,
    .meta_begin = meta_begin,
    .meta_end = nop,
    .events_begin = nop,
    .events_end = nop,
    .frames_begin = nop,
    .frame = frame,
    .frames_end = nop,
    .close = nop,
    .forget = forget,
    .failed = failed,
    .flow_ahead = flow_ahead,
};

npkit_perfetto_sink *npkit_perfetto_sink_open(int fd, uint64_t base_ns) {
  npkit_perfetto_sink *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  if (npkit_pb_init(&p->pb, fd) != 0) {
    npkit_pb_finish(&p->pb, NULL, 0);
    free(p);
    return NULL;
  }
  p->base.ops = &perfetto_ops;
  p->discard.ops = &discard_ops;
  p->base_ns = base_ns;
  p->first_packet = 1;
  return p;
}

npkit_sink *npkit_perfetto_sink_base(npkit_perfetto_sink *p) { return &p->base; }

void npkit_perfetto_sink_set_base(npkit_perfetto_sink *p, uint64_t base_ns) { p->base_ns = base_ns; }

int npkit_perfetto_sink_finish(npkit_perfetto_sink *p, uint64_t *bytes, char *err, size_t errlen) {
  args_clear(p);
  flows_forget(p);
  if (bytes != NULL) *bytes = npkit_pb_size(&p->pb);
  int rc = npkit_pb_finish(&p->pb, err, errlen);
  for (size_t i = 0; i < p->n_strs; i++) {
    if (p->strs[i].utf8 != p->strs[i].text) free(p->strs[i].utf8);
    free(p->strs[i].text);
  }
  free(p->strs);
  npkit_slots_free(&p->str_index);
  for (size_t i = 0; i < p->n_tracks; i++) {
    free(p->tracks[i].name);
    free(p->tracks[i].labels);
    free(p->tracks[i].by_start);
    free(p->tracks[i].by_end);
  }
  free(p->tracks);
  npkit_slots_free(&p->track_index);
  for (size_t i = 0; i < p->n_sets; i++) free(p->sets[i]);
  free(p->sets);
  free(p->set_n);
  free(p);
  return rc;
}
