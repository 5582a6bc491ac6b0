/* NCCL's configuration files as the library reads them (src/runtime/nccl_conf.c), against the rules
 * of NVIDIA/nccl src/misc/param.cc (v2.28.9-1 and v2.30.3-1) written out here case by case: which
 * files in which order, what counts as a line, a comment, a name and a value, and the differences
 * of the two readings (home directory, carriage return, lines longer than 4095 characters).
 *
 *   test_nccl_conf WORK_DIR */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "nccl_conf.h"

#define BOTH (NPKIT_NCCL_CONF_UP_TO_2_30_2 | NPKIT_NCCL_CONF_FROM_2_30_3)
#define OLD NPKIT_NCCL_CONF_UP_TO_2_30_2
#define NEW NPKIT_NCCL_CONF_FROM_2_30_3

static char work[512];
static const char *const plugin[] = {"NCCL_PROFILER_PLUGIN"};

/* A path in the work folder, kept for the whole test. */
static char *path_of(const char *name) {
  static char buf[128][1024];
  static int next;
  if (next == 128) abort();
  char *p = buf[next++];
  snprintf(p, sizeof buf[0], "%s/%s", work, name);
  return p;
}

/* Writes `len` bytes (text may hold NULs) to work/name; returns the path. */
static char *write_bytes(const char *name, const char *text, size_t len) {
  char *p = path_of(name);
  chmod(p, 0644); /* a rerun after the no-permission case */
  FILE *f = fopen(p, "wb");
  CHECK(f != NULL);
  if (f == NULL) return p;
  CHECK(fwrite(text, 1, len, f) == len);
  fclose(f);
  return p;
}

static char *write_text(const char *name, const char *text) { return write_bytes(name, text, strlen(text)); }

static npkit_nccl_conf_hit look(const char *conf_file, const char *home_env, const char *home_passwd,
                                const char *system_file) {
  npkit_nccl_conf_places where = {conf_file, home_env, home_passwd, system_file};
  npkit_nccl_conf_hit h;
  npkit_nccl_conf_lookup(&where, plugin, 1, &h);
  return h;
}

/* The value NCCL applies from a system file holding `text` alone. */
static npkit_nccl_conf_hit one_file(const char *text) {
  return look(NULL, NULL, NULL, write_text("one.conf", text));
}

static void test_order(void) {
  mkdir(path_of("home"), 0755);
  mkdir(path_of("pwhome"), 0755);
  char *sys = write_text("etc.conf", "NCCL_PROFILER_PLUGIN=from-etc\n");
  char *user = write_text("user.conf", "OTHER=1\nNCCL_PROFILER_PLUGIN=from-user\n");
  write_text("home/.nccl.conf", "NCCL_PROFILER_PLUGIN=from-home\n");
  write_text("pwhome/.nccl.conf", "NCCL_PROFILER_PLUGIN=from-pwhome\n");

  /* NCCL_CONF_FILE instead of ~/.nccl.conf, before /etc/nccl.conf */
  npkit_nccl_conf_hit h = look(user, path_of("home"), path_of("pwhome"), sys);
  CHECK_EQ_U64(h.readers, BOTH);
  CHECK_STR(h.value, "from-user");
  CHECK_STR(h.file, user);
  /* an empty NCCL_CONF_FILE is no NCCL_CONF_FILE */
  h = look("", path_of("home"), path_of("home"), sys);
  CHECK_STR(h.value, "from-home");
  CHECK_STR(h.file, path_of("home/.nccl.conf"));
  CHECK_EQ_U64(h.readers, BOTH);
  /* a missing NCCL_CONF_FILE: the home file is still not read */
  h = look(path_of("missing.conf"), path_of("home"), path_of("home"), sys);
  CHECK_STR(h.value, "from-etc");
  CHECK_STR(h.file, sys);
  /* the home directories of the two readings */
  h = look(NULL, path_of("home"), path_of("pwhome"), sys);
  CHECK_EQ_U64(h.readers, BOTH);
  CHECK_STR(h.value, "from-pwhome"); /* the older reading's */
  h = look(NULL, path_of("nowhere"), path_of("pwhome"), NULL);
  CHECK_EQ_U64(h.readers, OLD);
  CHECK_STR(h.value, "from-pwhome");
  h = look(NULL, path_of("home"), NULL, NULL);
  CHECK_EQ_U64(h.readers, NEW);
  CHECK_STR(h.value, "from-home");
  CHECK_STR(h.file, path_of("home/.nccl.conf"));
  /* nothing anywhere */
  h = look(NULL, path_of("nowhere"), path_of("nowhere"), path_of("missing.conf"));
  CHECK_EQ_U64(h.readers, 0);
  CHECK_STR(h.value, "");
  /* a file that does not set it: the next one does */
  h = look(write_text("other.conf", "NCCL_DEBUG=INFO\n"), NULL, NULL, sys);
  CHECK_STR(h.value, "from-etc");
}

static void test_lines(void) {
  npkit_nccl_conf_hit h;
  /* the first line that sets it wins (setenv(name, value, 0)) */
  h = one_file("NCCL_PROFILER_PLUGIN=first\nNCCL_PROFILER_PLUGIN=second\n");
  CHECK_STR(h.value, "first");
  /* '#' only as the first character makes a comment */
  h = one_file("#NCCL_PROFILER_PLUGIN=commented\nNCCL_PROFILER_PLUGIN=after\n");
  CHECK_STR(h.value, "after");
  h = one_file(" #NCCL_PROFILER_PLUGIN=indented\n");
  CHECK_EQ_U64(h.readers, 0); /* the name is " #NCCL_PROFILER_PLUGIN" */
  /* no trimming: a space makes another name, or stays in the value */
  CHECK_EQ_U64(one_file("NCCL_PROFILER_PLUGIN =none\n").readers, 0);
  CHECK_EQ_U64(one_file(" NCCL_PROFILER_PLUGIN=none\n").readers, 0);
  h = one_file("NCCL_PROFILER_PLUGIN= none \n");
  CHECK_STR(h.value, " none ");
  /* no quotes, split at the first '=' */
  CHECK_STR(one_file("NCCL_PROFILER_PLUGIN=\"none\"\n").value, "\"none\"");
  CHECK_STR(one_file("NCCL_PROFILER_PLUGIN==b\n").value, "=b");
  /* an empty value is a value */
  h = one_file("NCCL_PROFILER_PLUGIN=\n");
  CHECK_EQ_U64(h.readers, BOTH);
  CHECK_STR(h.value, "");
  /* lines without '=' and an empty name are skipped; the last line needs no newline */
  CHECK_STR(one_file("NCCL_PROFILER_PLUGIN\n=x\n\n\nNCCL_PROFILER_PLUGIN=last").value, "last");
  /* a name that only starts like it */
  CHECK_EQ_U64(one_file("NCCL_PROFILER_PLUGINX=1\nNCCL_PROFILER=2\n").readers, 0);
  /* a NUL ends the line's text */
  static const char with_nul[] = "NCCL_PROF\0ILER_PLUGIN=a\nNCCL_PROFILER_PLUGIN=ab\0cd\n";
  h = look(NULL, NULL, NULL, write_bytes("nul.conf", with_nul, sizeof with_nul - 1));
  CHECK_STR(h.value, "ab");
  CHECK_EQ_U64(h.readers, BOTH);
  /* values are cut at 1023 characters */
  char big[1300];
  int n = snprintf(big, sizeof big, "NCCL_PROFILER_PLUGIN=");
  memset(big + n, 'v', 1100);
  big[n + 1100] = '\n';
  big[n + 1101] = '\0';
  h = one_file(big);
  CHECK_EQ_U64(strlen(h.value), 1023);
  CHECK_EQ_U64(h.readers, BOTH);
}

static void test_readings_differ(void) {
  npkit_nccl_conf_hit h;
  /* CRLF: the older reading keeps "\r" in the value, the newer removes it; both set it */
  h = one_file("NCCL_PROFILER_PLUGIN=none\r\n");
  CHECK_EQ_U64(h.readers, BOTH);
  CHECK_STR(h.value, "none");
  CHECK(h.carriage_return);
  CHECK(!one_file("NCCL_PROFILER_PLUGIN=none\n").carriage_return);
  /* a line longer than 4095 characters: the newer reading reads on as a new line */
  char text[6000];
  int n = snprintf(text, sizeof text, "X=");
  memset(text + n, 'a', 4093);
  snprintf(text + n + 4093, sizeof text - (size_t)(n + 4093), "NCCL_PROFILER_PLUGIN=tail\n");
  h = one_file(text);
  CHECK_EQ_U64(h.readers, NEW);
  CHECK_STR(h.value, "tail");
  /* the same after a long comment */
  text[0] = '#';
  h = one_file(text);
  CHECK_EQ_U64(h.readers, NEW);
  /* one character shorter: one line for both, X's value */
  n = snprintf(text, sizeof text, "X=");
  memset(text + n, 'a', 4092);
  snprintf(text + n + 4092, sizeof text - (size_t)(n + 4092), "NCCL_PROFILER_PLUGIN=tail\n");
  CHECK_EQ_U64(one_file(text).readers, 0);
}

static void test_unreadable(void) {
  npkit_nccl_conf_hit h;
  char *sys = write_text("etc2.conf", "NCCL_PROFILER_PLUGIN=from-etc\n");
  /* a folder opens but cannot be read: nothing from it */
  mkdir(path_of("folder.conf"), 0755);
  h = look(path_of("folder.conf"), NULL, NULL, sys);
  CHECK_STR(h.value, "from-etc");
  h = look(NULL, NULL, NULL, path_of("folder.conf"));
  CHECK_EQ_U64(h.readers, 0);
  /* no permission (root reads anyway) */
  char *locked = write_text("locked.conf", "NCCL_PROFILER_PLUGIN=locked\n");
  chmod(locked, 0);
  h = look(locked, NULL, NULL, sys);
  CHECK_STR(h.value, geteuid() == 0 ? "locked" : "from-etc");
  /* NCCL's paths are cut at 1023 characters: the cut path is the file read */
  char dir[1100];
  int n = snprintf(dir, sizeof dir, "%s", work);
  while (n < 900) {
    n += snprintf(dir + n, sizeof dir - (size_t)n, "/%0100d", 0);
    mkdir(dir, 0755);
  }
  char cut[1300], full[1400];
  snprintf(cut, sizeof cut, "%s/%.*s", dir, 1022 - n, "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
  CHECK_EQ_U64(strlen(cut), 1023);
  snprintf(full, sizeof full, "%sTOO-LONG", cut);
  FILE *f = fopen(cut, "w");
  CHECK(f != NULL);
  if (f != NULL) {
    fputs("NCCL_PROFILER_PLUGIN=cut\n", f);
    fclose(f);
  }
  CHECK_STR(look(full, NULL, NULL, NULL).value, "cut");
}

static void test_several_names(void) {
  static const char *const names[] = {"NCCL_PROFILER_PLUGIN", "CUDA_INJECTION64_PATH", "NCCL_DEBUG"};
  char *sys = write_text("multi.conf", "CUDA_INJECTION64_PATH=/x/libinj.so\nNCCL_PROFILER_PLUGIN=none\n");
  npkit_nccl_conf_places where = {NULL, NULL, NULL, sys};
  npkit_nccl_conf_hit h[3];
  npkit_nccl_conf_lookup(&where, names, 3, h);
  CHECK_STR(h[0].value, "none");
  CHECK_STR(h[1].value, "/x/libinj.so");
  CHECK_EQ_U64(h[2].readers, 0);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_nccl_conf WORK_DIR\n");
    return 2;
  }
  snprintf(work, sizeof work, "%s", argv[1]);
  if (mkdir(work, 0755) != 0 && errno != EEXIST) {
    perror(work);
    return 2;
  }
  test_order();
  test_lines();
  test_readings_differ();
  test_unreadable();
  test_several_names();
  return check_exit_code("test_nccl_conf");
}
