/* gpu_log: writes an event log with GPU events of every shape the renderer must handle, for
 * test_render_gpu.py.  usage: gpu_log OUT.npkit
 *
 * Times are relative to the log builder's clock base (B):
 *   thread 1: ncclAllReduce [B+1000, B+3000] seq 5 on comm 1 (2 ranks), 1 MB, corr_id 11
 *   kernel "ncclDevKernel_AllReduce_Sum_f32_RING_LL" [B+2000, B+2500] on GPU 0 stream 14, tied to it
 *   kernel without a name [B+4000, B+4100] on stream 13, no call
 *   kernel whose call was lost [B+5000, B+5100]
 *   untimed kernel (start 0)
 *   kernel replayed from a graph [B+6000, B+6400], graph 3 node 77, of the same AllReduce
 *   kernel of a group of 3 calls [B+7000, B+7300], launched by ncclGroupEnd [B+6500, B+6900]
 *   peer copy GPU 0 -> GPU 1 [B+8000, B+8200], 2 MB, on stream 15
 *   memset [B+9000, B+9050], 4096 bytes of 0xab on stream 15
 *   one kernel on each of 310 more streams [B+10000 + i, +1] (more than the 300 tracks) */
#include <stdio.h>
#include <string.h>

#include "log_builder.h"
#include "nccl_names.h"

#define B 1764671234567890123ull

static npkit_event gpu_event(uint16_t kind, uint64_t start, uint64_t end, uint32_t stream) {
  npkit_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = kind;
  ev.start_ns = start;
  ev.end_ns = end;
  ev.u.gpu.device = 0;
  ev.u.gpu.stream = stream;
  ev.u.gpu.call_seq = NPKIT_NO_SEQ;
  ev.u.gpu.correlation = 100 + stream;
  return ev;
}

static void tie(npkit_event *ev, unsigned fn, uint64_t ext, uint64_t seq, uint64_t bytes,
                uint64_t call_start, uint64_t call_end) {
  ev->func = (uint16_t)fn;
  ev->thread = 1;
  ev->u.gpu.ext_id = ext;
  ev->u.gpu.call_seq = seq;
  ev->u.gpu.call_bytes = bytes;
  ev->u.gpu.comm = 1;
  ev->u.gpu.call_ns = call_start + (call_end - call_start) / 2;
  ev->u.gpu.flags |= NPKIT_GPU_CALL_RECORDED;
}

static void kernel_shape(npkit_event *ev, uint32_t name) {
  ev->u.gpu.x.kernel.name = name;
  ev->u.gpu.x.kernel.grid_x = 24;
  ev->u.gpu.x.kernel.grid_y = 1;
  ev->u.gpu.x.kernel.grid_z = 1;
  ev->u.gpu.x.kernel.block_x = 640;
  ev->u.gpu.x.kernel.block_y = 1;
  ev->u.gpu.x.kernel.block_z = 1;
  ev->u.gpu.x.kernel.registers = 96;
  ev->u.gpu.x.kernel.static_shared = 1024;
  ev->u.gpu.x.kernel.dynamic_shared = 8192;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gpu_log OUT.npkit\n");
    return 2;
  }
  npkit_lb_options o;
  npkit_lb_defaults(&o);
  npkit_lb *b = npkit_lb_create(argv[1], &o);
  if (b == NULL) return 1;
  int rc = 0;

  npkit_thread_rec t = {1, 5001, "main"};
  npkit_comm_rec c = {.local_id = 1, .comm_id = 0x1f2e3d4c5b6a7988ull, .rank = 0, .nranks = 2,
                      .device = 0, .created_by = NPKIT_FN_CommInitRank};
  uint32_t ids[1] = {NPKIT_STRING_ID_GPU_BASE + 1};
  const char *texts[1] = {"ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
  size_t lens[1] = {strlen(texts[0])};
  rc |= npkit_lb_threads(b, &t, 1);
  rc |= npkit_lb_comms(b, &c, 1);
  rc |= npkit_lb_strings(b, ids, texts, lens, 1);

  npkit_event ev[16 + 310];
  size_t n = 0;
  npkit_event call = npkit_lb_api_event(NPKIT_FN_AllReduce, 1, B + 1000, B + 3000);
  call.u.api.count = 262144;
  call.u.api.datatype = 7; /* float32 */
  call.u.api.redop = 0;
  call.u.api.bytes = 1048576;
  call.u.api.comm = 1;
  call.u.api.seq = 5;
  call.u.api.corr_id = 11;
  ev[n++] = call;
  npkit_event end = npkit_lb_api_event(NPKIT_FN_GroupEnd, 1, B + 6500, B + 6900);
  end.u.api.group = 42;
  end.u.api.flags = NPKIT_API_GROUP_OUTER;
  end.u.api.corr_id = 12;
  ev[n++] = end;

  npkit_event k = gpu_event(NPKIT_EV_CUPTI_KERNEL, B + 2000, B + 2500, 14);
  kernel_shape(&k, ids[0]);
  tie(&k, NPKIT_FN_AllReduce, 11, 5, 1048576, B + 1000, B + 3000);
  ev[n++] = k;

  k = gpu_event(NPKIT_EV_CUPTI_KERNEL, B + 4000, B + 4100, 13);
  kernel_shape(&k, NPKIT_STRING_ID_GPU_BASE + 99); /* a name the log does not have */
  ev[n++] = k;

  k = gpu_event(NPKIT_EV_CUPTI_KERNEL, B + 5000, B + 5100, 13);
  kernel_shape(&k, ids[0]);
  k.u.gpu.ext_id = 7;
  k.u.gpu.flags = NPKIT_GPU_CALL_LOST;
  ev[n++] = k;

  k = gpu_event(NPKIT_EV_CUPTI_KERNEL, 0, B + 5500, 13);
  kernel_shape(&k, ids[0]);
  k.u.gpu.flags = NPKIT_GPU_UNTIMED;
  ev[n++] = k;

  k = gpu_event(NPKIT_EV_CUPTI_KERNEL, B + 6000, B + 6400, 14);
  kernel_shape(&k, ids[0]);
  tie(&k, NPKIT_FN_AllReduce, 11, 5, 1048576, B + 1000, B + 3000);
  k.u.gpu.flags = NPKIT_GPU_GRAPH; /* replays have no arrow */
  k.u.gpu.graph_id = 3;
  k.u.gpu.graph_node = 77;
  ev[n++] = k;

  k = gpu_event(NPKIT_EV_CUPTI_KERNEL, B + 7000, B + 7300, 14);
  kernel_shape(&k, ids[0]);
  tie(&k, NPKIT_FN_GroupEnd, 12, NPKIT_NO_SEQ, 3000, B + 6500, B + 6900);
  k.u.gpu.flags |= NPKIT_GPU_VIA_GROUP;
  k.u.gpu.group = 42;
  k.u.gpu.group_calls = 3;
  ev[n++] = k;

  npkit_event m = gpu_event(NPKIT_EV_CUPTI_MEMCPY, B + 8000, B + 8200, 15);
  m.u.gpu.flags = NPKIT_GPU_PEER;
  m.u.gpu.x.copy.bytes = 2097152;
  m.u.gpu.x.copy.copy_kind = 10; /* PtoP */
  m.u.gpu.x.copy.src_kind = 3;
  m.u.gpu.x.copy.dst_kind = 3;
  m.u.gpu.x.copy.src_device = 0;
  m.u.gpu.x.copy.dst_device = 1;
  ev[n++] = m;

  m = gpu_event(NPKIT_EV_CUPTI_MEMSET, B + 9000, B + 9050, 15);
  m.u.gpu.x.copy.bytes = 4096;
  m.u.gpu.x.copy.value = 0xab;
  m.u.gpu.x.copy.dst_kind = 3;
  ev[n++] = m;

  for (uint32_t i = 0; i < 310; i++) {
    k = gpu_event(NPKIT_EV_CUPTI_KERNEL, B + 10000 + i, B + 10001 + i, 1000 + i);
    kernel_shape(&k, ids[0]);
    ev[n++] = k;
  }
  rc |= npkit_lb_events(b, ev, n);
  npkit_counter_rec cnt = {0, NPKIT_SRC_CUPTI, n - 2, 0};
  rc |= npkit_lb_counters(b, &cnt, 1);
  rc |= npkit_lb_close(b);
  return rc != 0;
}
