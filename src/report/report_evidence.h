/*
 * From a finding to its picture: the `npkit merge` command that shows a finding's evidence, set in
 * each finding's `command` once the findings are ranked.  A straggler or a synchronisation delay
 * gets the collective instance of its largest arrival spread (`--collective COMM:SEQ`, the
 * communicator named as `npkit_job_comm_ref` names it), with, on a communicator of more than
 * eight ranks, only the ranks involved (`--ranks`: the last to arrive, the first, and the two
 * lowest others); a finding about an operation on a communicator (bandwidth, tuning advice, link
 * use, a hang) gets that operation's calls (`--ops`) on the communicator's four lowest ranks when it
 * has more than eight; a finding about one rank gets that rank.  The output is Perfetto's format for
 * jobs of more than 64 ranks (README: the browser cannot open their JSON), JSON otherwise.
 */
#ifndef NPKIT_REPORT_EVIDENCE_H
#define NPKIT_REPORT_EVIDENCE_H

#include "report_model.h"

/* Sets the command of every finding that has one.  0, or -1 when memory is short. */
int npkit_report_evidence_commands(npkit_report *rep);

#endif /* NPKIT_REPORT_EVIDENCE_H */
