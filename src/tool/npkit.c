/* The `npkit` command: reads the event logs written by libnpkit_preload.so (and NPKit dumps).  Each
 * subcommand lives in its own file (cmd_*.c) and is listed in `commands` below. */
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "commands.h"
#include "npkit/event_log.h"

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "unknown"
#endif

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} command;

static const command commands[] = {
  {"json", npkit_cmd_json, "render a log as a Chrome trace (Perfetto, chrome://tracing)"},
  {"info", npkit_cmd_info, "summarise a log: identity, communicators, threads, calls, drops"},
  {"merge", npkit_cmd_merge, "merge the logs of all ranks into one Chrome trace, clocks aligned"},
  {"report", npkit_cmd_report, "nccl-tests table, stragglers, overlap and ranked findings for all ranks"},
  {"metrics", npkit_cmd_metrics, "the collectives as NCCL Inspector's JSON lines, after the fact"},
  {"convert", npkit_cmd_convert, "turn the dump files of an NPKit-patched NCCL into a Chrome trace"},
  {"api", npkit_cmd_api, "list the wrapped NCCL functions: name, class, first NCCL version"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_help(FILE *out) {
  fprintf(out,
          "Usage: npkit COMMAND [ARGS...]\n"
          "Reads the event logs (*" NPKIT_LOG_SUFFIX ") that libnpkit_preload.so writes.\n\n"
          "Commands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++) fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\nOptions:\n"
          "  -h, --help     this help ('npkit COMMAND --help' for a command's own)\n"
          "  -V, --version  the version of npkit and of the log format it reads\n");
}

/* The report and the merge read log after log, and each log's tables are freed when it is done:
 * with glibc's defaults every free gave the pages back (large blocks are mapped one by one, the
 * heap's top is trimmed) and the next log faulted them in again, a third of the report's time at
 * 1,024 ranks.  Large blocks from the heap and a heap that keeps 64 MB free cost a few MB.  The
 * tool only: the preloaded library never touches its host's allocator. */
static void reuse_freed_memory(void) {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

int main(int argc, char **argv) {
  reuse_freed_memory();
  if (argc < 2) {
    print_help(stderr);
    return NPKIT_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
    print_help(stdout);
    return NPKIT_EXIT_OK;
  }
  if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
    printf("npkit %s (event log version %u)\n", NPKIT_VERSION_STRING, NPKIT_LOG_VERSION);
    return NPKIT_EXIT_OK;
  }
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
  if (cmd[0] == '-')
    fprintf(stderr, "npkit: unknown option '%s'\n", cmd);
  else
    fprintf(stderr, "npkit: unknown command '%s'\n", cmd);
  fprintf(stderr, "Try 'npkit --help'.\n");
  return NPKIT_EXIT_USAGE;
}
