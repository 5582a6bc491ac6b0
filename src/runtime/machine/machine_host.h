/* What the snapshot says about the host and the settings:
 *  - `host`: the host name and whether it resolves (getaddrinfo; cross-node NCCL needs every
 *    node's name in every node's /etc/hosts or DNS), `system`: CPU model, online CPUs, kernel,
 *    RLIMIT_NOFILE ("Too many open files");
 *  - `env`: every NCCL_* and NPKIT_* variable (and CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, which
 *    say which GPU a rank uses), `conf`: what NCCL takes from its configuration files, read by
 *    the same reader as the library's self-registration (core/nccl_conf.h). */
#ifndef NPKIT_MACHINE_HOST_H
#define NPKIT_MACHINE_HOST_H

#include <stddef.h>

#include "machine_text.h"

/* The `host` and `system` records; may block in getaddrinfo: call it on the machine thread. */
void npkit_machine_host_snapshot(npkit_mtext *t);

/* The `env` and `conf` records as the process started: call it on the thread that starts
 * recording, before NCCL applies its files to the environment (another thread reading environ
 * while NCCL's setenv runs is not safe).  CUDA_VISIBLE_DEVICES is copied into visible ("" unset). */
void npkit_machine_settings_snapshot(npkit_mtext *t, char *visible, size_t len);

#endif
