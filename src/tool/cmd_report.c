/* `npkit report DIR|LOGS...`: the nccl-tests table, bandwidth curves, stragglers, overlap, lost
 * events and ranked findings for all ranks, as text, JSON or a self-contained HTML page. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "job.h"
#include "report_extras.h"
#include "report_model.h"
#include "report_render.h"

static void help(void) {
  printf("Usage: npkit report DIR|LOG... [--json] [--html FILE] [--threshold T] [--no-align] [--top N] [-j N]\n"
         "Analyses the event logs of all ranks of a job (a folder is searched for *.npkit files):\n"
         "the nccl-tests table per operation, size and communicator, bandwidth versus size, stragglers\n"
         "and synchronisation delay, communication/computation overlap and GPU idle time (with GPU\n"
         "events), lost events, and findings ranked by the time at stake.\n\n"
         "  --json           write the report as JSON on standard output instead of text\n"
         "  --html FILE      also write it as a self-contained HTML page with plots\n"
         "  --threshold T    arrival spread counted as synchronisation delay (default 5us;\n"
         "                   units ns, us, ms, s; a bare number is in microseconds)\n"
         "  --no-align       take the hosts' clocks as they are (no offset estimation)\n"
         "  --top N          largest arrival spreads to list (default %d, at most %d)\n"
         "  -j, --jobs N     threads reading the logs (default: the cores); the report is the\n"
         "                   same at any N\n\n"
         "Definitions and the JSON schema: docs/report.md.\n",
         NPKIT_REPORT_DEFAULT_TOP, NPKIT_STRAG_TOP_MAX);
}

static int write_html(npkit_report *rep, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "npkit report: %s: %s\n", path, strerror(errno));
    return -1;
  }
  int rc = npkit_report_html(rep, f);
  if (fclose(f) != 0) rc = -1;
  if (rc != 0) {
    fprintf(stderr, "npkit report: writing %s: %s\n", path, strerror(errno));
    remove(path);
  }
  return rc;
}

/* Checks of option values, for npkit_cli_parse. */

static int take_threshold(const char *v, void *to) {
  double *ns = to;
  if (npkit_parse_duration(v, "us", ns) != 0 || *ns < 0) {
    npkit_cli_usage_error("report", "--threshold takes a duration such as 5us or 0.2ms, not '%s'", v);
    return -1;
  }
  return 0;
}

static int take_top(const char *v, void *to) {
  char *end;
  long t = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || t < 0 || t > NPKIT_STRAG_TOP_MAX) {
    npkit_cli_usage_error("report", "--top takes a number from 0 to %d, not '%s'", NPKIT_STRAG_TOP_MAX, v);
    return -1;
  }
  *(uint32_t *)to = (uint32_t)t;
  return 0;
}

static int take_jobs(const char *v, void *to) { return npkit_cli_take_jobs("report", v, to); }

int npkit_cmd_report(int argc, char **argv) {
  const char *html = NULL;
  int json = 0, no_align = 0;
  npkit_report_options o;
  npkit_report_defaults(&o);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  o.jobs = cores > 1 ? (unsigned)(cores < 64 ? cores : 64) : 1;
  const npkit_cli_option options[] = {
      {"--json", "--json", .flag = &json},
      {"--no-align", "--no-align", .flag = &no_align},
      {"--html", "--html", .value = &html, .nonempty = "--html file name"},
      {"--threshold", "--threshold", .check = take_threshold, .to = &o.threshold_ns},
      {"--top", "--top", .check = take_top, .to = &o.top},
      {"-j", "--jobs", .check = take_jobs, .to = &o.jobs},
  };
  const npkit_cli_spec spec = {"report", help, options, sizeof(options) / sizeof(options[0]), NULL, NULL};
  npkit_job job;
  int parsed = npkit_cli_open_job(&spec, argc, argv, &job, NULL);
  if (parsed != NPKIT_CLI_GO_ON) return parsed;
  if (no_align) o.align = 0;
  if (html != NULL) o.timeline = 1;

  char err[512];
  npkit_report rep = {0};
  int rc = NPKIT_EXIT_OK;
  if (npkit_report_run_job(&rep, &job, &o, err, sizeof(err)) != 0) {
    fprintf(stderr, "npkit report: %s\n", err);
    rc = NPKIT_EXIT_FAIL;
  } else {
    /* on standard error in every mode: scripts read the text report too, people do not read
     * the JSON; the text report also lists them */
    for (size_t i = 0; i < rep.job.n_warnings; i++)
      fprintf(stderr, "npkit report: warning: %s\n", rep.job.warnings[i]);
    if (json) {
      if (npkit_report_json(&rep, 1, err, sizeof(err)) != 0) {
        fprintf(stderr, "npkit report: %s\n", err);
        rc = NPKIT_EXIT_FAIL;
      }
    } else if (npkit_report_text(&rep, stdout) != 0 || npkit_report_extras_text(&rep, stdout) != 0) {
      fprintf(stderr, "npkit report: writing the report: %s\n", strerror(errno));
      rc = NPKIT_EXIT_FAIL;
    }
    if (html != NULL && write_html(&rep, html) != 0) rc = NPKIT_EXIT_FAIL;
  }
  npkit_report_free(&rep);
  return rc;
}
