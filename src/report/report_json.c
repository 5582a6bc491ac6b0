/* The JSON view of a report (schema: docs/report.md).  Times are microseconds (keys ending in _us)
 * except clock offsets, which are exact nanoseconds; NaN (no data) is written as null. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "json_writer.h"
#include "machine_json.h"
#include "nccl_names.h"
#include "report_extras.h"
#include "report_hang_views.h"
#include "report_render.h"

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "unknown"
#endif

/* A string that may be absent (NULL or ""): null then. */
static void kv_opt_string(npkit_json *w, const char *k, const char *v) {
  npkit_json_key(w, k);
  if (v != NULL && v[0] != '\0') npkit_json_string(w, v);
  else npkit_json_null(w);
}
/* A number that may be absent: null when !present. */
static void kv_opt_int(npkit_json *w, const char *k, int present, int64_t v) {
  npkit_json_key(w, k);
  if (present) npkit_json_int(w, v);
  else npkit_json_null(w);
}
/* A call's user tag (NCCL 2.29's config), null for none. */
static void kv_tag(npkit_json *w, uint64_t tag) {
  char text[24] = "";
  if (tag != 0) npkit_tag_string(tag, text, sizeof text);
  kv_opt_string(w, "user_tag", text);
}
/* The global rank of a log, or null. */
static void kv_rank(npkit_json *w, const char *k, const npkit_report *rep, size_t log) {
  int64_t rank = log < rep->job.n_logs ? rep->job.logs[log].rank : -1;
  kv_opt_int(w, k, rank >= 0, rank);
}
/* A log's rank and its label, which the rows of the per-rank tables begin with. */
static void kv_rank_label(npkit_json *w, const npkit_report *rep, size_t log) {
  char lab[64];
  kv_rank(w, "rank", rep, log);
  npkit_report_log_label(rep, log, lab, sizeof(lab));
  npkit_json_kv_string(w, "label", lab);
}
static void kv_comm(npkit_json *w, const npkit_report *rep, uint32_t comm) {
  char lab[96];
  npkit_json_key(w, "comm_id");
  if (comm < rep->job.n_comms) npkit_json_hex(w, rep->job.comms[comm].comm_id, 16);
  else npkit_json_null(w);
  npkit_report_comm_label(rep, comm, lab, sizeof(lab));
  npkit_json_kv_string(w, "comm", lab);
}

static void quantiles(npkit_json *w, const char *key, npkit_quantile *q) {
  npkit_json_key(w, key);
  npkit_json_begin_object(w);
  npkit_json_kv_uint(w, "count", q->n);
  npkit_report_json_us(w, "mean", npkit_quantile_mean(q));
  npkit_report_json_us(w, "p50", npkit_quantile_get(q, 0.5));
  npkit_report_json_us(w, "p99", npkit_quantile_get(q, 0.99));
  npkit_report_json_us(w, "max", q->n ? (double)q->max : NAN);
  npkit_json_kv_bool(w, "exact", npkit_quantile_is_exact(q));
  npkit_json_end_object(w);
}

static void ranks(npkit_report *rep, npkit_json *w) {
  npkit_json_key(w, "ranks");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_rep_log *l = &rep->logs[i];
    const npkit_job_log *jl = &rep->job.logs[i];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    kv_rank_label(w, rep, i);
    npkit_json_kv_string(w, "host", rep->job.hosts[jl->host].name);
    npkit_json_kv_int(w, "pid", jl->pid);
    npkit_json_kv_int(w, "device", jl->device);
    npkit_json_kv_string(w, "path", jl->path);
    npkit_json_kv_uint(w, "events", jl->events);
    npkit_json_kv_uint(w, "nccl_calls", l->api_calls);
    npkit_json_kv_uint(w, "gpu_events", l->gpu_events);
    npkit_json_kv_bool(w, "truncated", jl->truncated);
    npkit_json_kv_bool(w, "closed_cleanly", jl->closed_cleanly);
    npkit_json_kv_uint(w, "log_version", jl->log_version);
    npkit_json_kv_uint(w, "skipped_blocks", jl->skipped_blocks);
    npkit_json_kv_uint(w, "skipped_bytes", jl->skipped_bytes);
    npkit_json_kv_int(w, "clock_offset_ns", rep->job.hosts[jl->host].align.offset_ns);
    npkit_json_key(w, "lost_events");
    npkit_json_begin_array(w);
    for (uint32_t k = 0; k < jl->n_loss; k++) {
      const npkit_job_loss *s = &jl->loss[k];
      double total = (double)(s->recorded + s->dropped);
      npkit_json_begin_object(w);
      npkit_json_kv_string(w, "source", npkit_source_name(s->source));
      npkit_json_kv_uint(w, "recorded", s->recorded);
      npkit_json_kv_uint(w, "dropped", s->dropped);
      npkit_json_kv_double(w, "percent", total > 0 ? 100.0 * (double)s->dropped / total : 0);
      npkit_json_kv_bool(w, "above_limit", total > 0 && (double)s->dropped / total > NPKIT_REPORT_LOSS_LIMIT);
      npkit_json_end_object(w);
    }
    npkit_json_end_array(w);
    if (l->machine.snap.present) { /* the rank's machine snapshot, as in its trace's otherData */
      npkit_json_key(w, "machine");
      npkit_json_tree t;
      npkit_json_tree_init(&t, w);
      npkit_machine_json(&t.base, &l->machine.snap);
    }
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
}

static void alignment(npkit_report *rep, npkit_json *w) {
  npkit_json_key(w, "clock_alignment");
  npkit_json_begin_object(w);
  npkit_json_kv_bool(w, "enabled", rep->opts.align);
  npkit_json_kv_bool(w, "estimated", rep->job.align_done);
  npkit_json_kv_string(w, "source", rep->job.align_done ? npkit_time_source_name(rep->job.align_source) : "none");
  npkit_json_kv_string(w, "reference_host", rep->job.n_hosts ? rep->job.hosts[0].name : "");
  npkit_json_kv_uint(w, "pairs", rep->job.align.pairs);
  npkit_json_kv_uint(w, "cycle_checks", rep->job.align.cycle_checks);
  npkit_json_kv_uint(w, "cycle_failures", rep->job.align.cycle_failures);
  quantiles(w, "same_host_end_spread_us", &rep->job.host_end_spread);
  npkit_json_key(w, "hosts");
  npkit_json_begin_array(w);
  for (size_t h = 0; h < rep->job.n_hosts; h++) {
    const npkit_job_host *ho = &rep->job.hosts[h];
    const npkit_align_host *a = &ho->align;
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    npkit_json_kv_string(w, "host", ho->name);
    npkit_json_key(w, "ranks");
    npkit_json_begin_array(w);
    for (size_t i = 0; i < rep->job.n_logs; i++)
      if (rep->job.logs[i].host == h && rep->job.logs[i].rank >= 0) npkit_json_int(w, rep->job.logs[i].rank);
    npkit_json_end_array(w);
    npkit_json_kv_int(w, "offset_ns", a->offset_ns);
    npkit_json_kv_double(w, "uncertainty_ns", a->uncertainty_ns);
    npkit_json_kv_double(w, "sigma_ns", a->sigma_ns);
    npkit_json_kv_uint(w, "samples", a->samples);
    npkit_json_kv_uint(w, "used", a->used);
    npkit_json_kv_uint(w, "rejected", a->rejected);
    kv_opt_string(w, "via", a->via >= 0 ? rep->job.hosts[a->via].name : NULL);
    npkit_json_kv_uint(w, "hops", a->hops);
    npkit_json_kv_string(w, "status", npkit_align_status_name(a->status));
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
  npkit_json_end_object(w);
}

static void comms(npkit_report *rep, npkit_json *w) {
  npkit_json_key(w, "communicators");
  npkit_json_begin_array(w);
  for (uint32_t c = 0; c < rep->job.n_comms; c++) {
    const npkit_job_comm *cm = &rep->job.comms[c];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    kv_comm(w, rep, c);
    npkit_json_kv_string(w, "name", cm->name);
    npkit_json_kv_int(w, "nranks", cm->nranks);
    npkit_json_kv_uint(w, "ranks_logged", cm->n_members);
    npkit_json_kv_uint(w, "collective_calls", cm->collectives);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
}

static void table(npkit_report *rep, npkit_json *w) {
  npkit_json_key(w, "collectives");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < rep->table.n; i++) {
    const npkit_table_row *r = &rep->table.rows[i];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    npkit_json_kv_string(w, "op", npkit_fn_short_name(r->key.fn));
    kv_comm(w, rep, r->key.comm);
    npkit_json_kv_int(w, "nranks", r->nranks);
    npkit_json_kv_uint(w, "bytes", r->key.bytes);
    npkit_json_kv_uint(w, "count", r->key.count);
    npkit_json_kv_string(w, "datatype", npkit_datatype_name(r->key.datatype));
    kv_opt_string(w, "redop", r->key.redop >= 0 ? npkit_redop_name(r->key.redop) : NULL);
    kv_opt_int(w, "root", r->key.root >= 0, r->key.root);
    npkit_json_kv_uint(w, "calls", r->calls);
    npkit_json_kv_uint(w, "timed_calls", r->samples);
    npkit_json_kv_uint(w, "untimed_calls", r->untimed);
    npkit_json_kv_uint(w, "graph_replays", r->replays);
    npkit_json_kv_string(w, "time_source", npkit_time_source_name(r->source));
    npkit_report_json_us(w, "time_mean_us", r->mean_ns);
    npkit_report_json_us(w, "time_p50_us", r->p50_ns);
    npkit_report_json_us(w, "time_p99_us", r->p99_ns);
    npkit_json_kv_bool(w, "quantiles_exact", r->exact);
    npkit_json_kv_double(w, "algbw_gbs", r->algbw_gbs);
    npkit_json_kv_double(w, "busbw_gbs", r->busbw_gbs);
    npkit_json_kv_double(w, "busbw_factor", npkit_busbw_factor(r->key.fn, r->nranks));
    kv_opt_string(w, "algorithm", r->algo);
    kv_opt_string(w, "protocol", r->proto);
    npkit_json_key(w, "channels");
    if (r->channels_max > 0) {
      npkit_json_begin_object(w);
      npkit_json_kv_int(w, "min", r->channels_min);
      npkit_json_kv_int(w, "max", r->channels_max);
      npkit_json_end_object(w);
    } else {
      npkit_json_null(w);
    }
    npkit_json_key(w, "link_throughput"); /* measured by the sampled counters while the calls ran */
    if (!isnan(r->links.net_tx_gbps) || !isnan(r->links.nvlink_tx_gbs)) {
      npkit_json_begin_object(w);
      if (!isnan(r->links.net_tx_gbps)) {
        npkit_json_kv_double(w, "net_tx_gbps", r->links.net_tx_gbps);
        npkit_json_kv_double(w, "net_rx_gbps", r->links.net_rx_gbps);
      }
      if (!isnan(r->links.nvlink_tx_gbs)) {
        npkit_json_kv_double(w, "nvlink_tx_gbs", r->links.nvlink_tx_gbs);
        npkit_json_kv_double(w, "nvlink_rx_gbs", r->links.nvlink_rx_gbs);
      }
      npkit_json_end_object(w);
    } else {
      npkit_json_null(w);
    }
    kv_tag(w, r->key.tag);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
}

static void user_tags(npkit_report *rep, npkit_json *w) {
  npkit_json_key(w, "user_tags");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < rep->n_tags; i++) {
    const npkit_tag_sum *t = &rep->tags[i];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    kv_tag(w, t->tag);
    npkit_json_key(w, "ops");
    npkit_json_begin_array(w);
    for (uint32_t k = 0; k < t->n_ops; k++) npkit_json_string(w, npkit_fn_short_name(t->ops[k]));
    npkit_json_end_array(w);
    npkit_json_kv_uint(w, "more_ops", t->more_ops);
    npkit_json_kv_uint(w, "calls", t->calls);
    npkit_json_kv_uint(w, "timed_calls", t->timed);
    npkit_json_kv_uint(w, "bytes", t->bytes);
    npkit_json_kv_string(w, "time_source", npkit_time_source_name(t->source));
    npkit_report_json_us(w, "time_us", t->time_ns);
    npkit_json_kv_double(w, "share", t->share);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
}

static void curves(npkit_report *rep, npkit_json *w) {
  npkit_json_key(w, "bandwidth_curves");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < rep->curves.n; i++) {
    const npkit_curve *cv = &rep->curves.c[i];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    npkit_json_kv_string(w, "op", npkit_fn_short_name(cv->fn));
    kv_comm(w, rep, cv->comm);
    npkit_json_kv_int(w, "nranks", cv->nranks);
    npkit_json_kv_string(w, "time_source", npkit_time_source_name(cv->source));
    npkit_json_kv_double(w, "peak_busbw_gbs", cv->peak_busbw_gbs);
    npkit_json_kv_uint(w, "peak_bytes", cv->peak_bytes);
    kv_opt_int(w, "knee_bytes", cv->n_flagged != 0, (int64_t)cv->knee_bytes);
    npkit_json_kv_uint(w, "flagged", cv->n_flagged);
    npkit_report_json_us(w, "time_at_stake_us", cv->at_stake_ns);
    npkit_json_key(w, "points");
    npkit_json_begin_array(w);
    for (size_t k = 0; k < cv->n; k++) {
      const npkit_curve_point *p = &cv->pts[k];
      npkit_json_begin_object(w);
      npkit_json_kv_uint(w, "bytes", p->bytes);
      npkit_report_json_us(w, "time_us", p->time_ns);
      npkit_json_kv_double(w, "algbw_gbs", p->algbw_gbs);
      npkit_json_kv_double(w, "busbw_gbs", p->busbw_gbs);
      npkit_json_kv_uint(w, "timed_calls", p->samples);
      npkit_json_kv_double(w, "instances", p->instances);
      npkit_json_kv_bool(w, "bottleneck", p->flagged);
      npkit_report_json_us(w, "expected_us", p->flagged ? p->expected_ns : NAN);
      npkit_report_json_us(w, "time_at_stake_us", p->at_stake_ns);
      npkit_json_end_object(w);
    }
    npkit_json_end_array(w);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
}

static void stragglers(npkit_report *rep, npkit_json *w) {
  npkit_straggler *s = &rep->strag;
  npkit_json_key(w, "stragglers");
  npkit_json_begin_object(w);
  npkit_report_json_us(w, "threshold_us", s->threshold_ns);
  npkit_json_kv_uint(w, "instances", s->instances);
  npkit_json_kv_uint(w, "over_threshold", s->over);
  npkit_report_json_us(w, "delay_over_threshold_us", s->over_ns);
  npkit_json_kv_uint(w, "cross_host", s->cross_host);
  npkit_json_kv_uint(w, "gpu_timed", s->gpu);
  npkit_json_kv_uint(w, "mixed_skipped", s->mixed);
  npkit_report_json_us(w, "max_alignment_uncertainty_us", s->max_uncertainty_ns);
  quantiles(w, "spread_us", &s->spread);
  npkit_json_key(w, "ranks");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < s->n_ranks; i++) {
    const npkit_strag_rank *r = &s->ranks[i];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    kv_rank_label(w, rep, i);
    npkit_json_kv_uint(w, "instances", r->instances);
    npkit_json_kv_uint(w, "last", r->last);
    npkit_json_kv_uint(w, "last_over_threshold", r->last_over);
    npkit_report_json_us(w, "delay_caused_us", r->delay_caused_ns);
    npkit_report_json_us(w, "mean_lag_us", r->instances ? r->lag_ns / (double)r->instances : NAN);
    npkit_report_json_us(w, "waited_us", r->waited_ns);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
  npkit_json_key(w, "communicators");
  npkit_json_begin_array(w);
  for (uint32_t c = 0; c < s->n_comms; c++) {
    npkit_strag_comm *sc = &s->comms[c];
    if (sc->instances == 0) continue;
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    kv_comm(w, rep, c);
    npkit_json_kv_uint(w, "instances", sc->instances);
    npkit_json_kv_uint(w, "over_threshold", sc->over);
    npkit_report_json_us(w, "delay_over_threshold_us", sc->over_ns);
    quantiles(w, "spread_us", &sc->spread);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
  npkit_json_key(w, "largest");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < s->n_top; i++) {
    const npkit_strag_instance *in = &s->top[i];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    npkit_json_kv_string(w, "op", npkit_fn_short_name(in->fn));
    kv_comm(w, rep, in->comm);
    npkit_json_kv_uint(w, "seq", in->seq);
    npkit_json_kv_uint(w, "ranks", in->ranks);
    npkit_report_json_us(w, "spread_us", in->spread_ns);
    kv_rank(w, "last_rank", rep, in->last_log);
    kv_rank(w, "first_rank", rep, in->first_log);
    npkit_json_kv_uint(w, "first_arrival_ns", in->first_arrival_ns);
    npkit_report_json_us(w, "uncertainty_us", in->uncertainty_ns);
    npkit_json_kv_string(w, "time_source", in->gpu ? "gpu" : "cpu");
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
  npkit_json_end_object(w);
}

/* Idle time and gaps of one timeline (a stream, or the whole GPU without device and stream). */
static void idle_obj(npkit_json *w, const npkit_stream_idle *st) {
  npkit_json_begin_object(w);
  if (st->stream != UINT32_MAX) {
    npkit_json_kv_uint(w, "device", st->device);
    npkit_json_kv_uint(w, "stream", st->stream);
  }
  npkit_json_kv_uint(w, "kernels", st->kernels);
  npkit_report_json_us(w, "busy_us", (double)st->busy_ns);
  npkit_report_json_us(w, "idle_us", (double)st->idle_ns);
  npkit_json_kv_uint(w, "gaps", st->gaps);
  npkit_report_json_us(w, "max_gap_us", (double)st->max_gap_ns);
  npkit_json_kv_bool(w, "regular_gaps", st->regular);
  if (st->regular) {
    npkit_json_kv_uint(w, "regular_gap_count", st->regular_gaps);
    npkit_report_json_us(w, "regular_gap_us", st->gap_ns);
    npkit_report_json_us(w, "regular_period_us", st->period_ns);
    npkit_report_json_us(w, "regular_idle_us", st->regular_idle_ns);
  }
  npkit_json_end_object(w);
}

static void gpu(npkit_report *rep, npkit_json *w) {
  npkit_json_key(w, "gpu");
  npkit_json_begin_object(w);
  npkit_json_kv_bool(w, "available", rep->gpu_ranks > 0);
  if (rep->gpu_ranks == 0) {
    char why[400], msg[500];
    npkit_gpu_coverage c;
    npkit_report_no_gpu_reason(rep, why, sizeof(why));
    snprintf(msg, sizeof(msg), "overlap and idle time need GPU kernel events; %s", why);
    npkit_json_kv_string(w, "message", msg);
    npkit_report_gpu_coverage(rep, &c);
    npkit_json_kv_uint(w, "rows", c.rows);
    npkit_json_kv_uint(w, "gpu_timed_rows", c.gpu_rows);
    npkit_json_kv_uint(w, "calls", c.calls);
    npkit_json_kv_uint(w, "gpu_timed_calls", c.gpu_calls);
    npkit_json_kv_uint(w, "plugin_ranks", c.plugin_ranks);
    npkit_json_end_object(w);
    return;
  }
  npkit_json_key(w, "ranks");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_rep_log *l = &rep->logs[i];
    if (!l->has_gpu) continue;
    const npkit_gpu_rank *g = &l->gpu;
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    kv_rank(w, "rank", rep, i);
    npkit_json_kv_uint(w, "kernels", g->kernels);
    npkit_json_kv_uint(w, "comm_kernels", g->comm_kernels);
    npkit_json_kv_uint(w, "compute_kernels", g->compute_kernels);
    npkit_json_kv_uint(w, "memory_ops", g->memory_ops);
    npkit_json_kv_double(w, "overlap_ratio", g->overlap_ratio);
    npkit_report_json_us(w, "comm_us", (double)g->comm_ns);
    npkit_report_json_us(w, "compute_us", (double)g->compute_ns);
    npkit_report_json_us(w, "overlap_us", (double)g->overlap_ns);
    npkit_report_json_us(w, "exposed_comm_us", (double)g->exposed_ns);
    npkit_report_json_us(w, "busy_us", (double)g->busy_ns);
    npkit_report_json_us(w, "idle_us", (double)g->idle_ns);
    npkit_json_key(w, "timeline");
    idle_obj(w, &g->gpu);
    npkit_json_key(w, "streams");
    npkit_json_begin_array(w);
    for (size_t s = 0; s < g->n_streams; s++) idle_obj(w, &g->streams[s]);
    npkit_json_end_array(w);
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
  npkit_json_end_object(w);
}

static void findings(npkit_report *rep, npkit_json *w) {
  npkit_json_key(w, "findings");
  npkit_json_begin_array(w);
  for (size_t i = 0; i < rep->findings.n; i++) {
    const npkit_finding *f = &rep->findings.f[i];
    npkit_json_next_line(w);
    npkit_json_begin_object(w);
    npkit_json_kv_uint(w, "position", i + 1);
    npkit_json_kv_string(w, "kind", npkit_finding_kind_name(f->kind));
    npkit_report_json_us(w, "time_at_stake_us", f->at_stake_ns);
    npkit_json_kv_bool(w, "advice", npkit_finding_is_advice(f->kind));
    npkit_json_kv_string(w, "title", f->title);
    npkit_json_kv_string(w, "evidence", f->evidence);
    npkit_json_kv_string(w, "next_step", f->next_step);
    if (f->command[0] != '\0') npkit_json_kv_string(w, "merge_command", f->command);
    else {
      npkit_json_key(w, "merge_command");
      npkit_json_null(w);
    }
    if (f->log >= 0) kv_rank(w, "rank", rep, (size_t)f->log);
    if (f->comm != UINT32_MAX) kv_comm(w, rep, f->comm);
    if (f->fn != 0) npkit_json_kv_string(w, "op", npkit_fn_short_name(f->fn));
    npkit_json_end_object(w);
  }
  npkit_json_end_array(w);
}

int npkit_report_json(npkit_report *rep, int fd, char *err, size_t errlen) {
  npkit_json w;
  if (npkit_json_init(&w, fd) != 0) {
    npkit_json_finish(&w, NULL, 0);
    snprintf(err, errlen, "out of memory for the JSON writer");
    return -1;
  }
  npkit_json_begin_object(&w);
  npkit_json_kv_string(&w, "tool", "npkit-preload");
  npkit_json_kv_string(&w, "version", NPKIT_VERSION_STRING);
  npkit_json_kv_uint(&w, "report_version", NPKIT_REPORT_JSON_VERSION);
  npkit_json_key(&w, "inputs");
  npkit_json_begin_object(&w);
  npkit_json_kv_uint(&w, "logs", rep->job.n_logs);
  npkit_json_kv_uint(&w, "hosts", rep->job.n_hosts);
  npkit_json_kv_uint(&w, "bytes", rep->job.input_bytes);
  npkit_json_kv_uint(&w, "simulated_logs", npkit_report_simulated_logs(rep));
  npkit_json_key(&w, "warnings");
  npkit_json_begin_array(&w);
  for (size_t i = 0; i < rep->job.n_warnings; i++) npkit_json_string(&w, rep->job.warnings[i]);
  npkit_json_end_array(&w);
  npkit_json_end_object(&w);
  findings(rep, &w);
  npkit_report_hangs_json(rep, &w);
  ranks(rep, &w);
  alignment(rep, &w);
  comms(rep, &w);
  table(rep, &w);
  user_tags(rep, &w);
  curves(rep, &w);
  stragglers(rep, &w);
  gpu(rep, &w);
  npkit_report_extras_json(rep, &w);
  npkit_json_end_object(&w);
  npkit_json_raw(&w, "\n", 1);
  return npkit_json_finish(&w, err, errlen);
}
