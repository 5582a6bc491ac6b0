#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "pool_recover.h"
#include "report_model.h"

int npkit_cli_trace_format(const char *cmd, const char *format, const char *output, npkit_trace_format *f) {
  int named = output != NULL && strcmp(output, "-") != 0 && npkit_trace_path_is_perfetto(output);
  if (format == NULL) {
    *f = named ? NPKIT_TRACE_PERFETTO : NPKIT_TRACE_JSON;
    return NPKIT_CLI_GO_ON;
  }
  if (npkit_trace_format_parse(format, f) != 0)
    return npkit_cli_usage_error(cmd, "unknown --format '%s' (json or perfetto)", format);
  if (named && *f != NPKIT_TRACE_PERFETTO)
    return npkit_cli_usage_error(cmd, "--format %s, but the output name %s is Perfetto's (.pftrace, .perfetto-trace)",
                                 format, output);
  return NPKIT_CLI_GO_ON;
}

int npkit_cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

int npkit_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "npkit %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'npkit %s --help'.\n", cmd);
  return NPKIT_EXIT_USAGE;
}

/* Matches argv[*i] against an option that takes a value, in the forms "-o V", "-oV", "--output V" and
 * "--output=V".  Returns 1 and sets *value (advancing *i past a separate value), 0 if argv[*i] is
 * another argument, or -1 (after a message) if the value is missing. */
static int option_value(const char *cmd, int argc, char **argv, int *i, const char *shrt, const char *lng,
                        const char **value) {
  const char *a = argv[*i];
  size_t ls = strlen(shrt), ll = strlen(lng);
  const char *name = NULL;
  if (strcmp(a, shrt) == 0 || strcmp(a, lng) == 0) {
    name = a;
  } else if (strncmp(a, lng, ll) == 0 && a[ll] == '=') {
    *value = a + ll + 1;
    return 1;
  } else if (strncmp(a, shrt, ls) == 0 && a[ls] != '\0' && shrt[1] != '-') {
    *value = a + ls;
    return 1;
  } else {
    return 0;
  }
  if (*i + 1 >= argc) {
    npkit_cli_usage_error(cmd, "option '%s' needs a value", name);
    return -1;
  }
  *value = argv[++*i];
  return 1;
}

/* Takes argv[*i], an option: 0 when it is one of spec's, else -1 after a message. */
static int take_option(const npkit_cli_spec *spec, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  for (size_t k = 0; k < spec->n_opts; k++) {
    const npkit_cli_option *o = &spec->opts[k];
    const char *v;
    int m;
    if (o->flag != NULL) {
      if (strcmp(a, o->shrt) != 0 && strcmp(a, o->lng) != 0) continue;
      *o->flag = 1;
      return 0;
    }
    if ((m = option_value(spec->cmd, argc, argv, i, o->shrt, o->lng, &v)) == 0) continue;
    if (m < 0) return -1;
    if (o->nonempty != NULL && v[0] == '\0') {
      npkit_cli_usage_error(spec->cmd, "empty %s", o->nonempty);
      return -1;
    }
    if (o->value != NULL) *o->value = v;
    return o->check != NULL ? o->check(v, o->to) : 0;
  }
  npkit_cli_usage_error(spec->cmd, "unknown option '%s'", a);
  return -1;
}

int npkit_cli_parse(const npkit_cli_spec *spec, int argc, char **argv, char **args, size_t *n_args) {
  int only_args = 0;
  *n_args = 0;
  for (int i = 1; i < argc; i++) {
    char *a = argv[i];
    if (only_args || a[0] != '-' || a[1] == '\0') {
      if (spec->single != NULL && *n_args > 0)
        return npkit_cli_usage_error(spec->cmd, "one %s at a time (got '%s' and '%s')", spec->single, args[0], a);
      args[(*n_args)++] = a;
    } else if (strcmp(a, "--") == 0) {
      only_args = 1;
    } else if (npkit_cli_is_help(a)) {
      spec->help();
      return NPKIT_EXIT_OK;
    } else if (take_option(spec, argc, argv, &i) != 0) {
      return NPKIT_EXIT_USAGE;
    }
  }
  return NPKIT_CLI_GO_ON;
}

/* npkit_cli_parse, then the logs named, or found in the folders named (npkit_job_inputs), in
 * *paths for npkit_job_free_inputs. */
static int parse_logs(const npkit_cli_spec *spec, int argc, char **argv, char ***paths, size_t *n_paths) {
  char err[512], **args = calloc((size_t)argc, sizeof(*args));
  size_t n_args;
  if (args == NULL) {
    fprintf(stderr, "npkit %s: out of memory\n", spec->cmd);
    return NPKIT_EXIT_FAIL;
  }
  int rc = npkit_cli_parse(spec, argc, argv, args, &n_args);
  if (rc == NPKIT_CLI_GO_ON && n_args == 0) rc = npkit_cli_usage_error(spec->cmd, "missing DIR or LOG");
  if (rc == NPKIT_CLI_GO_ON && npkit_job_inputs(args, n_args, paths, n_paths, err, sizeof(err)) < 0) {
    fprintf(stderr, "npkit %s: %s\n", spec->cmd, err);
    rc = NPKIT_EXIT_FAIL;
  }
  free(args);
  return rc;
}

int npkit_cli_recover(const char *cmd, const char *log) {
  npkit_pool_recovery rec;
  char err[600];
  int rc = npkit_pool_recover_log(log, NPKIT_RECOVERED_BY_TOOL, &rec, err, sizeof err);
  if (rc < 0)
    fprintf(stderr, "npkit %s: warning: cannot recover the events of the killed process of %s from its event pool: %s\n",
            cmd, log, err);
  else if (rc > 0 && rec.events == 0)
    fprintf(stderr, "npkit %s: %s: its process was killed (pid %d) after its writer had put every event in the log\n",
            cmd, log, (int)rec.pid);
  else if (rc > 0)
    fprintf(stderr,
            "npkit %s: recovered %" PRIu64 " events of a process that was killed (pid %d) from its event pool %s into %s%s\n",
            cmd, rec.events, (int)rec.pid, rec.pool_path, log,
            rec.cut_bytes > 0 ? " (after removing the incomplete block it was writing)" : "");
  return rc > 0;
}

int npkit_cli_take_jobs(const char *cmd, const char *v, void *to) {
  char *end;
  long n = strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < 1 || n > 1024) {
    npkit_cli_usage_error(cmd, "-j takes a number of threads from 1 to 1024, not '%s'", v);
    return -1;
  }
  *(unsigned *)to = (unsigned)n;
  return 0;
}

static int recover_job_log(void *cmd, const char *log) { return npkit_cli_recover(cmd, log); }

int npkit_cli_open_job(const npkit_cli_spec *spec, int argc, char **argv, npkit_job *job, size_t *n_inputs) {
  char err[512], **paths;
  size_t n_paths;
  memset(job, 0, sizeof(*job));
  int rc = parse_logs(spec, argc, argv, &paths, &n_paths);
  if (rc != NPKIT_CLI_GO_ON) return rc;
  if (n_inputs != NULL) *n_inputs = n_paths;
  job->recover = recover_job_log;
  job->recover_ctx = (void *)spec->cmd;
  job->lazy = spec->lazy != NULL && *spec->lazy;
  if (npkit_job_open(job, paths, n_paths, err, sizeof(err)) != 0) { /* the job keeps copies of the paths */
    fprintf(stderr, "npkit %s: %s\n", spec->cmd, err);
    npkit_job_free(job);
    rc = NPKIT_EXIT_FAIL;
  } else {
    npkit_cli_render_missing(spec->cmd, job);
  }
  npkit_job_free_inputs(paths, n_paths);
  return rc;
}
