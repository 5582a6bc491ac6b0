/*
 * GPU timeline analyses of one rank: communication/computation overlap and idle time, with the
 * definitions of HolisticTraceAnalysis (docs/report.md):
 *  - a kernel is communication when its name starts with "nccl" (after a C++ mangling prefix, so
 *    ncclKernel_*, ncclDevKernel_*, ncclSymkDevKernel_* of every NCCL version), memory for
 *    memcpy/memset activity, else computation;
 *  - overlap ratio = time when communication and computation both run (each merged across
 *    streams) / merged communication time; exposed communication = communication time that no
 *    computation hides;
 *  - idle = span from the first kernel start to the last kernel end minus the union of busy time,
 *    for the whole GPU and per stream; the gaps between kernels, of the whole GPU and of each
 *    stream, are examined for a regular pattern (pipeline bubbles): many gaps of about the same
 *    length at about the same period.
 * These need GPU activity; with NCCL API events alone the report says so instead of guessing.
 */
#ifndef NPKIT_REPORT_GPU_H
#define NPKIT_REPORT_GPU_H

#include <stddef.h>
#include <stdint.h>

/* Gaps shorter than this are launch latency, not bubbles. */
#define NPKIT_GAP_MIN_NS 1000
/* A regular pattern: at least this many gaps within ±25 % of their median length, repeating at a
 * period whose relative spread (sigma from the MAD / median) is below 25 %. */
#define NPKIT_GAP_REGULAR_MIN 8
#define NPKIT_GAP_SIMILAR 0.25
#define NPKIT_GAP_PERIOD_SPREAD 0.25

typedef enum npkit_kernel_class {
  NPKIT_KCLASS_COMM = 0,
  NPKIT_KCLASS_COMPUTE = 1,
  NPKIT_KCLASS_MEMORY = 2,
} npkit_kernel_class;

typedef struct npkit_kernel {
  int64_t start_ns, end_ns;
  uint32_t stream;         /* caller's stream index */
  uint8_t cls;             /* npkit_kernel_class */
} npkit_kernel;

typedef struct npkit_stream_idle {
  uint32_t stream;         /* the caller's stream index (the whole GPU: UINT32_MAX) */
  uint32_t device;         /* set by the caller, which knows what its indices stand for */
  uint64_t kernels;
  int64_t first_ns, last_ns;
  uint64_t busy_ns, idle_ns;
  uint64_t gaps;           /* gaps of NPKIT_GAP_MIN_NS or more */
  uint64_t max_gap_ns;
  int regular;             /* a regular pattern of gaps */
  uint64_t regular_gaps;
  double gap_ns, period_ns;  /* median length and period of the regular gaps */
  double regular_idle_ns;    /* their total */
} npkit_stream_idle;

typedef struct npkit_gpu_rank {
  uint64_t kernels, comm_kernels, compute_kernels, memory_ops;
  uint64_t comm_ns, compute_ns;  /* merged across streams */
  uint64_t overlap_ns, exposed_ns;
  double overlap_ratio;          /* NaN without communication */
  int64_t first_ns, last_ns;
  uint64_t busy_ns, idle_ns;     /* whole GPU */
  npkit_stream_idle gpu;         /* the whole GPU as one timeline: its gaps are real bubbles */
  npkit_stream_idle *streams;
  size_t n_streams;
} npkit_gpu_rank;

/* Class of a kernel from its name (mangled or not). */
npkit_kernel_class npkit_kernel_class_of(const char *name);

/* Analyses n kernels (sorted in place).  Returns 0 or -1 (memory). */
int npkit_gpu_analyse(npkit_kernel *k, size_t n, npkit_gpu_rank *out);
void npkit_gpu_rank_free(npkit_gpu_rank *g);

#endif /* NPKIT_REPORT_GPU_H */
