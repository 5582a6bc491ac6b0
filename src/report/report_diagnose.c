/* Findings: each analysis result that matters becomes one finding with its evidence and a next step. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_names.h"
#include "report_evidence.h"
#include "report_steps.h"

#define appendf npkit_appendf

#define ADD(fs, kind, stake)                                  \
  do {                                                        \
    if ((f = npkit_findings_add((fs), (kind), (stake))) == NULL) return -1; \
  } while (0)

/* Mean number of ranks per instance, from the ranks' participation counts. */
static double ranks_per_instance(const npkit_straggler *s) {
  double entries = 0;
  for (size_t i = 0; i < s->n_ranks; i++) entries += (double)s->ranks[i].instances;
  return s->instances ? entries / (double)s->instances : 0;
}

static int stragglers(npkit_report *rep, double *attributed) {
  const npkit_straggler *s = &rep->strag;
  char lab[64], a[32], b[32], c[32], cl[96];
  npkit_finding *f;
  *attributed = 0;
  if (s->over == 0) return 0;
  double n = ranks_per_instance(s);
  if (n < 2) n = 2;
  /* A rank that causes far more than its fair share 1/n of the delay above the threshold: twice
   * that share, or for two ranks three quarters.  Weighing by time, not by count, keeps many tiny
   * spreads from hiding a few long waits. */
  double share = 2.0 / n < (1.0 + 1.0 / n) / 2 ? 2.0 / n : (1.0 + 1.0 / n) / 2;
  for (size_t r = 0; r < s->n_ranks; r++) {
    const npkit_strag_rank *sr = &s->ranks[r];
    if (sr->last_over < 2 || sr->delay_caused_ns < share * s->over_ns) continue;
    *attributed += sr->delay_caused_ns;
    ADD(&rep->findings, NPKIT_FIND_STRAGGLER, sr->delay_caused_ns);
    f->log = (int32_t)r;
    npkit_report_log_label(rep, r, lab, sizeof(lab));
    snprintf(f->title, sizeof(f->title), "%s arrives last at collectives (straggler)", lab);
    npkit_report_duration(s->threshold_ns, c, sizeof(c));
    npkit_report_duration(sr->delay_caused_ns / (double)sr->last_over, a, sizeof(a));
    npkit_report_duration(sr->delay_caused_ns, b, sizeof(b));
    snprintf(f->evidence, sizeof(f->evidence),
             "%s arrived last in %" PRIu64 " of the %" PRIu64 " collective instances whose arrival spread exceeded %s "
             "(%" PRIu64 " of %" PRIu64 " instances it took part in); the others waited %s for it each time on average, "
             "%s in all.", lab, sr->last_over, s->over, c,
             sr->last, sr->instances, a, b);
    for (size_t i = 0; i < s->n_top; i++) {
      const npkit_strag_instance *in = &s->top[i];
      if (in->last_log != r) continue;
      npkit_report_comm_label(rep, in->comm, cl, sizeof(cl));
      npkit_report_duration(in->spread_ns, a, sizeof(a));
      appendf(f->evidence, sizeof(f->evidence), " Largest: %s #%" PRIu64 " on %s, spread %s.",
              npkit_fn_short_name(in->fn), in->seq, cl, a);
      f->comm = in->comm;
      f->fn = in->fn;
      break;
    }
    if (s->cross_host > 0 && s->max_uncertainty_ns > 0) {
      npkit_report_duration(s->max_uncertainty_ns, a, sizeof(a));
      appendf(f->evidence, sizeof(f->evidence), " Clock alignment between hosts is good to about %s.", a);
    }
    snprintf(f->next_step, sizeof(f->next_step),
             "Find what %s does before these collectives: uneven work or data per rank, slow input loading, a host-side "
             "synchronisation, or CPU contention (check process and NUMA binding, e.g. mpirun --bind-to core or numactl, "
             "and GPU/NIC placement with nvidia-smi topo -m). No NCCL setting makes a late arrival earlier.", lab);
  }
  return 0;
}

static int sync_delay(npkit_report *rep, double attributed) {
  const npkit_straggler *s = &rep->strag;
  npkit_finding *f;
  char a[32], b[32], c[32], d[32];
  double rest = s->over_ns - attributed;
  if (s->over == 0 || rest <= 0) return 0;
  ADD(&rep->findings, NPKIT_FIND_SYNC_DELAY, rest);
  npkit_report_duration(s->threshold_ns, a, sizeof(a));
  snprintf(f->title, sizeof(f->title), "Synchronisation delay: ranks reach collectives more than %s apart", a);
  npkit_report_duration(npkit_quantile_get(&rep->strag.spread, 0.5), b, sizeof(b));
  npkit_report_duration(npkit_quantile_get(&rep->strag.spread, 0.99), c, sizeof(c));
  npkit_report_duration(rest, d, sizeof(d));
  snprintf(f->evidence, sizeof(f->evidence),
           "%" PRIu64 " of %" PRIu64 " collective instances had an arrival spread above %s (median spread %s, p99 %s); "
           "the delay not explained by a single straggler adds up to %s.", s->over, s->instances, a, b, c, d);
  snprintf(f->next_step, sizeof(f->next_step),
           "Spread without one late rank points at load imbalance or jitter: compare the work each rank does between "
           "collectives, look for OS noise (pin processes, e.g. mpirun --bind-to core), and for host-side "
           "synchronisations (cudaStreamSynchronize, .item()) just before communication.");
  return 0;
}

static int bandwidth(npkit_report *rep) {
  npkit_finding *f;
  char cl[96], k[32], p[32], t[32], big[32];
  for (size_t i = 0; i < rep->curves.n; i++) {
    const npkit_curve *cv = &rep->curves.c[i];
    if (cv->n_flagged == 0) continue;
    const npkit_curve_point *worst = NULL;
    for (size_t j = 0; j < cv->n; j++)
      if (cv->pts[j].flagged && (worst == NULL || cv->pts[j].busbw_gbs < worst->busbw_gbs)) worst = &cv->pts[j];
    ADD(&rep->findings, NPKIT_FIND_BANDWIDTH, cv->at_stake_ns);
    f->comm = cv->comm;
    f->fn = cv->fn;
    npkit_report_comm_label(rep, cv->comm, cl, sizeof(cl));
    npkit_report_bytes(cv->knee_bytes, k, sizeof(k));
    npkit_report_bytes(worst->bytes, big, sizeof(big));
    snprintf(f->title, sizeof(f->title), "%s on %s: bandwidth stops scaling above %s (bandwidth bottleneck)",
             npkit_fn_short_name(cv->fn), cl, k);
    npkit_report_duration(cv->at_stake_ns, t, sizeof(t));
    double knee_bw = NAN;
    for (size_t j = 0; j < cv->n; j++)
      if (cv->pts[j].bytes == cv->knee_bytes) knee_bw = cv->pts[j].busbw_gbs;
    snprintf(f->evidence, sizeof(f->evidence),
             "busbw reaches %.3g GB/s at %s but falls to %.3g GB/s at %s: time grows faster than size there. ", knee_bw,
             k, worst->busbw_gbs, big);
    if (cv->peak_bytes != cv->knee_bytes) {
      npkit_report_bytes(cv->peak_bytes, p, sizeof(p));
      appendf(f->evidence, sizeof(f->evidence), "(The curve peaks at %.3g GB/s at %s.) ", cv->peak_busbw_gbs, p);
    }
    appendf(f->evidence, sizeof(f->evidence), "%zu size%s flagged:", cv->n_flagged, cv->n_flagged == 1 ? "" : "s");
    for (size_t j = 0; j < cv->n; j++) {
      if (!cv->pts[j].flagged) continue;
      npkit_report_bytes(cv->pts[j].bytes, big, sizeof(big));
      appendf(f->evidence, sizeof(f->evidence), " %s (%.3g GB/s)", big, cv->pts[j].busbw_gbs);
    }
    appendf(f->evidence, sizeof(f->evidence), ". At the best bandwidth of the smaller sizes these calls would take %s less%s.",
            t, cv->source == NPKIT_TIME_CPU ? " (CPU times of the API calls)" : "");
    snprintf(f->next_step, sizeof(f->next_step),
             "See which algorithm and protocol NCCL picks at these sizes (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING) and "
             "try NCCL_ALGO=Ring or Tree, NCCL_PROTO=Simple, more channels (NCCL_MIN_NCHANNELS) or a larger "
             "NCCL_BUFFSIZE; across nodes check the transport (NCCL_DEBUG_SUBSYS=NET: IB/RoCE, not sockets; NCCL_IB_HCA) "
             "and GPU-NIC affinity.");
  }
  return 0;
}

static int gpu(npkit_report *rep) {
  npkit_finding *f;
  char lab[64], a[32], b[32], c[32];
  npkit_gpu_coverage cov;
  npkit_report_gpu_coverage(rep, &cov);
  if (rep->gpu_ranks == 0 && cov.gpu_rows > 0) {
    ADD(&rep->findings, NPKIT_FIND_NO_APP_KERNELS, NAN);
    snprintf(f->title, sizeof(f->title),
             "No kernels of the application in the logs: NCCL's own GPU stamps time %zu of %zu rows", cov.gpu_rows,
             cov.rows);
    snprintf(f->evidence, sizeof(f->evidence),
             "%zu of the table's %zu rows (%" PRIu64 " of %" PRIu64 " calls) are timed on the GPU by the events NCCL's "
             "profiler plugin reports for its own kernels (%" PRIu32 " of %zu ranks), with NCCL's algorithm and "
             "protocol. The logs hold no CUPTI records: no kernels, copies or memsets of the application, so "
             "communication/computation overlap, exposed communication, GPU idle time and bubbles are not "
             "reported%s.",
             cov.gpu_rows, cov.rows, cov.gpu_calls, cov.calls, cov.plugin_ranks, rep->job.n_logs,
             cov.gpu_rows < cov.rows ? "; the other rows are timed by the CPU time of their API calls, or not at all" : "");
    snprintf(f->next_step, sizeof(f->next_step),
             "Record the application's GPU activity too (CUPTI: NPKIT_CUPTI=1, the default, in a process that uses "
             "CUDA); the notes of a log (`npkit info LOG`) say why GPU timing was off in this run.");
    return 0;
  }
  if (rep->gpu_ranks == 0) {
    ADD(&rep->findings, NPKIT_FIND_NO_GPU, NAN);
    snprintf(f->title, sizeof(f->title), "No GPU activity in the logs: times are CPU times of the NCCL calls");
    snprintf(f->evidence, sizeof(f->evidence),
             "The logs hold NCCL API events only. Communication/computation overlap, GPU idle time and bubbles need "
             "GPU kernel events and are not reported. An API call's CPU time is the collective's time only when the "
             "call blocks until the collective is done; NCCL normally returns once the work is queued.");
    snprintf(f->next_step, sizeof(f->next_step),
             "Record GPU activity (CUPTI kernel events) so that times, overlap and idle come from the GPU.");
    return 0;
  }
  /* exposed communication: the rank with the most sets the pace */
  size_t worst = SIZE_MAX;
  for (size_t i = 0; i < rep->job.n_logs; i++)
    if (rep->logs[i].has_gpu && rep->logs[i].gpu.comm_ns > 0 &&
        (worst == SIZE_MAX || rep->logs[i].gpu.exposed_ns > rep->logs[worst].gpu.exposed_ns))
      worst = i;
  if (worst != SIZE_MAX && rep->logs[worst].gpu.exposed_ns > 0) {
    const npkit_gpu_rank *g = &rep->logs[worst].gpu;
    ADD(&rep->findings, NPKIT_FIND_EXPOSED_COMM, (double)g->exposed_ns);
    f->log = (int32_t)worst;
    npkit_report_log_label(rep, worst, lab, sizeof(lab));
    npkit_report_duration((double)g->exposed_ns, a, sizeof(a));
    npkit_report_duration((double)g->comm_ns, b, sizeof(b));
    snprintf(f->title, sizeof(f->title), "Exposed communication: %s of GPU communication not hidden by computation", a);
    snprintf(f->evidence, sizeof(f->evidence),
             "On %s, %s of %s communication kernel time ran with no computation beside it (overlap ratio %.0f %%).", lab,
             a, b, 100.0 * g->overlap_ratio);
    snprintf(f->next_step, sizeof(f->next_step),
             "Start communication earlier so computation hides it (DDP bucket_cap_mb, FSDP prefetching, asynchronous "
             "collectives), and leave SMs to computation with NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS.");
  }
  /* Bubbles: regular gaps of the whole GPU, when no stream runs anything.  They fall in the same
   * step on every rank, so the worst rank's total is the time at stake, not the sum over ranks. */
  size_t bub = SIZE_MAX, ranks_with = 0, streams_with = 0;
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_gpu_rank *g = &rep->logs[i].gpu;
    if (!rep->logs[i].has_gpu) continue;
    for (size_t s = 0; s < g->n_streams; s++) streams_with += g->streams[s].regular != 0;
    if (!g->gpu.regular) continue;
    ranks_with++;
    if (bub == SIZE_MAX || g->gpu.regular_idle_ns > rep->logs[bub].gpu.gpu.regular_idle_ns) bub = i;
  }
  if (bub != SIZE_MAX) {
    const npkit_stream_idle *st = &rep->logs[bub].gpu.gpu;
    ADD(&rep->findings, NPKIT_FIND_BUBBLES, st->regular_idle_ns);
    f->log = (int32_t)bub;
    npkit_report_log_label(rep, bub, lab, sizeof(lab));
    npkit_report_duration(st->gap_ns, a, sizeof(a));
    npkit_report_duration(st->period_ns, b, sizeof(b));
    npkit_report_duration(st->regular_idle_ns, c, sizeof(c));
    snprintf(f->title, sizeof(f->title), "Pipeline bubbles: the GPU of %s sits idle %s every %s", lab, a, b);
    snprintf(f->evidence, sizeof(f->evidence),
             "On %zu of the %" PRIu32 " ranks with GPU activity the whole GPU idles in a regular pattern. On %s: %" PRIu64
             " gaps of about %s every %s, %s in all (%.0f %% of its span). %zu stream%s show regular gaps of their "
             "own.", ranks_with, rep->gpu_ranks, lab, st->regular_gaps, a, b, c,
             st->last_ns > st->first_ns ? 100.0 * st->regular_idle_ns / (double)(st->last_ns - st->first_ns) : 0.0,
             streams_with, streams_with == 1 ? "" : "s");
    snprintf(f->next_step, sizeof(f->next_step),
             "The GPU waits for the host at a fixed point of every step: look at the host work between those launches "
             "(input pipeline, Python overhead, synchronisations); CUDA Graphs or more work per launch close such gaps.");
  }
  return 0;
}

/* One finding for every log whose NPKit dump was read while the process held several
 * communicators: NPKit's patch keeps one state per process (NpKit::Init per communicator). */
static int npkit_shared(npkit_report *rep) {
  npkit_finding *f;
  char lab[64];
  size_t logs = 0, first = 0;
  for (size_t i = 0; i < rep->job.n_logs; i++)
    if (rep->logs[i].npkit_shared_reads > 0 && logs++ == 0) first = i;
  if (logs == 0) return 0;
  ADD(&rep->findings, NPKIT_FIND_NPKIT_SHARED, NAN);
  if (logs == 1) f->log = (int32_t)first;
  npkit_report_log_label(rep, first, lab, sizeof(lab));
  snprintf(f->title, sizeof(f->title), "NPKit dumps of %zu process%s may mix communicators", logs,
           logs == 1 ? "" : "es");
  snprintf(f->evidence, sizeof(f->evidence),
           "%s%s read %s NPKit dump while holding more than one communicator at once. NPKit keeps one state "
           "per process that the setup of every communicator starts afresh: such a dump holds the GPU events "
           "of the communicator set up last and the network events of all of them, and only the first "
           "ncclCommDestroy or ncclCommAbort writes one.",
           lab, logs > 1 ? " and others" : "", logs > 1 ? "an" : "its");
  snprintf(f->next_step, sizeof(f->next_step),
           "NPKit's patch supports one communicator per process (and one GPU per process): profile NPKit with "
           "a single communicator per process, or read the NCCL profiler plugin's events instead.");
  return 0;
}

static int data_quality(npkit_report *rep) {
  npkit_finding *f;
  char lab[64], a[32];
  for (size_t i = 0; i < rep->job.n_logs; i++) {
    const npkit_job_log *jl = &rep->job.logs[i];
    npkit_report_log_label(rep, i, lab, sizeof(lab));
    for (uint32_t k = 0; k < jl->n_loss; k++) {
      const npkit_job_loss *s = &jl->loss[k];
      double total = (double)(s->recorded + s->dropped);
      if (total == 0 || (double)s->dropped / total <= NPKIT_REPORT_LOSS_LIMIT) continue;
      ADD(&rep->findings, NPKIT_FIND_LOST_EVENTS, NAN);
      f->log = (int32_t)i;
      snprintf(f->title, sizeof(f->title), "%s lost %.1f %% of its %s events", lab, 100.0 * (double)s->dropped / total,
               npkit_source_name(s->source));
      snprintf(f->evidence, sizeof(f->evidence),
               "%" PRIu64 " %s events recorded, %" PRIu64 " lost because the event buffer was full: statistics of this "
               "rank are incomplete.", s->recorded, npkit_source_name(s->source), s->dropped);
      snprintf(f->next_step, sizeof(f->next_step),
               "Raise the event buffer and run again: NPKIT_EVENT_BUF_SIZE is in MB (default 64), e.g. "
               "NPKIT_EVENT_BUF_SIZE=256.");
    }
    if (jl->skipped_blocks > 0) {
      ADD(&rep->findings, NPKIT_FIND_TRUNCATED, NAN);
      f->log = (int32_t)i;
      snprintf(f->title, sizeof(f->title), "The log of %s is damaged", lab);
      snprintf(f->evidence, sizeof(f->evidence),
               "%s: %" PRIu64 " corrupt block%s (%" PRIu64 " bytes) could not be read and were skipped; the report "
               "covers the rest.", jl->path, jl->skipped_blocks, jl->skipped_blocks == 1 ? "" : "s", jl->skipped_bytes);
      snprintf(f->next_step, sizeof(f->next_step),
               "Check the storage the logs were written to (a failing disk, a network file system that lost writes); "
               "numbers of this rank miss the events of the skipped blocks.");
    }
    if (jl->truncated || !jl->closed_cleanly) {
      ADD(&rep->findings, NPKIT_FIND_TRUNCATED, NAN);
      f->log = (int32_t)i;
      snprintf(f->title, sizeof(f->title), "The log of %s ends early", lab);
      snprintf(f->evidence, sizeof(f->evidence), "%s: %s; the report covers it up to its last complete block.", jl->path,
               jl->truncated ? jl->truncation : "no END block (the process was killed or is still running)");
      snprintf(f->next_step, sizeof(f->next_step),
               "Check how the process ended (a crash, a kill by the launcher or a time limit); logs are complete only "
               "after a clean exit.");
    }
  }
  for (size_t c = 0; c < rep->job.n_comms; c++) {
    const npkit_job_comm *cm = &rep->job.comms[c];
    if (cm->nranks <= 0 || cm->n_members >= (uint32_t)cm->nranks) continue;
    ADD(&rep->findings, NPKIT_FIND_MISSING_RANKS, NAN);
    f->comm = (uint32_t)c;
    npkit_report_comm_label(rep, (uint32_t)c, lab, sizeof(lab));
    snprintf(f->title, sizeof(f->title), "Logs of %" PRId32 " of the %" PRId32 " ranks of %s are missing",
             cm->nranks - (int32_t)cm->n_members, cm->nranks, lab);
    snprintf(f->evidence, sizeof(f->evidence),
             "Only %" PRIu32 " ranks of this communicator have a log here: arrival spreads and stragglers cover those only.",
             cm->n_members);
    snprintf(f->next_step, sizeof(f->next_step),
             "Give the logs of every rank (the NPKIT_TRACE_DIR of every node) to the report.");
    break; /* one is enough: the others have the same cause */
  }
  if (npkit_shared(rep) != 0) return -1;
  if (rep->job.align_done) {
    size_t none = 0, worst = 0;
    for (size_t h = 1; h < rep->job.n_hosts; h++) {
      if (rep->job.hosts[h].align.status == NPKIT_ALIGN_NONE) none++;
      if (rep->job.hosts[h].align.uncertainty_ns > rep->job.hosts[worst].align.uncertainty_ns) worst = h;
    }
    double unc = rep->job.hosts[worst].align.uncertainty_ns;
    if (none > 0 || rep->job.align.cycle_failures > 0 || unc > rep->opts.threshold_ns) {
      ADD(&rep->findings, NPKIT_FIND_CLOCK, NAN);
      snprintf(f->title, sizeof(f->title), "Clock alignment between hosts is %s", none ? "incomplete" : "uncertain");
      f->evidence[0] = '\0';
      if (none)
        appendf(f->evidence, sizeof(f->evidence), "%zu host%s share%s no collective with the reference host %s. ", none,
                none == 1 ? "" : "s", none == 1 ? "s" : "", rep->job.hosts[0].name);
      if (unc > rep->opts.threshold_ns) {
        npkit_report_duration(unc, a, sizeof(a));
        appendf(f->evidence, sizeof(f->evidence), "The offset of host %s is uncertain by %s: cross-host arrival "
                "comparisons finer than that are unreliable. ", rep->job.hosts[worst].name, a);
      }
      if (rep->job.align.cycle_failures > 0) {
        npkit_report_duration(rep->job.align.worst_cycle_ns, a, sizeof(a));
        appendf(f->evidence, sizeof(f->evidence), "%" PRIu32 " of %" PRIu32 " consistency checks failed (worst "
                "mismatch %s between %s and %s). ", rep->job.align.cycle_failures, rep->job.align.cycle_checks, a,
                rep->job.hosts[rep->job.align.worst_a].name, rep->job.hosts[rep->job.align.worst_b].name);
      }
      snprintf(f->next_step, sizeof(f->next_step),
               "Collective ends line up only when the calls block until the collective completes; GPU activity events "
               "give GPU end times that always do. Keep host clocks synchronised (chrony/PTP).");
    }
  }
  return 0;
}

/* One finding per hang (report_hang.h), the time stuck at stake; its evidence the state of each
 * rank that did not complete the collective. */
static int hangs(npkit_report *rep) {
  npkit_finding *f;
  char list[256], a[32];
  for (size_t i = 0; i < rep->hangs.n; i++) {
    const npkit_hang *h = &rep->hangs.h[i];
    ADD(&rep->findings, NPKIT_FIND_HANG, (double)h->stuck_ns);
    f->comm = h->comm;
    f->fn = h->fn;
    snprintf(f->title, sizeof(f->title), "%.250s", h->title);
    f->evidence[0] = '\0';
    for (size_t k = 0; k < h->n_ranks; k++) {
      const npkit_hang_rank *r = &h->ranks[k];
      if (r->status == NPKIT_HANG_DONE || r->n_where == 0) continue;
      appendf(f->evidence, sizeof(f->evidence), "%sRank %" PRId32 ": %s.", f->evidence[0] ? " " : "", r->rank, r->where[0]);
    }
    npkit_report_duration((double)h->stuck_ns, a, sizeof(a));
    if (h->stuck_ns > 0) appendf(f->evidence, sizeof(f->evidence), " The longest wait: %s.", a);
    int missing = 0, stuck = 0;
    for (size_t k = 0; k < h->n_ranks; k++) {
      missing |= h->ranks[k].status == NPKIT_HANG_MISSING || h->ranks[k].status == NPKIT_HANG_NO_LOG;
      stuck |= h->ranks[k].stuck || h->ranks[k].mismatched;
    }
    if (missing)
      snprintf(f->next_step, sizeof(f->next_step),
               "Find out what rank%s %s did instead of calling the collective: its own stack (py-spy dump, gdb -p, or "
               "NPKIT_STACK_DEPTH for the calls before), a data-dependent branch that skips the call on some ranks, an "
               "exception, or a process that died (the launcher's and the kernel's log: dmesg, OOM killer).",
               strchr(npkit_hang_rank_list(h, NPKIT_HANG_MISSING, list, sizeof(list)), ' ') ? "s" : "", list);
    else if (stuck && (npkit_hang_rank_list(h, -2, list, sizeof(list))[0] || npkit_hang_rank_list(h, -1, list, sizeof(list))[0]))
      snprintf(f->next_step, sizeof(f->next_step),
               "Look at rank%s %s: a desync means the ranks' code paths diverged before this collective (compare the "
               "calls before it); a kernel that never started means its stream is held by earlier work (a hung kernel "
               "of the application); a network step that never completes points at the NIC or the fabric (NCCL_DEBUG=INFO, "
               "the HCA's counters).",
               strchr(list, ' ') ? "s" : "", list);
    else
      snprintf(f->next_step, sizeof(f->next_step),
               "Every rank entered the collective and none finished it: a hang inside NCCL or the GPU. Run again with "
               "NPKIT_HANG_TIMEOUT and the profiler plugin's kernel and proxy events (the defaults) to see the channel "
               "and network step each rank is stuck in, and NCCL_DEBUG=INFO.");
  }
  return 0;
}

int npkit_report_diagnose(npkit_report *rep) {
  double attributed;
  if (hangs(rep) != 0) return -1;
  if (stragglers(rep, &attributed) != 0) return -1;
  if (sync_delay(rep, attributed) != 0) return -1;
  if (bandwidth(rep) != 0) return -1;
  if (gpu(rep) != 0) return -1;
  if (data_quality(rep) != 0) return -1;
  if (npkit_report_machine_findings(rep) != 0) return -1;
  if (npkit_report_advice(rep) != 0) return -1;
  npkit_findings_sort(&rep->findings);
  return npkit_report_evidence_commands(rep);
}
