#include "trace_api.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_stacks.h"

/* Room one event can take: the fixed keys, about fifteen numbers and two communicator labels. */
#define EVENT_ROOM 1536

static int frag_set(npkit_frag *f, const char *text) {
  size_t n = strlen(text);
  f->text = malloc(n + 1);
  if (f->text == NULL) return -1;
  memcpy(f->text, text, n + 1);
  f->len = (uint32_t)n;
  return 0;
}

static void frag_free(npkit_frag *f) {
  free(f->text);
  f->text = NULL;
  f->len = 0;
}

void npkit_comm_label(char *buf, size_t len, const npkit_comm_rec *c) {
  snprintf(buf, len, "comm %08" PRIx64 " (rank %" PRId32 "/%" PRId32 ")", c->comm_id >> 32, c->rank, c->nranks);
}

static int init_comm(npkit_comm_frag *cf, const npkit_comm_rec *c) {
  char label[64], buf[256];
  npkit_comm_label(label, sizeof(label), c);
  cf->local_id = c->local_id;
  snprintf(buf, sizeof(buf), "\"%s\"", label);
  if (frag_set(&cf->label, buf) != 0) return -1;
  snprintf(buf, sizeof(buf), ",\"comm\":\"%s\",\"comm_id\":\"0x%016" PRIx64 "\",\"comm_rank\":%" PRId32
           ",\"comm_nranks\":%" PRId32, label, c->comm_id, c->rank, c->nranks);
  return frag_set(&cf->args, buf);
}

int npkit_api_fmt_init(npkit_api_fmt *f, const npkit_log_reader *r, int64_t pid, uint64_t base_ns,
                       int64_t offset_ns) {
  char buf[256];
  memset(f, 0, sizeof(*f));
  f->ctx = (npkit_trace_ctx){pid, base_ns, offset_ns};
  f->r = r;
  for (unsigned fn = 0; fn < NPKIT_FN_COUNT; fn++) {
    /* function names and class names are identifiers: nothing to escape */
    snprintf(buf, sizeof(buf), "{\"name\":\"%s\",\"cat\":\"nccl_api\",\"ph\":\"X\",\"pid\":%" PRId64 ",\"tid\":",
             npkit_fn_name(fn), pid);
    if (frag_set(&f->head[fn], buf) != 0) goto oom;
    snprintf(buf, sizeof(buf), ",\"args\":{\"class\":\"%s\"", npkit_class_name(npkit_fn_class_of(fn)));
    if (frag_set(&f->cls[fn], buf) != 0) goto oom;
  }
  if (r->n_comms > 0) {
    f->comms = calloc(r->n_comms, sizeof(*f->comms));
    if (f->comms == NULL) goto oom;
    for (size_t i = 0; i < r->n_comms; i++) {
      f->n_comms = i + 1;
      if (init_comm(&f->comms[i], &r->comms[i]) != 0) goto oom;
    }
  }
  return 0;
oom:
  npkit_api_fmt_free(f);
  return -1;
}

void npkit_api_fmt_free(npkit_api_fmt *f) {
  for (unsigned fn = 0; fn < NPKIT_FN_COUNT; fn++) {
    frag_free(&f->head[fn]);
    frag_free(&f->cls[fn]);
  }
  for (size_t i = 0; i < f->n_comms; i++) {
    frag_free(&f->comms[i].args);
    frag_free(&f->comms[i].label);
  }
  free(f->comms);
  f->comms = NULL;
  f->n_comms = 0;
}

static const npkit_comm_frag *find_comm(npkit_api_fmt *f, uint32_t local_id) {
  size_t pos = npkit_reader_comm_pos(f->r, local_id, &f->last_comm);
  return pos < f->n_comms ? &f->comms[pos] : NULL;
}


/* The label of a communicator as a JSON string; an unknown one is named by its local id. */
static char *put_comm_label(npkit_api_fmt *f, char *p, uint32_t local_id) {
  const npkit_comm_frag *c = find_comm(f, local_id);
  if (c != NULL) return npkit_fmt_lit(p, c->label.text, c->label.len);
  NPKIT_PUT(p, "\"comm local ");
  p = npkit_fmt_u64(p, local_id);
  *p++ = '"';
  return p;
}

void npkit_api_fmt_comm_label(npkit_api_fmt *f, npkit_json *w, uint32_t local_id) {
  npkit_json_element(w);
  char *p = npkit_json_reserve(w, 128);
  npkit_json_commit(w, put_comm_label(f, p, local_id));
}


static int creates_comm(unsigned fn) {
  return fn == NPKIT_FN_CommInitRank || fn == NPKIT_FN_CommInitRankConfig || fn == NPKIT_FN_CommInitRankScalable ||
         fn == NPKIT_FN_CommInitAll || fn == NPKIT_FN_CommSplit || fn == NPKIT_FN_CommShrink;
}

static int has_size(unsigned fn) {
  return fn == NPKIT_FN_MemAlloc || fn == NPKIT_FN_CommRegister || fn == NPKIT_FN_CommWindowRegister;
}

/* ,"ts":…,"dur":… */
static char *put_times(npkit_api_fmt *f, char *p, uint64_t start_ns, uint64_t end_ns) {
  NPKIT_PUT(p, ",\"ts\":");
  p = npkit_fmt_ts(p, npkit_trace_rel(&f->ctx, start_ns));
  NPKIT_PUT(p, ",\"dur\":");
  return npkit_fmt_ts(p, end_ns > start_ns ? (int64_t)(end_ns - start_ns) : 0);
}

void npkit_api_fmt_event(npkit_api_fmt *f, npkit_json *w, const npkit_event *ev) {
  npkit_api_fmt_event_extra(f, w, ev, NULL, 0);
}

void npkit_api_fmt_event_extra(npkit_api_fmt *f, npkit_json *w, const npkit_event *ev,
                               const char *extra, size_t extra_len) {
  const npkit_ev_api *a = &ev->u.api;
  unsigned fn = ev->func < NPKIT_FN_COUNT ? ev->func : NPKIT_FN_NONE;
  int moves = npkit_fn_moves_data(fn);

  npkit_json_element(w);
  if (extra_len > NPKIT_API_EXTRA_MAX) extra_len = 0;
  const npkit_stack_frag *sk = a->stack_id != 0 ? npkit_stack_fmt_find(f->stacks, a->stack_id) : NULL;
  char *p = npkit_json_reserve(w, EVENT_ROOM + extra_len + (sk != NULL ? sk->args.len + sk->sf.len : 0));
  *p++ = '\n';
  /* an nccl*Config call is recorded as its collective (fn), and shown under the name it was called by */
  unsigned shown = (a->flags & NPKIT_API_CONFIG) && npkit_fn_config_variant(fn) != NPKIT_FN_NONE
                       ? (unsigned)npkit_fn_config_variant(fn)
                       : fn;
  p = npkit_fmt_lit(p, f->head[shown].text, f->head[shown].len);
  p = npkit_fmt_i64(p, npkit_trace_tid(f->ctx.pid, ev->thread));
  p = put_times(f, p, ev->start_ns, ev->end_ns);
  p = npkit_fmt_lit(p, f->cls[fn].text, f->cls[fn].len);
  if (fn == NPKIT_FN_NONE) { /* an id this build does not know (a newer log) */
    NPKIT_PUT(p, ",\"func\":");
    p = npkit_fmt_u64(p, ev->func);
  }
  if (moves) {
    NPKIT_PUT(p, ",\"count\":");
    p = npkit_fmt_u64(p, a->count);
  }
  if (a->datatype >= 0) {
    NPKIT_PUT(p, ",\"datatype\":\"");
    p = npkit_fmt_str(p, npkit_datatype_name(a->datatype));
    *p++ = '"';
  }
  if (moves) {
    NPKIT_PUT(p, ",\"bytes\":");
    p = npkit_fmt_u64(p, a->bytes);
  }
  if (a->redop >= 0) {
    NPKIT_PUT(p, ",\"op\":\"");
    p = npkit_fmt_str(p, npkit_redop_name(a->redop));
    *p++ = '"';
  }
  if (npkit_fn_has_root(fn)) {
    NPKIT_PUT(p, ",\"root\":");
    p = npkit_fmt_i64(p, a->peer);
  } else if (fn == NPKIT_FN_Send || fn == NPKIT_FN_Recv || fn == NPKIT_FN_PutSignal || fn == NPKIT_FN_Signal) {
    NPKIT_PUT(p, ",\"peer\":");
    p = npkit_fmt_i64(p, a->peer);
  }
  if (a->comm != 0) {
    const npkit_comm_frag *c = find_comm(f, a->comm);
    if (c != NULL) {
      p = npkit_fmt_lit(p, c->args.text, c->args.len);
    } else {
      NPKIT_PUT(p, ",\"comm\":");
      p = put_comm_label(f, p, a->comm);
    }
  }
  if (a->seq != NPKIT_NO_SEQ) {
    NPKIT_PUT(p, ",\"seq\":");
    p = npkit_fmt_u64(p, a->seq);
  }
  if (moves) {
    NPKIT_PUT(p, ",\"stream\":\"0x");
    p = npkit_fmt_hex(p, a->stream, 0);
    *p++ = '"';
  }
  if (npkit_fn_returns_result(fn)) { /* the others have no code to show */
    NPKIT_PUT(p, ",\"result\":\"");
    p = npkit_fmt_str(p, npkit_result_name(a->result));
    *p++ = '"';
  }
  if (a->group != 0) {
    NPKIT_PUT(p, ",\"group\":");
    p = npkit_fmt_u64(p, a->group);
  }
  if (creates_comm(fn) && a->aux != 0) {
    NPKIT_PUT(p, ",\"new_comm\":");
    p = put_comm_label(f, p, (uint32_t)a->aux);
  } else if (has_size(fn)) {
    NPKIT_PUT(p, ",\"size\":");
    p = npkit_fmt_u64(p, a->aux);
  } else if (fn == NPKIT_FN_GetVersion && a->aux != 0) {
    NPKIT_PUT(p, ",\"version\":");
    p = npkit_fmt_u64(p, a->aux);
  }
  if (shown != fn && a->user_tag != 0) {
    /* a hex string: a 64-bit tag does not survive a JSON number (53 bits) */
    NPKIT_PUT(p, ",\"user_tag\":\"0x");
    p = npkit_fmt_hex(p, a->user_tag, 0);
    *p++ = '"';
  }
  if (a->flags & NPKIT_API_MISSING) NPKIT_PUT(p, ",\"missing\":true");
  if (a->flags & NPKIT_API_FROM_PLUGIN) NPKIT_PUT(p, ",\"from_nccl_events\":true");
  if (extra_len > 0) p = npkit_fmt_lit(p, extra, extra_len);
  if (sk != NULL) p = npkit_fmt_lit(p, sk->args.text, sk->args.len);
  NPKIT_PUT(p, "}");
  if (sk != NULL) p = npkit_fmt_lit(p, sk->sf.text, sk->sf.len);
  NPKIT_PUT(p, "}");
  npkit_json_commit(w, p);
}

void npkit_api_fmt_group(npkit_api_fmt *f, npkit_json *w, uint32_t thread_index, uint64_t group,
                         uint64_t start_ns, uint64_t end_ns, uint64_t calls) {
  npkit_json_element(w);
  char *p = npkit_json_reserve(w, 256);
  NPKIT_PUT(p, "\n{\"name\":\"ncclGroup\",\"cat\":\"nccl_group\",\"ph\":\"X\",\"pid\":");
  p = npkit_fmt_i64(p, f->ctx.pid);
  NPKIT_PUT(p, ",\"tid\":");
  p = npkit_fmt_i64(p, npkit_trace_tid(f->ctx.pid, thread_index));
  p = put_times(f, p, start_ns, end_ns);
  NPKIT_PUT(p, ",\"args\":{\"group\":");
  p = npkit_fmt_u64(p, group);
  NPKIT_PUT(p, ",\"calls\":");
  p = npkit_fmt_u64(p, calls);
  NPKIT_PUT(p, "}}");
  npkit_json_commit(w, p);
}
