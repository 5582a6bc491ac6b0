/* `npkit metrics DIR|LOGS... -o OUTDIR`: the collectives of a finished job as the files of NCCL's
 * Inspector (report_inspector.h), one dump covering the whole run, for jobs that ran without
 * live metrics. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "commands.h"
#include "job.h"
#include "report_inspector.h"
#include "report_model.h"

static void help(void) {
  printf("Usage: npkit metrics DIR|LOG... -o OUTDIR [-j N]\n"
         "Writes the collectives of a job's logs as NCCL Inspector's JSON lines (format v4.2), one\n"
         "file per process, OUTDIR/<host>-pid<pid>.log, which the Inspector's tools read\n"
         "(perf_summary_exporter.py): per communicator a dump_stats line, then one coll_perf line\n"
         "per collective with its size, time (GPU time when recorded: kernel_gpu, else the call's:\n"
         "collective_cpu), algorithm, protocol and bandwidths.  Nothing is left out: no size\n"
         "threshold; calls without a time (in a group, without GPU activity) are counted in\n"
         "coll_dropped_total.\n\n"
         "  -o, --output DIR  the folder of the files (made if missing)\n"
         "  -j, --jobs N      threads reading the logs (default: the cores)\n");
}

static int take_jobs(const char *v, void *to) { return npkit_cli_take_jobs("metrics", v, to); }

int npkit_cmd_metrics(int argc, char **argv) {
  const char *out = NULL;
  npkit_report_options o;
  npkit_report_defaults(&o);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  o.jobs = cores > 1 ? (unsigned)(cores < 64 ? cores : 64) : 1;
  const npkit_cli_option options[] = {
      {"-o", "--output", .value = &out, .nonempty = "output folder"},
      {"-j", "--jobs", .check = take_jobs, .to = &o.jobs},
  };
  const npkit_cli_spec spec = {"metrics", help, options, sizeof(options) / sizeof(options[0]), NULL, NULL};
  npkit_job job;
  int parsed = npkit_cli_open_job(&spec, argc, argv, &job, NULL);
  if (parsed != NPKIT_CLI_GO_ON) return parsed;
  if (out == NULL) {
    npkit_job_free(&job);
    npkit_cli_usage_error("metrics", "-o OUTDIR is required (the folder of the files)");
    return NPKIT_EXIT_USAGE;
  }
  if (mkdir(out, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "npkit metrics: %s: %s\n", out, strerror(errno));
    npkit_job_free(&job);
    return NPKIT_EXIT_FAIL;
  }
  char err[512];
  npkit_report rep = {0};
  int rc = NPKIT_EXIT_OK;
  if (npkit_report_run_job(&rep, &job, &o, err, sizeof(err)) != 0) {
    fprintf(stderr, "npkit metrics: %s\n", err);
    rc = NPKIT_EXIT_FAIL;
  } else {
    for (size_t i = 0; i < rep.job.n_warnings; i++) fprintf(stderr, "npkit metrics: warning: %s\n", rep.job.warnings[i]);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    npkit_inspector_stats st;
    if (npkit_report_inspector(&rep, out, (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec, &st, err, sizeof err) != 0) {
      fprintf(stderr, "npkit metrics: %s\n", err);
      rc = NPKIT_EXIT_FAIL;
    } else {
      fprintf(stderr, "npkit metrics: %s: %zu Inspector file%s, %llu collectives%s\n", out, st.files,
              st.files == 1 ? "" : "s", (unsigned long long)st.lines, "");
      if (st.without_time > 0)
        fprintf(stderr, "npkit metrics: %llu collective calls had no time (inside groups, without GPU activity): "
                        "counted in coll_dropped_total\n", (unsigned long long)st.without_time);
    }
  }
  npkit_report_free(&rep);
  return rc;
}
