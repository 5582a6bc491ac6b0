#include "machine_json.h"

#include <inttypes.h>
#include <stdio.h>

static void key_str(npkit_tree *w, const char *key, const char *value) {
  if (value == NULL || value[0] == '\0') return;
  npkit_tree_key(w, key);
  npkit_tree_string(w, value);
}

static void key_limit(npkit_tree *w, const char *key, uint64_t v) {
  if (v == 0) return;
  npkit_tree_key(w, key);
  if (v == NPKIT_MACH_UNLIMITED)
    npkit_tree_string(w, "unlimited");
  else
    npkit_tree_uint(w, v);
}

static void gpu_json(npkit_tree *w, const npkit_mach_gpu *g) {
  npkit_tree_begin_object(w);
  npkit_tree_key(w, "index");
  npkit_tree_int(w, g->index);
  key_str(w, "name", g->name);
  key_str(w, "uuid", g->uuid);
  key_str(w, "bus_id", g->bus_id);
  if (g->nvlinks >= 0) {
    npkit_tree_key(w, "nvlinks");
    npkit_tree_int(w, g->nvlinks);
    npkit_tree_key(w, "nvlinks_active");
    npkit_tree_int(w, npkit_mach_gpu_active_links(g));
    npkit_tree_key(w, "links_down");
    npkit_tree_begin_array(w);
    for (int l = 0; l < NPKIT_MACH_MAX_LINKS; l++)
      if ((g->link_known >> l & 1) && !(g->link_active >> l & 1)) npkit_tree_int(w, l);
    npkit_tree_end_array(w);
  }
  const char *v = npkit_nvlink_version_name(g->nvlink_version);
  key_str(w, "nvlink_version", v);
  double gbs = npkit_mach_gpu_nvlink_gbs(g);
  if (gbs > 0) {
    npkit_tree_key(w, "nvlink_gbs"); /* per direction, all active links */
    npkit_tree_double(w, gbs);
  }
  key_str(w, "error", g->error);
  npkit_tree_end_object(w);
}

static void port_json(npkit_tree *w, const npkit_mach_port *p) {
  npkit_tree_begin_object(w);
  key_str(w, "type", p->type == NPKIT_PORT_IB ? "ib" : "eth");
  key_str(w, "name", p->name);
  if (p->rate_mbps > 0) {
    npkit_tree_key(w, "rate_gbps");
    npkit_tree_double(w, (double)p->rate_mbps / 1000.0);
  }
  if (p->up >= 0) {
    npkit_tree_key(w, "up");
    npkit_tree_bool(w, p->up);
  }
  if (p->type == NPKIT_PORT_IB) {
    key_str(w, "rate", p->rate);
    if (p->width > 0) {
      npkit_tree_key(w, "width");
      npkit_tree_int(w, p->width);
    }
    key_str(w, "state", p->state);
    key_str(w, "phys_state", p->phys_state);
    key_str(w, "link_layer", p->link_layer);
  } else {
    if (p->speed_errno == 0) {
      npkit_tree_key(w, "speed");
      npkit_tree_int(w, p->speed);
    } else {
      npkit_tree_key(w, "speed_error");
      npkit_tree_int(w, p->speed_errno);
    }
    key_str(w, "duplex", p->duplex);
    key_str(w, "operstate", p->operstate);
    if (p->mtu >= 0) {
      npkit_tree_key(w, "mtu");
      npkit_tree_int(w, p->mtu);
    }
    if (p->physical >= 0) {
      npkit_tree_key(w, "physical");
      npkit_tree_bool(w, p->physical);
    }
  }
  npkit_tree_end_object(w);
}

static void settings_json(npkit_tree *w, const npkit_machine *m) {
  npkit_tree_key(w, "settings");
  npkit_tree_begin_array(w);
  for (size_t i = 0; i < m->n_settings; i++) {
    const npkit_mach_setting *s = &m->settings[i];
    npkit_tree_begin_object(w);
    key_str(w, "name", s->name);
    npkit_tree_key(w, "value");
    npkit_tree_string(w, s->value);
    npkit_tree_key(w, "origin");
    npkit_tree_string(w, s->origin == NPKIT_SETTING_ENV ? "env" : "conf");
    if (s->origin == NPKIT_SETTING_CONF) {
      key_str(w, "file", s->file);
      npkit_tree_key(w, "applied");
      npkit_tree_bool(w, s->applied);
    }
    if (s->set_by_npkit) {
      npkit_tree_key(w, "set_by_npkit");
      npkit_tree_bool(w, 1);
    }
    npkit_tree_end_object(w);
  }
  npkit_tree_end_array(w);
}

void npkit_machine_json(npkit_tree *w, const npkit_machine *m) {
  char buf[32];
  npkit_tree_begin_object(w);
  if (m->taken_ns != 0) {
    npkit_tree_key(w, "taken_ns"); /* a string: a double would round it */
    snprintf(buf, sizeof buf, "%" PRIu64, m->taken_ns);
    npkit_tree_string(w, buf);
  }
  key_str(w, "sysfs_root", m->sysfs_root);
  npkit_tree_key(w, "host");
  npkit_tree_begin_object(w);
  key_str(w, "name", m->host);
  if (m->resolves >= 0) {
    npkit_tree_key(w, "resolves");
    npkit_tree_bool(w, m->resolves);
  }
  key_str(w, "addr", m->addr);
  key_str(w, "error", m->resolve_error);
  npkit_tree_end_object(w);
  key_str(w, "cpu", m->cpu);
  if (m->cpus > 0) {
    npkit_tree_key(w, "cpus");
    npkit_tree_int(w, m->cpus);
  }
  key_str(w, "kernel", m->kernel);
  key_str(w, "arch", m->arch);
  key_limit(w, "nofile_soft", m->nofile_soft);
  key_limit(w, "nofile_hard", m->nofile_hard);
  if (m->nccl_version != 0) {
    npkit_tree_key(w, "nccl_version");
    npkit_tree_uint(w, m->nccl_version);
  }
  npkit_tree_key(w, "nvml");
  npkit_tree_begin_object(w);
  key_str(w, "status", m->nvml_status);
  key_str(w, "error", m->nvml_error);
  key_str(w, "library", m->nvml_library);
  key_str(w, "driver", m->driver);
  if (m->nvml_gpus >= 0) {
    npkit_tree_key(w, "gpus");
    npkit_tree_int(w, m->nvml_gpus);
  }
  npkit_tree_end_object(w);
  npkit_tree_key(w, "gpus");
  npkit_tree_begin_array(w);
  for (size_t i = 0; i < m->n_gpus; i++) gpu_json(w, &m->gpus[i]);
  npkit_tree_end_array(w);
  if (m->cuda_device >= 0 || m->bind_how[0] || m->bind_error[0]) {
    const npkit_mach_gpu *g = npkit_machine_bound_gpu(m);
    npkit_tree_key(w, "gpu");
    npkit_tree_begin_object(w);
    npkit_tree_key(w, "cuda_device");
    npkit_tree_int(w, m->cuda_device);
    npkit_tree_key(w, "nvml_index");
    npkit_tree_int(w, g != NULL ? g->index : -1);
    key_str(w, "how", m->bind_how);
    key_str(w, "bus_id", m->bind_bus_id);
    key_str(w, "error", m->bind_error);
    npkit_tree_end_object(w);
  }
  npkit_tree_key(w, "ports");
  npkit_tree_begin_array(w);
  for (size_t i = 0; i < m->n_ports; i++) port_json(w, &m->ports[i]);
  npkit_tree_end_array(w);
  settings_json(w, m);
  npkit_tree_key(w, "sampling");
  npkit_tree_begin_object(w);
  npkit_tree_key(w, "gpu_us");
  npkit_tree_uint(w, m->gpu_sample_us);
  npkit_tree_key(w, "cpu_ns");
  npkit_tree_uint(w, m->cpu_sample_ns);
  npkit_tree_key(w, "pcie");
  npkit_tree_bool(w, m->pcie_sampled);
  npkit_tree_end_object(w);
  npkit_tree_end_object(w);
}
