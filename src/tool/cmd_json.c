/* `npkit json LOG [-o FILE] [--format json|perfetto]`: renders one event log as a trace. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "npkit/event_log.h"
#include "trace_render.h"

static void help(void) {
  printf("Usage: npkit json LOG [-o FILE] [--format json|perfetto] [-q]\n"
         "Renders the event log LOG as a Chrome trace (docs/trace-format.md), or as Perfetto's\n"
         "protobuf trace.\n\n"
         "  -o, --output FILE  where to write it (default: LOG with " NPKIT_LOG_SUFFIX " replaced by .json,\n"
         "                     or .pftrace; '-' for standard output)\n"
         "      --format F     json (the default) or perfetto (also chosen by an output name ending in\n"
         "                     .pftrace or .perfetto-trace): about a tenth of the size, opened by\n"
         "                     ui.perfetto.dev and trace_processor; it keeps the events, not otherData\n"
         "  -q, --quiet        no summary line on standard error\n\n"
         "A log cut short by a crash is rendered up to its last complete block.\n");
}

/* LOG with its .npkit suffix replaced by the format's (appended if it has none). */
static char *default_output(const char *log, npkit_trace_format f) {
  const char *suffix = npkit_trace_format_suffix(f);
  size_t n = strlen(log), sl = strlen(NPKIT_LOG_SUFFIX), k = strlen(suffix);
  if (n > sl && strcmp(log + n - sl, NPKIT_LOG_SUFFIX) == 0) n -= sl;
  char *out = malloc(n + k + 1);
  if (out == NULL) return NULL;
  memcpy(out, log, n);
  memcpy(out + n, suffix, k + 1);
  return out;
}

int npkit_cmd_json(int argc, char **argv) {
  const char *output = NULL, *format_name = NULL;
  char *log = NULL;
  int quiet = 0;
  size_t n_logs;
  const npkit_cli_option options[] = {
      {"-q", "--quiet", .flag = &quiet},
      {"-o", "--output", .value = &output, .nonempty = "output name"},
      {"--format", "--format", .value = &format_name},
  };
  const npkit_cli_spec spec = {"json", help, options, sizeof(options) / sizeof(options[0]), "log", NULL};
  int parsed = npkit_cli_parse(&spec, argc, argv, &log, &n_logs);
  if (parsed != NPKIT_CLI_GO_ON) return parsed;
  if (n_logs == 0) return npkit_cli_usage_error("json", "missing LOG");
  npkit_trace_format format;
  int frc = npkit_cli_trace_format("json", format_name, output, &format);
  if (frc != NPKIT_CLI_GO_ON) return frc;

  char *def = NULL;
  if (output == NULL) {
    if ((def = default_output(log, format)) == NULL) {
      fprintf(stderr, "npkit json: out of memory\n");
      return NPKIT_EXIT_FAIL;
    }
    output = def;
  }
  char err[512];
  npkit_render_stats st;
  npkit_cli_recover("json", log);
  int rc = npkit_render_trace_as(log, output, format, &st, err, sizeof(err));
  if (rc != 0) {
    fprintf(stderr, "npkit json: %s\n", err);
    free(def);
    return NPKIT_EXIT_FAIL;
  }
  if (!quiet) {
    fprintf(stderr, "npkit json: %s: %" PRIu64 " calls, %" PRIu64 " groups", strcmp(output, "-") == 0 ? "stdout" : output,
            st.events, st.groups);
    if (st.dropped > 0) fprintf(stderr, ", %" PRIu64 " events dropped while recording", st.dropped);
    fprintf(stderr, "\n");
    if (st.truncated)
      fprintf(stderr, "npkit json: warning: %s is truncated; rendered up to its last complete block\n", log);
    else if (!st.closed_cleanly)
      fprintf(stderr, "npkit json: note: %s was not closed cleanly (the process may still run, or was killed)\n", log);
  }
  /* damage and format are said even with -q: the trace is not what the log was */
  if (st.skipped_blocks > 0) fprintf(stderr, "npkit json: warning: %s: %s; the rest was rendered\n", log, st.damage);
  if (st.version_note[0]) fprintf(stderr, "npkit json: note: %s: %s\n", log, st.version_note);
  free(def);
  return NPKIT_EXIT_OK;
}
