/* libFuzzer target of the npkit_event.h parser: any text, in both modes.  A successful parse
 * must leave a consistent table; a failed one an unchanged table and a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npkit_dump.h"

static void check_table(const npkit_dump_event_table *t) {
  unsigned n = 0;
  for (int id = 0; id < NPKIT_DUMP_NUM_IDS; id++) {
    const char *nm = t->name[id];
    size_t len = strnlen(nm, NPKIT_DUMP_NAME_MAX);
    if (len == NPKIT_DUMP_NAME_MAX) abort();
    if ((len == 0) != (t->role[id] == NPKIT_ROLE_UNKNOWN)) abort();
    n += len > 0;
    for (size_t i = 0; i < len; i++) {
      char ch = nm[i];
      if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) abort();
    }
    if (t->kind_len[id] > len) abort();
    if (t->role[id] == NPKIT_ROLE_EXIT && t->kind[id] != id) {
      uint8_t k = t->kind[id];
      if (t->role[k] != NPKIT_ROLE_ENTRY || t->kind_len[k] != t->kind_len[id] ||
          memcmp(t->name[k], nm, t->kind_len[id]) != 0)
        abort();
    }
    for (int other = 0; other < id; other++)
      if (len > 0 && strcmp(t->name[other], nm) == 0) abort(); /* a name has one id */
  }
  if (n != t->n_defined) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static npkit_dump_event_table t, before;
  char err[512];
  for (int mode = 0; mode < 2; mode++) {
    npkit_dump_table_builtin(&t);
    before = t;
    err[0] = '\0';
    int rc = npkit_dump_table_parse_header(
        &t, (const char *)data, size, mode ? NPKIT_HEADER_EXTEND : NPKIT_HEADER_REPLACE, "fuzz.h", err, sizeof(err));
    if (rc == 0) {
      check_table(&t);
      if (t.n_defined == 0) abort();
    } else {
      if (err[0] == '\0' || memcmp(&t, &before, sizeof(t)) != 0) abort();
    }
  }
  return 0;
}
