/* The machine snapshot of a log (machine_info.h) as one JSON object: the trace's
 * otherData.machine and the report's per-rank "machine" (docs/trace-format.md has the keys),
 * written to a tree writer (tree_writer.h): JSON for the report, the trace sink for the trace.
 * Unknown values are left out rather than written as 0. */
#ifndef NPKIT_MACHINE_JSON_H
#define NPKIT_MACHINE_JSON_H

#include "tree_writer.h"
#include "machine_info.h"

void npkit_machine_json(npkit_tree *w, const npkit_machine *m);

#endif
