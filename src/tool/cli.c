#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

int npkit_cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

int npkit_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "npkit %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'npkit %s --help'.\n", cmd);
  return NPKIT_EXIT_USAGE;
}

int npkit_cli_value(const char *cmd, int argc, char **argv, int *i, const char *shrt, const char *lng,
                    const char **value) {
  const char *a = argv[*i];
  size_t ls = strlen(shrt), ll = strlen(lng);
  const char *name = NULL;
  if (strcmp(a, shrt) == 0 || strcmp(a, lng) == 0) {
    name = a;
  } else if (strncmp(a, lng, ll) == 0 && a[ll] == '=') {
    *value = a + ll + 1;
    return 1;
  } else if (strncmp(a, shrt, ls) == 0 && a[ls] != '\0' && shrt[1] != '-') {
    *value = a + ls;
    return 1;
  } else {
    return 0;
  }
  if (*i + 1 >= argc) {
    npkit_cli_usage_error(cmd, "option '%s' needs a value", name);
    return -1;
  }
  *value = argv[++*i];
  return 1;
}
