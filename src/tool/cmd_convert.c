/* `npkit convert DUMP_DIR`: the dump files of an NPKit-patched NCCL -> one Chrome trace
 * (docs/npkit-convert.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "grow.h"
#include "npkit_dump.h"
#include "trace_npkit_convert.h"

#define CMD "convert"
/* A --ranks list longer than this is certainly a typo. */
#define MAX_RANK_LIST (1u << 20)

static void help(void) {
  printf("Usage: npkit convert DUMP_DIR [-o FILE] [--format json|perfetto] [--header NPKIT_EVENT_H]\n"
         "                     [--ranks LIST] [-q]\n"
         "Converts the dump files that an NPKit-patched NCCL writes into NPKIT_DUMP_DIR\n"
         "(gpu_events_rank_*_buf_*, cpu_events_rank_*_channel_*, clock files) into one Chrome trace,\n"
         "or one Perfetto protobuf trace.\n\n"
         "  -o, --output FILE        where to write it (default: DUMP_DIR/npkit_event_trace.json, or\n"
         "                           .pftrace; '-' for standard output)\n"
         "      --format F           json (the default) or perfetto (also chosen by a name ending in\n"
         "                           .pftrace or .perfetto-trace); otherData is the JSON's alone\n"
         "      --header FILE        event ids from this npkit_event.h instead of the built-in table of\n"
         "                           NPKit's NCCL 2.17.1 patch (for forks that renumber events)\n"
         "      --extend-header FILE add or override ids of the table with those of FILE\n"
         "      --ranks LIST         only these ranks, e.g. 0,2,4-7\n"
         "  -q, --quiet              no summary line (warnings and errors are still printed)\n\n"
         "ENTRY/EXIT events become complete slices (paired per buffer and event kind; network events\n"
         "per slot), unpaired events become instants, and every problem found is printed and kept in\n"
         "otherData. Exit status: 0 converted, 1 some or all of the dump could not be converted\n"
         "(whatever was readable is still written), 2 usage error.\n");
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static int parse_rank(const char *s, const char *end, uint32_t *v) {
  uint64_t x = 0;
  if (s == end) return -1;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9') return -1;
    x = x * 10 + (uint64_t)(*p - '0');
    if (x >= NPKIT_DUMP_MAX_INDEX) return -1;
  }
  *v = (uint32_t)x;
  return 0;
}

/* "0,2,4-7" -> sorted, unique ranks.  Returns 0, or -1 after a usage message. */
static int parse_ranks(const char *text, uint32_t **out, size_t *n_out) {
  uint32_t *v = NULL;
  size_t n = 0, cap = 0;
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    const char *end = comma != NULL ? comma : p + strlen(p);
    const char *dash = memchr(p, '-', (size_t)(end - p));
    uint32_t a, b;
    if (dash != NULL ? parse_rank(p, dash, &a) != 0 || parse_rank(dash + 1, end, &b) != 0 || b < a
                     : parse_rank(p, end, &a) != 0) {
      npkit_cli_usage_error(CMD, "bad rank list '%s': expected numbers and ranges such as 0,2,4-7 (below %u)", text,
                            NPKIT_DUMP_MAX_INDEX);
      free(v);
      return -1;
    }
    if (dash == NULL) b = a;
    if (n + (size_t)(b - a) + 1 > MAX_RANK_LIST) {
      npkit_cli_usage_error(CMD, "rank list '%s' names more than %u ranks", text, MAX_RANK_LIST);
      free(v);
      return -1;
    }
    if (NPKIT_GROW(v, cap, n + (size_t)(b - a) + 1, 64) != 0) {
      fprintf(stderr, "npkit %s: out of memory\n", CMD);
      free(v);
      return -1;
    }
    for (uint64_t r = a; r <= b; r++) v[n++] = (uint32_t)r;
    if (comma == NULL) break;
    p = comma + 1;
  }
  qsort(v, n, sizeof(*v), cmp_u32);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || v[i] != v[u - 1]) v[u++] = v[i];
  *out = v;
  *n_out = u;
  return 0;
}

static void print_diag(void *user, npkit_dump_severity sev, const char *msg) {
  (void)user;
  fprintf(stderr, "npkit %s: %s: %s\n", CMD, sev == NPKIT_DIAG_ERROR ? "error" : "warning", msg);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int npkit_cmd_convert(int argc, char **argv) {
  const char *output = NULL, *header = NULL, *extend = NULL, *ranks_text = NULL, *format_name = NULL;
  char *dir = NULL;
  int quiet = 0;
  size_t n_dirs;
  const npkit_cli_option options[] = {
      {"-q", "--quiet", .flag = &quiet},
      {"-o", "--output", .value = &output, .nonempty = "output name"},
      {"--header", "--header", .value = &header, .nonempty = "header name"},
      {"--extend-header", "--extend-header", .value = &extend, .nonempty = "header name"},
      {"--ranks", "--ranks", .value = &ranks_text},
      {"--format", "--format", .value = &format_name},
  };
  const npkit_cli_spec spec = {CMD, help, options, sizeof(options) / sizeof(options[0]), "dump directory", NULL};
  int parsed = npkit_cli_parse(&spec, argc, argv, &dir, &n_dirs);
  if (parsed != NPKIT_CLI_GO_ON) return parsed;
  if (n_dirs == 0) return npkit_cli_usage_error(CMD, "missing DUMP_DIR");
  npkit_trace_format format;
  int frc = npkit_cli_trace_format(CMD, format_name, output, &format);
  if (frc != NPKIT_CLI_GO_ON) return frc;

  uint32_t *ranks = NULL;
  size_t n_ranks = 0;
  if (ranks_text != NULL && parse_ranks(ranks_text, &ranks, &n_ranks) != 0) return NPKIT_EXIT_USAGE;

  int status = NPKIT_EXIT_FAIL;
  char err[1024], source[1200];
  char *def = NULL;
  npkit_dump_event_table *table = malloc(sizeof(*table));
  if (table == NULL) {
    fprintf(stderr, "npkit %s: out of memory\n", CMD);
    goto out;
  }
  npkit_dump_table_builtin(table);
  snprintf(source, sizeof(source), "built-in (NPKit patch for NCCL 2.17.1)");
  if (header != NULL) {
    if (npkit_dump_table_load_header(table, header, NPKIT_HEADER_REPLACE, err, sizeof(err)) != 0) {
      fprintf(stderr, "npkit %s: event header: %s\n", CMD, err);
      goto out;
    }
    snprintf(source, sizeof(source), "header %s", header);
  }
  if (extend != NULL) {
    if (npkit_dump_table_load_header(table, extend, NPKIT_HEADER_EXTEND, err, sizeof(err)) != 0) {
      fprintf(stderr, "npkit %s: event header: %s\n", CMD, err);
      goto out;
    }
    size_t n = strlen(source);
    snprintf(source + n, sizeof(source) - n, ", extended by header %s", extend);
  }
  if (output == NULL) {
    const char *suffix = npkit_trace_format_suffix(format);
    size_t n = strlen(dir);
    def = malloc(n + sizeof("/npkit_event_trace") + strlen(suffix));
    if (def == NULL) {
      fprintf(stderr, "npkit %s: out of memory\n", CMD);
      goto out;
    }
    snprintf(def, n + sizeof("/npkit_event_trace") + strlen(suffix), "%s/npkit_event_trace%s", dir, suffix);
    output = def;
  }

  npkit_dump_trace_opts opts = {table, source, ranks, n_ranks, 0, print_diag, NULL, format};
  npkit_dump_trace_result res;
  double t0 = now_s();
  int rc = npkit_dump_trace_file(dir, output, &opts, &res, err, sizeof(err));
  double secs = now_s() - t0;
  if (rc != 0) {
    fprintf(stderr, "npkit %s: %s\n", CMD, err);
    goto out;
  }
  const npkit_dump_counters *c = &res.counters;
  if (!quiet) {
    fprintf(stderr,
            "npkit %s: %s: %" PRIu64 " slices, %" PRIu64 " unpaired, %" PRIu64 " single events from %" PRIu64
            " events (%.1f MB) of %" PRIu64 " rank(s) on %" PRIu64 " tracks in %.2f s\n",
            CMD, strcmp(output, "-") == 0 ? "stdout" : output, c->slices, c->unpaired_entries + c->unpaired_exits,
            c->point_events, c->events, (double)c->bytes / 1e6, res.ranks, res.tracks, secs);
  }
  status = c->errors > 0 ? NPKIT_EXIT_FAIL : NPKIT_EXIT_OK;
out:
  free(def);
  free(table);
  free(ranks);
  return status;
}
