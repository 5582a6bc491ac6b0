/* Settings for npkit_config_load (or any getenv-like lookup) from a table instead of the process
 * environment: point fake_env at a NULL-terminated array of "NAME=value" and pass table_getenv. */
#ifndef NPKIT_TEST_ENV_TABLE_H
#define NPKIT_TEST_ENV_TABLE_H

#include <string.h>

static const char *const *fake_env;

static const char *table_getenv(const char *name) {
  size_t n = strlen(name);
  for (const char *const *p = fake_env; *p; p++)
    if (strncmp(*p, name, n) == 0 && (*p)[n] == '=') return *p + n + 1;
  return NULL;
}

#endif
