/* NCCL's configuration files, applied to the process environment once, when NCCL first needs its
 * environment.
 *
 * NCCL 2.28.9 (v2.28.9-1 src/misc/param.cc initEnvFunc, setEnvFile; called through
 * ncclInitEnv, src/init.cc, by ncclGetUniqueId, ncclCommInitRank, ncclCommInitRankConfig,
 * ncclCommInitRankScalable and ncclCommInitAll, which calls ncclGetUniqueId): the file named by
 * NCCL_CONF_FILE when it is set and not empty, otherwise <home>/.nccl.conf with the home directory
 * of getpwuid(getuid()) ($HOME is not used), then /etc/nccl.conf.  Each line read with getline: a
 * line whose first character is '#' is skipped (before the newline is removed), the newline is
 * removed (a carriage return is not), the name is everything before the first '=' (a line
 * without one is skipped), name and value are cut at 1023 characters, and setenv(name, value, 0)
 * applies it, so neither the environment nor an earlier line or file is overridden.
 *
 * The old build (FAKE_NCCL_OLD, NCCL 2.17: v2.17.1-1 src/misc/param.cc initEnv, called by
 * ncclInit from ncclGetUniqueId and the communicator inits) knows no NCCL_CONF_FILE and no
 * comment lines. */
#include "fake_internal.h"

#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void set_env_file(const char *file_name) {
  FILE *file = fopen(file_name, "r");
  if (file == NULL) return;
  char *line = NULL, var[1024], value[1024];
  size_t n = 0;
  ssize_t len;
  while ((len = getline(&line, &n, file)) != -1) {
    if (!FAKE_NCCL_OLD && line[0] == '#') continue;
    if (line[len - 1] == '\n') line[len - 1] = '\0';
    size_t s = 0;
    while (line[s] != '\0' && line[s] != '=') s++;
    if (line[s] == '\0') continue;
    size_t k = s < 1023 ? s : 1023;
    memcpy(var, line, k);
    var[k] = '\0';
    snprintf(value, sizeof value, "%s", line + s + 1);
    setenv(var, value, 0); /* an empty name fails (EINVAL), as in NCCL */
  }
  free(line);
  fclose(file);
}

static void init_env(void) {
  char path[1024];
  const char *user_file = FAKE_NCCL_OLD ? NULL : getenv("NCCL_CONF_FILE");
  if (user_file != NULL && user_file[0] != '\0') {
    snprintf(path, sizeof path, "%s", user_file);
    set_env_file(path);
  } else {
    struct passwd *pw = getpwuid(getuid());
    if (pw != NULL && pw->pw_dir != NULL) {
      snprintf(path, sizeof path, "%s/.nccl.conf", pw->pw_dir);
      set_env_file(path);
    }
  }
  set_env_file("/etc/nccl.conf");
}

void npkit_fake_init_env(void) { pthread_once(&env_once, init_env); }
