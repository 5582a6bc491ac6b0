#include "cupti_records.h"

#include <stddef.h>
#include <string.h>

#include "cupti_names.h"

/* Every field read below lies inside the oldest layouts CUDA 11.0 delivers (Kernel5: 160 bytes,
 * Memcpy4: 80, MemcpyPtoP3: 88, Memset3: 80), where it has the same offset as in CUDA 13. */
_Static_assert(offsetof(CUpti_ActivityKernel10, graphId) + sizeof(uint32_t) <= 160, "kernel prefix");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, graphId) + sizeof(uint32_t) <= 80, "memcpy prefix");
_Static_assert(offsetof(CUpti_ActivityMemcpyPtoP4, graphId) + sizeof(uint32_t) <= 88, "peer prefix");
_Static_assert(offsetof(CUpti_ActivityMemset4, graphId) + sizeof(uint32_t) <= 80, "memset prefix");

static uint16_t u16(int32_t v) { return v < 0 ? 0 : v > 0xffff ? 0xffff : (uint16_t)v; }

static void common(npkit_event *ev, uint16_t kind, uint64_t start, uint64_t end) {
  /* A copy of a zero event: wide moves, where memset of a small struct becomes `rep stos`. */
  static const npkit_event zero;
  *ev = zero;
  ev->kind = kind;
  ev->start_ns = start;
  ev->end_ns = end;
  ev->u.gpu.call_seq = NPKIT_NO_SEQ;
  if (start == 0 || end == 0 || end < start) ev->u.gpu.flags = NPKIT_GPU_UNTIMED;
}

/* The record types differ in layout but name these fields alike, so macros rather than functions:
 * each expansion reads the fields at its own record type's offsets. */
#define GPU_COMMON(ev, kind, rec)                                                                  \
  do {                                                                                             \
    common(ev, kind, (rec)->start, (rec)->end);                                                    \
    (ev)->u.gpu.correlation = (rec)->correlationId;                                                \
    (ev)->u.gpu.device = (rec)->deviceId;                                                          \
    (ev)->u.gpu.stream = (rec)->streamId;                                                          \
    (ev)->u.gpu.graph_node = (rec)->graphNodeId;                                                   \
    (ev)->u.gpu.graph_id = (rec)->graphId;                                                         \
  } while (0)

/* What memcpy and peer memcpy records say about the copy. */
#define COPY_KINDS(g, rec)                                                                         \
  do {                                                                                             \
    (g)->x.copy.bytes = (rec)->bytes;                                                              \
    (g)->x.copy.copy_kind = (rec)->copyKind;                                                       \
    (g)->x.copy.src_kind = (rec)->srcKind;                                                         \
    (g)->x.copy.dst_kind = (rec)->dstKind;                                                         \
  } while (0)

static void kernel(const CUpti_ActivityKernel10 *k, npkit_event *ev, npkit_log_writer *log) {
  npkit_ev_gpu *g = &ev->u.gpu;
  GPU_COMMON(ev, NPKIT_EV_CUPTI_KERNEL, k);
  g->x.kernel.name = npkit_kernel_name_id(k->name, log);
  g->x.kernel.grid_x = k->gridX < 0 ? 0 : (uint32_t)k->gridX;
  g->x.kernel.grid_y = u16(k->gridY);
  g->x.kernel.grid_z = u16(k->gridZ);
  g->x.kernel.block_x = u16(k->blockX);
  g->x.kernel.block_y = u16(k->blockY);
  g->x.kernel.block_z = u16(k->blockZ);
  g->x.kernel.registers = k->registersPerThread;
  g->x.kernel.static_shared = k->staticSharedMemory;
  g->x.kernel.dynamic_shared = k->dynamicSharedMemory;
}

int npkit_cupti_record_event(const CUpti_Activity *rec, npkit_event *ev, npkit_log_writer *log) {
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
  case CUPTI_ACTIVITY_KIND_KERNEL: /* same layout; never enabled by npkit, but another client may */
    kernel((const CUpti_ActivityKernel10 *)(const void *)rec, ev, log);
    return 1;
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)(const void *)rec;
    GPU_COMMON(ev, NPKIT_EV_CUPTI_MEMCPY, m);
    COPY_KINDS(&ev->u.gpu, m);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY2: {
    const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)(const void *)rec;
    npkit_ev_gpu *g = &ev->u.gpu;
    GPU_COMMON(ev, NPKIT_EV_CUPTI_MEMCPY, m);
    g->flags |= NPKIT_GPU_PEER;
    COPY_KINDS(g, m);
    g->x.copy.src_device = m->srcDeviceId;
    g->x.copy.dst_device = m->dstDeviceId;
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)(const void *)rec;
    npkit_ev_gpu *g = &ev->u.gpu;
    GPU_COMMON(ev, NPKIT_EV_CUPTI_MEMSET, m);
    g->x.copy.bytes = m->bytes;
    g->x.copy.dst_kind = (uint8_t)m->memoryKind;
    g->x.copy.value = m->value;
    return 1;
  }
  default:
    return 0;
  }
}
