#include "trace_files.h"

#include <ctype.h>
#include <stdio.h>

void npkit_file_safe_name(char *s) {
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.' && *s != '_') *s = '_';
}

int npkit_trace_path(char *buf, size_t len, const char *dir, int rank, const char *host, int pid, const char *suffix) {
  if (rank >= 0) return snprintf(buf, len, "%s/npkit_rank%d_%s_%d%s", dir, rank, host, pid, suffix);
  return snprintf(buf, len, "%s/npkit_%s_%d%s", dir, host, pid, suffix);
}

int npkit_trace_json_path(char *buf, size_t len, const char *dir, int rank, const char *host, int pid) {
  return npkit_trace_path(buf, len, dir, rank, host, pid, ".json");
}
