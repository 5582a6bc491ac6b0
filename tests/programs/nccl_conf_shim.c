/* Test-only interposer that puts the configuration files NCCL reads where a test can write them,
 * for the library and the fake NCCL alike (preloaded before both):
 *   NPKIT_TEST_PASSWD_HOME    the home directory that getpwuid / getpwuid_r report for getuid()
 *                             (the password database's, which NCCL 2.28.9 uses instead of $HOME)
 *   NPKIT_TEST_ETC_NCCL_CONF  the file that fopen opens when asked for /etc/nccl.conf
 * Unset, or for anything else, the calls go to the C library unchanged.  Only tests use these
 * variables; the library and the fakes do not read them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static const char *etc_stand_in(const char *path) {
  const char *file = getenv("NPKIT_TEST_ETC_NCCL_CONF");
  return file != NULL && path != NULL && strcmp(path, "/etc/nccl.conf") == 0 ? file : path;
}

static void own_home(uid_t uid, struct passwd *pw) {
  const char *home = getenv("NPKIT_TEST_PASSWD_HOME");
  if (pw != NULL && home != NULL && uid == getuid()) pw->pw_dir = (char *)home;
}

FILE *fopen(const char *path, const char *mode) {
  FILE *(*real)(const char *, const char *) = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
  return real != NULL ? real(etc_stand_in(path), mode) : NULL;
}

FILE *fopen64(const char *path, const char *mode) {
  FILE *(*real)(const char *, const char *) = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen64");
  return real != NULL ? real(etc_stand_in(path), mode) : NULL;
}

struct passwd *getpwuid(uid_t uid) {
  struct passwd *(*real)(uid_t) = (struct passwd * (*)(uid_t)) dlsym(RTLD_NEXT, "getpwuid");
  struct passwd *pw = real != NULL ? real(uid) : NULL;
  own_home(uid, pw);
  return pw;
}

int getpwuid_r(uid_t uid, struct passwd *pwd, char *buf, size_t len, struct passwd **result) {
  int (*real)(uid_t, struct passwd *, char *, size_t, struct passwd **) =
      (int (*)(uid_t, struct passwd *, char *, size_t, struct passwd **))dlsym(RTLD_NEXT, "getpwuid_r");
  if (real == NULL) return -1;
  int rc = real(uid, pwd, buf, len, result);
  if (rc == 0) own_home(uid, *result);
  return rc;
}
