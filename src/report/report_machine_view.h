/*
 * The views of the machine: per host what its ranks' snapshot says (host name and whether it
 * resolves, NCCL version, open-file limit, GPUs with their NVLinks, the process GPUs, network ports)
 * and, with sampled counters, the link throughput measured while each collective ran.  Text and
 * HTML print nothing when no log has a snapshot (logs of format 2 and before, NPKIT_MACHINE=0);
 * the JSON has it per rank ("ranks"[].machine) and per row ("collectives"[].link_throughput).
 * They read the model only.
 */
#ifndef NPKIT_REPORT_MACHINE_VIEW_H
#define NPKIT_REPORT_MACHINE_VIEW_H

#include <stdio.h>

#include "report_model.h"

/* "== Machine" section.  0, or -1 if writing failed. */
int npkit_report_machine_text(npkit_report *rep, FILE *out);
/* <section id="machine"> with the tables "machine-hosts" and "link-throughput".  0 or -1. */
int npkit_report_machine_html(npkit_report *rep, FILE *out);

/* A finding's label for the views: "advice: up to 12.3 ms" for advice, "machine" for a machine
 * finding without a time at stake, "" otherwise (the view's own label applies). */
void npkit_finding_label(const npkit_finding *f, char *buf, size_t len);

#endif /* NPKIT_REPORT_MACHINE_VIEW_H */
