#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl_names.h"

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

/* A sampling period: 0 (off) or a whole number from lo to hi. */
static uint64_t get_period(const char *(*getenv_fn)(const char *), const char *name, const char *unit,
                           uint64_t lo, uint64_t hi, const char *off_means) {
  const char *v = getenv_fn(name);
  if (v == NULL) return 0;
  uint64_t x;
  if (parse_u64(v, &x) != 0 || (x != 0 && (x < lo || x > hi))) {
    npkit_warn("%s='%.64s' is not 0 or a whole number of %s from %llu to %llu; %s", name, v, unit,
               (unsigned long long)lo, (unsigned long long)hi, off_means);
    return 0;
  }
  return x;
}

int npkit_config_parse_bool(const char *text, int *out) {
  static const char *const yes[] = {"1", "true", "yes", "on"};
  static const char *const no[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(text, yes[i]) == 0) return *out = 1, 0;
    if (strcasecmp(text, no[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

static int get_bool(const char *(*getenv_fn)(const char *), const char *name, int def) {
  const char *v = getenv_fn(name);
  if (v == NULL) return def;
  int b;
  if (npkit_config_parse_bool(v, &b) == 0) return b;
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

/* Next item of a comma or blank separated list into item (cut to size - 1); 0 at the end. */
static int next_list_item(const char **cursor, char *item, size_t size) {
  const char *p = *cursor;
  while (*p == ',' || isspace((unsigned char)*p)) p++;
  if (!*p) return 0;
  const char *start = p;
  while (*p && *p != ',' && !isspace((unsigned char)*p)) p++;
  size_t len = (size_t)(p - start);
  if (len >= size) len = size - 1;
  memcpy(item, start, len);
  item[len] = '\0';
  *cursor = p;
  return 1;
}

static void set_fill(npkit_fn_set *s, uint64_t v) {
  for (int i = 0; i < NPKIT_FN_SET_WORDS; i++) s->w[i] = v;
}

/* A list of names and -names into a set of `nwords` words: each name adds its bits (`lookup`: 0,
 * or -1 for an unknown name), each -name takes them away, and a list that begins with a -name
 * starts from `all` ("-query" alone means everything but queries).  0, or -1 with the bad item (or
 * "(empty list)") in `bad`. */
static int parse_name_list(const char *text, size_t item_max, uint64_t *set, const uint64_t *all,
                           size_t nwords, int (*lookup)(const char *name, uint64_t *bits), char *bad,
                           int badlen) {
  const char *p = text;
  int any = 0;
  char item[64];
  if (item_max > sizeof item) item_max = sizeof item;
  memset(set, 0, nwords * sizeof *set);
  while (next_list_item(&p, item, item_max)) {
    int remove = item[0] == '-';
    uint64_t bits[NPKIT_FN_SET_WORDS] = {0};
    if (lookup(remove ? item + 1 : item, bits) != 0) {
      snprintf(bad, (size_t)badlen, "%s", item);
      return -1;
    }
    if (remove && !any) memcpy(set, all, nwords * sizeof *set);
    for (size_t i = 0; i < nwords; i++) set[i] = remove ? set[i] & ~bits[i] : set[i] | bits[i];
    any = 1;
  }
  if (!any) {
    snprintf(bad, (size_t)badlen, "(empty list)");
    return -1;
  }
  return 0;
}

static int op_bits(const char *name, uint64_t *bits) {
  npkit_fn_set s;
  set_fill(&s, 0);
  int cls;
  npkit_fn fn;
  if (strcasecmp(name, "all") == 0) {
    set_fill(&s, ~(uint64_t)0);
  } else if ((cls = npkit_class_from_name(name)) >= 0) {
    for (unsigned f = 1; f < NPKIT_FN_COUNT; f++)
      if ((int)npkit_fn_class_of(f) == cls) npkit_fn_set_add(&s, f);
  } else if ((fn = npkit_fn_from_name(name)) != NPKIT_FN_NONE) {
    npkit_fn_set_add(&s, fn);
  } else {
    return -1;
  }
  memcpy(bits, s.w, sizeof s.w);
  return 0;
}

int npkit_config_parse_ops(const char *text, npkit_fn_set *set, char *bad, int badlen) {
  npkit_fn_set all, m;
  set_fill(&all, ~(uint64_t)0);
  if (parse_name_list(text, 64, m.w, all.w, NPKIT_FN_SET_WORDS, op_bits, bad, badlen) != 0) return -1;
  m.w[0] &= ~(uint64_t)1; /* bit 0 is NPKIT_FN_NONE */
  *set = m;
  return 0;
}

static int plugin_event_bits(const char *name, uint64_t *bits) {
  static const struct { const char *name; uint32_t bits; } items[] = {
      {"coll", NPKIT_PEV_COLL},   {"p2p", NPKIT_PEV_P2P},   {"kernel", NPKIT_PEV_KERNEL},
      {"proxy", NPKIT_PEV_PROXY}, {"step", NPKIT_PEV_STEP}, {"ctrl", NPKIT_PEV_CTRL},
      {"phase", NPKIT_PEV_PHASE}, {"all", NPKIT_PEV_ALL},   {"none", 0}};
  for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
    if (strcasecmp(name, items[i].name) == 0) {
      bits[0] = items[i].bits;
      return 0;
    }
  return -1;
}

int npkit_config_parse_plugin_events(const char *text, uint32_t *events, char *bad, int badlen) {
  uint64_t all = NPKIT_PEV_ALL, m;
  if (parse_name_list(text, 32, &m, &all, 1, plugin_event_bits, bad, badlen) != 0) return -1;
  *events = (uint32_t)m;
  return 0;
}

/* A decimal number and a unit, in ns: "s", "ms", and with allow_min "min" (strtod alone would
 * also take hex, inf and nan).  0 or -1. */
static int parse_time_ns(const char *text, int allow_min, uint64_t *ns) {
  const char *p = text;
  while (isspace((unsigned char)*p)) p++;
  const char *digits = p;
  while (isdigit((unsigned char)*p) || *p == '.') p++;
  size_t len = (size_t)(p - digits);
  char num[32];
  if (len == 0 || len >= sizeof num) return -1;
  memcpy(num, digits, len);
  num[len] = '\0';
  char *end;
  double v = strtod(num, &end);
  if (*end != '\0') return -1;
  double scale;
  if (strcmp(p, "s") == 0) scale = 1e9;
  else if (strcmp(p, "ms") == 0) scale = 1e6;
  else if (allow_min && strcmp(p, "min") == 0) scale = 60e9;
  else return -1;
  if (v * scale >= 1e18) return -1;
  *ns = (uint64_t)(v * scale + 0.5);
  return 0;
}

int npkit_config_parse_window(const char *text, npkit_window_point *out) {
  uint64_t n;
  if (parse_u64(text, &n) == 0) {
    *out = (npkit_window_point){.collectives = n}; /* 0: not set */
    return 0;
  }
  if (parse_time_ns(text, 0, &n) != 0) return -1;
  *out = (npkit_window_point){.ns = n};
  return 0;
}

int npkit_config_parse_timeout(const char *text, uint64_t *ns) {
  uint64_t v;
  if (parse_u64(text, &v) == 0 && v == 0) return *ns = 0, 0; /* "0": none */
  if (parse_time_ns(text, 1, &v) != 0) return -1;
  if (v != 0 && (v < NPKIT_MIN_HANG_TIMEOUT_NS || v > NPKIT_MAX_HANG_TIMEOUT_NS)) return -1;
  *ns = v;
  return 0;
}

int npkit_config_parse_signal(const char *text, int *sig) {
  static const struct { const char *name; int sig; } names[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"WINCH", SIGWINCH}, {"URG", SIGURG}};
  const char *name = strncasecmp(text, "SIG", 3) == 0 ? text + 3 : text;
  uint64_t n;
  if (parse_u64(text, &n) == 0) {
    if (n == SIGUSR1 || n == SIGUSR2 || n == SIGHUP || n == SIGWINCH || n == SIGURG ||
        (n >= (uint64_t)SIGRTMIN && n <= (uint64_t)SIGRTMAX))
      return *sig = (int)n, 0;
    return -1;
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(name, names[i].name) == 0) return *sig = names[i].sig, 0;
  return -1;
}

void npkit_config_signal_name(int sig, char *buf, size_t len) {
  static const struct { const char *name; int sig; } names[] = {
      {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGHUP", SIGHUP}, {"SIGWINCH", SIGWINCH}, {"SIGURG", SIGURG}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].sig == sig) {
      snprintf(buf, len, "%s", names[i].name);
      return;
    }
  snprintf(buf, len, "SIG%d", sig);
}

static void get_window(const char *(*getenv_fn)(const char *), const char *name,
                       npkit_window_point *out) {
  const char *v = getenv_fn(name);
  *out = (npkit_window_point){0};
  if (v != NULL && npkit_config_parse_window(v, out) != 0)
    npkit_warn("%s='%.64s' is neither a number of collectives (e.g. 100) nor a time since the start "
               "(e.g. 30s, 500ms); ignored",
               name, v);
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

static int get_clock(const char *(*getenv_fn)(const char *)) {
  const char *v = getenv_fn("NPKIT_CLOCK");
  if (v == NULL || strcasecmp(v, "auto") == 0) return 1;
  if (strcasecmp(v, "realtime") == 0) return 0;
  npkit_warn("NPKIT_CLOCK='%.64s' is not one of auto, realtime; using auto", v);
  return 1;
}

/* NPKIT_TRACE_FORMAT: which traces the process writes at exit. */
static unsigned get_trace_formats(const char *(*getenv_fn)(const char *)) {
  const char *v = getenv_fn("NPKIT_TRACE_FORMAT");
  if (v == NULL || strcasecmp(v, "json") == 0) return NPKIT_TRACE_FORMAT_JSON;
  if (strcasecmp(v, "perfetto") == 0) return NPKIT_TRACE_FORMAT_PERFETTO;
  if (strcasecmp(v, "both") == 0) return NPKIT_TRACE_FORMAT_JSON | NPKIT_TRACE_FORMAT_PERFETTO;
  npkit_warn("NPKIT_TRACE_FORMAT='%.64s' is not one of json, perfetto, both; using json", v);
  return NPKIT_TRACE_FORMAT_JSON;
}

static int get_cupti(const char *(*getenv_fn)(const char *)) {
  const char *v = getenv_fn("NPKIT_CUPTI");
  int b;
  if (v == NULL || strcasecmp(v, "auto") == 0) return NPKIT_CUPTI_AUTO;
  if (npkit_config_parse_bool(v, &b) == 0) return b ? NPKIT_CUPTI_ON : NPKIT_CUPTI_OFF;
  npkit_warn("NPKIT_CUPTI='%.64s' is not one of auto, 1, 0; using auto", v);
  return NPKIT_CUPTI_AUTO;
}

/* A signal setting: 0 when unset or bad (with one warning naming what it would have done). */
static int get_signal(const char *(*getenv_fn)(const char *), const char *name, const char *does) {
  const char *v = getenv_fn(name);
  int sig = 0;
  if (v != NULL && npkit_config_parse_signal(v, &sig) != 0) {
    npkit_warn("%s='%.64s' is not one of SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH, SIGURG or a real-time "
               "signal; no signal %s",
               name, v, does);
    sig = 0;
  }
  return sig;
}

/* The flight recorder and the hang watchdog (NPKIT_RING_MB, NPKIT_DUMP_SIGNAL, NPKIT_HANG_TIMEOUT). */
static void get_flight(const char *(*getenv_fn)(const char *), npkit_config *cfg) {
  cfg->ring_mb = get_u64(getenv_fn, "NPKIT_RING_MB", 0, 0, NPKIT_MAX_RING_MB);
  cfg->dump_signal = get_signal(getenv_fn, "NPKIT_DUMP_SIGNAL", "dumps what was recorded");
  if (cfg->dump_signal != 0 && cfg->dump_signal == cfg->toggle_signal) {
    npkit_warn("NPKIT_DUMP_SIGNAL and NPKIT_TOGGLE_SIGNAL are the same signal; it toggles recording, "
               "no signal dumps");
    cfg->dump_signal = 0;
  }
  const char *ht = getenv_fn("NPKIT_HANG_TIMEOUT");
  if (ht != NULL && npkit_config_parse_timeout(ht, &cfg->hang_timeout_ns) != 0) {
    npkit_warn("NPKIT_HANG_TIMEOUT='%.64s' is not a time from 10ms to 7 days with its unit (60s, "
               "500ms, 2min) or 0; no hang watchdog",
               ht);
    cfg->hang_timeout_ns = 0;
  }
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
  get_path(getenv_fn, "NPKIT_POOL_DIR", NPKIT_DEFAULT_POOL_DIR, cfg->pool_dir, sizeof cfg->pool_dir);
  if (strcmp(cfg->pool_dir, "none") == 0) cfg->pool_dir[0] = '\0';
  cfg->flush_ms = get_u64(getenv_fn, "NPKIT_FLUSH_MS", NPKIT_DEFAULT_FLUSH_MS, 1, 3600000);
  cfg->write_json = get_bool(getenv_fn, "NPKIT_JSON", 1);
  cfg->trace_formats = get_trace_formats(getenv_fn);
  cfg->simulated = get_bool(getenv_fn, "NPKIT_SIMULATED", 0);
  cfg->clock_tsc = get_clock(getenv_fn);
  cfg->signals = get_bool(getenv_fn, "NPKIT_SIGNALS", 1);
  get_path(getenv_fn, "NPKIT_NCCL_LIBRARY", "", cfg->nccl_library, sizeof cfg->nccl_library);
  cfg->cupti = get_cupti(getenv_fn);
  get_path(getenv_fn, "NPKIT_CUPTI_LIBRARY", "", cfg->cupti_library, sizeof cfg->cupti_library);
  cfg->cupti_buffer_kb = get_u64(getenv_fn, "NPKIT_CUPTI_BUFFER_KB", NPKIT_DEFAULT_CUPTI_BUFFER_KB, 1,
                                 1048576);
  cfg->cupti_buffers = get_u64(getenv_fn, "NPKIT_CUPTI_BUFFERS", NPKIT_DEFAULT_CUPTI_BUFFERS, 2, 65536);

  char bad[64];
  npkit_fn_set set;
  npkit_config_parse_ops(NPKIT_DEFAULT_OPS, &cfg->ops, bad, sizeof bad);
  const char *ops = getenv_fn("NPKIT_OPS");
  if (ops != NULL) {
    if (npkit_config_parse_ops(ops, &set, bad, sizeof bad) == 0)
      cfg->ops = set;
    else
      npkit_warn("NPKIT_OPS='%.64s': '%s' is not an NCCL function, a class (coll, p2p, group, comm, "
                 "mem, query, misc) or 'all'; using '%s'",
                 ops, bad, NPKIT_DEFAULT_OPS);
  }

  cfg->stack_depth = (uint32_t)get_u64(getenv_fn, "NPKIT_STACK_DEPTH", 0, 0, NPKIT_MAX_STACK_DEPTH);
  cfg->stack_lines = get_bool(getenv_fn, "NPKIT_STACK_LINES", 0);
  get_window(getenv_fn, "NPKIT_START_AFTER", &cfg->start_after);
  get_window(getenv_fn, "NPKIT_STOP_AFTER", &cfg->stop_after);
  cfg->toggle_signal = get_signal(getenv_fn, "NPKIT_TOGGLE_SIGNAL", "toggles recording");

  cfg->plugin = get_bool(getenv_fn, "NPKIT_PLUGIN", 1);
  npkit_config_parse_plugin_events(NPKIT_DEFAULT_PLUGIN_EVENTS, &cfg->plugin_events, bad,
                                   sizeof bad);
  get_path(getenv_fn, "NPKIT_DUMP_DIR", "", cfg->npkit_dump_dir, sizeof cfg->npkit_dump_dir);
  get_path(getenv_fn, "NPKIT_DUMP_HEADER", "", cfg->npkit_dump_header, sizeof cfg->npkit_dump_header);
  cfg->npkit_dump_max_mb =
      get_u64(getenv_fn, "NPKIT_DUMP_MAX_MB", NPKIT_DEFAULT_DUMP_MAX_MB, 0, 1048576);
  get_flight(getenv_fn, cfg);
  cfg->machine = get_bool(getenv_fn, "NPKIT_MACHINE", 1);
  cfg->gpu_sample_us = get_period(getenv_fn, "NPKIT_GPU_SAMPLE_RATE", "microseconds", NPKIT_MIN_GPU_SAMPLE_US,
                                  NPKIT_MAX_GPU_SAMPLE_US, "no counters are sampled");
  cfg->cpu_sample_ns = get_period(getenv_fn, "NPKIT_CPU_SAMPLE_INTERVAL", "nanoseconds", NPKIT_MIN_CPU_SAMPLE_NS,
                                  NPKIT_MAX_CPU_SAMPLE_NS, "the CPU time is sampled with the GPU");
  get_path(getenv_fn, "NPKIT_SYSFS_ROOT", "/", cfg->sysfs_root, sizeof cfg->sysfs_root);
  get_path(getenv_fn, "NPKIT_NVML_LIBRARY", "", cfg->nvml_library, sizeof cfg->nvml_library);
  get_path(getenv_fn, "NPKIT_METRICS", "", cfg->metrics, sizeof cfg->metrics);
  get_path(getenv_fn, "NPKIT_METRICS_DIR", "", cfg->metrics_dir, sizeof cfg->metrics_dir);
  cfg->metrics_interval_s = get_u64(getenv_fn, "NPKIT_METRICS_INTERVAL_S", 30, 1, 86400);
  cfg->metrics_min_bytes = get_u64(getenv_fn, "NPKIT_METRICS_MIN_BYTES", 0, 0, UINT64_MAX);
  const char *pev = getenv_fn("NPKIT_PLUGIN_EVENTS");
  if (pev != NULL && npkit_config_parse_plugin_events(pev, &cfg->plugin_events, bad, sizeof bad) != 0)
    npkit_warn("NPKIT_PLUGIN_EVENTS='%.64s': '%s' is not one of coll, p2p, kernel, proxy, step, "
               "ctrl, all, none; using '%s'",
               pev, bad, NPKIT_DEFAULT_PLUGIN_EVENTS);
}
