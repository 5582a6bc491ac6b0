/* `npkit merge DIR|LOGS... -o trace.json[.gz]|trace.pftrace`: one trace for all ranks, clocks aligned. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "commands.h"
#include "merge_trace.h"
#include "out_file.h"
#include "job.h"
#include "report_model.h"

#define DEFAULT_OUTPUT "npkit_merged"
/* Sizes past which viewers struggle (docs/report.md, ../shared/reference/perfetto.md): Perfetto's
 * web UI runs its trace processor in the browser with about 2 GB and needs 2-4 times a file's
 * size; chrome://tracing stalls earlier. */
#define PERFETTO_UI_LIMIT 500000000ull
#define CHROME_TRACING_LIMIT 256000000ull

static void help(void) {
  printf("Usage: npkit merge DIR|LOG... [-o FILE] [--format json|perfetto] [--window START:END]\n"
         "                  [--ranks LIST] [--collective COMM:SEQ[-SEQ] [--context T]] [--ops LIST]\n"
         "                  [--no-align] [-q]\n"
         "Merges the event logs of all ranks into one Chrome trace (Perfetto, chrome://tracing), or one\n"
         "Perfetto protobuf trace: every rank is a process, sorted by rank.  Clock offsets between\n"
         "hosts are estimated from the ends of shared collectives and applied; in the JSON, the offsets\n"
         "and their uncertainty are recorded in otherData.clock_alignment.\n\n"
         "  -o, --output FILE    the trace (default " DEFAULT_OUTPUT ".json or .pftrace; '-' for standard\n"
         "                       output); a name ending in .gz is written gzip-compressed\n"
         "  --format F           json (the default) or perfetto (also chosen by a name ending in\n"
         "                       .pftrace or .perfetto-trace): Perfetto's own format, a fraction of\n"
         "                       the JSON's size, for the jobs whose JSON the browser cannot open\n"
         "  --window START:END   only events overlapping this span of trace time, e.g. 1.5s:2s,\n"
         "                       200ms: or :10ms (a bare number is in seconds)\n"
         "  --ranks LIST         only these ranks, e.g. 0-3,8 (the other logs are not read)\n"
         "  --collective COMM:SEQ[-SEQ]\n"
         "                       the instances of these collectives on every member rank of COMM\n"
         "                       (named as the report names it: world:412, 1f2e3d4c:400-420), with\n"
         "                       --context of time around them (default 2ms); with --ranks, only\n"
         "                       those members.  The report prints this command for its findings\n"
         "  --ops LIST           only these NCCL calls: names (AllReduce, ncclSend) or classes\n"
         "                       (coll, p2p, group, comm, mem, query, misc), comma separated\n"
         "  --no-align           take the hosts' clocks as they are\n"
         "  --warn-size SIZE     warn when the trace exceeds SIZE bytes (suffix k, M or G; default\n"
         "                       500M, about what Perfetto's web UI can load)\n"
         "  -q, --quiet          no summary on standard error\n");
}

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* ---- gzip: the JSON writer writes into a pipe, a thread compresses what comes out of it ---- */

typedef struct gz_sink {
  int rfd;
  gzFile gz;
  int failed;
  char msg[256];
} gz_sink;

static void *gz_thread(void *p) {
  gz_sink *s = p;
  size_t cap = 1u << 20;
  char *buf = malloc(cap);
  if (buf == NULL) {
    s->failed = 1;
    snprintf(s->msg, sizeof(s->msg), "out of memory");
  }
  for (;;) {
    /* keep draining after a failure, so that the writer never blocks on a full pipe */
    char small[4096];
    ssize_t k = read(s->rfd, buf ? buf : small, buf ? cap : sizeof(small));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    if (!s->failed && buf != NULL && gzwrite(s->gz, buf, (unsigned)k) != (int)k) {
      int zerr;
      const char *m = gzerror(s->gz, &zerr);
      s->failed = 1;
      snprintf(s->msg, sizeof(s->msg), "compressing: %s", zerr == Z_ERRNO ? strerror(errno) : m);
    }
  }
  free(buf);
  return NULL;
}

/* Writes the merged trace to out_fd, gzip-compressed when gz. */
static int merge_to(int out_fd, int gz, npkit_job *job, size_t n, const npkit_merge_options *o, npkit_merge_stats *st,
                    char *err, size_t errlen) {
  if (!gz) return npkit_merge_write_job(job, n, o, out_fd, st, err, errlen);
  int p[2];
  gz_sink s = {0};
  pthread_t t;
  if (pipe(p) != 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    return -1;
  }
  s.rfd = p[0];
  s.gz = gzdopen(dup(out_fd), "wb3"); /* level 3: most of the ratio at a fraction of the time of 6 */
  if (s.gz == NULL || pthread_create(&t, NULL, gz_thread, &s) != 0) {
    snprintf(err, errlen, "cannot start the compression");
    if (s.gz != NULL) gzclose(s.gz);
    close(p[0]);
    close(p[1]);
    return -1;
  }
  int rc = npkit_merge_write_job(job, n, o, p[1], st, err, errlen);
  close(p[1]);
  pthread_join(t, NULL);
  close(p[0]);
  int zrc = gzclose(s.gz);
  if (rc == 0 && s.failed) {
    snprintf(err, errlen, "%s", s.msg);
    rc = -1;
  } else if (rc == 0 && zrc != Z_OK) {
    snprintf(err, errlen, "finishing the compressed file: %s", zrc == Z_ERRNO ? strerror(errno) : "zlib error");
    rc = -1;
  }
  return rc;
}

/* The folder of a path, for the temporary filtered copies (they go where the output goes). */
/* "1G", "500M", "64k", "1000": decimal units, as the viewers' limits are quoted. */
static int parse_size(const char *s, uint64_t *out) {
  char *end;
  if (*s < '0' || *s > '9') return -1;
  double v = strtod(s, &end);
  double k = *end == '\0' ? 1 : !strcmp(end, "k") || !strcmp(end, "K") ? 1e3 : !strcmp(end, "M") ? 1e6 : !strcmp(end, "G") ? 1e9 : -1;
  if (k < 0 || v * k > 1.8e19) return -1;
  *out = (uint64_t)(v * k);
  return 0;
}

static void report_size(const char *output, npkit_trace_format f, uint64_t bytes, uint64_t limit) {
  if (f == NPKIT_TRACE_PERFETTO) {
    if (bytes > limit)
      fprintf(stderr, "npkit merge: note: %s holds %.1f MB, above --warn-size (%.1f MB): the browser's trace processor "
                      "may run out of memory (it needs 2-4 times the file). Open it through a native one: "
                      "`trace_processor --httpd %s`, then https://ui.perfetto.dev uses it; or cut the trace with "
                      "--window, --ops or --ranks.\n",
              output, (double)bytes / 1e6, (double)limit / 1e6, strcmp(output, "the trace") == 0 ? "FILE" : output);
    return;
  }
  if (bytes > limit)
    fprintf(stderr, "npkit merge: warning: %s holds %.1f MB of JSON, above --warn-size (%.1f MB): the browser will "
                    "not open it (Perfetto's web UI needs 2-4 times a trace's size in memory, and gzip does not help: "
                    "the UI unpacks it). Write Perfetto's own format instead, a fraction of the size: "
                    "npkit merge --format perfetto (or -o NAME.pftrace); or cut the trace with --window START:END "
                    "(e.g. one training step), --ops (e.g. --ops coll) or --ranks.\n",
            output, (double)bytes / 1e6, (double)limit / 1e6);
  else if (bytes > CHROME_TRACING_LIMIT)
    fprintf(stderr, "npkit merge: note: %s holds %.0f MB of JSON: chrome://tracing stalls past about 256 MB; use "
                    "https://ui.perfetto.dev, or cut it with --window, --ops or --ranks.\n",
            output, (double)bytes / 1e6);
}

static void summary(const char *output, const npkit_merge_stats *st) {
  char u[32];
  fprintf(stderr, "npkit merge: %s: %zu rank%s on %zu host%s, %" PRIu64 " calls, %" PRIu64 " groups", output, st->logs,
          st->logs == 1 ? "" : "s", st->hosts, st->hosts == 1 ? "" : "s", st->calls, st->groups);
  if (st->events_kept != st->events_in)
    fprintf(stderr, " (%" PRIu64 " of %" PRIu64 " events pass the filters)", st->events_kept, st->events_in);
  if (st->aligned) {
    npkit_report_duration(st->max_uncertainty_ns, u, sizeof(u));
    fprintf(stderr, "; host clocks aligned to within %s", u);
  }
  if (st->skipped) fprintf(stderr, "; %zu log%s left out", st->skipped, st->skipped == 1 ? "" : "s");
  fputc('\n', stderr);
}

/* Checks of option values, for npkit_cli_parse. */

static int take_size(const char *v, void *to) {
  if (parse_size(v, to) == 0) return 0;
  npkit_cli_usage_error("merge", "--warn-size takes a size such as 1G, 500M or 64k, not '%s'", v);
  return -1;
}

typedef int filter_parser(npkit_merge_filter *f, const char *s, char *err, size_t errlen);

static int take_filter(filter_parser *parse, const char *v, void *to) {
  char err[512];
  if (parse(to, v, err, sizeof(err)) == 0) return 0;
  npkit_cli_usage_error("merge", "%s", err);
  return -1;
}

static int take_window(const char *v, void *to) { return take_filter(npkit_merge_parse_window, v, to); }
static int take_ranks(const char *v, void *to) { return take_filter(npkit_merge_parse_ranks, v, to); }
static int take_ops(const char *v, void *to) { return take_filter(npkit_merge_parse_ops, v, to); }
static int take_collective(const char *v, void *to) { return take_filter(npkit_merge_parse_collective, v, to); }
static int take_context(const char *v, void *to) { return take_filter(npkit_merge_parse_context, v, to); }

int npkit_cmd_merge(int argc, char **argv) {
  const char *output = NULL, *format_name = NULL;
  char *named = NULL;
  int quiet = 0, no_align = 0;
  uint64_t warn_size = PERFETTO_UI_LIMIT;
  char err[512];
  npkit_merge_options o;
  npkit_merge_defaults(&o);
  const npkit_cli_option options[] = {
      {"-q", "--quiet", .flag = &quiet},
      {"--no-align", "--no-align", .flag = &no_align},
      {"-o", "--output", .value = &output, .nonempty = "output name"},
      {"--format", "--format", .value = &format_name},
      {"--window", "--window", .check = take_window, .to = &o.filter},
      {"--warn-size", "--warn-size", .check = take_size, .to = &warn_size},
      {"--ranks", "--ranks", .check = take_ranks, .to = &o.filter},
      {"--ops", "--ops", .check = take_ops, .to = &o.filter},
      {"--collective", "--collective", .check = take_collective, .to = &o.filter},
      {"--context", "--context", .check = take_context, .to = &o.filter},
  };
  /* with --ranks or --collective most logs are only identified: their events are read for the few selected ones
   * and one per host (the clock alignment) */
  const npkit_cli_spec spec = {"merge", help, options, sizeof(options) / sizeof(options[0]), NULL, &o.filter.selects_logs};
  npkit_job job;
  size_t n_inputs;
  int parsed = npkit_cli_open_job(&spec, argc, argv, &job, &n_inputs);
  if (parsed != NPKIT_CLI_GO_ON) return parsed;
  if (no_align) o.align = 0;
  /* the format from the name without its .gz: NAME.pftrace.gz is a compressed Perfetto trace */
  if (output != NULL && (named = strdup(output)) != NULL && has_suffix(named, ".gz")) named[strlen(named) - 3] = '\0';
  int frc = npkit_cli_trace_format("merge", format_name, named, &o.format);
  free(named);
  if (frc != NPKIT_CLI_GO_ON) {
    npkit_job_free(&job);
    return frc;
  }
  char def[64];
  if (output == NULL) {
    snprintf(def, sizeof def, "%s%s", DEFAULT_OUTPUT, npkit_trace_format_suffix(o.format));
    output = def;
  }

  int to_stdout = strcmp(output, "-") == 0, gz = !to_stdout && has_suffix(output, ".gz");
  npkit_merge_stats st = {0};
  npkit_out_file out;
  if (npkit_out_open(&out, output, err, sizeof(err)) != 0) {
    fprintf(stderr, "npkit merge: %s\n", err);
    npkit_job_free(&job);
    return NPKIT_EXIT_FAIL;
  }
  int rc = npkit_out_close(&out, merge_to(out.fd, gz, &job, n_inputs, &o, &st, err, sizeof(err)), err, sizeof(err));
  for (size_t i = 0; i < st.n_warnings; i++) fprintf(stderr, "npkit merge: warning: %s\n", st.warnings[i]);
  if (rc != 0) {
    fprintf(stderr, "npkit merge: %s\n", err);
  } else {
    if (!quiet) summary(to_stdout ? "stdout" : output, &st);
    report_size(to_stdout ? "the trace" : output, o.format, st.bytes, warn_size);
  }
  npkit_merge_stats_free(&st);
  npkit_job_free(&job);
  return rc == 0 ? NPKIT_EXIT_OK : NPKIT_EXIT_FAIL;
}
