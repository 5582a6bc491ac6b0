/* Fuzz target of the reader of NCCL's configuration files (src/runtime/nccl_conf.c): the input is
 * the content of NCCL_CONF_FILE.  Whatever it holds, the lookup must not crash and what it reports
 * must be possible: a reading that found a variable names that file, a value is at most 1023
 * characters of one line, and a variable the input does not mention is never found. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nccl_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const names[] = {"NCCL_PROFILER_PLUGIN", "A", "CUDA_INJECTION64_PATH",
                                      "NOT_IN_ANY_INPUT_\x01"};
  enum { N = sizeof names / sizeof names[0] };
  int fd = memfd_create("nccl.conf", 0);
  if (fd < 0) abort();
  if (size > 0 && write(fd, data, size) != (ssize_t)size) abort();
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  npkit_nccl_conf_places where = {path, NULL, NULL, NULL};
  npkit_nccl_conf_hit hits[N];
  npkit_nccl_conf_lookup(&where, names, N, hits);
  for (int i = 0; i < N; i++) {
    const npkit_nccl_conf_hit *h = &hits[i];
    if ((h->readers & ~3u) != 0) abort();
    if (h->readers == 0) {
      if (h->file[0] != '\0' || h->value[0] != '\0') abort();
      continue;
    }
    if (strcmp(h->file, path) != 0 || strlen(h->value) > 1023 || strchr(h->value, '\n') != NULL) abort();
    if (memmem(data, size, names[i], strlen(names[i])) == NULL) abort();
  }
  close(fd);
  return 0;
}
