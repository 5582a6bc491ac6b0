/* libFuzzer target: any bytes as the text of a MACHINE block (src/format/machine_info.c, the
 * snapshot of the machine source), and as the /sys values the snapshot keeps.  Whatever the text
 * holds, the reader must stay within its limits, keep every string terminated, derive only what the
 * text says, and its JSON view (the trace's otherData.machine) must parse; the /sys readers must
 * report either a value or nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json_check.h"
#include "json_writer.h"
#include "machine_info.h"
#include "machine_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* the libFuzzer entry point */

static void check_text(const char *s, size_t cap) {
  if (memchr(s, '\0', cap) == NULL) abort();
}

static void check_machine(const npkit_machine *m) {
  if (m->n_gpus > NPKIT_MACH_MAX_GPUS || m->n_ports > NPKIT_MACH_MAX_PORTS || m->n_settings > NPKIT_MACH_MAX_SETTINGS)
    abort();
  check_text(m->host, sizeof m->host);
  check_text(m->cpu, sizeof m->cpu);
  check_text(m->kernel, sizeof m->kernel);
  check_text(m->nvml_error, sizeof m->nvml_error);
  if (m->bound_gpu >= 0 && (size_t)m->bound_gpu >= m->n_gpus) abort();
  if (m->resolves < -1 || m->resolves > 1) abort();
  for (size_t i = 0; i < m->n_gpus; i++) {
    const npkit_mach_gpu *g = &m->gpus[i];
    check_text(g->name, sizeof g->name);
    check_text(g->uuid, sizeof g->uuid);
    if ((g->link_active & ~g->link_known) != 0) abort(); /* an active link has a known state */
    if (npkit_mach_gpu_active_links(g) > NPKIT_MACH_MAX_LINKS || npkit_mach_gpu_nvlink_gbs(g) < 0) abort();
  }
  for (size_t i = 0; i < m->n_ports; i++) {
    const npkit_mach_port *p = &m->ports[i];
    check_text(p->name, sizeof p->name);
    check_text(p->rate, sizeof p->rate);
    if (p->up < -1 || p->up > 1 || (p->type != NPKIT_PORT_IB && p->type != NPKIT_PORT_ETH)) abort();
    if (p->type == NPKIT_PORT_ETH && p->rate_mbps != (p->speed > 0 ? (uint64_t)p->speed : 0)) abort();
    if (p->type == NPKIT_PORT_IB) {
      uint64_t mbps;
      int width;
      if (npkit_ib_rate_parse(p->rate, &mbps, &width) == 0 ? (mbps != p->rate_mbps || width != p->width)
                                                              : (p->rate_mbps != 0 || p->width != 0))
        abort();
    }
  }
  for (size_t i = 0; i < m->n_settings; i++)
    if (m->settings[i].name == NULL || m->settings[i].name[0] == '\0' || m->settings[i].value == NULL) abort();
}

static void check_json(const npkit_machine *m) {
  int out = memfd_create("npkit-fuzz-machine", MFD_CLOEXEC);
  npkit_json w;
  char err[128];
  if (out < 0 || npkit_json_init(&w, out) != 0) abort();
  npkit_json_tree t;
  npkit_json_tree_init(&t, &w);
  npkit_machine_json(&t.base, m);
  if (npkit_json_finish(&w, err, sizeof err) != 0) abort();
  off_t len = lseek(out, 0, SEEK_END);
  char *text = malloc((size_t)len + 1);
  if (text == NULL || pread(out, text, (size_t)len, 0) != len) abort();
  if (npkit_json_check(text, (size_t)len) != 0) abort();
  free(text);
  close(out);
}

static void check_sysfs_values(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s == NULL) abort();
  memcpy(s, data, size);
  s[size] = '\0';
  uint64_t mbps = 1;
  int width = 1;
  int rc = npkit_ib_rate_parse(s, &mbps, &width);
  if (rc != 0 && (mbps != 0 || width != 0)) abort();
  if (rc == 0 && (mbps % 100 != 0 || width < 0)) abort();
  const char *name = NULL;
  int st = npkit_sysfs_state_parse(s, &name);
  if (name == NULL || (st < 0 && name[0] != '\0') || (st >= 0 && (name < s || name > s + size))) abort();
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npkit_machine m;
  npkit_machine_init(&m);
  /* twice: a log holds several MACHINE blocks, which add up */
  if (npkit_machine_parse(&m, (const char *)data, size) != 0 || npkit_machine_parse(&m, (const char *)data, size) != 0)
    abort();
  check_machine(&m);
  check_json(&m);
  npkit_machine_free(&m);
  check_sysfs_values(data, size);
  return 0;
}
