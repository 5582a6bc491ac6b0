/* `npkit info`: the machine section, from the log's MACHINE blocks (format version 3). */
#ifndef NPKIT_TOOL_INFO_MACHINE_H
#define NPKIT_TOOL_INFO_MACHINE_H

#include "log_reader.h"

/* Prints the snapshot, "machine  none" for a log without one.  0, or -1 with a message. */
int npkit_info_machine(const npkit_log_reader *r, char *err, size_t errlen);

#endif
