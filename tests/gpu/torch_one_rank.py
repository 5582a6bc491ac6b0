#!/usr/bin/env python3
"""A one-rank torch.distributed NCCL job, for the GPU check (device_check.sh).

With one rank NCCL creates no task: a collective is a device-to-device copy (cudaMemcpyAsync,
NCCL 2.28 ncclLaunchOneRank), or nothing when it is in place.  Per size: all_gather_into_tensor
and reduce_scatter_tensor (copies), all_reduce (in place: no GPU work).

  torch_one_rank.py check          a few sizes, for check_torch_trace.py
  torch_one_rank.py bench SECONDS  1 KB .. 1 GB, prints one line per size:
                                   "bench op=all_gather bytes=N us=T" (CUDA events, median of repeats)
"""
import os
import statistics
import sys

import torch
import torch.distributed as dist


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "check"
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    dev = torch.device("cuda:0")
    if mode == "check":
        for n in (256, 65536, 4 << 20):
            x = torch.ones(n, device=dev)
            out = torch.empty(n, device=dev)
            dist.all_gather_into_tensor(out, x)
            dist.reduce_scatter_tensor(out, x)
            dist.all_reduce(x)
        torch.cuda.synchronize()
    else:
        budget = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
        sizes = [1 << s for s in range(10, 31, 2)]  # 1 KB .. 1 GB
        per_size = budget / len(sizes)
        for nbytes in sizes:
            n = nbytes // 4
            x = torch.ones(n, device=dev)
            out = torch.empty(n, device=dev)
            times = []
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            dist.all_gather_into_tensor(out, x)  # warm up
            torch.cuda.synchronize()
            import time
            t_stop = time.time() + per_size
            while time.time() < t_stop and len(times) < 200:
                start.record()
                for _ in range(10):
                    dist.all_gather_into_tensor(out, x)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1000 / 10)
            print("bench op=all_gather bytes=%d us=%.3f repeats=%d" % (nbytes, statistics.median(times), len(times)),
                  flush=True)
            del x, out
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
