#include "machine_info.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "machine_text.h"

/* ---- small readers of values ---- */

/* A whole decimal number (a sign allowed), nothing after it. */
static int parse_i64(const char *s, int64_t *out) {
  if (s == NULL || *s == '\0') return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || end == s) return -1;
  *out = v;
  return 0;
}

static int64_t get_i64(const npkit_mtext_line *l, const char *key, int64_t def) {
  int64_t v;
  return parse_i64(npkit_mtext_get(l, key), &v) == 0 ? v : def;
}

/* "unlimited" or a count; 0 when absent or unreadable. */
static uint64_t get_limit(const npkit_mtext_line *l, const char *key) {
  const char *s = npkit_mtext_get(l, key);
  int64_t v;
  if (s != NULL && strcmp(s, "unlimited") == 0) return NPKIT_MACH_UNLIMITED;
  return parse_i64(s, &v) == 0 && v > 0 ? (uint64_t)v : 0;
}

static int get_yes(const npkit_mtext_line *l, const char *key) {
  const char *s = npkit_mtext_get(l, key);
  if (s == NULL) return -1;
  return strcmp(s, "yes") == 0 ? 1 : strcmp(s, "no") == 0 ? 0 : -1;
}

static void get_text(const npkit_mtext_line *l, const char *key, char *out, size_t len) {
  const char *s = npkit_mtext_get(l, key);
  if (s != NULL) snprintf(out, len, "%s", s);
}

static char *dup_or_empty(const char *s) { return strdup(s != NULL ? s : ""); }

/* ---- the /sys text ---- */

int npkit_ib_rate_parse(const char *text, uint64_t *mbps, int *width) {
  /* "2.5 Gb/sec (1X SDR)", "200 Gb/sec (4X HDR)": the kernel's ib_rate string (drivers/infiniband/
   * core/sysfs.c rate_show): the rate in Gb/s with at most one decimal, then the width and speed. */
  *mbps = 0;
  *width = 0;
  if (text == NULL) return -1;
  const char *p = text;
  while (*p == ' ') p++;
  if (!isdigit((unsigned char)*p)) return -1;
  uint64_t whole = 0, tenths = 0;
  for (; isdigit((unsigned char)*p); p++) {
    if (whole > 100000000u) return -1;
    whole = whole * 10 + (uint64_t)(*p - '0');
  }
  if (*p == '.') {
    p++;
    if (isdigit((unsigned char)*p)) tenths = (uint64_t)(*p++ - '0');
    while (isdigit((unsigned char)*p)) p++;
  }
  while (*p == ' ') p++;
  if (strncmp(p, "Gb/sec", 6) != 0) return -1;
  *mbps = whole * 1000 + tenths * 100;
  const char *paren = strchr(p, '(');
  if (paren != NULL && isdigit((unsigned char)paren[1])) {
    int w = 0;
    const char *q = paren + 1;
    for (; isdigit((unsigned char)*q) && w < 1000; q++) w = w * 10 + (*q - '0');
    if (*q == 'X') *width = w;
  }
  return 0;
}

int npkit_sysfs_state_parse(const char *text, const char **name) {
  /* "4: ACTIVE", "5: LinkUp" (state_show, phys_state_show of the same file) */
  if (name != NULL) *name = "";
  if (text == NULL || !isdigit((unsigned char)text[0])) return -1;
  int v = 0;
  const char *p = text;
  for (; isdigit((unsigned char)*p) && v < 100000; p++) v = v * 10 + (*p - '0');
  if (*p == ':') {
    p++;
    while (*p == ' ') p++;
  }
  if (name != NULL) *name = p;
  return v;
}

/* nvmlNvlinkVersion_t (nvml.h of NVML 12.8): 1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0,
 * 7 = 5.0, 8 = 6.0. */
const char *npkit_nvlink_version_name(uint32_t version) {
  static const char *const names[] = {NULL, "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0", "6.0"};
  return version < sizeof names / sizeof names[0] ? names[version] : NULL;
}

double npkit_nvlink_link_gbs(uint32_t version) {
  /* One link, one direction, from NVIDIA's published totals per GPU (both directions, all links):
   * P100 160 GB/s over 4 links (1.0), V100 300 over 6 (2.0), A100 600 over 12 (3.0), H100 900 over
   * 18 (4.0), B200 1800 over 18 (5.0).  2.2 and 3.1 run at the rate of their generation. */
  switch (version) {
  case 1: return 20.0;
  case 2: case 3: case 4: case 5: case 6: return 25.0;
  case 7: return 50.0;
  default: return 0.0;
  }
}

/* ---- records ---- */

static npkit_mach_gpu *gpu_of(npkit_machine *m, int64_t index, int create) {
  for (size_t i = 0; i < m->n_gpus; i++)
    if (m->gpus[i].index == index) return &m->gpus[i];
  if (!create || m->n_gpus == NPKIT_MACH_MAX_GPUS || index < 0 || index > INT32_MAX) return NULL;
  npkit_mach_gpu *g = &m->gpus[m->n_gpus++];
  memset(g, 0, sizeof *g);
  g->index = (int32_t)index;
  g->nvlinks = -1;
  return g;
}

static void read_gpu(npkit_machine *m, const npkit_mtext_line *l) {
  npkit_mach_gpu *g = gpu_of(m, get_i64(l, "index", -1), 1);
  if (g == NULL) return;
  get_text(l, "name", g->name, sizeof g->name);
  get_text(l, "uuid", g->uuid, sizeof g->uuid);
  get_text(l, "bus_id", g->bus_id, sizeof g->bus_id);
  get_text(l, "error", g->error, sizeof g->error);
  int64_t n = get_i64(l, "nvlinks", -1);
  if (n >= 0 && n <= NPKIT_MACH_MAX_LINKS) g->nvlinks = (int32_t)n;
}

static void read_nvlink(npkit_machine *m, const npkit_mtext_line *l) {
  npkit_mach_gpu *g = gpu_of(m, get_i64(l, "gpu", -1), 0);
  int64_t link = get_i64(l, "link", -1);
  if (g == NULL || link < 0 || link >= NPKIT_MACH_MAX_LINKS) return;
  int active = get_yes(l, "active");
  if (active < 0) return;
  uint64_t bit = 1ull << link;
  g->link_known |= bit;
  if (active) {
    g->link_active |= bit;
    int64_t v = get_i64(l, "version", 0);
    if (v > 0 && v < 1000 && (uint32_t)v > g->nvlink_version) g->nvlink_version = (uint32_t)v;
  } else {
    g->link_active &= ~bit;
  }
}

static void derive_ib(npkit_mach_port *p) {
  const char *name;
  npkit_ib_rate_parse(p->rate, &p->rate_mbps, &p->width);
  int st = npkit_sysfs_state_parse(p->state, &name);
  int phys = npkit_sysfs_state_parse(p->phys_state, &name);
  /* ib_port_state: 4 = ACTIVE; ib_port_phys_state: 5 = LinkUp (include/rdma/ib_verbs.h) */
  if (st < 0)
    p->up = -1;
  else
    p->up = st == 4 && (phys < 0 || phys == 5);
  p->physical = 1;
}

static void derive_eth(npkit_mach_port *p) {
  p->rate_mbps = p->speed > 0 ? (uint64_t)p->speed : 0;
  if (p->operstate[0] == '\0')
    p->up = -1;
  else
    p->up = strcmp(p->operstate, "up") == 0;
}

static void read_port(npkit_machine *m, const npkit_mtext_line *l) {
  const char *type = npkit_mtext_get(l, "type");
  if (type == NULL || m->n_ports == NPKIT_MACH_MAX_PORTS) return;
  npkit_mach_port p;
  memset(&p, 0, sizeof p);
  p.speed = -1;
  p.mtu = -1;
  p.arp_type = -1;
  p.physical = -1;
  get_text(l, "dev", p.dev, sizeof p.dev);
  if (strcmp(type, "ib") == 0) {
    p.type = NPKIT_PORT_IB;
    int64_t n = get_i64(l, "port", 0);
    p.port = n > 0 && n < 65536 ? (uint32_t)n : 0;
    get_text(l, "rate", p.rate, sizeof p.rate);
    get_text(l, "state", p.state, sizeof p.state);
    get_text(l, "phys_state", p.phys_state, sizeof p.phys_state);
    get_text(l, "link_layer", p.link_layer, sizeof p.link_layer);
    snprintf(p.name, sizeof p.name, "%s/%u", p.dev, p.port);
    derive_ib(&p);
  } else if (strcmp(type, "eth") == 0) {
    p.type = NPKIT_PORT_ETH;
    p.speed = get_i64(l, "speed", -1);
    p.speed_errno = (int)get_i64(l, "speed_error", 0);
    p.mtu = (int32_t)get_i64(l, "mtu", -1);
    p.arp_type = (int32_t)get_i64(l, "arp_type", -1);
    p.physical = get_yes(l, "physical");
    get_text(l, "duplex", p.duplex, sizeof p.duplex);
    get_text(l, "operstate", p.operstate, sizeof p.operstate);
    snprintf(p.name, sizeof p.name, "%s", p.dev);
    derive_eth(&p);
  } else {
    return;
  }
  m->ports[m->n_ports++] = p;
}

static int read_setting(npkit_machine *m, const npkit_mtext_line *l, npkit_mach_origin origin) {
  const char *name = npkit_mtext_get(l, "name");
  if (name == NULL || name[0] == '\0' || m->n_settings == NPKIT_MACH_MAX_SETTINGS) return 0;
  npkit_mach_setting s = {origin, dup_or_empty(name), dup_or_empty(npkit_mtext_get(l, "value")),
                          dup_or_empty(npkit_mtext_get(l, "file")), get_yes(l, "applied") == 1, 0};
  const char *by = npkit_mtext_get(l, "set_by");
  s.set_by_npkit = by != NULL && strcmp(by, "npkit") == 0;
  if (s.name == NULL || s.value == NULL || s.file == NULL) {
    free(s.name);
    free(s.value);
    free(s.file);
    return -1;
  }
  m->settings[m->n_settings++] = s;
  return 0;
}

static void read_bind(npkit_machine *m, const npkit_mtext_line *l) {
  m->cuda_device = (int32_t)get_i64(l, "cuda_device", -1);
  get_text(l, "how", m->bind_how, sizeof m->bind_how);
  get_text(l, "bus_id", m->bind_bus_id, sizeof m->bind_bus_id);
  get_text(l, "error", m->bind_error, sizeof m->bind_error);
  m->bound_gpu = -1;
  int64_t gpu = get_i64(l, "gpu", -1);
  for (size_t i = 0; gpu >= 0 && i < m->n_gpus; i++)
    if (m->gpus[i].index == gpu) m->bound_gpu = (int32_t)i;
}

static int read_line(npkit_machine *m, const npkit_mtext_line *l) {
  const char *k = l->kind;
  if (strcmp(k, "snapshot") == 0) {
    m->taken_ns = (uint64_t)get_i64(l, "taken", 0);
    get_text(l, "sysfs_root", m->sysfs_root, sizeof m->sysfs_root);
    int64_t g = get_i64(l, "gpu_sample_us", 0), c = get_i64(l, "cpu_sample_ns", 0);
    m->gpu_sample_us = g > 0 ? (uint64_t)g : 0;
    m->cpu_sample_ns = c > 0 ? (uint64_t)c : 0;
    m->pcie_sampled = get_yes(l, "pcie") == 1;
  } else if (strcmp(k, "host") == 0) {
    get_text(l, "name", m->host, sizeof m->host);
    get_text(l, "addr", m->addr, sizeof m->addr);
    get_text(l, "error", m->resolve_error, sizeof m->resolve_error);
    m->resolves = get_yes(l, "resolves");
  } else if (strcmp(k, "system") == 0) {
    get_text(l, "cpu", m->cpu, sizeof m->cpu);
    get_text(l, "kernel", m->kernel, sizeof m->kernel);
    get_text(l, "machine", m->arch, sizeof m->arch);
    int64_t c = get_i64(l, "cpus", -1);
    m->cpus = c > 0 && c <= INT32_MAX ? (int32_t)c : -1;
    m->nofile_soft = get_limit(l, "nofile_soft");
    m->nofile_hard = get_limit(l, "nofile_hard");
  } else if (strcmp(k, "nvml") == 0) {
    get_text(l, "status", m->nvml_status, sizeof m->nvml_status);
    get_text(l, "error", m->nvml_error, sizeof m->nvml_error);
    get_text(l, "library", m->nvml_library, sizeof m->nvml_library);
    get_text(l, "driver", m->driver, sizeof m->driver);
    int64_t n = get_i64(l, "gpus", -1);
    m->nvml_gpus = n >= 0 && n <= INT32_MAX ? (int32_t)n : -1;
  } else if (strcmp(k, "gpu") == 0) {
    read_gpu(m, l);
  } else if (strcmp(k, "nvlink") == 0) {
    read_nvlink(m, l);
  } else if (strcmp(k, "port") == 0) {
    read_port(m, l);
  } else if (strcmp(k, "env") == 0) {
    return read_setting(m, l, NPKIT_SETTING_ENV);
  } else if (strcmp(k, "conf") == 0) {
    return read_setting(m, l, NPKIT_SETTING_CONF);
  } else if (strcmp(k, "nccl") == 0) {
    int64_t v = get_i64(l, "version", 0);
    if (v > 0 && v <= INT32_MAX) m->nccl_version = (uint32_t)v;
  } else if (strcmp(k, "bind") == 0) {
    read_bind(m, l);
  } else {
    m->skipped_lines++;
  }
  return 0;
}

void npkit_machine_init(npkit_machine *m) {
  memset(m, 0, sizeof *m);
  m->resolves = -1;
  m->cpus = -1;
  m->nvml_gpus = -1;
  m->cuda_device = -1;
  m->bound_gpu = -1;
}

void npkit_machine_free(npkit_machine *m) {
  for (size_t i = 0; i < m->n_settings; i++) {
    free(m->settings[i].name);
    free(m->settings[i].value);
    free(m->settings[i].file);
  }
  free(m->gpus);
  free(m->ports);
  free(m->settings);
  npkit_machine_init(m);
}

int npkit_machine_parse(npkit_machine *m, const char *text, size_t len) {
  /* fixed arrays at their limits: a record is never lost to a reallocation failing half way */
  if (m->gpus == NULL) m->gpus = calloc(NPKIT_MACH_MAX_GPUS, sizeof *m->gpus);
  if (m->ports == NULL) m->ports = calloc(NPKIT_MACH_MAX_PORTS, sizeof *m->ports);
  if (m->settings == NULL) m->settings = calloc(NPKIT_MACH_MAX_SETTINGS, sizeof *m->settings);
  npkit_mtext_line *line = malloc(sizeof *line);
  if (m->gpus == NULL || m->ports == NULL || m->settings == NULL || line == NULL) {
    free(line);
    return -1;
  }
  m->present = 1;
  size_t pos = 0;
  int rc = 0;
  while (rc == 0 && npkit_mtext_next(text, len, &pos, line)) {
    m->lines++;
    rc = read_line(m, line);
  }
  free(line);
  return rc;
}

int npkit_machine_load(const npkit_log_reader *r, npkit_machine *m, char *err, size_t errlen) {
  npkit_machine_init(m);
  if (r->n_machine_blocks == 0) return 0;
  char *buf = NULL;
  size_t cap = 0;
  npkit_block_header bh;
  uint64_t pos = 0, payload;
  int k = 0, rc = 0;
  while (rc == 0 && (k = npkit_reader_next_block(r, &pos, &bh, &payload)) == 1) {
    if (bh.type != NPKIT_BLOCK_MACHINE || bh.size == 0 || bh.size > NPKIT_READER_MAX_META_BLOCK) continue;
    if (npkit_grow(&buf, &cap, bh.size, 1, 4096) != 0) {
      snprintf(err, errlen, "%s: out of memory while reading the machine snapshot", r->path);
      rc = -1;
    } else if (npkit_read_at(r->fd, buf, bh.size, payload) != 0) {
      snprintf(err, errlen, "%s: read error: %s", r->path, strerror(errno ? errno : EIO));
      rc = -1;
    } else if (npkit_machine_parse(m, buf, bh.size) != 0) {
      snprintf(err, errlen, "%s: out of memory while reading the machine snapshot", r->path);
      rc = -1;
    }
  }
  if (rc == 0 && k < 0) {
    snprintf(err, errlen, "%s: read error: the file changed while it was read", r->path);
    rc = -1;
  }
  free(buf);
  if (rc != 0) npkit_machine_free(m);
  return rc;
}

const npkit_mach_gpu *npkit_machine_bound_gpu(const npkit_machine *m) {
  return m->bound_gpu >= 0 && (size_t)m->bound_gpu < m->n_gpus ? &m->gpus[m->bound_gpu] : NULL;
}

int npkit_mach_gpu_active_links(const npkit_mach_gpu *g) {
  return __builtin_popcountll(g->link_active & g->link_known);
}

double npkit_mach_gpu_nvlink_gbs(const npkit_mach_gpu *g) {
  return npkit_mach_gpu_active_links(g) * npkit_nvlink_link_gbs(g->nvlink_version);
}

const npkit_mach_setting *npkit_machine_effective(const npkit_machine *m, const char *name) {
  const npkit_mach_setting *conf = NULL;
  for (size_t i = 0; i < m->n_settings; i++) {
    const npkit_mach_setting *s = &m->settings[i];
    if (strcmp(s->name, name) != 0) continue;
    if (s->origin == NPKIT_SETTING_ENV) return s;
    if (s->applied && conf == NULL) conf = s;
  }
  return conf;
}

double npkit_counter_rate(uint64_t v0, uint64_t t0, uint64_t v1, uint64_t t1) {
  if (t1 <= t0 || v1 < v0) return -1.0;
  return (double)(v1 - v0) * 1e9 / (double)(t1 - t0);
}
