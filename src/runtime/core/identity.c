#include "identity.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_files.h"

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
 * MPI rank is the one NCCL programs use.  local_size and job (NULL: the launcher has none) let the
 * ranks of one host find each other when the job is stopped (stop_barrier.h); job variables are
 * listed by preference, the first one set is taken. */
static const struct {
  const char *source, *rank, *size, *local, *local_size;
  const char *job[3];
} launchers[] = {
    {"ompi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
     {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", NULL}},
    {"pmix", "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE", {"PMIX_NAMESPACE", NULL, NULL}},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", {NULL, NULL, NULL}},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL, {NULL, NULL, NULL}},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", {"TORCHELASTIC_RUN_ID", NULL, NULL}},
};

void npkit_identity_load(npkit_identity *id, const char *(*getenv_fn)(const char *name)) {
  memset(id, 0, sizeof *id);
  id->pid = (int)getpid();
  id->rank = id->world_size = id->local_rank = id->local_size = -1;
  if (gethostname(id->host, sizeof id->host - 1) != 0) snprintf(id->host, sizeof id->host, "unknown");
  npkit_file_safe_name(id->host); /* host names go into file names */
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
    int rank;
    if (parse_int(getenv_fn(launchers[i].rank), &rank) != 0) continue;
    id->rank = rank;
    if (parse_int(getenv_fn(launchers[i].size), &id->world_size) != 0) id->world_size = -1;
    if (parse_int(getenv_fn(launchers[i].local), &id->local_rank) != 0) id->local_rank = -1;
    if (launchers[i].local_size == NULL || parse_int(getenv_fn(launchers[i].local_size), &id->local_size) != 0)
      id->local_size = -1;
    for (size_t k = 0; k < 3 && launchers[i].job[k] != NULL && id->job[0] == '\0'; k++) {
      const char *v = getenv_fn(launchers[i].job[k]);
      if (v != NULL) snprintf(id->job, sizeof id->job, "%s", v);
    }
    snprintf(id->source, sizeof id->source, "%s", launchers[i].source);
    return;
  }
}
