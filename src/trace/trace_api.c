#include "trace_api.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_stacks.h"

void npkit_comm_label(char *buf, size_t len, const npkit_comm_rec *c) {
  snprintf(buf, len, "comm %08" PRIx64 " (rank %" PRId32 "/%" PRId32 ")", c->comm_id >> 32, c->rank, c->nranks);
}

static const char *const key_text[NPKIT_API_N_KEYS] = {
#define NPKIT_API_KEY_TEXT(id, text) text,
    NPKIT_API_KEYS(NPKIT_API_KEY_TEXT)
#undef NPKIT_API_KEY_TEXT
};

int npkit_api_fmt_init(npkit_api_fmt *f, const npkit_log_reader *r, npkit_sink *sink, int64_t pid,
                       uint64_t base_ns, int64_t offset_ns) {
  memset(f, 0, sizeof(*f));
  f->ctx = (npkit_trace_ctx){pid, base_ns, offset_ns};
  f->r = r;
  f->sink = sink;
  int ok = 1;
  for (unsigned fn = 0; fn < NPKIT_FN_COUNT; fn++) {
    ok &= (f->name[fn] = npkit_sink_intern_name(sink, npkit_fn_name(fn))) != 0;
    ok &= (f->cls[fn] = npkit_sink_intern_name(sink, npkit_class_name(npkit_fn_class_of(fn)))) != 0;
  }
  for (unsigned k = 0; k < NPKIT_API_N_KEYS; k++) ok &= (f->key[k] = npkit_sink_intern_name(sink, key_text[k])) != 0;
  ok &= (f->cat_api = npkit_sink_intern_name(sink, "nccl_api")) != 0;
  ok &= (f->cat_group = npkit_sink_intern_name(sink, "nccl_group")) != 0;
  ok &= (f->group_name = npkit_sink_intern_name(sink, "ncclGroup")) != 0;
  /* index n of each table: every value from n on, whose word is that of an unknown value
   * (npkit_datatype_name and the others name all values below n, nccl_names.c) */
  for (int v = 0; v <= NPKIT_API_DATATYPES; v++) ok &= (f->datatype[v] = npkit_sink_intern_name(sink, npkit_datatype_name(v))) != 0;
  for (int v = 0; v <= NPKIT_API_REDOPS; v++) ok &= (f->redop[v] = npkit_sink_intern_name(sink, npkit_redop_name(v))) != 0;
  for (int v = 0; v <= NPKIT_API_RESULTS; v++) ok &= (f->result[v] = npkit_sink_intern_name(sink, npkit_result_name(v))) != 0;
  if (ok && r->n_comms > 0) {
    f->comms = calloc(r->n_comms, sizeof(*f->comms));
    ok = f->comms != NULL;
    for (size_t i = 0; ok && i < r->n_comms; i++) {
      const npkit_comm_rec *c = &r->comms[i];
      char label[64];
      npkit_comm_label(label, sizeof(label), c);
      npkit_sink_str l = npkit_sink_intern_name(sink, label);
      npkit_sink_arg set[4] = {
          {.key = f->key[NPKIT_API_KEY_COMM], .type = NPKIT_SINK_ARG_STR, .v.str = l},
          {.key = f->key[NPKIT_API_KEY_COMM_ID], .type = NPKIT_SINK_ARG_HEX, .width = 16, .v.u = c->comm_id},
          {.key = f->key[NPKIT_API_KEY_COMM_RANK], .type = NPKIT_SINK_ARG_INT, .v.i = c->rank},
          {.key = f->key[NPKIT_API_KEY_COMM_NRANKS], .type = NPKIT_SINK_ARG_INT, .v.i = c->nranks},
      };
      f->comms[i] = (npkit_api_comm){c->local_id, l, l != 0 ? npkit_sink_intern_args(sink, set, 4) : 0};
      f->n_comms = i + 1;
      ok = f->comms[i].label != 0 && f->comms[i].args != 0;
    }
  }
  if (ok) return 0;
  npkit_api_fmt_free(f);
  return -1;
}

void npkit_api_fmt_free(npkit_api_fmt *f) {
  free(f->comms);
  f->comms = NULL;
  f->n_comms = 0;
}

static const npkit_api_comm *find_comm(npkit_api_fmt *f, uint32_t local_id) {
  size_t pos = npkit_reader_comm_pos(f->r, local_id, &f->last_comm);
  return pos < f->n_comms ? &f->comms[pos] : NULL;
}

static int creates_comm(unsigned fn) {
  return fn == NPKIT_FN_CommInitRank || fn == NPKIT_FN_CommInitRankConfig || fn == NPKIT_FN_CommInitRankScalable ||
         fn == NPKIT_FN_CommInitAll || fn == NPKIT_FN_CommSplit || fn == NPKIT_FN_CommShrink;
}

static int has_size(unsigned fn) {
  return fn == NPKIT_FN_MemAlloc || fn == NPKIT_FN_CommRegister || fn == NPKIT_FN_CommWindowRegister;
}

/* The arguments of one call, built in order. */
typedef struct arg_list {
  npkit_sink_arg a[32 + NPKIT_API_EXTRA_MAX];
  size_t n;
} arg_list;

/* Only the members the type uses are set: the hot path fills ten or more of these per call. */
static inline npkit_sink_arg *next(arg_list *l, npkit_sink_str key, uint8_t type) {
  npkit_sink_arg *a = &l->a[l->n++];
  a->key = key;
  a->type = type;
  return a;
}
static void put_int(arg_list *l, npkit_sink_str key, int64_t v) { next(l, key, NPKIT_SINK_ARG_INT)->v.i = v; }
static void put_uint(arg_list *l, npkit_sink_str key, uint64_t v) { next(l, key, NPKIT_SINK_ARG_UINT)->v.u = v; }
static void put_true(arg_list *l, npkit_sink_str key) {
  l->a[l->n++] = (npkit_sink_arg){.key = key, .type = NPKIT_SINK_ARG_BOOL, .v.i = 1};
}
static void put_str(arg_list *l, npkit_sink_str key, npkit_sink_str v) { next(l, key, NPKIT_SINK_ARG_STR)->v.str = v; }
static void put_set(arg_list *l, npkit_sink_str set) { next(l, 0, NPKIT_SINK_ARG_SET)->v.str = set; }
static void put_hex(arg_list *l, npkit_sink_str key, uint64_t v, int width) {
  npkit_sink_arg *a = next(l, key, NPKIT_SINK_ARG_HEX);
  a->width = (uint8_t)width;
  a->v.u = v;
}

/* The interned word of value v >= 0 (n and above: the word of n, that of an unknown value). */
static inline void put_word(arg_list *l, npkit_sink_str key, const npkit_sink_str *table, int n, int v) {
  put_str(l, key, table[v < n ? v : n]);
}

/* The label of a communicator; an unknown one is named by its local id (kept in `unknown`, which
 * must live until the event is written). */
static void put_comm_label(npkit_api_fmt *f, arg_list *l, npkit_sink_str key, uint32_t local_id, char *unknown,
                           size_t len) {
  const npkit_api_comm *c = find_comm(f, local_id);
  if (c != NULL) {
    put_str(l, key, c->label);
    return;
  }
  int n = snprintf(unknown, len, "comm local %" PRIu32, local_id);
  l->a[l->n++] = (npkit_sink_arg){.key = key, .type = NPKIT_SINK_ARG_TEXT, .len = (uint32_t)n, .v.text = unknown};
}

void npkit_api_fmt_event(npkit_api_fmt *f, npkit_sink *s, const npkit_event *ev) {
  npkit_api_fmt_event_extra(f, s, ev, NULL, 0);
}

void npkit_api_fmt_event_extra(npkit_api_fmt *f, npkit_sink *s, const npkit_event *ev, const npkit_sink_arg *extra,
                               size_t n_extra) {
  const npkit_ev_api *a = &ev->u.api;
  unsigned fn = ev->func < NPKIT_FN_COUNT ? ev->func : NPKIT_FN_NONE;
  int moves = npkit_fn_moves_data(fn);
  const npkit_sink_str *k = f->key;
  char unknown[2][48];
  arg_list l;
  l.n = 0;

  if (n_extra > NPKIT_API_EXTRA_MAX) n_extra = 0;
  const npkit_stack_frag *sk = a->stack_id != 0 ? npkit_stack_fmt_find(f->stacks, a->stack_id) : NULL;
  /* an nccl*Config call is recorded as its collective (fn), and shown under the name it was called by */
  unsigned shown = (a->flags & NPKIT_API_CONFIG) && npkit_fn_config_variant(fn) != NPKIT_FN_NONE
                       ? (unsigned)npkit_fn_config_variant(fn)
                       : fn;
  put_str(&l, k[NPKIT_API_KEY_CLASS], f->cls[fn]);
  if (fn == NPKIT_FN_NONE) put_uint(&l, k[NPKIT_API_KEY_FUNC], ev->func); /* an id this build does not know (a newer log) */
  if (moves) put_uint(&l, k[NPKIT_API_KEY_COUNT], a->count);
  if (a->datatype >= 0)
    put_word(&l, k[NPKIT_API_KEY_DATATYPE], f->datatype, NPKIT_API_DATATYPES, a->datatype);
  if (moves) put_uint(&l, k[NPKIT_API_KEY_BYTES], a->bytes);
  if (a->redop >= 0) put_word(&l, k[NPKIT_API_KEY_OP], f->redop, NPKIT_API_REDOPS, a->redop);
  if (npkit_fn_has_root(fn))
    put_int(&l, k[NPKIT_API_KEY_ROOT], a->peer);
  else if (fn == NPKIT_FN_Send || fn == NPKIT_FN_Recv || fn == NPKIT_FN_PutSignal || fn == NPKIT_FN_Signal)
    put_int(&l, k[NPKIT_API_KEY_PEER], a->peer);
  if (a->comm != 0) {
    const npkit_api_comm *c = find_comm(f, a->comm);
    if (c != NULL) {
      put_set(&l, c->args);
    } else {
      put_comm_label(f, &l, k[NPKIT_API_KEY_COMM], a->comm, unknown[0], sizeof unknown[0]);
    }
  }
  if (a->seq != NPKIT_NO_SEQ) put_uint(&l, k[NPKIT_API_KEY_SEQ], a->seq);
  if (moves) put_hex(&l, k[NPKIT_API_KEY_STREAM], a->stream, 0);
  if (npkit_fn_returns_result(fn)) /* the others have no code to show */
    put_word(&l, k[NPKIT_API_KEY_RESULT], f->result, NPKIT_API_RESULTS, a->result < 0 ? NPKIT_API_RESULTS : a->result);
  if (a->group != 0) put_uint(&l, k[NPKIT_API_KEY_GROUP], a->group);
  if (creates_comm(fn) && a->aux != 0)
    put_comm_label(f, &l, k[NPKIT_API_KEY_NEW_COMM], (uint32_t)a->aux, unknown[1], sizeof unknown[1]);
  else if (has_size(fn))
    put_uint(&l, k[NPKIT_API_KEY_SIZE], a->aux);
  else if (fn == NPKIT_FN_GetVersion && a->aux != 0)
    put_uint(&l, k[NPKIT_API_KEY_VERSION], a->aux);
  /* a hex string: a 64-bit tag does not survive a JSON number (53 bits) */
  if (shown != fn && a->user_tag != 0) put_hex(&l, k[NPKIT_API_KEY_USER_TAG], a->user_tag, 0);
  if (a->flags & NPKIT_API_MISSING) put_true(&l, k[NPKIT_API_KEY_MISSING]);
  if (a->flags & NPKIT_API_FROM_PLUGIN) put_true(&l, k[NPKIT_API_KEY_FROM_NCCL_EVENTS]);
  for (size_t i = 0; i < n_extra; i++) l.a[l.n++] = extra[i];
  if (sk != NULL) put_str(&l, k[NPKIT_API_KEY_STACK], sk->text);

  npkit_sink_slice e = {.name = f->name[shown],
                        .cat = f->cat_api,
                        .pid = f->ctx.pid,
                        .tid = npkit_trace_tid(f->ctx.pid, ev->thread),
                        .ts = npkit_trace_rel(&f->ctx, ev->start_ns),
                        .dur = ev->end_ns > ev->start_ns ? (int64_t)(ev->end_ns - ev->start_ns) : 0,
                        .args = l.a,
                        .nargs = l.n,
                        .frame = sk != NULL ? sk->frame : 0};
  npkit_sink_slice_write(s, &e);
}

void npkit_api_fmt_group(npkit_api_fmt *f, npkit_sink *s, uint32_t thread_index, uint64_t group,
                         uint64_t start_ns, uint64_t end_ns, uint64_t calls) {
  npkit_sink_arg args[2] = {
      {.key = f->key[NPKIT_API_KEY_GROUP], .type = NPKIT_SINK_ARG_UINT, .v.u = group},
      {.key = f->key[NPKIT_API_KEY_CALLS], .type = NPKIT_SINK_ARG_UINT, .v.u = calls},
  };
  npkit_sink_slice e = {.name = f->group_name,
                        .cat = f->cat_group,
                        .pid = f->ctx.pid,
                        .tid = npkit_trace_tid(f->ctx.pid, thread_index),
                        .ts = npkit_trace_rel(&f->ctx, start_ns),
                        .dur = end_ns > start_ns ? (int64_t)(end_ns - start_ns) : 0,
                        .args = args,
                        .nargs = 2};
  npkit_sink_slice_write(s, &e);
}
