/*
 * What the report knows of the machine of each log: its snapshot (machine_info.h) and the series
 * of its sampled counters (NPKIT_GPU_SAMPLE_RATE): the byte counters of every network port and the
 * NVLink counters of the process's GPU.  The scan hands every sample over; after the scan the
 * throughput measured while each table row's calls ran is added to the row (report_table.h,
 * npkit_row_links), and the capacities of the links a communicator crosses are computed here for
 * the findings (report_machine_find.c).
 */
#ifndef NPKIT_REPORT_MACHINE_H
#define NPKIT_REPORT_MACHINE_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"
#include "machine_info.h"

/* Two cumulative counters sampled over time, in time order. */
typedef struct npkit_sample {
  uint64_t t, a, b;
} npkit_sample;

typedef struct npkit_series {
  npkit_sample *v;
  size_t n, cap;
} npkit_series;

typedef struct npkit_port_series {
  uint32_t port;       /* position among the snapshot's ports */
  int data;            /* a port NCCL can move data over: IB up, or a physical Ethernet port up */
  npkit_series s;      /* tx, rx bytes */
} npkit_port_series;

typedef struct npkit_rep_machine {
  npkit_machine snap;  /* snap.present = 0 without a MACHINE block */
  npkit_port_series *ports;
  size_t n_ports, cap_ports;
  npkit_series nvlink; /* the process's GPU: NVLink tx, rx KiB */
  uint64_t samples;    /* machine events seen */
} npkit_rep_machine;

/* Reads the log's snapshot.  0, or -1 with a message. */
int npkit_rep_machine_load(npkit_rep_machine *m, const npkit_log_reader *r, char *err, size_t errlen);
void npkit_rep_machine_free(npkit_rep_machine *m);
/* One NPKIT_EV_MACHINE_* event of the scan.  0, or -1 (memory). */
int npkit_rep_machine_event(npkit_rep_machine *m, const npkit_event *ev);

/* The throughput around log time t: for each series the rate over the sample interval that holds
 * t.  Network: summed over the data ports, Gb/s; NVLink: GB/s.  0, or -1 when t is outside the
 * samples. */
int npkit_rep_machine_net_at(const npkit_rep_machine *m, uint64_t t, double *tx_gbps, double *rx_gbps);
int npkit_rep_machine_nvlink_at(const npkit_rep_machine *m, uint64_t t, double *tx_gbs, double *rx_gbs);

/* Whether a port of a snapshot is one NCCL moves data over (see npkit_port_series.data). */
int npkit_mach_port_is_data(const npkit_mach_port *p);

struct npkit_report;
/* Adds to every table row the throughput measured during its calls, each call at its middle,
 * weighted by its time; before npkit_table_finish (the instances name rows by their index of the
 * scan).  In report_links.c, above the model.  0, or -1 (memory). */
int npkit_report_link_use(struct npkit_report *rep);

#endif /* NPKIT_REPORT_MACHINE_H */
