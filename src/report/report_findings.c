#include "report_findings.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

npkit_finding *npkit_findings_add(npkit_findings *fs, npkit_finding_kind kind, double at_stake_ns) {
  if (NPKIT_GROW(fs->f, fs->cap, fs->n + 1, 8) != 0) return NULL;
  npkit_finding *f = &fs->f[fs->n++];
  memset(f, 0, sizeof(*f));
  f->kind = kind;
  f->at_stake_ns = at_stake_ns;
  f->log = -1;
  f->comm = UINT32_MAX;
  return f;
}

void npkit_findings_free(npkit_findings *fs) {
  free(fs->f);
  memset(fs, 0, sizeof(*fs));
}

void npkit_findings_sort(npkit_findings *fs) {
  /* insertion sort: stable, and there are a handful of findings */
  for (size_t i = 1; i < fs->n; i++) {
    npkit_finding f = fs->f[i];
    size_t j = i;
    while (j > 0) {
      const npkit_finding *p = &fs->f[j - 1];
      int hang = f.kind == NPKIT_FIND_HANG, phang = p->kind == NPKIT_FIND_HANG;
      int before = hang != phang ? hang
                                 : !isnan(f.at_stake_ns) && (isnan(p->at_stake_ns) || f.at_stake_ns > p->at_stake_ns);
      if (!before) break;
      fs->f[j] = fs->f[j - 1];
      j--;
    }
    fs->f[j] = f;
  }
}

const char *npkit_finding_kind_name(npkit_finding_kind k) {
  switch (k) {
  case NPKIT_FIND_STRAGGLER: return "straggler";
  case NPKIT_FIND_SYNC_DELAY: return "synchronisation_delay";
  case NPKIT_FIND_BANDWIDTH: return "bandwidth_bottleneck";
  case NPKIT_FIND_EXPOSED_COMM: return "exposed_communication";
  case NPKIT_FIND_BUBBLES: return "pipeline_bubbles";
  case NPKIT_FIND_LOST_EVENTS: return "lost_events";
  case NPKIT_FIND_TRUNCATED: return "truncated_log";
  case NPKIT_FIND_MISSING_RANKS: return "missing_ranks";
  case NPKIT_FIND_CLOCK: return "clock_alignment";
  case NPKIT_FIND_NO_GPU: return "no_gpu_activity";
  case NPKIT_FIND_NO_APP_KERNELS: return "no_application_kernels";
  case NPKIT_FIND_NPKIT_SHARED: return "npkit_shared_state";
  case NPKIT_FIND_PORT: return "network_port";
  case NPKIT_FIND_NVLINK: return "nvlink_down";
  case NPKIT_FIND_SETTINGS: return "settings_differ";
  case NPKIT_FIND_HOST_NAME: return "host_name_unresolved";
  case NPKIT_FIND_FILE_LIMIT: return "open_file_limit";
  case NPKIT_FIND_LINK_USE: return "link_use";
  case NPKIT_FIND_ADVICE_SOCKETS: return "advice_socket_threads";
  case NPKIT_FIND_ADVICE_SMALL: return "advice_small_collectives";
  case NPKIT_FIND_ADVICE_CHANNELS: return "advice_channels";
  case NPKIT_FIND_HANG: return "hang";
  }
  return "unknown";
}

int npkit_finding_is_advice(npkit_finding_kind k) {
  return k == NPKIT_FIND_ADVICE_SOCKETS || k == NPKIT_FIND_ADVICE_SMALL || k == NPKIT_FIND_ADVICE_CHANNELS;
}

void npkit_appendf(char *buf, size_t len, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (n + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, len - n, fmt, ap);
  va_end(ap);
}
