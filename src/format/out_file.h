/*
 * An output file of the tool (a trace, a merged trace, a converted dump) written whole or not at
 * all: it is written as PATH.partial and renamed over PATH once complete, so that a viewer or a
 * script never sees half a file under the final name.  "-" is standard output.  A PATH that
 * exists and is not a regular file (a device, a FIFO, a symbolic link) is written in place: a
 * rename would replace it.
 */
#ifndef NPKIT_OUT_FILE_H
#define NPKIT_OUT_FILE_H

#include <stddef.h>

typedef struct npkit_out_file {
  int fd;           /* where to write */
  const char *path; /* the final name */
  char *partial;    /* PATH.partial while it is written there, else NULL */
  int is_stdout;
} npkit_out_file;

/* Opens f for path.  0, or -1 with "<file>: <reason>" in err (errno is ENOMEM when memory was
 * short). */
int npkit_out_open(npkit_out_file *f, const char *path, char *err, size_t errlen);

/* Ends f after writing: closes it (not standard output) and, when rc is 0, renames the partial
 * file over PATH; otherwise the partial file is removed.  Returns rc, or -1 with a message in err
 * when closing (where NFS and friends report write errors) or renaming fails. */
int npkit_out_close(npkit_out_file *f, int rc, char *err, size_t errlen);

#endif /* NPKIT_OUT_FILE_H */
