/* NCCL tuning advice (report_steps.h), only where the data supports it, each with its evidence,
 * the gain it could bring (the finding's time at stake: an upper estimate, not a promise) and
 * the settings to test:
 *  - the socket transport (no InfiniBand port up, or NCCL_IB_DISABLE / NCCL_NET=Socket) with busbw
 *    far below the Ethernet ports' rate: more sockets and threads per connection;
 *  - many small collectives whose time is mostly latency: group or bucket them;
 *  - few channels on large messages (NCCL's profiler plugin says how many): the channel settings. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "nccl_names.h"
#include "report_links.h"
#include "report_steps.h"

#define SOCKET_FAR_BELOW 0.5     /* busbw under half the port's rate */
#define REACHABLE 0.8            /* what a tuned transport reaches of a link, for the gain */
#define SMALL_BYTES (64u << 10)  /* a collective this small is dominated by latency */
#define SMALL_MIN_CALLS 100
#define SMALL_SHARE 0.2          /* of the communicator's collective time */
#define BUCKET_BYTES (4u << 20)  /* what a bucket of small tensors is grouped into */
#define LARGE_BYTES (16u << 20)
#define FEW_CHANNELS 4
#define CHANNELS_FAR_BELOW 0.6

/* A finding's text, cut at its end like the evidence. */
#define SET(buf, ...) ((buf)[0] = '\0', npkit_appendf((buf), sizeof(buf), __VA_ARGS__))

#define ADD(kind, stake)                                                     \
  do {                                                                       \
    if ((f = npkit_findings_add(&rep->findings, (kind), (stake))) == NULL) return -1; \
  } while (0)

/* The setting a member of comm c runs with (the first member that has a snapshot), NULL. */
static const char *comm_setting(const npkit_report *rep, uint32_t c, const char *name) {
  const npkit_job_comm *jc = &rep->job.comms[c];
  for (uint32_t k = 0; k < jc->n_members; k++) {
    if (jc->members[k] == NPKIT_JOB_NONE) continue;
    const npkit_machine *m = &rep->logs[rep->job.members[jc->members[k]].log].machine.snap;
    if (!m->present) continue;
    const npkit_mach_setting *s = npkit_machine_effective(m, name);
    return s != NULL ? s->value : NULL;
  }
  return NULL;
}

/* The largest row of communicator c (most bytes) with a busbw; NULL. */
static const npkit_table_row *largest(const npkit_report *rep, uint32_t c) {
  const npkit_table_row *best = NULL;
  for (size_t i = 0; i < rep->table.n; i++) {
    const npkit_table_row *r = &rep->table.rows[i];
    if (r->key.comm == c && !isnan(r->busbw_gbs) && (best == NULL || r->key.bytes > best->key.bytes)) best = r;
  }
  return best;
}

/* Time a row would save at `reach` of capacity cap: wall × (1 - busbw / (reach × cap)); 0 if none. */
static double gain(const npkit_table_row *r, double cap) {
  double wall = npkit_row_wall_ns(r), target = REACHABLE * cap;
  if (isnan(wall) || r->busbw_gbs >= target || target <= 0) return 0;
  return wall * (1.0 - r->busbw_gbs / target);
}

static int sockets(npkit_report *rep) {
  npkit_finding *f;
  for (uint32_t c = 0; c < rep->job.n_comms; c++) {
    npkit_link_cap cap;
    npkit_comm_link_cap(rep, c, &cap);
    const char *ib_off = comm_setting(rep, c, "NCCL_IB_DISABLE"), *net = comm_setting(rep, c, "NCCL_NET");
    int forced = (ib_off != NULL && strcmp(ib_off, "1") == 0) || (net != NULL && strcasecmp(net, "Socket") == 0);
    if (cap.kind != NPKIT_CAP_NET || (cap.ib && !forced)) continue;
    const npkit_table_row *r = largest(rep, c);
    if (r == NULL || r->busbw_gbs >= SOCKET_FAR_BELOW * cap.gbs) continue;
    char what[64], capt[160];
    const char *nthreads = comm_setting(rep, c, "NCCL_SOCKET_NTHREADS"), *nsocks = comm_setting(rep, c, "NCCL_NSOCKS_PERTHREAD");
    npkit_row_label(r, what, sizeof what);
    npkit_link_cap_text(rep, &cap, capt, sizeof capt);
    double g = 0;
    for (size_t i = 0; i < rep->table.n; i++)
      if (rep->table.rows[i].key.comm == c && rep->table.rows[i].key.bytes >= r->key.bytes / 16)
        g += gain(&rep->table.rows[i], cap.gbs);
    ADD(NPKIT_FIND_ADVICE_SOCKETS, g > 0 ? g : NAN);
    f->comm = c;
    f->fn = r->key.fn;
    snprintf(f->title, sizeof f->title,
             "Advice to test: more sockets and threads per connection (NCCL_NSOCKS_PERTHREAD, NCCL_SOCKET_NTHREADS)");
    snprintf(f->evidence, sizeof f->evidence,
             "NCCL moves the cross-host data over sockets here (%s). %s across %" PRIu32 " hosts reaches %.3g GB/s "
             "busbw, %.0f %% of the %.3g GB/s of %s. NCCL_SOCKET_NTHREADS is %s and NCCL_NSOCKS_PERTHREAD %s "
             "(NCCL's defaults: one thread, one socket per thread).",
             forced ? "NCCL_IB_DISABLE=1 or NCCL_NET=Socket" : "no InfiniBand port is up on every host", what, cap.hosts,
             r->busbw_gbs, 100.0 * r->busbw_gbs / cap.gbs, cap.gbs, capt, nthreads ? nthreads : "unset",
             nsocks ? nsocks : "unset");
    if (g > 0) {
      char t[32];
      npkit_report_duration(g, t, sizeof t);
      npkit_appendf(f->evidence, sizeof f->evidence,
                    " Expected gain: if the large collectives reached %.0f %% of the ports, they would take up to %s "
                    "less.", 100.0 * REACHABLE, t);
    }
    snprintf(f->next_step, sizeof f->next_step,
             "Test NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4 (their product at most 64) on every rank and compare "
             "busbw (nccl-tests or scripts/nccl_matrix.sh with --launcher-arg --env ...). This is advice to test, not a "
             "promise: more threads cost CPU, and the network path (NCCL_SOCKET_IFNAME, MTU) may be the limit.");
  }
  return 0;
}

static int small_calls(npkit_report *rep) {
  npkit_finding *f;
  for (uint32_t c = 0; c < rep->job.n_comms; c++) {
    double total = 0, small = 0, calls = 0, bytes = 0, latency = NAN;
    uint32_t fn = 0;
    for (size_t i = 0; i < rep->table.n; i++) {
      const npkit_table_row *r = &rep->table.rows[i];
      double wall = npkit_row_wall_ns(r);
      if (r->key.comm != c || isnan(wall)) continue;
      total += wall;
      if (isnan(latency) || r->mean_ns < latency) latency = r->mean_ns; /* the communicator's floor */
      if (r->key.bytes > SMALL_BYTES) continue;
      small += wall;
      calls += (double)r->calls / r->nranks;
      bytes += (double)r->key.bytes * r->calls / r->nranks;
      if (fn == 0) fn = r->key.fn;
      else if (fn != r->key.fn) fn = UINT32_MAX;
    }
    if (calls < SMALL_MIN_CALLS || small < SMALL_SHARE * total || isnan(latency)) continue;
    double buckets = ceil(bytes / BUCKET_BYTES);
    double g = (calls - buckets) * latency;
    if (g <= 0) continue;
    char t[32], s[32], lat[32], cl[96];
    ADD(NPKIT_FIND_ADVICE_SMALL, g);
    f->comm = c;
    if (fn != UINT32_MAX) f->fn = fn;
    npkit_report_comm_label(rep, c, cl, sizeof cl);
    npkit_report_duration(small, s, sizeof s);
    npkit_report_duration(latency, lat, sizeof lat);
    npkit_report_duration(g, t, sizeof t);
    SET(f->title, "Advice to test: group or bucket the %.0f small collectives (<= 64 KiB) on %s",
             calls, cl);
    snprintf(f->evidence, sizeof f->evidence,
             "%.0f collectives per rank of at most 64 KiB take %s, %.0f %% of the collective time of %s; the fastest "
             "call of the communicator takes %s, which is latency, not bandwidth. Expected gain: %.3g MB of them in "
             "buckets of 4 MiB would be %.0f calls, saving up to %s of latency.",
             calls, s, 100.0 * small / total, cl, lat, bytes / 1e6, buckets, t);
    snprintf(f->next_step, sizeof f->next_step,
             "Issue them together: inside ncclGroupStart/ncclGroupEnd, or fuse the tensors into one buffer (PyTorch DDP: "
             "a larger bucket_cap_mb; gradient bucketing in other frameworks). This is advice to test, not a promise: "
             "the gain is an upper estimate from the measured call times.");
  }
  return 0;
}

static int channels(npkit_report *rep) {
  npkit_finding *f;
  for (size_t i = 0; i < rep->table.n; i++) {
    const npkit_table_row *r = &rep->table.rows[i];
    if (r->key.bytes < LARGE_BYTES || r->channels_max <= 0 || r->channels_max > FEW_CHANNELS || isnan(r->busbw_gbs) ||
        r->key.comm == NPKIT_TABLE_NO_COMM)
      continue;
    npkit_link_cap cap;
    npkit_comm_link_cap(rep, r->key.comm, &cap);
    if (cap.kind != NPKIT_CAP_NONE && r->busbw_gbs >= CHANNELS_FAR_BELOW * cap.gbs) continue;
    /* one piece of advice per communicator: its largest such row */
    int later = 0;
    for (size_t j = i + 1; j < rep->table.n; j++) {
      const npkit_table_row *q = &rep->table.rows[j];
      later |= q->key.comm == r->key.comm && q->key.bytes >= LARGE_BYTES && q->channels_max > 0 &&
               q->channels_max <= FEW_CHANNELS && !isnan(q->busbw_gbs) && q->key.bytes > r->key.bytes;
    }
    if (later) continue;
    double g = cap.kind != NPKIT_CAP_NONE ? gain(r, cap.gbs) : 0;
    char what[64], capt[160];
    const char *mx = comm_setting(rep, r->key.comm, "NCCL_MAX_NCHANNELS"), *mn = comm_setting(rep, r->key.comm, "NCCL_MIN_NCHANNELS");
    npkit_row_label(r, what, sizeof what);
    ADD(NPKIT_FIND_ADVICE_CHANNELS, g > 0 ? g : NAN);
    f->comm = r->key.comm;
    f->fn = r->key.fn;
    SET(f->title, "Advice to test: more channels for large messages (NCCL_MIN_NCHANNELS=%d)",
             2 * r->channels_max);
    snprintf(f->evidence, sizeof f->evidence,
             "NCCL's profiler plugin reports %d%s channel%s for %s, which reaches %.3g GB/s busbw",
             r->channels_min, r->channels_min != r->channels_max ? "+" : "", r->channels_max == 1 ? "" : "s", what,
             r->busbw_gbs);
    if (cap.kind != NPKIT_CAP_NONE) {
      npkit_link_cap_text(rep, &cap, capt, sizeof capt);
      npkit_appendf(f->evidence, sizeof f->evidence, ", %.0f %% of the %.3g GB/s of %s", 100.0 * r->busbw_gbs / cap.gbs,
                    cap.gbs, capt);
    }
    npkit_appendf(f->evidence, sizeof f->evidence, ". NCCL_MIN_NCHANNELS is %s, NCCL_MAX_NCHANNELS %s.", mn ? mn : "unset",
                  mx ? mx : "unset");
    if (g > 0) {
      char t[32];
      npkit_report_duration(g, t, sizeof t);
      npkit_appendf(f->evidence, sizeof f->evidence, " Expected gain: at %.0f %% of the links these calls would take up "
                    "to %s less.", 100.0 * REACHABLE, t);
    } else {
      npkit_appendf(f->evidence, sizeof f->evidence, " Expected gain: unknown without the links' capacity; measure it.");
    }
    snprintf(f->next_step, sizeof f->next_step,
             "Test NCCL_MIN_NCHANNELS=%d%s on every rank and compare busbw at these sizes. This is advice to test, not a "
             "promise: more channels take more SMs from computation, and a link at its limit gains nothing.",
             2 * r->channels_max, mx != NULL ? " with a NCCL_MAX_NCHANNELS at least as large" : "");
  }
  return 0;
}

int npkit_report_advice(npkit_report *rep) {
  if (sockets(rep) != 0 || small_calls(rep) != 0 || channels(rep) != 0) return -1;
  return 0;
}
