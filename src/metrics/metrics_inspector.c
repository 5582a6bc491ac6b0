/* NCCL Inspector's JSON lines (NVIDIA/nccl plugins/profiler/inspector/inspector_json.cc): every
 * line repeats the communicator's header and the dump's metadata, then one of coll_perf, p2p_perf
 * or dump_stats, keys in the Inspector's order and none in two objects (perf_summary_exporter.py
 * drops a file that has one).  The version written is v4.2: v4.0 of the releases up to v2.30.7-1,
 * with v4.1's dump_stats line (inspectorCommInfoDumpStats) and v4.2's coll_algo/coll_proto. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "metrics_out.h"
#include "nccl_names.h"

#ifndef NPKIT_VERSION_STRING
#define NPKIT_VERSION_STRING "unknown"
#endif

#define FORMAT_VERSION "v4.2"
/* metadata.rec_mechanism: the Inspector writes "nccl_profiler_interface"; this says who recorded */
#define REC_MECHANISM "npkit_preload"

static void put_string(FILE *f, const char *s) {
  char buf[6 * 256 + 8];
  char *end = npkit_fmt_escaped(buf, s, strnlen(s, 256));
  fprintf(f, "\"%.*s\"", (int)(end - buf), buf);
}

/* inspectorTimingSourceToString */
static const char *timing_name(unsigned t) { return t == NPKIT_MTIME_KERNEL_GPU ? "kernel_gpu" : "collective_cpu"; }

static void head(FILE *f, const npkit_metrics_proc *p, const npkit_metrics_comm *c) {
  fprintf(f, "{\"header\":{\"id\":\"0x%" PRIx64 "\",\"comm_name\":", c->comm_id);
  put_string(f, c->name[0] != '\0' ? c->name : "unknown");
  fprintf(f, ",\"rank\":%" PRId32 ",\"n_ranks\":%" PRId32 ",\"nnodes\":%" PRId32 "},", c->rank, c->nranks, c->nnodes);
  fputs("\"metadata\":{\"inspector_output_format_version\":\"" FORMAT_VERSION "\",\"git_rev\":", f);
  put_string(f, "npkit-preload " NPKIT_VERSION_STRING);
  fputs(",\"rec_mechanism\":\"" REC_MECHANISM "\",", f);
  fprintf(f, "\"dump_timestamp_us\":%" PRIu64 ",\"hostname\":", p->dump_us);
  put_string(f, p->hostname);
  fprintf(f, ",\"pid\":%" PRId32 "},", p->pid);
}

static void op_line(FILE *f, const npkit_metrics_op *o) {
  uint64_t us = o->exec_ns / 1000;
  if (o->p2p) {
    fputs("\"p2p_perf\":{\"p2p\":", f);
    put_string(f, npkit_fn_short_name(o->fn));
    fprintf(f,
            ",\"p2p_sn\":%" PRIu64 ",\"p2p_peer\":%" PRId32 ",\"p2p_msg_size_bytes\":%" PRIu64
            ",\"p2p_exec_time_us\":%" PRIu64 ",\"p2p_timing_source\":\"%s\",\"p2p_algobw_gbs\":%f,\"p2p_busbw_gbs\":%f}}\n",
            o->seq, o->peer, o->msg_bytes, us, timing_name(o->timing), o->algbw_gbs, o->busbw_gbs);
    return;
  }
  fputs("\"coll_perf\":{\"coll\":", f);
  put_string(f, npkit_fn_short_name(o->fn));
  fputs(",\"coll_algo\":", f);
  put_string(f, o->algo);
  fputs(",\"coll_proto\":", f);
  put_string(f, o->proto);
  fprintf(f,
          ",\"coll_sn\":%" PRIu64 ",\"coll_msg_size_bytes\":%" PRIu64 ",\"coll_exec_time_us\":%" PRIu64
          ",\"coll_timing_source\":\"%s\",\"coll_algobw_gbs\":%f,\"coll_busbw_gbs\":%f}}\n",
          o->seq, o->msg_bytes, us, timing_name(o->timing), o->algbw_gbs, o->busbw_gbs);
}

int npkit_metrics_inspector_write(FILE *f, const npkit_metrics_proc *proc, const npkit_metrics_comm *comms,
                                  size_t n_comms, const npkit_metrics_op *ops, size_t n_ops) {
  size_t k = 0;
  char *hbuf = NULL;
  size_t hlen = 0;
  int rc = 0;
  for (uint32_t ci = 0; ci < n_comms && rc == 0; ci++) {
    const npkit_metrics_comm *c = &comms[ci];
    if (c->coll_new + c->p2p_new + c->coll_dropped_new + c->p2p_dropped_new == 0) continue;
    /* every line of the communicator starts the same: written once, copied per line */
    free(hbuf);
    hbuf = NULL;
    FILE *h = open_memstream(&hbuf, &hlen);
    if (h == NULL) {
      rc = -1;
      break;
    }
    head(h, proc, c);
    if (fclose(h) != 0) {
      rc = -1;
      break;
    }
    fwrite(hbuf, 1, hlen, f);
    fprintf(f, "\"dump_stats\":{\"coll_records\":%" PRIu64 ",\"coll_dropped_total\":%" PRIu64
               ",\"coll_dropped_since_last_dump\":%" PRIu64 ",\"p2p_records\":%" PRIu64 ",\"p2p_dropped_total\":%" PRIu64
               ",\"p2p_dropped_since_last_dump\":%" PRIu64 "}}\n",
            c->coll_new, c->coll_dropped, c->coll_dropped_new, c->p2p_new, c->p2p_dropped, c->p2p_dropped_new);
    while (k < n_ops && ops[k].comm < ci) k++;
    for (; k < n_ops && ops[k].comm == ci; k++) {
      fwrite(hbuf, 1, hlen, f);
      op_line(f, &ops[k]);
    }
  }
  free(hbuf);
  return rc != 0 || ferror(f) ? -1 : 0;
}
