#!/usr/bin/env python3
"""Checks the traces of the two-process gpu_job run of device_check.sh: two ranks on one GPU that
NCCL takes for two hosts (NCCL_HOSTID), joined by its socket transport, under the preloaded
library as NCCL's profiler plugin and with CUPTI.  What the fake NCCL models is checked against
the real one:
  - every collective call has NCCL's algorithm, protocol and channels (plugin task matched);
  - the kernel-channel slices carry GPU stamps, mapped onto the host clock, and lie inside the
    CUPTI record of the NCCL kernel that ran them (two independent clocks: CUPTI's and the
    %globaltimer map) up to the error the map reports;
  - a collective's GPU time is its GPU-clock span;
  - proxy operations and network steps of the socket transport, with their bytes;
  - the CUDA graph: the captured call is marked, each replay is drawn as its own GPU work;
  - nothing lost, and the per-communicator sequence numbers agree between the ranks.

usage: check_plugin_trace.py TRACE_DIR NRANKS ITERS NSIZES REPLAYS
"""
import glob
import json
import statistics
import sys

from trace_checks import check, verdict

COLL = {"ncclAllReduce": "AllReduce", "ncclAllGather": "AllGather", "ncclReduceScatter": "ReduceScatter"}


def thread_names(ev):
    return {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}


def one_rank(path, nranks, iters, nsizes, replays):
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    o = doc["otherData"]
    print("== %s: rank %s, built against nccl.h %s" % (path, o.get("rank"), o.get("nccl_header_version")))
    api = sorted([e for e in ev if e.get("cat") == "nccl_api" and e.get("ph") == "X" and e["name"] in COLL],
                 key=lambda e: e["ts"])
    eager = [e for e in api if not e["args"].get("graph_captured")]
    captured = [e for e in api if e["args"].get("graph_captured")]
    want = iters * nsizes * 4
    check(len(eager) == want, "%d eager collective calls, want %d" % (len(eager), want))
    check(len(captured) == (1 if replays else 0), "%d call(s) marked graph_captured" % len(captured))
    no_plugin = [(e["name"], e["args"].get("seq")) for e in eager
                 if not all(k in e["args"] for k in ("algorithm", "protocol", "channels", "nccl_seq"))]
    check(not no_plugin, "every eager call has NCCL's algorithm, protocol, channels, nccl_seq (%d lack them: %r)"
          % (len(no_plugin), no_plugin[:4]))
    choices = sorted({(e["name"], e["args"].get("algorithm"), e["args"].get("protocol"), e["args"].get("channels"))
                      for e in eager})
    print("info NCCL's choices (call, algorithm, protocol, channels): %r" % choices)
    timed = [e for e in eager if "gpu_time_us" in e["args"]]
    check(len(timed) == len(eager), "every eager call has gpu_time_us (%d of %d)" % (len(timed), len(eager)))

    kernels = [e for e in ev if e.get("cat") == "kernel" and e.get("ph") == "X"]
    nccl_k = {}
    for k in kernels:
        a = k["args"]
        if "nccl_call" in a and "nccl" in k["name"].lower():
            nccl_k.setdefault((a.get("comm_id"), a.get("seq"), a.get("nccl_call")), []).append(k)
    check(len(nccl_k) >= len(eager), "NCCL kernels from CUPTI tied to %d calls (%d eager calls)"
          % (len(nccl_k), len(eager)))

    chans = [e for e in ev if e.get("cat") == "nccl_kernel" and e.get("ph") == "X"]
    gpu = [e for e in ev if e.get("cat") == "nccl_gpu" and e.get("ph") == "X"]
    check(len(chans) > 0, "kernel-channel slices: %d" % len(chans))
    check(all(c["args"].get("gpu_timer") is True and c["args"].get("gpu_clock") == "mapped" for c in chans),
          "every channel slice has GPU stamps, mapped onto the host clock")
    errs = [c["args"].get("map_error_us", 1e9) for c in chans]
    if errs:
        print("info map_error_us: median %.1f, max %.1f" % (statistics.median(errs), max(errs)))
    by_task = {}
    for c in chans:
        by_task.setdefault((c["args"].get("func"), c["args"].get("nccl_seq")), []).append(c)
    outside, compared = [], 0
    for e in eager:
        a = e["args"]
        mine = nccl_k.get((a.get("comm_id"), a.get("seq"), e["name"]), [])
        slices = by_task.get((COLL[e["name"]], a.get("nccl_seq")), [])
        if len(mine) != 1 or not slices:
            continue
        k = mine[0]
        k0, k1 = float(k["ts"]), float(k["ts"]) + float(k["dur"])
        for c in slices:
            tol = 100.0  # the proxy's report latency (18 us on an H200) with room; not the map's error
            compared += 1
            c0, c1 = float(c["ts"]), float(c["ts"]) + float(c["dur"])
            if c0 < k0 - tol or c1 > k1 + tol:
                outside.append((e["name"], a.get("seq"), c["args"].get("channel"), round(c0 - k0, 1),
                                round(c1 - k1, 1), round(tol, 1)))
    check(compared > 0 and not outside,
          "channel slices inside the CUPTI kernel of their call, within 100 us: %d compared, "
          "%d outside (call, seq, channel, start - kernel start, end - kernel end, tol): %r"
          % (compared, len(outside), outside[:6]))
    spans = [g for g in gpu if not g["args"].get("graph_replay")]
    bad = [g["args"] for g in spans
           if "gpu_clock_span_ns" in g["args"] and abs(g["args"]["gpu_time_us"] * 1000 - g["args"]["gpu_clock_span_ns"]) > 1000]
    check(spans and not bad, "a collective's GPU time is its GPU-clock span (%d collectives, %d off)" % (len(spans), len(bad)))

    proxies = [e for e in ev if e.get("cat") == "nccl_proxy" and e.get("ph") == "X" and e["name"].startswith("proxy ")]
    net = [e for e in ev if e.get("cat") == "nccl_net" and e.get("ph") == "X"]
    check(len(proxies) > 0 and len(net) > 0, "proxy operations (%d) and network steps (%d)" % (len(proxies), len(net)))
    sizes = [n["args"].get("size", 0) for n in net]
    check(net and all(s > 0 for s in sizes), "every network step has its size (%d of %d)" % (sum(s > 0 for s in sizes), len(net)))
    done = [p for p in proxies if p["args"].get("steps_done") != p["args"].get("steps")]
    check(not done, "every proxy operation did all its planned steps (%d did not: %r)"
          % (len(done), [p["args"] for p in done[:3]]))
    # bytes on the wire per call against the ring's traffic, of the nccl-tests size S (the whole
    # buffer for AllGather and ReduceScatter): AllReduce 2(n-1)/n S, the others (n-1)/n S
    sent = {}
    for n in net:
        if n["name"] == "net send":
            key = (n["args"].get("func"), n["args"].get("nccl_seq"))
            sent[key] = sent.get(key, 0) + n["args"].get("size", 0)
    ratios = []
    for e in eager:
        a = e["args"]
        key = (COLL[e["name"]], a.get("nccl_seq"))
        want_bytes = (2 if e["name"] == "ncclAllReduce" else 1) * (nranks - 1) / nranks * a["bytes"]
        if key in sent and want_bytes:
            ratios.append((e["name"], a.get("algorithm"), a.get("protocol"), a["bytes"], sent[key] / want_bytes))
    if ratios:
        rs = [r[4] for r in ratios]
        print("info bytes sent / ring traffic: median %.3f, min %.3f, max %.3f; first %r" % (statistics.median(rs), min(rs), max(rs), ratios[:4]))
    check(ratios and all(0.5 < r[4] < 4 for r in ratios if r[2] == "SIMPLE"),
          "SIMPLE-protocol calls send about their ring traffic on the network")

    if replays:
        rep = [g for g in gpu if g["args"].get("graph_replay")]
        check(len(rep) == replays, "%d graph replays drawn as GPU work, want %d: %r"
              % (len(rep), replays, sorted({g["name"] for g in rep})))
        if captured:
            check(all(g["args"].get("captured_seq") == captured[0]["args"].get("seq") for g in rep),
                  "each replay names the captured call's seq")
        graph_k = [k for k in kernels if k["args"].get("launched_by") == "cudaGraphLaunch"]
        check(len(graph_k) >= replays, "CUPTI kernels launched by cudaGraphLaunch: %d" % len(graph_k))
    clocks = [e for e in ev if e.get("ph") == "M" and e.get("name") == "gpu_clock"]
    for c in clocks:
        print("info gpu_clock %r" % c["args"])
    check(len(clocks) >= 1, "a gpu_clock metadata event")
    lost = [e["args"] for e in ev if e.get("ph") == "C" and e.get("name") == "npkit plugin"]
    check(not lost or all(l.get("lost", 0) == 0 for l in lost), "the plugin lost nothing: %r" % lost[-1:])
    check(doc["otherData"].get("dropped", 0) == 0, "otherData.dropped is 0")
    machine(doc, ev)
    return [(e["name"], e["args"].get("seq"), e["args"].get("bytes")) for e in eager]


def machine(doc, ev):
    """The machine snapshot through the real NVML, and the GPU samples (NPKIT_GPU_SAMPLE_RATE)."""
    m = doc["otherData"].get("machine")
    if not check(isinstance(m, dict), "otherData.machine: %r" % (doc["otherData"].get("machine_error"),)):
        return
    nvml = m.get("nvml", {})
    print("info machine: nvml %r, gpus %r, gpu %r, nccl %r, ports %r" % (
        nvml, [(g.get("name"), g.get("bus_id"), g.get("nvlinks")) for g in m.get("gpus", [])], m.get("gpu"),
        m.get("nccl_version"), [(p.get("name"), p.get("speed"), p.get("operstate")) for p in m.get("ports", [])]))
    check(nvml.get("status") == "ok" and m.get("gpus"), "NVML answered, with the GPUs")
    gpu = m.get("gpu", {})
    check(gpu.get("nvml_index", -1) >= 0 and gpu.get("how") == "pci_bus_id",
          "the process's GPU found by its PCI bus id: %r" % gpu)
    counters = {}
    for e in ev:
        if e.get("ph") == "C" and e.get("cat") == "machine":
            counters.setdefault(e["name"], []).append(e["args"])
    print("info counter tracks: %r" % {k: len(v) for k, v in counters.items()})
    clocks = [a.get("sm") for k, v in counters.items() if "clocks" in k for a in v]
    check(clocks and all(0 < c < 5000 for c in clocks), "GPU clock samples in MHz: %r" % clocks[:5])
    power = [a.get("power") for k, v in counters.items() if "power" in k for a in v]
    check(power and all(10 < p < 2000 for p in power), "GPU power samples in W: %r" % power[:5])


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    trace_dir = sys.argv[1]
    nranks, iters, nsizes, replays = (int(x) for x in sys.argv[2:6])
    files = sorted(glob.glob(trace_dir + "/*.json"))
    if not check(len(files) == nranks, "%d traces in %s, want %d" % (len(files), trace_dir, nranks)):
        return verdict()
    calls = [one_rank(f, nranks, iters, nsizes, replays) for f in files]
    check(all(c == calls[0] for c in calls), "the ranks agree on every call's name, seq and bytes")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
