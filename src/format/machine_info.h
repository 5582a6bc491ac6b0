/*
 * The machine a log was recorded on, read from its MACHINE blocks (include/npkit/event_log.h):
 * host, CPU, kernel, open-file limit, NCCL's version and settings, the GPUs with their NVLinks as
 * NVML saw them, the network ports as /sys shows them, and which GPU the process used.  Also the
 * readings of the /sys text the snapshot keeps as it was ("200 Gb/sec (4X HDR)", "4: ACTIVE"),
 * shared by the library and the tool.
 *
 * Everything is bounded (NPKIT_MACH_MAX_*): a corrupt or hostile block cannot make the reader
 * allocate more.  Values the block does not give stay unknown (-1, 0 or "", as each field says),
 * never guessed.  Nothing here prints.
 */
#ifndef NPKIT_MACHINE_INFO_H
#define NPKIT_MACHINE_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"

#define NPKIT_MACH_MAX_GPUS 64
#define NPKIT_MACH_MAX_PORTS 256
#define NPKIT_MACH_MAX_SETTINGS 1024
#define NPKIT_MACH_MAX_LINKS 64     /* NVML_NVLINK_MAX_LINKS is 36 (NVML 12.8) */
#define NPKIT_MACH_UNLIMITED UINT64_MAX

typedef struct npkit_mach_gpu {
  int32_t index;              /* NVML index */
  char name[96], uuid[96], bus_id[32];
  int32_t nvlinks;            /* links NVML answered for; 0: no NVLink; -1: not recorded */
  uint64_t link_known, link_active; /* bit l: link l has a state; link l is active */
  uint32_t nvlink_version;    /* nvmlNvlinkVersion_t of its active links (the highest), 0: unknown */
  char error[128];
} npkit_mach_gpu;

typedef enum npkit_mach_port_type { NPKIT_PORT_IB = 1, NPKIT_PORT_ETH = 2 } npkit_mach_port_type;

typedef struct npkit_mach_port {
  npkit_mach_port_type type;
  char dev[64];
  uint32_t port;              /* IB port number; 0 for Ethernet */
  char name[80];              /* "mlx5_0/1", "eth0" (as the sampled counters name it) */
  /* as /sys says it (IB: rate, state, phys_state, link_layer; Ethernet: duplex, operstate) */
  char rate[64], state[32], phys_state[32], link_layer[24], duplex[16], operstate[16];
  int64_t speed;              /* Ethernet: Mb/s as read; -1 unknown */
  int speed_errno;            /* Ethernet: the errno reading speed gave (EINVAL when down), 0 */
  int32_t mtu;                /* -1 unknown */
  int physical;               /* Ethernet: 1 has a device, 0 virtual, -1 unknown; IB: 1 */
  int32_t arp_type;           /* Ethernet: ARPHRD_* of /sys/class/net/DEV/type, -1 unknown */
  /* derived */
  uint64_t rate_mbps;         /* the link's rate in Mb/s (IB: from rate; Ethernet: speed), 0 unknown */
  int width;                  /* IB: lanes ("4X" -> 4), 0 unknown */
  int up;                     /* 1 IB ACTIVE (and LinkUp) / Ethernet up; 0 down; -1 unknown */
} npkit_mach_port;

typedef enum npkit_mach_origin {
  NPKIT_SETTING_ENV = 1,      /* the environment at the start */
  NPKIT_SETTING_CONF = 2,     /* NCCL's configuration files */
} npkit_mach_origin;

typedef struct npkit_mach_setting {
  npkit_mach_origin origin;
  char *name, *value;
  char *file;                 /* CONF: the file; else "" */
  int applied;                /* CONF: NCCL takes it (the environment does not set it) */
  int set_by_npkit;           /* ENV: the library set it (self-registration) */
} npkit_mach_setting;

typedef struct npkit_machine {
  int present;                /* the log has a MACHINE block */
  uint64_t taken_ns;
  char sysfs_root[256];
  uint64_t gpu_sample_us, cpu_sample_ns; /* 0: not sampled */
  int pcie_sampled;
  char host[256];
  int resolves;               /* 1 getaddrinfo found the host name, 0 it did not, -1 unknown */
  char addr[64], resolve_error[128];
  char cpu[128], kernel[256], arch[32];
  int32_t cpus;               /* -1 unknown */
  uint64_t nofile_soft, nofile_hard; /* 0 unknown, NPKIT_MACH_UNLIMITED */
  uint32_t nccl_version;      /* 0 unknown */
  char nvml_status[16];       /* "ok", "absent", "error", "" (not recorded) */
  char nvml_error[192], nvml_library[128], driver[80];
  int32_t nvml_gpus;          /* -1 unknown */
  /* the process's GPU (bind record) */
  int32_t cuda_device;        /* -1 unknown */
  int32_t bound_gpu;          /* position in gpus[], -1 none */
  char bind_how[24], bind_bus_id[32], bind_error[128];
  npkit_mach_gpu *gpus;
  size_t n_gpus;
  npkit_mach_port *ports;
  size_t n_ports;
  npkit_mach_setting *settings;
  size_t n_settings;
  uint64_t lines, skipped_lines; /* records read, and those of unknown kinds or past the limits */
} npkit_machine;

void npkit_machine_init(npkit_machine *m);
void npkit_machine_free(npkit_machine *m);
/* Adds the records of one MACHINE payload.  0, or -1 when memory is short. */
int npkit_machine_parse(npkit_machine *m, const char *text, size_t len);
/* Reads every MACHINE block of a log into *m (initialised here; m->present says whether there
 * was one).  0, or -1 with a message (read error, memory). */
int npkit_machine_load(const npkit_log_reader *r, npkit_machine *m, char *err, size_t errlen);

/* The process's GPU, or NULL. */
const npkit_mach_gpu *npkit_machine_bound_gpu(const npkit_machine *m);
/* Active links of a GPU (its known states), and its bandwidth per direction in GB/s from NVLink's
 * generation (0 when unknown). */
int npkit_mach_gpu_active_links(const npkit_mach_gpu *g);
double npkit_mach_gpu_nvlink_gbs(const npkit_mach_gpu *g);
/* The setting NCCL uses for name: the environment's, else an applied configuration file's; NULL. */
const npkit_mach_setting *npkit_machine_effective(const npkit_machine *m, const char *name);

/* Rate of a cumulative counter between two readings (value, CLOCK_REALTIME ns), per second; -1
 * when there is none: no time between them, or the counter went back (a port or driver reset). */
double npkit_counter_rate(uint64_t v0, uint64_t t0, uint64_t v1, uint64_t t1);

/* ---- the /sys text ---- */

/* "200 Gb/sec (4X HDR)" (/sys/class/infiniband/DEV/ports/N/rate): Mb/s and lanes (0 if not said).
 * 0, or -1 when the text does not start with a rate. */
int npkit_ib_rate_parse(const char *text, uint64_t *mbps, int *width);
/* "4: ACTIVE" -> 4 and the name after ": " (state, phys_state); -1 when there is no number. */
int npkit_sysfs_state_parse(const char *text, const char **name);
/* NVLink's generation as text for an nvmlNvlinkVersion_t ("4.0"), NULL when unknown. */
const char *npkit_nvlink_version_name(uint32_t version);
/* Bandwidth of one NVLink per direction, GB/s, for an nvmlNvlinkVersion_t; 0 when unknown. */
double npkit_nvlink_link_gbs(uint32_t version);

#endif /* NPKIT_MACHINE_INFO_H */
