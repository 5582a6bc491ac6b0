/*
 * The links a communicator's collectives cross and what they allow, from the ranks' machine
 * snapshots (report_machine.h), for the findings and the advice:
 *  - ranks on one host: NVLink, the active links of the slowest of their GPUs × the rate of a link
 *    of its generation, per direction;
 *  - ranks on several hosts: the network, per host its data ports of the kind NCCL uses
 *    (InfiniBand when the host has a port up, else physical Ethernet ports up with a known speed)
 *    × the slowest of them, since NCCL spreads a collective's channels evenly over the NICs and
 *    they progress together; the slowest host sets the capacity.
 * Unknown stays unknown: no capacity without the snapshots that give it.
 */
#ifndef NPKIT_REPORT_LINKS_H
#define NPKIT_REPORT_LINKS_H

#include <stddef.h>
#include <stdint.h>

#include "report_model.h"

typedef enum npkit_cap_kind { NPKIT_CAP_NONE = 0, NPKIT_CAP_NVLINK, NPKIT_CAP_NET } npkit_cap_kind;

typedef struct npkit_link_cap {
  npkit_cap_kind kind;
  double gbs;               /* GB/s per rank and direction */
  uint32_t hosts;           /* hosts the communicator spans */
  uint32_t host;            /* the host whose links set it */
  int ib;                   /* NET: over InfiniBand ports (else Ethernet) */
  int ports;                /* NET: that host's data ports of the kind */
  double port_gbps;         /* NET: the slowest of them, Gb/s */
  int links;                /* NVLINK: active links of the slowest GPU */
  uint32_t nvlink_version;  /* NVLINK: nvmlNvlinkVersion_t */
  int32_t log;              /* NVLINK: the log whose GPU that is */
} npkit_link_cap;

/* The snapshot of a host: the first of its logs (by rank) that has one; NULL. */
const npkit_machine *npkit_report_host_machine(const npkit_report *rep, uint32_t host);
/* A host's network as above: 0 with the kind, count and slowest rate, -1 when it has no data port
 * with a known rate. */
int npkit_host_net(const npkit_machine *m, int *ib, int *ports, double *slowest_gbps);
/* The capacity of communicator `comm` (job index); cap->kind NPKIT_CAP_NONE when unknown. */
void npkit_comm_link_cap(const npkit_report *rep, uint32_t comm, npkit_link_cap *cap);
/* "NVLink 4.0: 18 links x 25 GB/s" or "1 x 50 Gb/s InfiniBand port of host b". */
void npkit_link_cap_text(const npkit_report *rep, const npkit_link_cap *c, char *buf, size_t len);
/* Wall time a row's calls took on each rank: mean time × calls per rank (NaN without time). */
double npkit_row_wall_ns(const npkit_table_row *r);
/* "AllReduce 64 MiB" of a row. */
void npkit_row_label(const npkit_table_row *r, char *buf, size_t len);

#endif /* NPKIT_REPORT_LINKS_H */
