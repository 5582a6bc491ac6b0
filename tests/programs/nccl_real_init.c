/* nccl_real_init: the smallest use of NCCL that reaches the driver: ncclGetUniqueId and a
 * one-rank ncclCommInitRank.  Without a GPU the real libnccl fails the init cleanly; the
 * integration tests check that the preloaded library passes that failure through unchanged.
 *
 * usage: nccl_real_init OUTFILE
 * OUTFILE gets one line per call: "<function> <code> <ncclGetErrorString(code)>".
 * Exit status 0 whatever NCCL returned (the codes are the output), 1 if OUTFILE cannot be
 * written, 2 on a usage error. */
#include <nccl.h>
#include <stdio.h>
#include <string.h>

static void line(FILE *out, const char *fn, ncclResult_t res) {
  fprintf(out, "%s %d %s\n", fn, (int)res, ncclGetErrorString(res));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: nccl_real_init OUTFILE\n");
    return 2;
  }
  FILE *out = fopen(argv[1], "w");
  if (!out) {
    perror(argv[1]);
    return 1;
  }
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclResult_t got_id = ncclGetUniqueId(&id);
  line(out, "ncclGetUniqueId", got_id);
  ncclComm_t comm = NULL;
  ncclResult_t init = ncclCommInitRank(&comm, 1, id, 0);
  line(out, "ncclCommInitRank", init);
  if (init == ncclSuccess) line(out, "ncclCommDestroy", ncclCommDestroy(comm)); /* with a GPU */
  return fclose(out) == 0 ? 0 : 1;
}
