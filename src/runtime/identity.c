#include "identity.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_int(const char *s, int *out) {
  if (s == NULL || !isdigit((unsigned char)*s)) return -1;
  errno = 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > 1 << 30) return -1;
  *out = (int)v;
  return 0;
}

/* Launchers in the order of trust: a job under mpirun inside a Slurm allocation has both, and the
 * MPI rank is the one NCCL programs use. */
static const struct {
  const char *source, *rank, *size, *local;
} launchers[] = {
    {"ompi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"pmix", "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
};

void npkit_identity_load(npkit_identity *id, const char *(*getenv_fn)(const char *name)) {
  memset(id, 0, sizeof *id);
  id->pid = (int)getpid();
  id->rank = id->world_size = id->local_rank = -1;
  if (gethostname(id->host, sizeof id->host - 1) != 0) snprintf(id->host, sizeof id->host, "unknown");
  /* Host names go into file names: keep only characters that are safe there. */
  for (char *p = id->host; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_') *p = '_';
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
    int rank;
    if (parse_int(getenv_fn(launchers[i].rank), &rank) != 0) continue;
    id->rank = rank;
    if (parse_int(getenv_fn(launchers[i].size), &id->world_size) != 0) id->world_size = -1;
    if (parse_int(getenv_fn(launchers[i].local), &id->local_rank) != 0) id->local_rank = -1;
    snprintf(id->source, sizeof id->source, "%s", launchers[i].source);
    return;
  }
}
