/* The readable text view of a report. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nccl_names.h"
#include "report_hang_views.h"
#include "report_machine_view.h"
#include "report_render.h"

#define RULE "--------------------------------------------------------------------------------\n"

static void section(FILE *o, const char *title) {
  fprintf(o, "\n== %s\n", title);
}

/* A paragraph, one sentence a line (sentences end in ". "; numbers such as "1.5 ms" do not). */
static void sentences(FILE *o, const char *indent, const char *text) {
  fputs(indent, o);
  for (const char *p = text; *p != '\0'; p++) {
    fputc(*p, o);
    if (p[0] == '.' && p[1] == ' ') {
      fprintf(o, "\n%s", indent);
      p++;
    }
  }
  fputc('\n', o);
}

static void overview(npkit_report *rep, FILE *o) {
  char line[256], sim[320];
  npkit_report_overview(rep, line, sizeof(line));
  fprintf(o, "npkit report: %s\n", line);
  npkit_report_simulated_note(rep, sim, sizeof(sim));
  if (sim[0] != '\0') fprintf(o, "%s\n", sim);
  for (size_t i = 0; i < rep->job.n_warnings; i++) fprintf(o, "warning: %s\n", rep->job.warnings[i]);
}

static void findings(npkit_report *rep, FILE *o) {
  char t[48];
  section(o, "Findings (ranked by time at stake)");
  if (rep->findings.n == 0) {
    fprintf(o, "  Nothing stands out: no straggler, no arrival spread above the threshold, no bandwidth drop, "
               "no lost events.\n");
    return;
  }
  for (size_t i = 0; i < rep->findings.n; i++) {
    const npkit_finding *f = &rep->findings.f[i];
    npkit_finding_label(f, t, sizeof(t)); /* advice, or a machine finding without a time at stake */
    if (t[0] == '\0' && isnan(f->at_stake_ns))
      snprintf(t, sizeof(t), "data");
    else if (t[0] == '\0')
      npkit_report_duration(f->at_stake_ns, t, sizeof(t));
    fprintf(o, "%2zu. [%s] %s\n", i + 1, t, f->title);
    fprintf(o, "    evidence: %s\n", f->evidence);
    fprintf(o, "    next step: %s\n", f->next_step);
    if (f->command[0] != '\0') fprintf(o, "    see it: %s\n", f->command);
  }
}

static void alignment(npkit_report *rep, FILE *o) {
  char a[32], b[32], ranks[128];
  section(o, "Clock alignment");
  if (rep->job.n_hosts <= 1) {
    fprintf(o, "  All ranks ran on host %s and share its clock: no offsets needed.\n",
            rep->job.n_hosts ? rep->job.hosts[0].name : "?");
  } else if (!rep->opts.align) {
    fprintf(o, "  Disabled (--no-align): the hosts' clocks are taken as they are.\n");
  } else {
    fprintf(o, "  Offsets from the ends of shared collectives (%s end times), reference host %s:\n",
            rep->job.align_source == NPKIT_TIME_GPU ? "GPU" : "API call", rep->job.hosts[0].name);
    fprintf(o, "  %-20s %-12s %14s %12s %9s %7s %8s  %-12s %s\n", "host", "ranks", "offset", "uncertainty", "samples",
            "used", "rejected", "via", "status");
    for (uint32_t h = 0; h < rep->job.n_hosts; h++) {
      const npkit_align_host *al = &rep->job.hosts[h].align;
      npkit_report_host_ranks(rep, h, ranks, sizeof(ranks));
      npkit_report_duration((double)al->offset_ns, a, sizeof(a));
      if (al->status == NPKIT_ALIGN_OK) npkit_report_duration(al->uncertainty_ns, b, sizeof(b));
      else snprintf(b, sizeof(b), "-");
      fprintf(o, "  %-20.20s %-12.12s %14s %12s %9" PRIu64 " %7" PRIu64 " %8" PRIu64 "  %-12.12s %s\n",
              rep->job.hosts[h].name, ranks, a, b, al->samples, al->used, al->rejected,
              al->via >= 0 ? rep->job.hosts[al->via].name : "-", npkit_align_status_name(al->status));
    }
    if (rep->job.align.cycle_checks > 0) {
      npkit_report_duration(rep->job.align.worst_cycle_ns, a, sizeof(a));
      fprintf(o, "  consistency: %" PRIu32 " of %" PRIu32 " cross-checks failed (largest mismatch %s)\n",
              rep->job.align.cycle_failures, rep->job.align.cycle_checks, a);
    }
  }
  if (rep->job.host_end_spread.n > 0) {
    npkit_report_duration(npkit_quantile_get(&rep->job.host_end_spread, 0.5), a, sizeof(a));
    npkit_report_duration(npkit_quantile_get(&rep->job.host_end_spread, 0.99), b, sizeof(b));
    fprintf(o, "  How well ends line up: ranks of one host leave the same collective within %s (median), %s (p99).\n",
            a, b);
  }
}

static void table(npkit_report *rep, FILE *o) {
  char cl[96], sz[32], m[32], p50[32], p99[32], root[16], ap[40];
  section(o, "Collectives (nccl-tests table; time per call and rank; algbw = S/time, busbw = algbw x factor)");
  if (rep->table.n == 0) {
    fprintf(o, "  No data-moving NCCL calls in the logs.\n");
    return;
  }
  fprintf(o, "  %-13s %-26s %10s %10s %-8s %-5s %4s %7s %7s %4s %9s %9s %9s %9s %9s %s\n", "op", "communicator", "size",
          "count", "type", "redop", "root", "calls", "timed", "src", "mean", "p50", "p99", "algbw", "busbw",
          "algo/proto");
  for (size_t i = 0; i < rep->table.n; i++) {
    const npkit_table_row *r = &rep->table.rows[i];
    npkit_report_comm_label(rep, r->key.comm, cl, sizeof(cl));
    npkit_report_bytes(r->key.bytes, sz, sizeof(sz));
    npkit_report_duration(r->mean_ns, m, sizeof(m));
    npkit_report_duration(r->p50_ns, p50, sizeof(p50));
    npkit_report_duration(r->p99_ns, p99, sizeof(p99));
    if (r->key.root >= 0) snprintf(root, sizeof(root), "%" PRId32, r->key.root);
    else snprintf(root, sizeof(root), "-");
    if (r->algo[0] || r->proto[0]) snprintf(ap, sizeof(ap), "%s/%s", r->algo[0] ? r->algo : "?", r->proto[0] ? r->proto : "?");
    else snprintf(ap, sizeof(ap), "-");
    fprintf(o, "  %-13s %-26.26s %10s %10" PRIu64 " %-8s %-5s %4s %7" PRIu64 " %7" PRIu64 " %4s %9s %9s %9s ",
            npkit_fn_short_name(r->key.fn), cl, sz, r->key.count, npkit_datatype_name(r->key.datatype),
            r->key.redop >= 0 ? npkit_redop_name(r->key.redop) : "-", root, r->calls, r->samples,
            npkit_time_source_name(r->source), m, p50, p99);
    if (isnan(r->algbw_gbs))
      fprintf(o, "%9s %9s %s\n", "-", "-", ap);
    else
      fprintf(o, "%9.3f %9.3f %s\n", r->algbw_gbs, r->busbw_gbs, ap);
  }
  fprintf(o, "  src: gpu = GPU activity of the call, cpu = the API call's duration, none = no timed call (inside a group\n"
             "  or non-blocking: the call only queues the work). Bandwidths in GB/s (1e9 B/s).\n");
}

/* Only when some calls carry a user tag (nccl*Config, NCCL 2.31). */
static void user_tags(npkit_report *rep, FILE *o) {
  if (rep->n_tags == 0) return;
  char tag[24], ops[96], sz[32], t[32];
  section(o, "By user tag (userProfilerTag of nccl*Config calls; time summed over calls and ranks)");
  fprintf(o, "  %-20s %-34s %9s %9s %10s %12s %6s %4s\n", "tag", "operations", "calls", "timed", "bytes", "time",
          "share", "src");
  for (size_t i = 0; i < rep->n_tags; i++) {
    const npkit_tag_sum *s = &rep->tags[i];
    npkit_tag_string(s->tag, tag, sizeof tag);
    npkit_tag_ops_string(s, ops, sizeof ops);
    npkit_report_bytes(s->bytes, sz, sizeof sz);
    npkit_report_duration(s->time_ns, t, sizeof t);
    if (isnan(s->share))
      fprintf(o, "  %-20s %-34.34s %9" PRIu64 " %9" PRIu64 " %10s %12s %6s %4s\n", tag, ops, s->calls, s->timed, sz, t,
              "-", npkit_time_source_name(s->source));
    else
      fprintf(o, "  %-20s %-34.34s %9" PRIu64 " %9" PRIu64 " %10s %12s %5.1f%% %4s\n", tag, ops, s->calls, s->timed, sz,
              t, 100.0 * s->share, npkit_time_source_name(s->source));
  }
}

static void curves(npkit_report *rep, FILE *o) {
  char cl[96], sz[32], t[32], e[32];
  section(o, "Bandwidth versus size");
  if (rep->curves.n == 0) {
    fprintf(o, "  No timed data-moving calls.\n");
    return;
  }
  for (size_t i = 0; i < rep->curves.n; i++) {
    const npkit_curve *cv = &rep->curves.c[i];
    npkit_report_comm_label(rep, cv->comm, cl, sizeof(cl));
    npkit_report_bytes(cv->peak_bytes, sz, sizeof(sz));
    fprintf(o, "  %s on %s (%s time): peak busbw %.3f GB/s at %s\n", npkit_fn_short_name(cv->fn), cl,
            npkit_time_source_name(cv->source), cv->peak_busbw_gbs, sz);
    fprintf(o, "    %10s %10s %9s %9s %10s\n", "size", "time", "algbw", "busbw", "instances");
    for (size_t k = 0; k < cv->n; k++) {
      const npkit_curve_point *p = &cv->pts[k];
      npkit_report_bytes(p->bytes, sz, sizeof(sz));
      npkit_report_duration(p->time_ns, t, sizeof(t));
      fprintf(o, "    %10s %10s %9.3f %9.3f %10.0f", sz, t, p->algbw_gbs, p->busbw_gbs, p->instances);
      if (p->flagged) {
        npkit_report_duration(p->expected_ns, e, sizeof(e));
        fprintf(o, "  <- bandwidth bottleneck (would take %s at the best bandwidth before)", e);
      }
      fputc('\n', o);
    }
  }
}

static void stragglers(npkit_report *rep, FILE *o) {
  npkit_straggler *s = &rep->strag;
  char a[32], b[32], c[32], d[32], lab[64], cl[96];
  section(o, "Stragglers and synchronisation delay");
  if (s->instances == 0) {
    fprintf(o, "  No collective was recorded by two ranks or more outside groups: nothing to compare.\n");
    return;
  }
  char summary[512];
  npkit_report_straggler_summary(rep, summary, sizeof(summary));
  sentences(o, "  ", summary);
  fprintf(o, "  %-16s %10s %8s %10s %13s %12s %12s\n", "rank", "instances", "last", "last>thr", "delay caused",
          "mean lag", "waited");
  for (size_t i = 0; i < s->n_ranks; i++) {
    const npkit_strag_rank *r = &s->ranks[i];
    if (r->instances == 0) continue;
    npkit_report_log_label(rep, i, lab, sizeof(lab));
    npkit_report_duration(r->delay_caused_ns, a, sizeof(a));
    npkit_report_duration(r->lag_ns / (double)r->instances, b, sizeof(b));
    npkit_report_duration(r->waited_ns, c, sizeof(c));
    fprintf(o, "  %-16.16s %10" PRIu64 " %8" PRIu64 " %10" PRIu64 " %13s %12s %12s\n", lab, r->instances, r->last,
            r->last_over, a, b, c);
  }
  if (s->n_top > 0) {
    fprintf(o, "  Largest arrival spreads:\n");
    fprintf(o, "    %-13s %8s %-26s %6s %10s %-12s %-12s\n", "op", "seq", "communicator", "ranks", "spread", "last",
            "first");
    for (size_t i = 0; i < s->n_top; i++) {
      const npkit_strag_instance *in = &s->top[i];
      npkit_report_comm_label(rep, in->comm, cl, sizeof(cl));
      npkit_report_duration(in->spread_ns, a, sizeof(a));
      npkit_report_log_label(rep, in->last_log, lab, sizeof(lab));
      npkit_report_log_label(rep, in->first_log, d, sizeof(d));
      fprintf(o, "    %-13s %8" PRIu64 " %-26.26s %6" PRIu32 " %10s %-12.12s %-12.12s\n", npkit_fn_short_name(in->fn),
              in->seq, cl, in->ranks, a, lab, d);
    }
  }
}

static void idle_line(FILE *o, const char *name, const npkit_stream_idle *st) {
  char a[32], b[32], c[32], d[32];
  npkit_report_duration((double)st->idle_ns, a, sizeof(a));
  npkit_report_duration((double)st->max_gap_ns, b, sizeof(b));
  fprintf(o, "    %-16s %8" PRIu64 " kernels, idle %s in %" PRIu64 " gaps (largest %s)", name, st->kernels, a, st->gaps, b);
  if (st->regular) {
    npkit_report_duration(st->gap_ns, c, sizeof(c));
    npkit_report_duration(st->period_ns, d, sizeof(d));
    fprintf(o, "; regular: %" PRIu64 " gaps of ~%s every ~%s", st->regular_gaps, c, d);
  }
  fputc('\n', o);
}

static void gpu(npkit_report *rep, FILE *o) {
  char lab[64], a[32], b[32], c[32], d[32], e[32];
  section(o, "Communication/computation overlap and GPU idle time (bubbles)");
  if (rep->gpu_ranks == 0) {
    char why[400], line[600];
    npkit_report_no_gpu_reason(rep, why, sizeof(why));
    snprintf(line, sizeof(line),
             "Needs GPU kernel events: %s, so overlap, exposed communication and GPU idle time are not computed.", why);
    sentences(o, "  ", line);
    return;
  }
  fprintf(o, "  %-16s %8s %11s %11s %11s %11s %11s\n", "rank", "overlap", "comm", "compute", "exposed", "busy", "idle");
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_rep_log *l = &rep->logs[i];
    if (!l->has_gpu) continue;
    npkit_report_log_label(rep, i, lab, sizeof(lab));
    npkit_report_duration((double)l->gpu.comm_ns, a, sizeof(a));
    npkit_report_duration((double)l->gpu.compute_ns, b, sizeof(b));
    npkit_report_duration((double)l->gpu.exposed_ns, c, sizeof(c));
    npkit_report_duration((double)l->gpu.busy_ns, d, sizeof(d));
    npkit_report_duration((double)l->gpu.idle_ns, e, sizeof(e));
    if (isnan(l->gpu.overlap_ratio))
      fprintf(o, "  %-16.16s %8s", lab, "-");
    else
      fprintf(o, "  %-16.16s %7.1f%%", lab, 100.0 * l->gpu.overlap_ratio);
    fprintf(o, " %11s %11s %11s %11s %11s\n", a, b, c, d, e);
    idle_line(o, "whole GPU", &l->gpu.gpu);
    for (size_t s = 0; s < l->gpu.n_streams; s++) {
      char name[48];
      snprintf(name, sizeof(name), "stream %" PRIu32 ":%" PRIu32, l->gpu.streams[s].device, l->gpu.streams[s].stream);
      idle_line(o, name, &l->gpu.streams[s]);
    }
  }
}

static void losses(npkit_report *rep, FILE *o) {
  char lab[64];
  int advice = 0;
  section(o, "Lost events");
  fprintf(o, "  %-16s %-8s %12s %10s %8s\n", "rank", "source", "recorded", "lost", "lost %");
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_job_log *jl = &rep->job.logs[i];
    npkit_report_log_label(rep, i, lab, sizeof(lab));
    if (jl->n_loss == 0) fprintf(o, "  %-16.16s %-8s %12" PRIu64 " %10" PRIu64 " %8s\n", lab, "all", jl->recorded, jl->dropped, "-");
    for (uint32_t k = 0; k < jl->n_loss; k++) {
      const npkit_job_loss *s = &jl->loss[k];
      double total = (double)(s->recorded + s->dropped);
      double pct = total > 0 ? 100.0 * (double)s->dropped / total : 0;
      fprintf(o, "  %-16.16s %-8s %12" PRIu64 " %10" PRIu64 " %7.2f%%%s\n", lab, npkit_source_name(s->source), s->recorded,
              s->dropped, pct, pct > 100.0 * NPKIT_REPORT_LOSS_LIMIT ? "  <- above 3 %" : "");
      if (pct > 100.0 * NPKIT_REPORT_LOSS_LIMIT) advice = 1;
    }
  }
  if (advice)
    fprintf(o, "  More than 3 %% lost: raise the event buffer (NPKIT_EVENT_BUF_SIZE, MB, default 64) and run again.\n");
}

int npkit_report_text(npkit_report *rep, FILE *o) {
  overview(rep, o);
  findings(rep, o);
  npkit_report_hangs_text(rep, o);
  alignment(rep, o);
  table(rep, o);
  user_tags(rep, o);
  curves(rep, o);
  stragglers(rep, o);
  gpu(rep, o);
  losses(rep, o);
  npkit_report_machine_text(rep, o);
  fputs(RULE, o);
  fflush(o);
  return ferror(o) ? -1 : 0;
}
