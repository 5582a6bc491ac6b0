/* Subcommands of the `npkit` command.  Each gets its own arguments (argv[0] is the subcommand's
 * name) and returns the process exit status: 0 success, 1 failure, 2 usage error. */
#ifndef NPKIT_TOOL_COMMANDS_H
#define NPKIT_TOOL_COMMANDS_H

#define NPKIT_EXIT_OK 0
#define NPKIT_EXIT_FAIL 1
#define NPKIT_EXIT_USAGE 2

int npkit_cmd_json(int argc, char **argv);
int npkit_cmd_info(int argc, char **argv);
int npkit_cmd_api(int argc, char **argv);
int npkit_cmd_convert(int argc, char **argv);
int npkit_cmd_merge(int argc, char **argv);
int npkit_cmd_report(int argc, char **argv);

/* Option helpers shared by the subcommands. */

/* Matches argv[*i] against a short ("-o") or long ("--output") option that takes a value, in the
 * forms "-o V", "-oV", "--output V" and "--output=V".  Returns 1 and sets *value (advancing *i past
 * a separate value), 0 if argv[*i] is another argument, or -1 (after a message) if the value is
 * missing. */
int npkit_cli_value(const char *cmd, int argc, char **argv, int *i, const char *shrt, const char *lng,
                    const char **value);
/* "-h" or "--help". */
int npkit_cli_is_help(const char *arg);
/* Prints "npkit CMD: MESSAGE" and a pointer to the help on stderr; returns NPKIT_EXIT_USAGE. */
int npkit_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
