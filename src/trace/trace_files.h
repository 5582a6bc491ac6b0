/* Names of the files the preloaded library writes in NPKIT_TRACE_DIR, shared with the `npkit` tool
 * (which renders a trace the library could not finish). */
#ifndef NPKIT_TRACE_FILES_H
#define NPKIT_TRACE_FILES_H

#include <stddef.h>

/* Makes s safe inside a file name, in place: characters other than letters, digits, '-', '.' and
 * '_' become '_' (host names go into the names of the files). */
void npkit_file_safe_name(char *s);

/* The Chrome trace of a process: DIR/npkit_rank<R>_<host>_<pid>.json, or DIR/npkit_<host>_<pid>.json
 * when the rank is unknown (< 0).  Returns what snprintf returns. */
int npkit_trace_json_path(char *buf, size_t len, const char *dir, int rank, const char *host, int pid);
/* The same with another suffix (".pftrace": Perfetto's trace of the process). */
int npkit_trace_path(char *buf, size_t len, const char *dir, int rank, const char *host, int pid, const char *suffix);

#endif
