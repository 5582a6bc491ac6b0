/* A folder that statfs says is on NFS: preloaded before the library, it reports f_type
 * NFS_SUPER_MAGIC (0x6969, include/uapi/linux/magic.h, as the kernel's nfs client sets it in
 * fs/nfs/super.c) for every path under $STATFS_SHIM_NFS_DIR, and passes everything else to libc.
 * The rest of the answer (free blocks) is the real file system's, as on a real mount. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "../shim_next.h"

static void *next_statfs, *next_statfs64;

static int on_nfs(const char *path) {
  const char *dir = getenv("STATFS_SHIM_NFS_DIR");
  size_t n = dir != NULL ? strlen(dir) : 0;
  return n > 0 && strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int statfs(const char *path, struct statfs *buf) {
  int (*real)(const char *, struct statfs *) =
      (int (*)(const char *, struct statfs *))npkit_shim_next(&next_statfs, "statfs");
  int rc = real(path, buf);
  if (rc == 0 && on_nfs(path)) buf->f_type = 0x6969;
  return rc;
}

int statfs64(const char *path, struct statfs64 *buf) {
  int (*real)(const char *, struct statfs64 *) =
      (int (*)(const char *, struct statfs64 *))npkit_shim_next(&next_statfs64, "statfs64");
  int rc = real(path, buf);
  if (rc == 0 && on_nfs(path)) buf->f_type = 0x6969;
  return rc;
}
