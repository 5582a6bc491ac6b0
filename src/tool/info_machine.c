#include "info_machine.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "machine_info.h"

/* Text from the file, made safe for a terminal. */
static void put_safe(const char *s) {
  for (; *s; s++) putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

static void print_host(const npkit_machine *m) {
  printf("  host         ");
  put_safe(m->host[0] ? m->host : "?");
  if (m->resolves == 1) {
    printf(" (resolves to ");
    put_safe(m->addr);
    printf(")");
  } else if (m->resolves == 0) {
    printf(" (does NOT resolve: ");
    put_safe(m->resolve_error);
    printf(")");
  }
  printf("\n  system       ");
  put_safe(m->cpu[0] ? m->cpu : "CPU unknown");
  if (m->cpus > 0) printf(", %" PRId32 " CPUs", m->cpus);
  if (m->arch[0]) {
    printf(", ");
    put_safe(m->arch);
  }
  if (m->kernel[0]) {
    printf(", kernel ");
    put_safe(m->kernel);
  }
  printf("\n  open files   ");
  if (m->nofile_soft == 0)
    printf("unknown");
  else if (m->nofile_soft == NPKIT_MACH_UNLIMITED)
    printf("soft unlimited");
  else
    printf("soft %" PRIu64, m->nofile_soft);
  if (m->nofile_hard == NPKIT_MACH_UNLIMITED)
    printf(", hard unlimited");
  else if (m->nofile_hard > 0)
    printf(", hard %" PRIu64, m->nofile_hard);
  printf(" (RLIMIT_NOFILE)\n");
  if (m->nccl_version != 0) {
    uint32_t v = m->nccl_version;
    if (v >= 20900)
      printf("  NCCL         %u.%u.%u (%u)\n", v / 10000, v % 10000 / 100, v % 100, v);
    else
      printf("  NCCL         %u.%u.%u (%u)\n", v / 1000, v % 1000 / 100, v % 100, v);
  }
}

static void print_gpus(const npkit_machine *m) {
  printf("  NVML         ");
  put_safe(m->nvml_status[0] ? m->nvml_status : "not recorded");
  if (m->driver[0]) {
    printf(", driver ");
    put_safe(m->driver);
  }
  if (m->nvml_gpus >= 0) printf(", %" PRId32 " GPU%s", m->nvml_gpus, m->nvml_gpus == 1 ? "" : "s");
  if (m->nvml_error[0]) {
    printf(": ");
    put_safe(m->nvml_error);
  }
  printf("\n");
  for (size_t i = 0; i < m->n_gpus; i++) {
    const npkit_mach_gpu *g = &m->gpus[i];
    printf("  GPU %-8" PRId32 " ", g->index);
    put_safe(g->name);
    printf(", ");
    put_safe(g->uuid);
    printf(", bus ");
    put_safe(g->bus_id);
    if (g->nvlinks == 0) {
      printf(", no NVLink");
    } else if (g->nvlinks > 0) {
      const char *v = npkit_nvlink_version_name(g->nvlink_version);
      printf(", NVLink%s%s: %" PRId32 " links, %d active", v ? " " : "", v ? v : "", g->nvlinks,
             npkit_mach_gpu_active_links(g));
      if (npkit_mach_gpu_active_links(g) < g->nvlinks) {
        printf(" (down:");
        for (int l = 0; l < NPKIT_MACH_MAX_LINKS; l++)
          if ((g->link_known >> l & 1) && !(g->link_active >> l & 1)) printf(" %d", l);
        printf(")");
      }
      if (npkit_mach_gpu_nvlink_gbs(g) > 0) printf(", %.0f GB/s per direction", npkit_mach_gpu_nvlink_gbs(g));
    }
    if (g->error[0]) {
      printf(", ");
      put_safe(g->error);
    }
    printf("\n");
  }
  if (m->cuda_device >= 0 || m->bind_error[0]) {
    const npkit_mach_gpu *g = npkit_machine_bound_gpu(m);
    printf("  process GPU  CUDA device %" PRId32, m->cuda_device);
    if (g != NULL)
      printf(" = NVML GPU %" PRId32, g->index);
    else
      printf(", not found among NVML's GPUs");
    if (m->bind_how[0]) {
      printf(" (by ");
      put_safe(m->bind_how);
      if (m->bind_bus_id[0]) {
        printf(" ");
        put_safe(m->bind_bus_id);
      }
      printf(")");
    }
    if (m->bind_error[0]) {
      printf(": ");
      put_safe(m->bind_error);
    }
    printf("\n");
  }
}

static void print_ports(const npkit_machine *m) {
  for (size_t i = 0; i < m->n_ports; i++) {
    const npkit_mach_port *p = &m->ports[i];
    printf("  port         %-14s ", p->name);
    if (p->type == NPKIT_PORT_IB) {
      printf("ib   ");
      put_safe(p->rate[0] ? p->rate : "rate ?");
      printf(", ");
      put_safe(p->state[0] ? p->state : "state ?");
      printf(", ");
      put_safe(p->phys_state[0] ? p->phys_state : "phys_state ?");
      printf(", ");
      put_safe(p->link_layer[0] ? p->link_layer : "link layer ?");
    } else {
      printf("eth  ");
      if (p->speed_errno != 0)
        printf("speed unreadable (%s)", strerror(p->speed_errno));
      else if (p->speed > 0)
        printf("%" PRId64 " Mb/s", p->speed);
      else
        printf("speed unknown (%" PRId64 ")", p->speed);
      printf(", duplex ");
      put_safe(p->duplex[0] ? p->duplex : "?");
      printf(", ");
      put_safe(p->operstate[0] ? p->operstate : "?");
      if (p->mtu >= 0) printf(", mtu %" PRId32, p->mtu);
      if (p->physical == 0) printf(", virtual");
    }
    printf("\n");
  }
}

static void print_settings(const npkit_machine *m) {
  for (size_t i = 0; i < m->n_settings; i++) {
    const npkit_mach_setting *s = &m->settings[i];
    printf(i == 0 ? "  settings     " : "               ");
    put_safe(s->name);
    printf("=");
    put_safe(s->value);
    if (s->origin == NPKIT_SETTING_ENV) {
      printf(s->set_by_npkit ? " (environment, set by npkit)\n" : " (environment)\n");
    } else {
      printf(" (");
      put_safe(s->file);
      printf(s->applied ? ")\n" : ", not applied: the environment sets it)\n");
    }
  }
}

int npkit_info_machine(const npkit_log_reader *r, char *err, size_t errlen) {
  npkit_machine m;
  if (npkit_machine_load(r, &m, err, errlen) != 0) return -1;
  printf("\nmachine%s\n", m.present ? "" : "        none (no MACHINE block: NPKIT_MACHINE=0, or a log before format 3)");
  if (m.present) {
    print_host(&m);
    print_gpus(&m);
    print_ports(&m);
    print_settings(&m);
    if (m.gpu_sample_us > 0 || m.cpu_sample_ns > 0)
      printf("  sampling     GPU and ports every %" PRIu64 " us, CPU every %" PRIu64 " ns%s\n", m.gpu_sample_us,
             m.cpu_sample_ns > 0 ? m.cpu_sample_ns : m.gpu_sample_us * 1000, m.pcie_sampled ? ", PCIe throughput" : "");
    else
      printf("  sampling     off\n");
    if (m.sysfs_root[0] && strcmp(m.sysfs_root, "/") != 0) {
      printf("  sysfs root   ");
      put_safe(m.sysfs_root);
      printf("\n");
    }
  }
  npkit_machine_free(&m);
  return 0;
}
