/* Subcommands of the `npkit` command.  Each gets its own arguments (argv[0] is the subcommand's
 * name) and returns the process exit status: 0 success, 1 failure, 2 usage error (and for
 * `npkit info`, 3 to 5 below). */
#ifndef NPKIT_TOOL_COMMANDS_H
#define NPKIT_TOOL_COMMANDS_H

#include <stddef.h>

#define NPKIT_EXIT_OK 0
#define NPKIT_EXIT_FAIL 1
#define NPKIT_EXIT_USAGE 2
/* `npkit info`: what is wrong with a log that could be read (the worst applies) */
#define NPKIT_EXIT_NOT_CLOSED 3 /* no END block: the process was killed, or still runs */
#define NPKIT_EXIT_TRUNCATED 4  /* ends in an incomplete or corrupt block */
#define NPKIT_EXIT_DAMAGED 5    /* corrupt blocks were skipped in the middle */

int npkit_cmd_json(int argc, char **argv);
int npkit_cmd_info(int argc, char **argv);
int npkit_cmd_api(int argc, char **argv);
int npkit_cmd_convert(int argc, char **argv);
int npkit_cmd_merge(int argc, char **argv);
int npkit_cmd_report(int argc, char **argv);
int npkit_cmd_metrics(int argc, char **argv);

/* Option helpers shared by the subcommands. */

/* An option of a subcommand, for npkit_cli_parse.  A flag (flag not NULL) is set to 1 when given.  An
 * option with a value ("-o V", "-oV", "--output V", "--output=V") stores it in *value when value is
 * set, then hands it to check when that is set, at once, so that a bad value is reported before
 * anything that follows it on the command line. */
typedef struct npkit_cli_option {
  const char *shrt, *lng; /* "-o", "--output"; an option without a short form names the long one twice */
  int *flag;
  const char **value;
  /* Checks the value, or stores what it means in *to; returns 0, or -1 after npkit_cli_usage_error. */
  int (*check)(const char *value, void *to);
  void *to;
  /* Set for a value that must not be empty (a file name): what it is, for "empty <nonempty>". */
  const char *nonempty;
} npkit_cli_option;

#include "trace_writer.h"

/* The command line of a subcommand. */
typedef struct npkit_cli_spec {
  const char *cmd;     /* its name, for messages */
  void (*help)(void);  /* prints its help on standard output */
  const npkit_cli_option *opts;
  size_t n_opts;
  const char *single;  /* what its one argument is ("log"), or NULL when it takes any number */
  const int *lazy;     /* when set and non-zero once the options are read: npkit_cli_open_job
                          opens the logs for their identity only (npkit_job.lazy) */
} npkit_cli_spec;

/* npkit_cli_parse's "all arguments taken, go on". */
#define NPKIT_CLI_GO_ON (-1)

/* Parses argv[1..argc-1]: the options of spec, -h/--help, "--" (all that follows is an argument),
 * and the arguments ("-" is one), stored in args (room for argc, or for one with spec->single) and
 * counted in *n_args.  Returns NPKIT_CLI_GO_ON, or the exit status to return at once:
 * NPKIT_EXIT_OK after printing the help, NPKIT_EXIT_USAGE after a message. */
int npkit_cli_parse(const npkit_cli_spec *spec, int argc, char **argv, char **args, size_t *n_args);
/* What the commands that read DIR|LOG... (report, merge) do first: npkit_cli_parse, then the job
 * of the logs named, or found in the folders named (npkit_job_inputs), opened (npkit_job_open),
 * and the traces its stopped processes did not write rendered (npkit_cli_render_missing).
 * Returns NPKIT_CLI_GO_ON with *job open and *n_inputs (may be NULL) the number of logs named or
 * found, or the exit status to return at once after a message (*job is then empty).  */
struct npkit_job;
int npkit_cli_open_job(const npkit_cli_spec *spec, int argc, char **argv, struct npkit_job *job, size_t *n_inputs);

/* Renders the Chrome trace of each log whose process meant to write one at exit but was stopped
 * before it did (no trace next to the log, and the process no longer runs), and says so on stderr
 * (trace_repair.c).  For the commands that read a job's logs: report, merge. */
void npkit_cli_render_missing(const char *cmd, const struct npkit_job *job);

/* Recovers into the log the events its killed process left in its event pool file (pool_recover.h:
 * a process of this host that died by SIGKILL), and says so on stderr; 1 when the log changed.
 * Every command that reads a log does this first (report and merge through npkit_cli_open_job,
 * for the logs not closed only). */
int npkit_cli_recover(const char *cmd, const char *log);

/* The format of a trace to write: --format's value (NULL: none given) and the output's name (NULL:
 * the default one), a name ending in .pftrace or .perfetto-trace asking for Perfetto's.  Returns
 * NPKIT_CLI_GO_ON with *f set, or NPKIT_EXIT_USAGE after a message (an unknown format; a format
 * and a name that disagree). */
int npkit_cli_trace_format(const char *cmd, const char *format, const char *output, npkit_trace_format *f);

/* "-h" or "--help". */
int npkit_cli_is_help(const char *arg);
/* Prints "npkit CMD: MESSAGE" and a pointer to the help on stderr; returns NPKIT_EXIT_USAGE. */
int npkit_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* -j N of the commands that read logs on several threads: 1 to 1024 into *(unsigned *)to; 0, or
 * -1 after npkit_cli_usage_error. */
int npkit_cli_take_jobs(const char *cmd, const char *v, void *to);

#endif
