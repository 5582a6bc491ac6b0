/* Who this process is: host, pid and global rank as the launcher tells it. */
#ifndef NPKIT_IDENTITY_H
#define NPKIT_IDENTITY_H

typedef struct npkit_identity {
  char host[64];
  int pid;
  int rank;        /* -1 if no launcher variable names it */
  int world_size;  /* -1 if unknown */
  int local_rank;  /* -1 if unknown */
  int local_size;  /* ranks of the job on this host, -1 if unknown */
  char source[16]; /* which launcher the rank came from: "ompi", "pmix", "pmi", "slurm", "torchrun" */
  char job[64];    /* names the job (and step) on this host, "" if the launcher does not say */
} npkit_identity;

void npkit_identity_load(npkit_identity *id, const char *(*getenv_fn)(const char *name));

#endif
