#include "trace_files.h"

#include <ctype.h>
#include <stdio.h>

void npkit_file_safe_name(char *s) {
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.' && *s != '_') *s = '_';
}

int npkit_trace_json_path(char *buf, size_t len, const char *dir, int rank, const char *host, int pid) {
  if (rank >= 0) return snprintf(buf, len, "%s/npkit_rank%d_%s_%d.json", dir, rank, host, pid);
  return snprintf(buf, len, "%s/npkit_%s_%d.json", dir, host, pid);
}
