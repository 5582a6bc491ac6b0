#define _GNU_SOURCE
#include "test_journal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test_names.h"

npkit_test_call npkit_test_call_make(const char *fn, int result) {
  npkit_test_call c = {
    .fn = fn, .comm = NULL, .nranks = 0, .count = -1, .datatype = -1, .op = -1,
    .root = -1, .peer = -1, .size = -1, .result = result, .has_tag = 0, .tag = 0,
  };
  return c;
}

long npkit_test_gettid(void) {
  return (long)syscall(SYS_gettid);
}

FILE *npkit_test_journal_open(const char *base, const char *kind, int index) {
  char path[4096];
  int n = kind ? snprintf(path, sizeof path, "%s.%s%d", base, kind, index)
               : snprintf(path, sizeof path, "%s", base);
  if (n < 0 || (size_t)n >= sizeof path) {
    fprintf(stderr, "journal path too long: %s\n", base);
    return NULL;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "cannot create journal %s: %s\n", path, strerror(errno));
    return NULL;
  }
  fprintf(f, "# tid=%ld pid=%ld\n", npkit_test_gettid(), (long)getpid());
  return f;
}

void npkit_test_journal_write(FILE *journal, const npkit_test_call *c) {
  if (!journal) return;
  fputs(c->fn, journal);
  if (c->comm) fprintf(journal, " comm=%s nranks=%d", c->comm, c->nranks);
  if (c->count >= 0) fprintf(journal, " count=%lld", c->count);
  if (c->datatype >= 0) fprintf(journal, " datatype=%s", npkit_test_dtype_name(c->datatype));
  if (c->op >= 0) fprintf(journal, " op=%s", npkit_test_op_name(c->op));
  if (c->root >= 0) fprintf(journal, " root=%d", c->root);
  if (c->peer >= 0) fprintf(journal, " peer=%d", c->peer);
  if (c->size >= 0) fprintf(journal, " size=%lld", c->size);
  if (c->has_tag) fprintf(journal, " tag=%llu", c->tag);
  if (c->result == NPKIT_TEST_NO_RESULT)
    fputs(" result=none\n", journal);
  else
    fprintf(journal, " result=%s\n", npkit_test_result_name(c->result));
}

int npkit_test_journal_close(FILE *journal) {
  if (!journal) return 0;
  int bad = ferror(journal);
  if (fclose(journal) != 0) bad = 1;
  if (bad) fprintf(stderr, "error while writing a journal\n");
  return bad ? -1 : 0;
}
