#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl_names.h"

_Static_assert(NPKIT_FN_COUNT <= 64, "NPKIT_OPS mask holds one bit per NCCL function");

/* Strict unsigned parse: digits only (surrounding blanks allowed), no sign, no overflow. */
static int parse_u64(const char *s, uint64_t *out) {
  while (isspace((unsigned char)*s)) s++;
  if (!isdigit((unsigned char)*s)) return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno == ERANGE) return -1;
  while (isspace((unsigned char)*end)) end++;
  if (*end != '\0') return -1;
  *out = v;
  return 0;
}

static uint64_t get_u64(const char *(*getenv_fn)(const char *), const char *name, uint64_t def,
                        uint64_t lo, uint64_t hi) {
  const char *v = getenv_fn(name);
  if (v == NULL) return def;
  uint64_t x;
  if (parse_u64(v, &x) != 0 || x < lo || x > hi) {
    npkit_warn("%s='%.64s' is not a whole number from %llu to %llu; using %llu", name, v,
               (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)def);
    return def;
  }
  return x;
}

static int get_bool(const char *(*getenv_fn)(const char *), const char *name, int def) {
  const char *v = getenv_fn(name);
  if (v == NULL) return def;
  static const char *const yes[] = {"1", "true", "yes", "on"};
  static const char *const no[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0) return 1;
    if (strcasecmp(v, no[i]) == 0) return 0;
  }
  npkit_warn("%s='%.64s' is not a boolean (1/0, true/false, yes/no, on/off); using %d", name, v,
             def);
  return def;
}

static void get_path(const char *(*getenv_fn)(const char *), const char *name, const char *def,
                     char *out, size_t outlen) {
  const char *v = getenv_fn(name);
  if (v != NULL && v[0] == '\0') {
    npkit_warn("%s is set but empty; using '%s'", name, def[0] ? def : "(none)");
    v = NULL;
  } else if (v != NULL && strlen(v) >= outlen) {
    npkit_warn("%s is longer than %zu characters; using '%s'", name, outlen - 1,
               def[0] ? def : "(none)");
    v = NULL;
  }
  snprintf(out, outlen, "%s", v != NULL ? v : def);
}

int npkit_config_parse_ops(const char *text, uint64_t *mask, char *bad, int badlen) {
  uint64_t m = 0;
  const char *p = text;
  int any = 0;
  while (*p) {
    while (*p == ',' || isspace((unsigned char)*p)) p++;
    if (!*p) break;
    const char *start = p;
    while (*p && *p != ',' && !isspace((unsigned char)*p)) p++;
    char item[64];
    size_t len = (size_t)(p - start);
    if (len >= sizeof item) len = sizeof item - 1;
    memcpy(item, start, len);
    item[len] = '\0';
    int remove = item[0] == '-';
    const char *name = remove ? item + 1 : item;
    uint64_t bits = 0;
    int cls;
    npkit_fn fn;
    if (strcasecmp(name, "all") == 0) {
      bits = ~(uint64_t)0;
    } else if ((cls = npkit_class_from_name(name)) >= 0) {
      for (unsigned f = 1; f < NPKIT_FN_COUNT; f++)
        if ((int)npkit_fn_class_of(f) == cls) bits |= (uint64_t)1 << f;
    } else if ((fn = npkit_fn_from_name(name)) != NPKIT_FN_NONE) {
      bits = (uint64_t)1 << fn;
    } else {
      snprintf(bad, (size_t)badlen, "%s", item);
      return -1;
    }
    if (remove) {
      if (!any) m = ~(uint64_t)0; /* "-query" alone means everything but queries */
      m &= ~bits;
    } else {
      m |= bits;
    }
    any = 1;
  }
  if (!any) {
    snprintf(bad, (size_t)badlen, "(empty list)");
    return -1;
  }
  *mask = m & ~(uint64_t)1; /* bit 0 is NPKIT_FN_NONE */
  return 0;
}

static npkit_level get_level(const char *(*getenv_fn)(const char *)) {
  const char *v = getenv_fn("NPKIT_LOG_LEVEL");
  if (v == NULL) return NPKIT_LEVEL_INFO;
  static const struct { const char *name; npkit_level level; } levels[] = {
      {"error", NPKIT_LEVEL_ERROR}, {"warn", NPKIT_LEVEL_WARN}, {"warning", NPKIT_LEVEL_WARN},
      {"info", NPKIT_LEVEL_INFO},   {"debug", NPKIT_LEVEL_DEBUG}};
  for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
    if (strcasecmp(v, levels[i].name) == 0) return levels[i].level;
  npkit_warn("NPKIT_LOG_LEVEL='%.64s' is not one of error, warn, info, debug; using info", v);
  return NPKIT_LEVEL_INFO;
}

void npkit_config_load(npkit_config *cfg, const char *(*getenv_fn)(const char *name)) {
  memset(cfg, 0, sizeof *cfg);
  /* Level and quiet first, so that the warnings below obey them. */
  cfg->quiet = get_bool(getenv_fn, "NPKIT_QUIET", 0);
  cfg->log_level = get_level(getenv_fn);
  npkit_diag_set_level(cfg->log_level, cfg->quiet);

  cfg->disable = get_bool(getenv_fn, "NPKIT_DISABLE", 0);
  get_path(getenv_fn, "NPKIT_TRACE_DIR", NPKIT_DEFAULT_TRACE_DIR, cfg->trace_dir,
           sizeof cfg->trace_dir);
  cfg->event_buf_mb = get_u64(getenv_fn, "NPKIT_EVENT_BUF_SIZE", NPKIT_DEFAULT_BUF_MB, 1, 65536);
  cfg->flush_ms = get_u64(getenv_fn, "NPKIT_FLUSH_MS", NPKIT_DEFAULT_FLUSH_MS, 1, 3600000);
  cfg->write_json = get_bool(getenv_fn, "NPKIT_JSON", 1);
  cfg->signals = get_bool(getenv_fn, "NPKIT_SIGNALS", 1);
  get_path(getenv_fn, "NPKIT_NCCL_LIBRARY", "", cfg->nccl_library, sizeof cfg->nccl_library);

  char bad[64];
  uint64_t mask;
  npkit_config_parse_ops(NPKIT_DEFAULT_OPS, &cfg->ops_mask, bad, sizeof bad);
  const char *ops = getenv_fn("NPKIT_OPS");
  if (ops != NULL) {
    if (npkit_config_parse_ops(ops, &mask, bad, sizeof bad) == 0)
      cfg->ops_mask = mask;
    else
      npkit_warn("NPKIT_OPS='%.64s': '%s' is not an NCCL function, a class (coll, p2p, group, comm, "
                 "mem, query, misc) or 'all'; using '%s'",
                 ops, bad, NPKIT_DEFAULT_OPS);
  }
}
