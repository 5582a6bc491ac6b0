#!/usr/bin/env python3
"""Checks the trace of gpu_job (run by run_gpu_check.sh on a GPU machine): GPU timing was on and
started by the CUDA driver, every collective call has GPU work tied to it with plausible times,
the compute kernels are there on their own stream, nothing was lost.

usage: check_gpu_trace.py TRACE_DIR STDERR_FILE NGPUS ITERS
Prints what it checked; exit status 0 when everything holds, 1 otherwise.
"""

import glob
import json
import re
import statistics
import sys

from trace_checks import check, verdict

SIZES = [1 << s for s in range(20, 28)]   # 1 MB .. 128 MB
OPS_PER_SIZE = 4                           # AllReduce sum, AllGather, ReduceScatter, AllReduce avg
COLLECTIVES = ("ncclAllReduce", "ncclAllGather", "ncclReduceScatter")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")

def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    trace_dir, stderr_path, ngpus, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(stderr_path) as f:
        err = f.read()
    lines = err.splitlines()
    check(not [l for l in lines if "GPU timing is off" in l], "GPU timing is on (no 'GPU timing is off' line)")
    started = [l for l in lines if "GPU activity through CUPTI" in l]
    check(len(started) == 1 and "started by the CUDA driver" in started[0],
          "CUPTI started by the CUDA driver through CUDA_INJECTION64_PATH: %r" % started)
    exit_lines = [l for l in lines if " wrote " in l and "GPU:" in l]
    check(len(exit_lines) == 1, "one exit line with GPU counts: %r" % exit_lines)
    m = re.search(r"GPU: (\d+) kernels, (\d+) copies, (\d+) memsets, (\d+) lost", exit_lines[0] if exit_lines else "")
    check(m is not None and int(m.group(4)) == 0, "no GPU records lost")
    check(not [l for l in lines if l.startswith("npkit: warning")], "no npkit warnings")

    files = glob.glob(trace_dir + "/*.json")
    if not check(len(files) == 1, "one trace in %s: %r" % (trace_dir, files)):
        return 1
    with open(files[0]) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    check(doc["otherData"]["dropped"] == 0, "otherData.dropped is 0")
    o = doc["otherData"]
    print("info clock source %s, %s comparisons, largest difference %s ns"
          % (o.get("clock_source"), o.get("clock_checks"), o.get("clock_max_error_ns")))
    if o.get("clock_source") == "tsc":
        check(o.get("clock_max_error_ns", 10 ** 9) < 20000,
              "the time-stamp counter map stays within 20 us of CLOCK_REALTIME")

    api = sorted([e for e in ev if e.get("cat") == "nccl_api" and e["name"] in COLLECTIVES],
                 key=lambda e: e["ts"])
    gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    want_calls = iters * len(SIZES) * OPS_PER_SIZE * ngpus
    check(len(api) == want_calls, "%d collective calls recorded, want %d" % (len(api), want_calls))

    # every GPU event: plausible duration
    bad = [e for e in gpu if not (0 < float(e["dur"]) < 10e6)]
    check(not bad, "every GPU event lasts more than 0 and less than 10 s (%d do not)" % len(bad))

    # GPU work tied to each call; with one rank NCCL copies (sum, gather) or runs its one-rank
    # reduction kernel (avg); with several it runs NCCL kernels
    tied = [e for e in gpu if "nccl_call" in e["args"]]
    coll_work = [e for e in tied if e["args"]["nccl_call"] in COLLECTIVES + ("ncclGroupEnd",)]
    arrows_expected = [e for e in tied if e["args"]["nccl_call"] != "(lost)"
                       and e["args"].get("launched_by") != "cudaGraphLaunch"]
    flows_s = {e["id"]: e for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    flows_f = {e["id"]: e for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    by_seq = {}
    for e in tied:
        by_seq.setdefault((e["args"].get("comm_id"), e["args"].get("seq")), []).append(e)
    missing, early, late = [], [], 0
    for c in api:
        a = c["args"]
        if ngpus > 1:
            continue  # launched by ncclGroupEnd: checked below
        work = by_seq.get((a["comm_id"], a["seq"]), [])
        if not work or any(w["args"]["nccl_call"] != c["name"] for w in work):
            missing.append((c["name"], a["seq"], a["bytes"]))
            continue
        for w in work:
            # CUPTI maps GPU time onto CLOCK_REALTIME: the work starts after its call did (1 ms slack)
            if float(w["ts"]) < float(c["ts"]) - 1000:
                early.append((c["name"], a["seq"], w["ts"], c["ts"]))
            if float(w["ts"]) > float(c["ts"]) + 5e6:
                late += 1
    if ngpus == 1:
        check(not missing, "every collective call has its GPU work tied to it (%d have none: %r)"
              % (len(missing), missing[:5]))
        check(not early, "no GPU work starts before its call (%r)" % early[:5])
        check(late == 0, "GPU work starts within 5 s of its call")
        memcpy = [e for e in coll_work if e["cat"] == "gpu_memcpy"]
        bytes_ok = all(e["args"]["bytes"] == e["args"]["nccl_bytes"] for e in memcpy)
        check(memcpy and bytes_ok, "one-rank copies move the call's bytes (%d copies)" % len(memcpy))
        kernels = [e for e in coll_work if e["cat"] == "kernel"]
        check(len(kernels) >= iters * len(SIZES),
              "NCCL kernels tied to AllReduce(avg): %d, names %r"
              % (len(kernels), sorted({k["name"] for k in kernels})))
        sizes = {}
        for e in coll_work:
            sizes.setdefault(e["args"].get("nccl_bytes"), []).append(float(e["dur"]))
        small, big = statistics.median(sizes.get(SIZES[0], [0])), statistics.median(sizes.get(SIZES[-1], [0]))
        check(big > small > 0, "128 MB takes longer than 1 MB on the GPU (median %.1f us vs %.1f us)" % (big, small))
        bw = [float(e["args"]["bytes"]) / (float(e["dur"]) * 1000) for e in memcpy if e["args"]["bytes"] == SIZES[-1]]
        check(bw and 1 < statistics.median(bw) < 20000,
              "128 MB device copies at a plausible bandwidth: median %.0f GB/s" % (statistics.median(bw) if bw else 0))
    else:
        nccl_kernels = [e for e in coll_work if e["cat"] == "kernel" and e["name"].startswith("nccl")]
        check(len(nccl_kernels) >= want_calls,
              "NCCL kernels tied to the groups: %d (want %d), names %r"
              % (len(nccl_kernels), want_calls, sorted({k["name"] for k in nccl_kernels})[:6]))
        check(all(k["args"].get("launched_by") == "ncclGroupEnd" for k in nccl_kernels),
              "launched by ncclGroupEnd")
    check(len(flows_s) == len(flows_f) == len(arrows_expected),
          "one arrow per GPU event tied to a call (%d starts, %d ends, %d events)"
          % (len(flows_s), len(flows_f), len(arrows_expected)))

    # the compute kernels: all there, on their own stream, about --spin-us long, tied to nothing
    spins = [e for e in gpu if e["cat"] == "kernel" and e["name"] == "spin"]
    want_spins = iters * len(SIZES) * ngpus
    check(len(spins) == want_spins, "%d compute kernels 'spin', want %d" % (len(spins), want_spins))
    check(all("nccl_call" not in e["args"] for e in spins), "compute kernels are tied to no NCCL call")
    spin_streams = {(e["args"]["device"], e["args"]["stream"]) for e in spins}
    nccl_streams = {(e["args"]["device"], e["args"]["stream"]) for e in coll_work}
    check(spin_streams and not (spin_streams & nccl_streams),
          "compute kernels on their own stream(s) %r, NCCL work on %r" % (spin_streams, nccl_streams))
    durs = [float(e["dur"]) for e in spins]
    check(durs and 200 < statistics.median(durs) < 200000,
          "compute kernels last about --spin-us (median %.0f us)" % (statistics.median(durs) if durs else 0))
    overlap = 0
    for s in spins:
        s0, s1 = float(s["ts"]), float(s["ts"]) + float(s["dur"])
        overlap += any(float(t["ts"]) < s1 and float(t["ts"]) + float(t["dur"]) > s0 for t in coll_work)
    print("info %d of %d compute kernels overlap NCCL work" % (overlap, len(spins)))
    tracks = {e["tid"]: e["args"]["name"] for e in ev if e.get("name") == "thread_name" and 400 <= e["tid"] % 1000 < 700}
    check(len(tracks) >= 2, "GPU stream tracks: %r" % sorted(tracks.values()))
    memsets = [e for e in gpu if e["cat"] == "gpu_memset"]
    check(len(memsets) >= 2 * ngpus, "the setup's memsets are there (%d)" % len(memsets))

    return verdict()


if __name__ == "__main__":
    sys.exit(main())
