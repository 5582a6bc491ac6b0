/*
 * How many times `npkit report` walks the events of each log: runs the report of the logs named
 * (npkit_report_run, as cmd_report.c does; --timeline adds the HTML view's timeline strip) and
 * prints one line per log, "PATH EVENT_BLOCKS READS OPEN", where READS counts the EVENTS blocks the
 * report's walks entered (npkit_log_reader.event_blocks_read): one pass reads each block once;
 * OPEN is 1 when the log's file is still open after the report (0: closed once read).
 *   report_reads [--timeline] LOG...
 */
#include <stdio.h>
#include <string.h>

#include "report_model.h"

int main(int argc, char **argv) {
  npkit_report_options o;
  npkit_report_defaults(&o);
  int first = 1;
  if (argc > 1 && strcmp(argv[1], "--timeline") == 0) {
    o.timeline = 1;
    first = 2;
  }
  if (first >= argc) {
    fprintf(stderr, "usage: report_reads [--timeline] LOG...\n");
    return 2;
  }
  npkit_report rep;
  char err[512];
  if (npkit_report_run(&rep, argv + first, (size_t)(argc - first), &o, err, sizeof err) != 0) {
    fprintf(stderr, "report_reads: %s\n", err);
    npkit_report_free(&rep);
    return 1;
  }
  for (size_t i = 0; i < rep.job.n_logs; i++) {
    const npkit_log_reader *r = rep.job.logs[i].reader;
    printf("%s %llu %llu %d\n", rep.job.logs[i].path, (unsigned long long)r->n_event_blocks,
           (unsigned long long)r->event_blocks_read, r->fd >= 0);
  }
  printf("timeline %d\n", rep.timeline.found);
  npkit_report_free(&rep);
  return 0;
}
