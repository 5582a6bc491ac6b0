/*
 * build_log SPEC OUT: writes the event log OUT described by the text file SPEC, and prints one line
 * per block written: "block TYPE OFFSET END".  Used by the Python tests, which choose the content
 * and check the rendered trace against it.
 *
 * SPEC has one record per line: a kind, then key=value pairs (values %XX-escaped for any byte).
 *   header  clock_base= mono_base= pid= rank= world= local_rank= nccl= host= launcher= libver=
 *           version= header_size= record_size= endian=          (first line, optional)
 *   ev      fn= (name or id) kind= start= end= thread= count= bytes= stream= seq= (number or "none")
 *           group= aux= comm= peer= datatype= redop= result= flags= user_tag=
 *   comm    local_id= parent= comm_id= handle= rank= nranks= device= created_by= create_ns= name=
 *   thread  index= os_tid= name=
 *   counter thread= source= recorded= dropped=
 *   string  id= text=
 *   process rank= world= local_rank= device= source=
 *   note    time= level= text=
 *   end     end_ns= recorded= dropped= blocks=
 *   raw     type= count= size= byte=        (a block of `size` bytes of `byte`, unpadded)
 *   machine kind= key=value...              (one record of a MACHINE block: "KIND key=value ...")
 *   mev     kind=gpu|port|cpu start= end= and the fields of npkit_ev_machine_*: gpu= valid= sm= mem=
 *           util_gpu= util_mem= power= temp= pcie_tx= pcie_rx= nvlink_tx= nvlink_rx=; port= flags=
 *           tx= rx= name=; user= system=     (a sampled machine event, in the EVENTS block of ev lines)
 *   flush
 * Consecutive ev (and mev), comm, thread, counter, string and machine lines form one block each;
 * another kind or "flush" ends the block.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_builder.h"
#include "machine_text.h"
#include "nccl_names.h"

#define MAX_FIELDS 32

typedef struct field {
  char *key;
  char *val;
  size_t len; /* decoded length of val */
} field;

typedef struct pending {
  char kind[16];
  void *items;
  size_t n, cap, size;
  char **texts;  /* strings */
  size_t *lens;
  uint32_t *ids;
} pending;

static const char *spec_path;
static int line_no;

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "build_log: %s:%d: ", spec_path, line_no);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(1);
}

static size_t percent_decode(char *s) {
  char *o = s;
  for (char *p = s; *p; p++) {
    if (*p == '%' && p[1] && p[2]) {
      char hex[3] = {p[1], p[2], 0};
      *o++ = (char)strtoul(hex, NULL, 16);
      p += 2;
    } else {
      *o++ = *p;
    }
  }
  *o = '\0';
  return (size_t)(o - s);
}

static int split(char *line, char **kind, field *f) {
  int n = 0;
  char *save, *tok = strtok_r(line, " \t\r\n", &save);
  *kind = tok;
  while (tok != NULL && (tok = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
    if (n == MAX_FIELDS) die("too many fields%s", "");
    char *eq = strchr(tok, '=');
    if (eq == NULL) die("expected key=value, got '%s'", tok);
    *eq = '\0';
    f[n].key = tok;
    f[n].val = eq + 1;
    f[n].len = percent_decode(eq + 1);
    n++;
  }
  return n;
}

static uint64_t num(const field *f) {
  char *end;
  errno = 0;
  unsigned long long v = f->val[0] == '-' ? (unsigned long long)strtoll(f->val, &end, 0) : strtoull(f->val, &end, 0);
  if (errno != 0 || *end != '\0' || end == f->val) die("bad number '%s'", f->val);
  return v;
}

static void set_str(char *dst, size_t len, const field *f) {
  memset(dst, 0, len);
  memcpy(dst, f->val, f->len < len ? f->len : len); /* may fill the field without a NUL on purpose */
}

#define IS(k) (strcmp(f[i].key, k) == 0)

static void unknown_key(const field *f) { die("unknown key '%s'", f->key); }

static void parse_header(field *f, int n, npkit_lb_options *o) {
  for (int i = 0; i < n; i++) {
    if (IS("clock_base")) o->clock_base_ns = num(&f[i]);
    else if (IS("mono_base")) o->mono_base_ns = num(&f[i]);
    else if (IS("pid")) o->pid = (int32_t)num(&f[i]);
    else if (IS("rank")) o->rank = (int32_t)num(&f[i]);
    else if (IS("world")) o->world_size = (int32_t)num(&f[i]);
    else if (IS("local_rank")) o->local_rank = (int32_t)num(&f[i]);
    else if (IS("nccl")) o->nccl_header_version = (uint32_t)num(&f[i]);
    else if (IS("host")) o->host = f[i].val;
    else if (IS("launcher")) o->launcher = f[i].val;
    else if (IS("libver")) o->library_version = f[i].val;
    else if (IS("version")) o->version = (uint32_t)num(&f[i]);
    else if (IS("header_size")) o->header_size = (uint32_t)num(&f[i]);
    else if (IS("record_size")) o->record_size = (uint32_t)num(&f[i]);
    else if (IS("endian")) o->endian = (uint32_t)num(&f[i]);
    else unknown_key(&f[i]);
  }
}

static npkit_event parse_event(field *f, int n) {
  npkit_event ev = npkit_lb_api_event(0, 1, 0, 0);
  npkit_ev_api *a = &ev.u.api;
  for (int i = 0; i < n; i++) {
    if (IS("fn")) {
      char *end;
      unsigned long id = strtoul(f[i].val, &end, 0);
      if (*end != '\0') {
        id = npkit_fn_from_name(f[i].val);
        if (id == NPKIT_FN_NONE) die("unknown function '%s'", f[i].val);
      }
      ev.func = (uint16_t)id;
    }
    else if (IS("kind")) ev.kind = (uint16_t)num(&f[i]);
    else if (IS("start")) ev.start_ns = num(&f[i]);
    else if (IS("end")) ev.end_ns = num(&f[i]);
    else if (IS("thread")) ev.thread = (uint32_t)num(&f[i]);
    else if (IS("count")) a->count = num(&f[i]);
    else if (IS("bytes")) a->bytes = num(&f[i]);
    else if (IS("stream")) a->stream = num(&f[i]);
    else if (IS("seq")) a->seq = strcmp(f[i].val, "none") == 0 ? NPKIT_NO_SEQ : num(&f[i]);
    else if (IS("group")) a->group = num(&f[i]);
    else if (IS("aux")) a->aux = num(&f[i]);
    else if (IS("comm")) a->comm = (uint32_t)num(&f[i]);
    else if (IS("peer")) a->peer = (int32_t)num(&f[i]);
    else if (IS("datatype")) a->datatype = (int32_t)num(&f[i]);
    else if (IS("redop")) a->redop = (int32_t)num(&f[i]);
    else if (IS("result")) a->result = (int32_t)num(&f[i]);
    else if (IS("flags")) a->flags = (uint32_t)num(&f[i]);
    else if (IS("user_tag")) a->user_tag = num(&f[i]);
    else unknown_key(&f[i]);
  }
  return ev;
}

static npkit_event parse_machine_event(field *f, int n) {
  npkit_event ev;
  memset(&ev, 0, sizeof ev);
  npkit_ev_machine_gpu *g = &ev.u.machine_gpu;
  npkit_ev_machine_port *p = &ev.u.machine_port;
  npkit_ev_machine_cpu *c = &ev.u.machine_cpu;
  for (int i = 0; i < n; i++) {
    if (IS("kind")) {
      ev.kind = strcmp(f[i].val, "gpu") == 0    ? NPKIT_EV_MACHINE_GPU
                : strcmp(f[i].val, "port") == 0 ? NPKIT_EV_MACHINE_PORT
                : strcmp(f[i].val, "cpu") == 0  ? NPKIT_EV_MACHINE_CPU
                                                : (uint16_t)num(&f[i]);
    }
    else if (IS("start")) ev.start_ns = num(&f[i]);
    else if (IS("end")) ev.end_ns = num(&f[i]);
    else if (IS("gpu")) g->gpu = (uint32_t)num(&f[i]);
    else if (IS("valid")) g->valid = (uint32_t)num(&f[i]);
    else if (IS("sm")) g->sm_mhz = (uint32_t)num(&f[i]);
    else if (IS("mem")) g->mem_mhz = (uint32_t)num(&f[i]);
    else if (IS("util_gpu")) g->util_gpu = (uint32_t)num(&f[i]);
    else if (IS("util_mem")) g->util_mem = (uint32_t)num(&f[i]);
    else if (IS("power")) g->power_mw = (uint32_t)num(&f[i]);
    else if (IS("temp")) g->temp_c = (uint32_t)num(&f[i]);
    else if (IS("pcie_tx")) g->pcie_tx_kbs = (uint32_t)num(&f[i]);
    else if (IS("pcie_rx")) g->pcie_rx_kbs = (uint32_t)num(&f[i]);
    else if (IS("nvlink_tx")) g->nvlink_tx_kib = num(&f[i]);
    else if (IS("nvlink_rx")) g->nvlink_rx_kib = num(&f[i]);
    else if (IS("port")) p->port = (uint32_t)num(&f[i]);
    else if (IS("flags")) p->flags = (uint32_t)num(&f[i]);
    else if (IS("tx")) p->tx_bytes = num(&f[i]);
    else if (IS("rx")) p->rx_bytes = num(&f[i]);
    else if (IS("name")) set_str(p->name, sizeof(p->name), &f[i]);
    else if (IS("user")) c->user_ns = num(&f[i]);
    else if (IS("system")) c->system_ns = num(&f[i]);
    else unknown_key(&f[i]);
  }
  return ev;
}

static npkit_comm_rec parse_comm(field *f, int n) {
  npkit_comm_rec c;
  memset(&c, 0, sizeof(c));
  c.device = -1;
  for (int i = 0; i < n; i++) {
    if (IS("local_id")) c.local_id = (uint32_t)num(&f[i]);
    else if (IS("parent")) c.parent = (uint32_t)num(&f[i]);
    else if (IS("comm_id")) c.comm_id = num(&f[i]);
    else if (IS("handle")) c.handle = num(&f[i]);
    else if (IS("rank")) c.rank = (int32_t)num(&f[i]);
    else if (IS("nranks")) c.nranks = (int32_t)num(&f[i]);
    else if (IS("device")) c.device = (int32_t)num(&f[i]);
    else if (IS("created_by")) c.created_by = (uint16_t)npkit_fn_from_name(f[i].val);
    else if (IS("create_ns")) c.create_ns = num(&f[i]);
    else if (IS("name")) set_str(c.name, sizeof(c.name), &f[i]);
    else unknown_key(&f[i]);
  }
  return c;
}

static npkit_thread_rec parse_thread(field *f, int n) {
  npkit_thread_rec t;
  memset(&t, 0, sizeof(t));
  for (int i = 0; i < n; i++) {
    if (IS("index")) t.index = (uint32_t)num(&f[i]);
    else if (IS("os_tid")) t.os_tid = (int32_t)num(&f[i]);
    else if (IS("name")) set_str(t.name, sizeof(t.name), &f[i]);
    else unknown_key(&f[i]);
  }
  return t;
}

static npkit_counter_rec parse_counter(field *f, int n) {
  npkit_counter_rec c;
  memset(&c, 0, sizeof(c));
  c.source = NPKIT_SRC_API;
  for (int i = 0; i < n; i++) {
    if (IS("thread")) c.thread = (uint32_t)num(&f[i]);
    else if (IS("source")) c.source = (uint32_t)num(&f[i]);
    else if (IS("recorded")) c.recorded = num(&f[i]);
    else if (IS("dropped")) c.dropped = num(&f[i]);
    else unknown_key(&f[i]);
  }
  return c;
}

static void pend_add(pending *p, const char *kind, const void *item, size_t size) {
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 64;
    p->items = realloc(p->items, p->cap * sizeof(npkit_event)); /* room for the largest record kind */
    p->texts = realloc(p->texts, p->cap * sizeof(char *));
    p->lens = realloc(p->lens, p->cap * sizeof(size_t));
    p->ids = realloc(p->ids, p->cap * sizeof(uint32_t));
    if (p->items == NULL || p->texts == NULL || p->lens == NULL || p->ids == NULL) die("out of memory%s", "");
  }
  snprintf(p->kind, sizeof(p->kind), "%s", kind);
  p->size = size;
  memcpy((char *)p->items + p->n * size, item, size);
  p->n++;
}

static void flush(npkit_lb *b, pending *p) {
  int rc = 0;
  if (p->n == 0) return;
  if (strcmp(p->kind, "ev") == 0) rc = npkit_lb_events(b, p->items, p->n);
  else if (strcmp(p->kind, "machine") == 0) rc = npkit_lb_machine(b, p->items, p->n);
  else if (strcmp(p->kind, "comm") == 0) rc = npkit_lb_comms(b, p->items, p->n);
  else if (strcmp(p->kind, "thread") == 0) rc = npkit_lb_threads(b, p->items, p->n);
  else if (strcmp(p->kind, "counter") == 0) rc = npkit_lb_counters(b, p->items, p->n);
  else if (strcmp(p->kind, "string") == 0) {
    rc = npkit_lb_strings(b, p->ids, (const char *const *)p->texts, p->lens, p->n);
    for (size_t i = 0; i < p->n; i++) free(p->texts[i]);
  }
  if (rc != 0) die("write failed%s", "");
  p->n = 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: build_log SPEC OUT\n");
    return 2;
  }
  spec_path = argv[1];
  FILE *in = fopen(argv[1], "r");
  if (in == NULL) {
    perror(argv[1]);
    return 1;
  }
  char *line = NULL, *first = NULL, *header_line = NULL;
  size_t cap = 0;
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  npkit_lb *b = NULL;
  pending p;
  memset(&p, 0, sizeof(p));
  field f[MAX_FIELDS];

  while (getline(&line, &cap, in) >= 0) {
    char *kind;
    line_no++;
    if (line[0] == '#') continue;
    if (first != NULL) free(first);
    first = strdup(line); /* header strings point into the line: keep it */
    int n = split(first, &kind, f);
    if (kind == NULL) continue;
    if (strcmp(kind, "header") == 0) {
      if (b != NULL) die("header must be the first line%s", "");
      parse_header(f, n, &o);
      b = npkit_lb_create(argv[2], &o);
      if (b == NULL) die("cannot create the log: %s", strerror(errno));
      header_line = first; /* o's strings point into it */
      first = NULL;
      continue;
    }
    if (b == NULL && (b = npkit_lb_create(argv[2], &o)) == NULL) die("cannot create the log: %s", strerror(errno));
    if (p.n > 0 && strcmp(p.kind, kind) != 0 && strcmp(kind, "mev") != 0) flush(b, &p);
    if (strcmp(kind, "mev") == 0) { /* the same EVENTS block as ev lines */
      if (p.n > 0 && strcmp(p.kind, "ev") != 0) flush(b, &p);
      npkit_event ev = parse_machine_event(f, n);
      pend_add(&p, "ev", &ev, sizeof(ev));
    } else if (strcmp(kind, "machine") == 0) { /* one byte per pending item: the text */
      npkit_mtext t = {0};
      const char *k = NULL;
      for (int i = 0; i < n; i++)
        if (IS("kind")) k = f[i].val;
      if (k == NULL) die("machine record without kind%s", "");
      npkit_mtext_record(&t, k);
      for (int i = 0; i < n; i++)
        if (!IS("kind")) npkit_mtext_strn(&t, f[i].key, f[i].val, f[i].len);
      npkit_mtext_end(&t);
      for (size_t i = 0; i < t.len; i++) pend_add(&p, kind, &t.buf[i], 1);
      npkit_mtext_free(&t);
    } else if (strcmp(kind, "ev") == 0) {
      npkit_event ev = parse_event(f, n);
      pend_add(&p, kind, &ev, sizeof(ev));
    } else if (strcmp(kind, "comm") == 0) {
      npkit_comm_rec c = parse_comm(f, n);
      pend_add(&p, kind, &c, sizeof(c));
    } else if (strcmp(kind, "thread") == 0) {
      npkit_thread_rec t = parse_thread(f, n);
      pend_add(&p, kind, &t, sizeof(t));
    } else if (strcmp(kind, "counter") == 0) {
      npkit_counter_rec c = parse_counter(f, n);
      pend_add(&p, kind, &c, sizeof(c));
    } else if (strcmp(kind, "string") == 0) {
      uint32_t id = 0;
      const field *text = NULL;
      for (int i = 0; i < n; i++) {
        if (IS("id")) id = (uint32_t)num(&f[i]);
        else if (IS("text")) text = &f[i];
        else unknown_key(&f[i]);
      }
      if (text == NULL) die("string without text%s", "");
      pend_add(&p, kind, &id, sizeof(id));
      p.ids[p.n - 1] = id;
      p.texts[p.n - 1] = malloc(text->len + 1);
      memcpy(p.texts[p.n - 1], text->val, text->len + 1);
      p.lens[p.n - 1] = text->len;
    } else if (strcmp(kind, "process") == 0) {
      npkit_process_rec r;
      memset(&r, 0, sizeof(r));
      r.rank = r.world_size = r.local_rank = r.device = -1;
      for (int i = 0; i < n; i++) {
        if (IS("rank")) r.rank = (int32_t)num(&f[i]);
        else if (IS("world")) r.world_size = (int32_t)num(&f[i]);
        else if (IS("local_rank")) r.local_rank = (int32_t)num(&f[i]);
        else if (IS("device")) r.device = (int32_t)num(&f[i]);
        else if (IS("source")) set_str(r.source, sizeof(r.source), &f[i]);
        else unknown_key(&f[i]);
      }
      npkit_lb_process(b, &r);
    } else if (strcmp(kind, "note") == 0) {
      uint64_t t = 0;
      uint32_t level = 2;
      const field *text = NULL;
      for (int i = 0; i < n; i++) {
        if (IS("time")) t = num(&f[i]);
        else if (IS("level")) level = (uint32_t)num(&f[i]);
        else if (IS("text")) text = &f[i];
        else unknown_key(&f[i]);
      }
      npkit_lb_note(b, t, level, text ? text->val : "", text ? text->len : 0);
    } else if (strcmp(kind, "end") == 0) {
      npkit_end_rec e;
      memset(&e, 0, sizeof(e));
      for (int i = 0; i < n; i++) {
        if (IS("end_ns")) e.end_ns = num(&f[i]);
        else if (IS("recorded")) e.events_recorded = num(&f[i]);
        else if (IS("dropped")) e.events_dropped = num(&f[i]);
        else if (IS("blocks")) e.blocks_written = num(&f[i]);
        else unknown_key(&f[i]);
      }
      npkit_lb_end(b, &e);
    } else if (strcmp(kind, "raw") == 0) {
      uint64_t type = 99, count = 0, size = 0, byte = 0;
      for (int i = 0; i < n; i++) {
        if (IS("type")) type = num(&f[i]);
        else if (IS("count")) count = num(&f[i]);
        else if (IS("size")) size = num(&f[i]);
        else if (IS("byte")) byte = num(&f[i]);
        else unknown_key(&f[i]);
      }
      unsigned char *payload = malloc(size ? size : 1);
      if (payload == NULL) die("out of memory%s", "");
      memset(payload, (int)byte, size);
      npkit_lb_raw_block(b, (uint16_t)type, (uint32_t)count, payload, (uint32_t)size);
      free(payload);
    } else if (strcmp(kind, "flush") == 0) {
      flush(b, &p);
    } else {
      die("unknown record kind '%s'", kind);
    }
  }
  if (b == NULL && (b = npkit_lb_create(argv[2], &o)) == NULL) die("cannot create the log: %s", strerror(errno));
  flush(b, &p);
  size_t nb;
  const npkit_lb_block *blocks = npkit_lb_blocks(b, &nb);
  for (size_t i = 0; i < nb; i++)
    printf("block %u %llu %llu\n", blocks[i].type, (unsigned long long)blocks[i].offset, (unsigned long long)blocks[i].end);
  if (npkit_lb_close(b) != 0) die("write failed%s", "");
  free(line);
  free(first);
  free(header_line);
  free(p.items);
  free(p.texts);
  free(p.lens);
  free(p.ids);
  fclose(in);
  return 0;
}
