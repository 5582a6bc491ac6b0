/* The journal: one line per NCCL call a test program made, written in call order by the program
 * itself.  It is the independent truth the integration tests compare the traces against.
 *
 * Line format (keys only when they apply, always in this order):
 *   ncclAllReduce comm=world nranks=4 count=17 datatype=float32 op=sum result=ncclSuccess
 *   ncclSend comm=world nranks=4 count=12 datatype=float32 peer=1 result=ncclSuccess
 *   ncclMemAlloc size=4096 result=ncclSuccess
 *   ncclGetErrorString result=none          (functions that return no ncclResult_t)
 * Lines starting with '#' carry facts about the writer ("# tid=1234 thread=2"). */
#ifndef NPKIT_TEST_JOURNAL_H
#define NPKIT_TEST_JOURNAL_H

#include <stdio.h>

/* result value for functions that do not return an ncclResult_t */
#define NPKIT_TEST_NO_RESULT (-1)

typedef struct npkit_test_call {
  const char *fn;         /* "ncclAllReduce" */
  const char *comm;       /* communicator label ("world", "split", "c2", "null"); NULL if none */
  int nranks;             /* size of that communicator, 0 if unknown */
  long long count;        /* -1 if none */
  int datatype;           /* -1 if none */
  int op;                 /* -1 if none */
  int root;               /* -1 if none */
  int peer;               /* -1 if none */
  long long size;         /* bytes for MemAlloc and registrations, -1 if none */
  int result;             /* ncclResult_t, or NPKIT_TEST_NO_RESULT */
  int has_tag;            /* an nccl*Config call: its user profiler tag follows */
  unsigned long long tag;
} npkit_test_call;

/* A call description with every optional field absent. */
npkit_test_call npkit_test_call_make(const char *fn, int result);

/* Opens "<base>.<kind><index>" (e.g. journal.rank3), or <base> itself when kind is NULL, and
 * writes the '#' header line with the calling thread's OS id.  NULL with a message on stderr when
 * the file cannot be created. */
FILE *npkit_test_journal_open(const char *base, const char *kind, int index);
/* Appends one line; a NULL journal is allowed and ignored. */
void npkit_test_journal_write(FILE *journal, const npkit_test_call *call);
/* Closes the journal; 0 when every line reached the file. */
int npkit_test_journal_close(FILE *journal);
/* The OS thread id of the caller. */
long npkit_test_gettid(void);

#endif
