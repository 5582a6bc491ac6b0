/* The network ports of the host as /sys shows them, every path under one root (NPKIT_SYSFS_ROOT,
 * "/" by default) so that tests give each rank a tree of its own:
 *  - InfiniBand (and RoCE) ports: /sys/class/infiniband/DEV/ports/N/{rate,state,phys_state,
 *    link_layer}, byte counters counters/port_{xmit,rcv}_data (4-byte words);
 *  - network interfaces: /sys/class/net/DEV/{speed,duplex,operstate,mtu,type}, device (present for
 *    a physical interface), statistics/{tx,rx}_bytes.  The loopback interface is left out.
 * What a file says is kept as it is ("200 Gb/sec (4X HDR)", speed -1 of a virtual NIC); a file that
 * cannot be read is recorded with its errno (reading `speed` of an interface that is down fails
 * with EINVAL).  Nothing here prints. */
#ifndef NPKIT_MACHINE_SYSFS_H
#define NPKIT_MACHINE_SYSFS_H

#include <stddef.h>
#include <stdint.h>

#include "machine_text.h"

#define NPKIT_MACHINE_MAX_PORTS 64

/* A port whose byte counters the sampler reads. */
typedef struct npkit_machine_port {
  uint32_t record;      /* its position among the snapshot's port records */
  char name[32];        /* "mlx5_0/1", "eth0" */
  int ib;               /* counters in 4-byte words */
  char tx[512], rx[512];/* full paths of the counters */
} npkit_machine_port;

typedef struct npkit_machine_ports {
  npkit_machine_port port[NPKIT_MACHINE_MAX_PORTS];
  size_t n;
  uint32_t records;     /* port records written */
} npkit_machine_ports;

/* The first line of ROOT/rel without its newline: 0, or the errno of opening or reading it. */
int npkit_machine_sysfs_read(const char *root, const char *rel, char *buf, size_t len);

/* Writes a `port` record per port (IB first, then interfaces, each in name order) and fills
 * *ports with the first NPKIT_MACHINE_MAX_PORTS, each with the position of its record (the
 * samples' `port`). */
void npkit_machine_ports_snapshot(const char *root, npkit_mtext *t, npkit_machine_ports *ports);

/* One counter: 0 with *bytes (IB words already × 4), or the errno. */
int npkit_machine_port_bytes(const char *path, int ib, uint64_t *bytes);

#endif
