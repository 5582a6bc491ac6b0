/* `npkit report DIR|LOGS...`: the nccl-tests table, bandwidth curves, stragglers, overlap, lost
 * events and ranked findings for all ranks, as text, JSON or a self-contained HTML page. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "report_extras.h"
#include "report_model.h"
#include "report_render.h"

static void help(void) {
  printf("Usage: npkit report DIR|LOG... [--json] [--html FILE] [--threshold T] [--no-align] [--top N]\n"
         "Analyses the event logs of all ranks of a job (a folder is searched for *.npkit files):\n"
         "the nccl-tests table per operation, size and communicator, bandwidth versus size, stragglers\n"
         "and synchronisation delay, communication/computation overlap and GPU idle time (with GPU\n"
         "events), lost events, and findings ranked by the time at stake.\n\n"
         "  --json           write the report as JSON on standard output instead of text\n"
         "  --html FILE      also write it as a self-contained HTML page with plots\n"
         "  --threshold T    arrival spread counted as synchronisation delay (default 5us;\n"
         "                   units ns, us, ms, s; a bare number is in microseconds)\n"
         "  --no-align       take the hosts' clocks as they are (no offset estimation)\n"
         "  --top N          largest arrival spreads to list (default %d, at most %d)\n\n"
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

int npkit_cmd_report(int argc, char **argv) {
  const char *html = NULL, *v;
  int json = 0, only_args = 0;
  npkit_report_options o;
  npkit_report_defaults(&o);
  char **args = calloc((size_t)argc, sizeof(*args));
  size_t n_args = 0;
  if (args == NULL) {
    fprintf(stderr, "npkit report: out of memory\n");
    return NPKIT_EXIT_FAIL;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int m;
    if (only_args || a[0] != '-' || a[1] == '\0') {
      args[n_args++] = argv[i];
      continue;
    }
    if (strcmp(a, "--") == 0) {
      only_args = 1;
    } else if (npkit_cli_is_help(a)) {
      help();
      free(args);
      return NPKIT_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (strcmp(a, "--no-align") == 0) {
      o.align = 0;
    } else if ((m = npkit_cli_value("report", argc, argv, &i, "--html", "--html", &html)) != 0) {
      if (m < 0) goto usage;
      if (html[0] == '\0') {
        npkit_cli_usage_error("report", "empty --html file name");
        goto usage;
      }
    } else if ((m = npkit_cli_value("report", argc, argv, &i, "--threshold", "--threshold", &v)) != 0) {
      if (m < 0) goto usage;
      if (npkit_parse_duration(v, "us", &o.threshold_ns) != 0 || o.threshold_ns < 0) {
        npkit_cli_usage_error("report", "--threshold takes a duration such as 5us or 0.2ms, not '%s'", v);
        goto usage;
      }
    } else if ((m = npkit_cli_value("report", argc, argv, &i, "--top", "--top", &v)) != 0) {
      char *end;
      if (m < 0) goto usage;
      long t = strtol(v, &end, 10);
      if (*v == '\0' || *end != '\0' || t < 0 || t > NPKIT_STRAG_TOP_MAX) {
        npkit_cli_usage_error("report", "--top takes a number from 0 to %d, not '%s'", NPKIT_STRAG_TOP_MAX, v);
        goto usage;
      }
      o.top = (uint32_t)t;
    } else {
      npkit_cli_usage_error("report", "unknown option '%s'", a);
      goto usage;
    }
  }
  if (n_args == 0) {
    npkit_cli_usage_error("report", "missing DIR or LOG");
    goto usage;
  }

  char err[512], **paths;
  size_t n_paths;
  if (npkit_report_inputs(args, n_args, &paths, &n_paths, err, sizeof(err)) < 0) {
    fprintf(stderr, "npkit report: %s\n", err);
    free(args);
    return NPKIT_EXIT_FAIL;
  }
  free(args);
  npkit_report rep;
  int rc = NPKIT_EXIT_OK;
  if (npkit_report_run(&rep, paths, n_paths, &o, err, sizeof(err)) != 0) {
    fprintf(stderr, "npkit report: %s\n", err);
    rc = NPKIT_EXIT_FAIL;
  } else {
    for (size_t i = 0; json && i < rep.n_warnings; i++) fprintf(stderr, "npkit report: warning: %s\n", rep.warnings[i]);
    if (json) {
      if (npkit_report_json(&rep, 1, err, sizeof(err)) != 0) {
        fprintf(stderr, "npkit report: %s\n", err);
        rc = NPKIT_EXIT_FAIL;
      }
    } else if (npkit_report_text(&rep, stdout) != 0) {
      fprintf(stderr, "npkit report: writing the report: %s\n", strerror(errno));
      rc = NPKIT_EXIT_FAIL;
    } else if (npkit_report_extras_print(paths, n_paths, stdout, err, sizeof(err)) != 0) {
      fprintf(stderr, "npkit report: %s\n", err); /* call sites and marks */
      rc = NPKIT_EXIT_FAIL;
    }
    if (html != NULL && write_html(&rep, html) != 0) rc = NPKIT_EXIT_FAIL;
  }
  npkit_report_free(&rep);
  npkit_report_free_inputs(paths, n_paths);
  return rc;
usage:
  free(args);
  return NPKIT_EXIT_USAGE;
}
