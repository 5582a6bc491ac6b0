/* NCCL's own configuration files, read the way NCCL applies them at its first initEnv (NVIDIA/nccl
 * src/misc/param.cc, initEnvFunc and setEnvFile): NCCL_CONF_FILE when it is set and not empty,
 * otherwise ~/.nccl.conf, then /etc/nccl.conf, each line `NAME=value` applied with
 * setenv(NAME, value, 0), so the environment wins over the files and the first file (and line)
 * that sets a variable wins over later ones.
 *
 * Two NCCL readings differ, and a variable counts as set when either sets it:
 *  - up to 2.30.2 (v2.28.9-1): the home directory is the password database's (getpwuid(getuid()),
 *    not $HOME); lines of any length (getline); a line starting with '#' is a comment (tested
 *    before the newline is removed); a carriage return before the newline stays in the value;
 *  - from 2.30.3 (v2.30.3-1): the home directory is $HOME; lines are read in pieces of at most
 *    4095 characters (fgets, a longer line goes on as the next one); the newline and then one
 *    carriage return are removed before the '#' test.
 * Both: the name is everything before the first '=' (no trimming, no quotes; lines without '='
 * are skipped), name and value are cut at 1023 characters, paths at 1023 characters, and a file
 * that cannot be opened or read adds nothing.  NCCL before 2.23 ignored NCCL_CONF_FILE and always
 * read ~/.nccl.conf; it had no profiler plugin either, and that reading is not modelled. */
#ifndef NPKIT_NCCL_CONF_H
#define NPKIT_NCCL_CONF_H

#include <stddef.h>

#define NPKIT_NCCL_CONF_UP_TO_2_30_2 0x1u /* the reading of NCCL 2.23 to 2.30.2 */
#define NPKIT_NCCL_CONF_FROM_2_30_3 0x2u  /* the reading of NCCL 2.30.3 and later */

/* Where NCCL looks: the values of NCCL_CONF_FILE and $HOME, the password database's home
 * directory (each NULL when there is none) and the system file ("/etc/nccl.conf"). */
typedef struct npkit_nccl_conf_places {
  const char *conf_file;
  const char *home_env;
  const char *home_passwd;
  const char *system_file;
} npkit_nccl_conf_places;

typedef struct npkit_nccl_conf_hit {
  unsigned readers;   /* NPKIT_NCCL_CONF_*: the readings that set the variable; 0: none does */
  char file[1024];    /* the file whose value NCCL applies (the older reading's when both do) */
  char value[1024];   /* that value, without the carriage return the older reading keeps */
  int carriage_return;/* the line ended in "\r\n" */
} npkit_nccl_conf_hit;

/* For each of the n variable names, which file sets it as NCCL would read them from `where`.
 * Never prints, never fails: what cannot be read sets nothing, as for NCCL. */
void npkit_nccl_conf_lookup(const npkit_nccl_conf_places *where, const char *const *names, int n,
                            npkit_nccl_conf_hit *hits);

/* Every variable the files set for NCCL, in the order it is first set, with what the lookup
 * reports for it: fn(ctx, name, hit) once per name.  Never prints, never fails (memory short:
 * names are left out). */
typedef void (*npkit_nccl_conf_fn)(void *ctx, const char *name, const npkit_nccl_conf_hit *hit);
void npkit_nccl_conf_each(const npkit_nccl_conf_places *where, npkit_nccl_conf_fn fn, void *ctx);

/* The places of this process: getenv("NCCL_CONF_FILE"), getenv("HOME"), the home directory of
 * getuid()'s password entry (copied into home_buf) and /etc/nccl.conf. */
void npkit_nccl_conf_places_of_process(npkit_nccl_conf_places *where, char *home_buf, size_t len);

#endif
