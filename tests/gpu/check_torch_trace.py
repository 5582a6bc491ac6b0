#!/usr/bin/env python3
"""Checks the trace of torch_one_rank.py check (device_check.sh): the calls PyTorch made through
NCCL are recorded, and the GPU work of each is tied to it: with one rank NCCL copies (a DtoD
memcpy with the call's name, sequence number and bytes), or does nothing for an in-place call.

usage: check_torch_trace.py TRACE_DIR
"""
import glob
import json
import sys

from trace_checks import check, verdict

def main():
    files = glob.glob(sys.argv[1] + "/*.json")
    if not check(len(files) == 1, "one trace: %r" % files):
        return 1
    with open(files[0]) as f:
        t = json.load(f)
    ev = t["traceEvents"]
    api = [e for e in ev if e.get("cat") == "nccl_api" and e.get("ph") == "X"]
    copies = [e for e in ev if e.get("cat") == "gpu_memcpy"]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    names = sorted({e["name"] for e in api})
    print("calls: %s" % names)
    for op in ("ncclAllGather", "ncclAllReduce"):
        check(len([e for e in api if e["name"] == op]) == 3, "three %s calls" % op)
    # PyTorch 2.11 on one rank made no ncclReduceScatter call for reduce_scatter_tensor (H200
    # device check, 2026-12-04): counted, not required
    print("info ncclReduceScatter calls: %d" % len([e for e in api if e["name"] == "ncclReduceScatter"]))
    for e in api:
        if e["name"] not in ("ncclAllGather", "ncclReduceScatter"):
            continue
        a = e["args"]
        mine = [c for c in copies if c["args"].get("nccl_call") == e["name"] and c["args"].get("seq") == a.get("seq")]
        check(len(mine) == 1, "%s seq %s (%s bytes): one copy tied to it" % (e["name"], a.get("seq"), a.get("bytes")))
        if mine:
            c = mine[0]
            check(c["args"].get("kind") == "DtoD", "  a device-to-device copy: %s" % c["args"].get("kind"))
            check(c["ts"] >= e["ts"] - 1000, "  not before the call (%s vs %s)" % (c["ts"], e["ts"]))
    tied = [k for k in kernels if "nccl_call" in k["args"]]
    print("kernels: %d, tied to an NCCL call: %d" % (len(kernels), len(tied)))
    print("other data: clock_source=%s" % t["otherData"].get("clock_source"))
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
