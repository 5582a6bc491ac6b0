/* Settings, all from NPKIT_* environment variables (table in README.md).  Parsing never fails:
 * a bad value produces one warning naming the variable and the value, and the default is used. */
#ifndef NPKIT_CONFIG_H
#define NPKIT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "fn_set.h"

#include "diag.h"

/* A point of a recording window: after this many collectives, or this long after the start (the
 * first NCCL call); both 0 = not set. */
typedef struct npkit_window_point {
  uint64_t collectives;
  uint64_t ns;
} npkit_window_point;

/* npkit_config.trace_formats */
#define NPKIT_TRACE_FORMAT_JSON 0x1u
#define NPKIT_TRACE_FORMAT_PERFETTO 0x2u

typedef struct npkit_config {
  int disable;                 /* NPKIT_DISABLE */
  char trace_dir[512];         /* NPKIT_TRACE_DIR */
  uint64_t event_buf_mb;       /* NPKIT_EVENT_BUF_SIZE */
  npkit_fn_set ops;            /* NPKIT_OPS: the functions recorded */
  int quiet;                   /* NPKIT_QUIET */
  npkit_level log_level;       /* NPKIT_LOG_LEVEL */
  char nccl_library[512];      /* NPKIT_NCCL_LIBRARY, "" if unset */
  uint64_t flush_ms;           /* NPKIT_FLUSH_MS */
  int clock_tsc;               /* NPKIT_CLOCK: auto (1) lets timestamps come from the TSC, realtime (0) */
  int write_json;              /* NPKIT_JSON: a trace at exit */
  unsigned trace_formats;      /* NPKIT_TRACE_FORMAT: NPKIT_TRACE_FORMAT_JSON and/or _PERFETTO bits */
  int simulated;               /* NPKIT_SIMULATED: label the log and its traces as a simulation */
  int signals;                 /* NPKIT_SIGNALS: finish the trace on SIGTERM/SIGINT */
  int plugin;                  /* NPKIT_PLUGIN: act as NCCL's profiler plugin */
  uint32_t plugin_events;      /* NPKIT_PLUGIN_EVENTS: NPKIT_PEV_* bits */
  int cupti;                   /* NPKIT_CUPTI: GPU activity (kernels, copies) through CUPTI,
                                  NPKIT_CUPTI_OFF / _ON / _AUTO */
  char cupti_library[512];     /* NPKIT_CUPTI_LIBRARY, "" if unset */
  uint64_t cupti_buffer_kb;    /* NPKIT_CUPTI_BUFFER_KB: size of one activity buffer */
  uint64_t cupti_buffers;      /* NPKIT_CUPTI_BUFFERS: most activity buffers at a time */
  uint32_t stack_depth;        /* NPKIT_STACK_DEPTH: frames kept per call site, 0 = no stacks */
  int stack_lines;             /* NPKIT_STACK_LINES: file:line of frames through addr2line at exit */
  npkit_window_point start_after; /* NPKIT_START_AFTER */
  npkit_window_point stop_after;  /* NPKIT_STOP_AFTER */
  int toggle_signal;           /* NPKIT_TOGGLE_SIGNAL: signal number, 0 = none */
  char npkit_dump_dir[512];    /* NPKIT_DUMP_DIR (NCCL's own setting): NPKit dumps to merge, "" */
  char npkit_dump_header[512]; /* NPKIT_DUMP_HEADER: npkit_event.h of an NPKit fork, "" = built in */
  uint64_t npkit_dump_max_mb;  /* NPKIT_DUMP_MAX_MB: dump MB read per process at most, 0 = none */
  char pool_dir[200];          /* NPKIT_POOL_DIR: the folder of the event pool's file, "trace" =
                                  the trace folder, "" = private memory (event_pool.h) */
  uint64_t ring_mb;            /* NPKIT_RING_MB: the flight recorder's in-memory ring, 0 = none
                                  (the log is streamed to disk) */
  int dump_signal;             /* NPKIT_DUMP_SIGNAL: a signal that dumps what was recorded and lets
                                  the job go on, 0 = none */
  uint64_t hang_timeout_ns;    /* NPKIT_HANG_TIMEOUT: age of unfinished work that counts as a
                                  hang, 0 = no watchdog */
  int machine;                 /* NPKIT_MACHINE: the machine snapshot (and its sampling) */
  uint64_t gpu_sample_us;      /* NPKIT_GPU_SAMPLE_RATE: µs between samples of the GPU and the
                                  network ports, 0 = no sampling */
  uint64_t cpu_sample_ns;      /* NPKIT_CPU_SAMPLE_INTERVAL: ns between samples of the process's
                                  CPU time, 0 = every GPU sample */
  char sysfs_root[512];        /* NPKIT_SYSFS_ROOT: where /sys is read from ("/") */
  char nvml_library[512];      /* NPKIT_NVML_LIBRARY: NVML to load, "" = libnvidia-ml.so.1 */
  char metrics[64];            /* NPKIT_METRICS: "inspector,prometheus", parsed by the metrics
                                  source (src/runtime/metrics), "" = none */
  char metrics_dir[512];       /* NPKIT_METRICS_DIR, "" = the trace folder */
  uint64_t metrics_interval_s; /* NPKIT_METRICS_INTERVAL_S: seconds between live dumps */
  uint64_t metrics_min_bytes;  /* NPKIT_METRICS_MIN_BYTES: smaller operations counted, not written */
} npkit_config;

/* NPKIT_CUPTI: 0, 1 (also next to PyTorch's profiler), auto (the default: not where PyTorch is
 * loaded, whose profiler needs CUPTI for itself; cupti_source.c). */
#define NPKIT_CUPTI_OFF 0
#define NPKIT_CUPTI_ON 1
#define NPKIT_CUPTI_AUTO 2

/* NCCL events the profiler plugin records (NPKIT_PLUGIN_EVENTS names in parentheses). */
#define NPKIT_PEV_COLL 0x1u   /* collective tasks: algorithm, protocol, channels (coll) */
#define NPKIT_PEV_P2P 0x2u    /* send/recv tasks (p2p) */
#define NPKIT_PEV_KERNEL 0x4u /* per-channel GPU start/stop of every task (kernel) */
#define NPKIT_PEV_PROXY 0x8u  /* proxy (network) operations per channel and peer (proxy) */
#define NPKIT_PEV_STEP 0x10u  /* each network transfer of a proxy operation (step) */
#define NPKIT_PEV_CTRL 0x20u  /* proxy thread sleep/active/append states (ctrl) */
#define NPKIT_PEV_PHASE 0x40u /* NCCL 2.31+: each channel's initial sync, compute and final sync
                                 on the GPU (phase); off by default, see README */
#define NPKIT_PEV_ALL 0x7fu

#define NPKIT_DEFAULT_TRACE_DIR "./npkit_trace"
#define NPKIT_DEFAULT_BUF_MB 64
#define NPKIT_DEFAULT_POOL_DIR "/dev/shm"
#define NPKIT_POOL_DIR_TRACE "trace" /* NPKIT_POOL_DIR=trace: the trace folder, beside the log */
#define NPKIT_DEFAULT_FLUSH_MS 200
#define NPKIT_DEFAULT_OPS "all,-query"
#define NPKIT_MAX_STACK_DEPTH 64
#define NPKIT_DEFAULT_CUPTI_BUFFER_KB 4096
#define NPKIT_DEFAULT_CUPTI_BUFFERS 32
#define NPKIT_DEFAULT_PLUGIN_EVENTS "coll,p2p,kernel,proxy,step"
#define NPKIT_DEFAULT_DUMP_MAX_MB 256
#define NPKIT_MAX_RING_MB 65536
/* NPKIT_HANG_TIMEOUT's range: below 10 ms a scheduling delay looks like a hang; a week is longer
 * than any collective. */
#define NPKIT_MIN_HANG_TIMEOUT_NS 10000000ull
#define NPKIT_MAX_HANG_TIMEOUT_NS (7ull * 24 * 3600 * 1000000000ull)
#define NPKIT_MIN_GPU_SAMPLE_US 1000ull            /* NPKIT_GPU_SAMPLE_RATE: 1 ms ... */
#define NPKIT_MAX_GPU_SAMPLE_US 3600000000ull      /* ... to 1 h */
#define NPKIT_MIN_CPU_SAMPLE_NS 1000000ull         /* NPKIT_CPU_SAMPLE_INTERVAL: 1 ms ... */
#define NPKIT_MAX_CPU_SAMPLE_NS 3600000000000ull   /* ... to 1 h */

/* Reads the environment through `getenv_fn` (getenv in the library, a table in tests) and emits
 * warnings for bad values through npkit_diag. */
void npkit_config_load(npkit_config *cfg, const char *(*getenv_fn)(const char *name));

/* Parses an NPKIT_OPS list into a mask; returns 0, or -1 with the offending item in `bad`. */
int npkit_config_parse_ops(const char *text, npkit_fn_set *set, char *bad, int badlen);

/* Parses an NPKIT_PLUGIN_EVENTS list (coll, p2p, kernel, proxy, step, ctrl, all, none; a leading
 * '-' removes) into NPKIT_PEV_* bits; returns 0, or -1 with the offending item in `bad`. */
int npkit_config_parse_plugin_events(const char *text, uint32_t *events, char *bad, int badlen);

/* The booleans every setting accepts (1/0, true/false, yes/no, on/off, any case): 0 with *out
 * set, or -1 for anything else. */
int npkit_config_parse_bool(const char *text, int *out);

/* NPKIT_START_AFTER / NPKIT_STOP_AFTER: a number of collectives ("100") or a time since the start
 * ("30s", "2.5s", "500ms"); "0" means not set.  0 with *out set, or -1. */
int npkit_config_parse_window(const char *text, npkit_window_point *out);

/* NPKIT_HANG_TIMEOUT: a time with its unit ("60s", "500ms", "2min", "1.5s"), or "0" for none.
 * 0 with *ns set (0 = none), or -1. */
int npkit_config_parse_timeout(const char *text, uint64_t *ns);

/* NPKIT_TOGGLE_SIGNAL: "SIGUSR2", "USR2" or a number; only signals that do not stop, crash or
 * belong to the profiler are accepted (SIGUSR1, SIGUSR2, SIGHUP, SIGWINCH, SIGURG, real-time
 * signals).  0 with *sig set, or -1. */
int npkit_config_parse_signal(const char *text, int *sig);
/* The same signals' names, for messages: "SIGUSR2", "SIG36" for a real-time one. */
void npkit_config_signal_name(int sig, char *buf, size_t len);

#endif
