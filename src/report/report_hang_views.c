#include "report_hang_views.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nccl_names.h"
#include "report_html_util.h"
#include "report_svg.h"

static const char *status_name(npkit_hang_status s) {
  switch (s) {
  case NPKIT_HANG_DONE: return "completed";
  case NPKIT_HANG_MISSING: return "never entered";
  case NPKIT_HANG_NO_LOG: return "no log";
  case NPKIT_HANG_WAITING: return "waiting";
  case NPKIT_HANG_FAILED: return "failed";
  }
  return "?";
}

/* The ranks the views list: ranks not done, and done ranks of small communicators. */
static int shown(const npkit_hang *h, const npkit_hang_rank *r) { return r->status != NPKIT_HANG_DONE || h->n_ranks <= 16; }

/* "#14", "-" for none. */
static void seq_text(int64_t s, char *buf, size_t len) {
  if (s < 0) snprintf(buf, len, "-");
  else snprintf(buf, len, "#%" PRId64, s);
}

static void call_text(const npkit_hang_rank *r, char *buf, size_t len) {
  if (!r->has_call) {
    snprintf(buf, len, "-");
    return;
  }
  snprintf(buf, len, "%s %" PRIu64 " %s%s%s", npkit_fn_short_name((unsigned)r->call.fn), r->call.count,
           npkit_datatype_name(r->call.datatype), r->call.redop >= 0 ? " " : "",
           r->call.redop >= 0 ? npkit_redop_name(r->call.redop) : "");
}

/* ---- text ---- */

int npkit_report_hangs_text(npkit_report *rep, FILE *o) {
  if (rep->hangs.n == 0) return 0;
  char comm[96], e[24], c[24], call[96], since[32];
  fprintf(o, "\n== Hangs: collectives some rank did not complete (the earliest first)\n");
  for (size_t i = 0; i < rep->hangs.n; i++) {
    const npkit_hang *h = &rep->hangs.h[i];
    npkit_report_comm_label(rep, h->comm, comm, sizeof comm);
    fprintf(o, "%2zu. %s\n", i + 1, h->title);
    fprintf(o, "    %-6s %-14s %-9s %-10s %-26s %9s  %s\n", "rank", "state", "entered", "completed", "call",
            "waited", "where");
    for (size_t k = 0; k < h->n_ranks; k++) {
      const npkit_hang_rank *r = &h->ranks[k];
      if (!shown(h, r)) continue;
      seq_text(r->last_entered, e, sizeof e);
      seq_text(r->last_completed, c, sizeof c);
      call_text(r, call, sizeof call);
      if (r->waited_ns > 0) npkit_report_duration((double)r->waited_ns, since, sizeof since);
      else snprintf(since, sizeof since, "-");
      char state[40];
      snprintf(state, sizeof state, "%s%s%s", status_name(r->status), r->mismatched ? ",desync" : "",
               r->stuck ? ",stuck" : "");
      fprintf(o, "    %-6" PRId32 " %-14s %-9s %-10s %-26s %9s  %s\n", r->rank, state, e, c, call, since,
              r->n_where > 0 ? r->where[0] : "");
      for (uint32_t w = 1; w < r->n_where; w++) fprintf(o, "    %81s  %s\n", "", r->where[w]);
    }
  }
  return ferror(o) ? -1 : 0;
}

/* ---- JSON ---- */

/* A sequence number, or null for none. */
static void key_seq(npkit_json *w, const char *k, int64_t s) {
  npkit_json_key(w, k);
  if (s < 0) npkit_json_null(w);
  else npkit_json_int(w, s);
}

static void rank_array(npkit_json *w, const char *k, const npkit_hang *h, int status) {
  npkit_json_key(w, k);
  npkit_json_begin_array(w);
  for (size_t i = 0; i < h->n_ranks; i++) {
    const npkit_hang_rank *r = &h->ranks[i];
    int in = status >= 0 ? (int)r->status == status : status == -1 ? r->mismatched : r->stuck;
    if (status == NPKIT_HANG_MISSING && r->status == NPKIT_HANG_NO_LOG) in = 1;
    if (in) npkit_json_int(w, r->rank);
  }
  npkit_json_end_array(w);
}

static void comm_keys(npkit_report *rep, npkit_json *w, uint32_t comm) {
  char lab[96];
  npkit_json_key(w, "comm_id");
  npkit_json_hex(w, rep->job.comms[comm].comm_id, 16);
  npkit_report_comm_label(rep, comm, lab, sizeof lab);
  npkit_json_kv_string(w, "comm", lab);
  npkit_json_kv_int(w, "nranks", rep->job.comms[comm].nranks);
}

static void rank_json(npkit_report *rep, npkit_json *w, const npkit_hang_rank *r) {
  npkit_json_next_line(w);
  npkit_json_begin_object(w);
  npkit_json_kv_int(w, "rank", r->rank);
  npkit_json_key(w, "global_rank");
  if (r->log >= 0 && rep->job.logs[r->log].rank >= 0) npkit_json_int(w, rep->job.logs[r->log].rank);
  else npkit_json_null(w);
  npkit_json_kv_string(w, "status", status_name(r->status));
  npkit_json_kv_bool(w, "mismatched", r->mismatched);
  npkit_json_kv_bool(w, "stuck", r->stuck);
  key_seq(w, "last_entered", r->last_entered);
  key_seq(w, "last_completed", r->last_completed);
  npkit_json_kv_uint(w, "since_ns", r->since_ns);
  npkit_json_kv_uint(w, "waited_ns", r->waited_ns);
  npkit_json_key(w, "call");
  if (r->has_call) {
    npkit_json_begin_object(w);
    npkit_json_kv_string(w, "op", npkit_fn_short_name((unsigned)r->call.fn));
    npkit_json_kv_uint(w, "count", r->call.count);
    npkit_json_kv_string(w, "datatype", npkit_datatype_name(r->call.datatype));
    npkit_json_key(w, "redop");
    if (r->call.redop >= 0) npkit_json_string(w, npkit_redop_name(r->call.redop));
    else npkit_json_null(w);
    npkit_json_kv_int(w, "root", npkit_fn_has_root((unsigned)r->call.fn) ? r->call.root : -1);
    npkit_json_kv_string(w, "result", npkit_result_name(r->call.result));
    npkit_json_end_object(w);
  } else {
    npkit_json_null(w);
  }
  npkit_json_key(w, "where");
  npkit_json_begin_array(w);
  for (uint32_t k = 0; k < r->n_where; k++) npkit_json_string(w, r->where[k]);
  npkit_json_end_array(w);
  npkit_json_end_object(w);
}

void npkit_report_hangs_json(npkit_report *rep, npkit_json *w) {
  npkit_json_key(w, "hangs");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < rep->hangs.n; i++) {
    const npkit_hang *h = &rep->hangs.h[i];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    comm_keys(rep, w, h->comm);
    npkit_json_kv_string(w, "op", h->fn != 0 ? npkit_fn_short_name(h->fn) : "?");
    npkit_json_kv_uint(w, "seq", h->seq);
    rank_array(w, "missing_ranks", h, NPKIT_HANG_MISSING);
    rank_array(w, "no_log_ranks", h, NPKIT_HANG_NO_LOG);
    rank_array(w, "waiting_ranks", h, NPKIT_HANG_WAITING);
    rank_array(w, "failed_ranks", h, NPKIT_HANG_FAILED);
    rank_array(w, "mismatched_ranks", h, -1);
    rank_array(w, "stuck_ranks", h, -2);
    npkit_json_kv_uint(w, "since_ns", h->since_ns);
    npkit_json_kv_uint(w, "stuck_ns", h->stuck_ns);
    npkit_json_kv_string(w, "title", h->title);
    npkit_json_key(w, "ranks");
    npkit_json_begin_array(w);
    for (size_t k = 0; k < h->n_ranks; k++) rank_json(rep, w, &h->ranks[k]);
    npkit_json_end_array(w);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
  npkit_json_key(w, "comm_progress");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < rep->hangs.n_progress; i++) {
    const npkit_hang_progress *p = &rep->hangs.progress[i];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    comm_keys(rep, w, p->comm);
    npkit_json_key(w, "ranks");
    npkit_json_begin_array(w);
    for (size_t r = 0; r < p->n_ranks; r++) {
      npkit_json_begin_object(w);
      npkit_json_kv_int(w, "rank", (int64_t)r);
      npkit_json_kv_bool(w, "log", p->log[r] >= 0);
      key_seq(w, "last_entered", p->entered[r]);
      key_seq(w, "last_completed", p->completed[r]);
      npkit_json_end_object(w);
    }
    npkit_json_end_array(w);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
}

/* ---- HTML ---- */

int npkit_report_hangs_html(npkit_report *rep, FILE *o) {
  if (rep->hangs.n == 0) return 0;
  char e[24], c[24], call[96], waited[32];
  fputs("<section id=\"hangs\"><h2>Hangs: collectives some rank did not complete</h2>\n", o);
  for (size_t i = 0; i < rep->hangs.n; i++) {
    const npkit_hang *h = &rep->hangs.h[i];
    fputs("<h3 class=\"hang\">", o);
    npkit_html_escape(o, h->title);
    fprintf(o, "</h3>\n<table class=\"hang-ranks\" data-seq=\"%" PRIu64 "\">", h->seq);
    NPKIT_HTML_HEAD(o, "rank", "state", "entered", "completed", "call", "waited", "where");
    for (size_t k = 0; k < h->n_ranks; k++) {
      const npkit_hang_rank *r = &h->ranks[k];
      if (!shown(h, r)) continue;
      char rank[16], state[40], where[800] = "";
      snprintf(rank, sizeof rank, "%" PRId32, r->rank);
      snprintf(state, sizeof state, "%s%s%s", status_name(r->status), r->mismatched ? ", desync" : "",
               r->stuck ? ", stuck" : "");
      seq_text(r->last_entered, e, sizeof e);
      seq_text(r->last_completed, c, sizeof c);
      call_text(r, call, sizeof call);
      if (r->waited_ns > 0) npkit_report_duration((double)r->waited_ns, waited, sizeof waited);
      else snprintf(waited, sizeof waited, "-");
      for (uint32_t w = 0; w < r->n_where; w++) {
        size_t n = strlen(where);
        snprintf(where + n, sizeof where - n, "%s%s", w ? "; " : "", r->where[w]);
      }
      fputs("<tr>", o);
      npkit_html_td(o, 1, rank);
      npkit_html_td(o, 1, state);
      npkit_html_td(o, 0, e);
      npkit_html_td(o, 0, c);
      npkit_html_td(o, 1, call);
      npkit_html_td(o, 0, waited);
      npkit_html_td(o, 1, where);
      fputs("</tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  fputs("</section>\n", o);
  return ferror(o) ? -1 : 0;
}
