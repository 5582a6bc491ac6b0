#include "cupti_peers.h"

#include <link.h>
#include <stdio.h>
#include <string.h>

static const char *const peer_files[] = {"libtorch_cpu.so", "libkineto.so"};

typedef struct found {
  char *name;
  size_t len;
  int hit;
} found;

static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  found *f = arg;
  const char *path = info->dlpi_name;
  if (path == NULL || path[0] == '\0') return 0;
  const char *base = strrchr(path, '/');
  base = base != NULL ? base + 1 : path;
  for (size_t i = 0; i < sizeof peer_files / sizeof peer_files[0]; i++) {
    size_t n = strlen(peer_files[i]);
    /* libtorch_cpu.so, or a versioned libtorch_cpu.so.2.9 */
    if (strncmp(base, peer_files[i], n) == 0 && (base[n] == '\0' || base[n] == '.')) {
      snprintf(f->name, f->len, "%s", base);
      f->hit = 1;
      return 1;
    }
  }
  return 0;
}

int npkit_cupti_peer_loaded(char *name, size_t len) {
  found f = {name, len, 0};
  dl_iterate_phdr(visit, &f);
  return f.hit;
}
