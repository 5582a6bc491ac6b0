"""Helpers of the GPU source tests: running cupti_job under mpirun with the fake NCCL and the fake
libcupti, and working out from a trace's NCCL API events which kernels the job must show, so that
the GPU events can be compared with them exactly.

The expectations are derived independently of the library: from the API events (checked against
what the program called by the integration tests), the program's fixed script (cupti_job.c) and
NCCL 2.28's kernel naming, written out again here.
"""

import decimal
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import npkit_testlib as lib  # noqa: E402

CUPTI_SETTINGS = ("NPKIT_CUPTI", "NPKIT_CUPTI_LIBRARY", "NPKIT_CUPTI_BUFFER_KB",
                  "NPKIT_CUPTI_BUFFERS", "CUDA_INJECTION64_PATH", "FAKE_CUPTI_BUSY",
                  "FAKE_CUPTI_DROP_EVERY", "FAKE_CUPTI_UNTIMED_EVERY", "FAKE_CUPTI_EXT_LATE",
                  "FAKE_CUPTI_KERNEL_VERSION", "FAKE_CUPTI_API_VERSION", "FAKE_CUPTI_API_FILTER",
                  "FAKE_CUDA_DRIVER_VERSION", "FAKE_CUPTI_OLD_DRIVER_AT", "CUDA_HOME")

S_NCCL, S_COMPUTE, S_BCAST, S_GRAPH = "0x1000", "0x2000", "0x3000", "0x4000"
GRAPH_REPLAYS = 3
DATA_CLASSES = ("coll", "p2p")

TYPE_SHORT = {"int8": "i8", "uint8": "u8", "int32": "i32", "uint32": "u32", "int64": "i64",
              "uint64": "u64", "float16": "f16", "float32": "f32", "float64": "f64",
              "bfloat16": "bf16", "float8e4m3": "f8e4m3", "float8e5m2": "f8e5m2"}
FLOAT_TYPES = {"float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"}


def job_path():
    return lib.need_file(lib.need_env("NPKIT_CUPTI_JOB"), "the cupti_job program")


def fake_cupti():
    return lib.need_file(lib.need_env("NPKIT_FAKE_CUPTI"), "the fake libcupti")


def fake_file(var, what):
    """A fake library of tests/fakes_cupti named by a variable of the test environment."""
    return lib.need_file(lib.need_env(var), what)


def env_report(path):
    """The FILE.rank<R> of cupti_job --env-out as a dict."""
    with open(path) as f:
        return dict(line.strip().split("=", 1) for line in f if "=" in line)


def real_cupti():
    """The toolkit's libcupti, or None."""
    d = os.environ.get("NPKIT_CUDA_LIB_DIR", "")
    for name in ("libcupti.so.13", "libcupti.so"):
        p = os.path.join(d, name)
        if d and os.path.exists(p):
            return p
    return None


def run_job(args, np=2, preload=True, settings=None, cwd=None, timeout=180, prog=None):
    """cupti_job (or prog) on np ranks with the fake NCCL; `settings` are the job's variables."""
    env = {k: v for k, v in lib._base_env().items() if k not in CUPTI_SETTINGS}
    cmd = [lib.mpirun(), "-np", str(np), "--oversubscribe", "--bind-to", "none"]
    for name, value in sorted(lib.job_env("fake", preload, settings).items()):
        cmd += ["-x", "%s=%s" % (name, value)]
    cmd += [prog or job_path()] + list(args)
    return lib._run(cmd, env, cwd, timeout)


def gpu_lines(run):
    return [l for l in run.npkit_lines if "GPU timing is off" in l]


# --- what the trace must show ------------------------------------------------------------------

def kernel_name(call):
    """The NCCL 2.28 kernel of one data call (without the ncclDevKernel_ prefix)."""
    fn, a = call["name"], call["args"]
    short = fn[len("nccl"):]
    if fn in ("ncclAllReduce", "ncclReduce", "ncclReduceScatter"):
        op = a["op"]
        if op == "avg":
            op_name = "PreMulSum" if a["datatype"] in FLOAT_TYPES else "SumPostDiv"
        else:
            op_name = {"sum": "Sum", "prod": "Prod", "max": "MinMax", "min": "MinMax",
                       "premulsum": "PreMulSum"}[op]
        return "%s_%s_%s_RING_LL" % (short, op_name, TYPE_SHORT[a["datatype"]])
    if fn in ("ncclAllGather", "ncclBroadcast", "ncclBcast"):
        return "%s_RING_LL" % ("Broadcast" if fn == "ncclBcast" else short)
    return "SendRecv"


class Launch:
    """One kernel the job must show: the call whose arrow points at it (`launcher`), the calls it
    runs and its name."""

    def __init__(self, launcher, calls):
        self.launcher = launcher
        self.calls = calls
        names = {kernel_name(c) for c in calls}
        self.name = "ncclDevKernel_" + (names.pop() if len(names) == 1 else "Generic")

    def __repr__(self):
        return "%s by %s at %s" % (self.name, self.launcher["name"], self.launcher["ts"])


def is_data_call(e):
    return lib.api_class(e["name"]) in DATA_CLASSES and e["args"].get("result") == "ncclSuccess" \
        and e["args"].get("count", 0) > 0


def copied_by_nccl(e):
    """A collective on a one-rank communicator: NCCL copies it with cudaMemcpyAsync when it is
    called, without a kernel (NCCL 2.28 taskAppend, ncclLaunchOneRank)."""
    return e["args"].get("comm_nranks") == 1 and lib.api_class(e["name"]) == "coll"


def expected_launches(api):
    """Launches from the API events of one thread (in order): every data call outside groups, and
    per outermost group one launch per (communicator, stream).  Calls on the graph stream are
    captured, not launched, and come back as `captured`; one-rank collectives are copied, not
    launched."""
    launches, captured, group, depth = [], [], None, 0
    for e in api:
        a = e["args"]
        if e["name"] == "ncclGroupStart" and a.get("result") == "ncclSuccess":
            if depth == 0:
                group = []
            depth += 1
            continue
        if e["name"] in ("ncclGroupEnd", "ncclGroupSimulateEnd") and depth > 0:
            depth -= 1
            if depth == 0:
                keys = []
                for c in group:
                    k = (c["args"].get("comm_id"), c["args"].get("stream"))
                    if k not in keys:
                        keys.append(k)
                for k in keys:
                    calls = [c for c in group
                             if (c["args"].get("comm_id"), c["args"].get("stream")) == k]
                    launches.append((Launch(e, calls), group))
                group = None
            continue
        if not is_data_call(e) or copied_by_nccl(e):
            continue
        if a.get("stream") == S_GRAPH:
            captured.append(e)
        elif group is not None:
            group.append(e)
        else:
            launches.append((Launch(e, [e]), [e]))
    return launches, captured


def flows(trace):
    """flow id -> (start event, finish event)."""
    s = {e["id"]: e for e in trace.events if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    f = {e["id"]: e for e in trace.events if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    return {i: (s.get(i), f.get(i)) for i in set(s) | set(f)}


def kernels(trace, cat="kernel"):
    return sorted([e for e in trace.events if e.get("ph") == "X" and e.get("cat") == cat],
                  key=lambda e: (e["ts"], e["tid"]))


def launcher_of(trace, kernel, flow_by_target, api):
    """The API event the kernel's arrow starts in, or None without an arrow."""
    fl = flow_by_target.get((kernel["tid"], kernel["ts"]))
    if fl is None:
        return None
    s = fl[0]
    if s is None:
        raise AssertionError("flow %r has no start" % (fl,))
    inside = [e for e in api if e["tid"] == s["tid"] and e["ts"] <= s["ts"] <= e["ts"] + e["dur"]]
    if len(inside) != 1:
        raise AssertionError("the arrow to %s starts in %d API events: %r" % (kernel, len(inside), s))
    return inside[0]


def clock_tolerance_us(t):
    """How far apart the library's times and the fake CUPTI's CLOCK_REALTIME readings may be: 0 when
    the library read CLOCK_REALTIME itself; with the time-stamp counter, the largest difference
    from CLOCK_REALTIME the library reported for its map, plus 0.2 us for the uncertainty of one
    comparison (1 us when the log has no report)."""
    if t.other.get("clock_source") != "tsc":
        return decimal.Decimal(0)
    return decimal.Decimal(t.other.get("clock_max_error_ns", 800) + 200) / 1000


def check_mapping(t, iters, graph=True, pre_nccl_compute=0):
    """Problems with the GPU events of trace t of one cupti_job rank; [] when everything that must
    be there is, exactly once, with the right call, and nothing else is."""
    problems = []
    tol = clock_tolerance_us(t)
    api = t.api()
    launches, captured = expected_launches(api)
    fls = flows(t)
    flow_by_target = {}
    for i, (s, f) in fls.items():
        if f is None:
            problems.append("flow %s has no finish" % i)
            continue
        if (f["tid"], f["ts"]) in flow_by_target:
            problems.append("two arrows end at %s" % f)
        flow_by_target[(f["tid"], f["ts"])] = (s, f)
    ks = kernels(t)
    nccl = [k for k in ks if k["name"].startswith("ncclDevKernel_") and "graph_id" not in k["args"]]
    replays = [k for k in ks if "graph_id" in k["args"]]
    compute = [k for k in ks if k["name"] == "computeKernel"]
    other = [k for k in ks if k not in nccl and k not in replays and k not in compute]
    if other:
        problems.append("unexpected kernels: %r" % [k["name"] for k in other])

    # NCCL kernels: one per expected launch, tied to the right call
    unmatched = list(nccl)
    stream_map = {}
    for launch, group in launches:
        found = [k for k in unmatched if k["name"] == launch.name
                 and launcher_of(t, k, flow_by_target, api) is launch.launcher]
        if len(found) != 1:
            problems.append("%r: %d kernels found" % (launch, len(found)))
            continue
        k = found[0]
        unmatched.remove(k)
        a = k["args"]
        l = launch.launcher
        single = len(group) == 1
        attributed = group[0] if single else l
        if a.get("nccl_call") != attributed["name"]:
            problems.append("%r: nccl_call %r, want %r" % (launch, a.get("nccl_call"), attributed["name"]))
        if single:
            for key, want in (("seq", attributed["args"].get("seq")),
                              ("comm_id", attributed["args"].get("comm_id")),
                              ("nccl_bytes", attributed["args"].get("bytes"))):
                if a.get(key) != want:
                    problems.append("%r: %s %r, want %r" % (launch, key, a.get(key), want))
        else:
            if a.get("group_calls") != len(group):
                problems.append("%r: group_calls %r, want %d" % (launch, a.get("group_calls"), len(group)))
            want_bytes = sum(c["args"]["bytes"] for c in group)
            if a.get("nccl_bytes") != want_bytes:
                problems.append("%r: nccl_bytes %r, want %d" % (launch, a.get("nccl_bytes"), want_bytes))
            comms = {c["args"].get("comm_id") for c in group}
            if a.get("comm_id") != (comms.pop() if len(comms) == 1 else None):
                problems.append("%r: comm_id %r for calls on %r" % (launch, a.get("comm_id"), comms))
            if "seq" in a:
                problems.append("%r: a kernel of several calls has seq %r" % (launch, a["seq"]))
        if l["name"] == "ncclGroupEnd":
            if a.get("group") != l["args"].get("group") or a.get("launched_by") != "ncclGroupEnd":
                problems.append("%r: group %r launched_by %r, want group %r by ncclGroupEnd"
                                % (launch, a.get("group"), a.get("launched_by"), l["args"].get("group")))
        elif "group" in a or "launched_by" in a:
            problems.append("%r: group args on a kernel launched outside a group: %r" % (launch, a))
        # the kernel runs while or after its call runs, on its call's stream
        if not (l["ts"] - tol <= k["ts"] <= l["ts"] + l["dur"] + tol):
            problems.append("%r: kernel starts at %s, outside its call %s..%s"
                            % (launch, k["ts"], l["ts"], l["ts"] + l["dur"]))
        stream = launch.calls[0]["args"]["stream"]
        if stream_map.setdefault(stream, a["stream"]) != a["stream"]:
            problems.append("%r: stream id %r, other kernels of stream %s have %r"
                            % (launch, a["stream"], stream, stream_map[stream]))
        for key, want in (("grid", [2, 1, 1]), ("block", [640, 1, 1]),
                          ("registers_per_thread", 96), ("shared_memory", 8192)):
            if a.get(key) != want:
                problems.append("%r: %s %r, want %r" % (launch, key, a.get(key), want))
    if unmatched:
        problems.append("NCCL kernels that match no call: %r"
                        % [(k["name"], k["ts"], k["args"].get("nccl_call")) for k in unmatched])
    if len(set(stream_map.values())) != len(stream_map):
        problems.append("two streams share a stream id: %r" % stream_map)

    # compute kernels: the application's, on their own stream, tied to nothing
    if len(compute) != iters + pre_nccl_compute:
        problems.append("%d compute kernels, want %d" % (len(compute), iters + pre_nccl_compute))
    for k in compute:
        a = k["args"]
        if "nccl_call" in a or "ext_id" in a or (k["tid"], k["ts"]) in flow_by_target:
            problems.append("compute kernel tied to a call: %r" % a)
        if a["stream"] in stream_map.values():
            problems.append("compute kernel on an NCCL stream: %r" % a)
        if (a["grid"], a["block"], a["registers_per_thread"], a["static_shared_memory"]) != \
                ([256, 1, 1], [128, 1, 1], 32, 1024):
            problems.append("compute kernel args: %r" % a)

    # graph replays: the captured call's, launched by cudaGraphLaunch, without arrows
    if graph:
        if len(captured) != 1:
            problems.append("%d calls on the graph stream, want 1" % len(captured))
        elif len(replays) != GRAPH_REPLAYS:
            problems.append("%d replayed kernels, want %d" % (len(replays), GRAPH_REPLAYS))
        else:
            c = captured[0]
            nodes = {k["args"]["graph_node"] for k in replays}
            if len(nodes) != 1:
                problems.append("replays of one node have node ids %r" % nodes)
            for k in replays:
                a = k["args"]
                want = {"nccl_call": c["name"], "seq": c["args"]["seq"],
                        "nccl_bytes": c["args"]["bytes"], "comm_id": c["args"]["comm_id"],
                        "launched_by": "cudaGraphLaunch"}
                got = {key: a.get(key) for key in want}
                if got != want:
                    problems.append("replayed kernel: %r, want %r" % (got, want))
                if k["name"] != Launch(c, [c]).name:
                    problems.append("replayed kernel named %r" % k["name"])
                if (k["tid"], k["ts"]) in flow_by_target:
                    problems.append("replayed kernel has an arrow from a call")
    elif replays:
        problems.append("replayed kernels without --graph")

    # one-rank collectives: a device-to-device copy each, tied to its call
    all_copies = kernels(t, "gpu_memcpy")
    nccl_copies = [c for c in all_copies if "nccl_call" in c["args"]]
    for call in [e for e in api if is_data_call(e) and copied_by_nccl(e)]:
        found = [c for c in nccl_copies if launcher_of(t, c, flow_by_target, api) is call]
        if len(found) != 1:
            problems.append("%s at %s: %d copies found" % (call["name"], call["ts"], len(found)))
            continue
        c = found[0]
        a = c["args"]
        want = {"nccl_call": call["name"], "seq": call["args"].get("seq"), "kind": "DtoD",
                "bytes": call["args"]["bytes"]}
        got = {key: a.get(key) for key in want}
        if got != want:
            problems.append("copy of %s: %r, want %r" % (call["name"], got, want))
        nccl_copies.remove(c)
    if nccl_copies:
        problems.append("NCCL copies that match no call: %r" % nccl_copies)

    # copies and memsets of the application
    copies = [c for c in all_copies if "nccl_call" not in c["args"]]
    sets = kernels(t, "gpu_memset")
    if len(copies) != iters or len(sets) != iters:
        problems.append("%d copies and %d memsets, want %d each" % (len(copies), len(sets), iters))
    for c in copies:
        a = c["args"]
        if (c["name"], a["bytes"], a["kind"], a["src_kind"], a["dst_kind"]) != \
                ("Memcpy HtoD", 1048576, "HtoD", "pinned", "device"):
            problems.append("copy: %s %r" % (c["name"], a))
    for s in sets:
        a = s["args"]
        if (s["name"], a["bytes"], a["value"], a["memory_kind"]) != ("Memset", 65536, 0, "device"):
            problems.append("memset: %s %r" % (s["name"], a))

    # every arrow starts in an NCCL call and ends at a kernel
    targets = ks + [c for c in all_copies if "nccl_call" in c["args"]]
    kernel_keys = {(k["tid"], k["ts"]) for k in targets}
    for i, (s, f) in fls.items():
        if f is not None and (f["tid"], f["ts"]) not in kernel_keys:
            problems.append("arrow %s ends at no kernel or copy" % i)
    n_copied = len([e for e in api if is_data_call(e) and copied_by_nccl(e)])
    if len(fls) != len(nccl) + n_copied:
        problems.append("%d arrows for %d NCCL kernels and %d copies" % (len(fls), len(nccl), n_copied))
    return problems


def gpu_tracks(t):
    """tid -> track name of the GPU stream tracks."""
    return {tid: n for tid, n in t.thread_names().items() if 400 <= tid % 1000 < 700}


EXIT_LINE = re.compile(r"GPU: (\d+) kernels, (\d+) copies, (\d+) memsets, (\d+) lost")


def exit_counts(run, rank):
    """(kernels, copies, memsets, lost) from rank's exit line."""
    for l in run.npkit_lines:
        if l.startswith("npkit: rank %d: wrote " % rank):
            m = EXIT_LINE.search(l)
            if m:
                return tuple(int(x) for x in m.groups())
            raise AssertionError("exit line without GPU counts: %r" % l)
    raise AssertionError("no exit line for rank %d:\n%s" % (rank, run.describe()))


def check_nccl_timings(t):
    """Problems with NCCL's own GPU times in trace t, the profiler plugin's, which need no CUPTI:
    [] when every collective NCCL ran (the API events the plugin filled with its algorithm) has
    its one "nccl_gpu" event, of the same function and sequence number, timed by the GPU on
    channel tracks (nccl_kernel), starting after its call did, and every Send and Recv its own."""
    problems = []
    api = t.api()
    gpu = [e for e in t.events if e.get("ph") == "X" and e.get("cat") == "nccl_gpu"]
    channels = [e for e in t.events if e.get("ph") == "X" and e.get("cat") == "nccl_kernel"]
    colls = [e for e in api if "algorithm" in e["args"]]
    if not colls:
        problems.append("no collective has NCCL's algorithm: the plugin did not run")
    for c in colls:
        func = c["name"][len("nccl"):]
        mine = [g for g in gpu if g["args"].get("func") == func and g["args"].get("seq") == c["args"]["seq"]
                and g["args"].get("nccl_seq") == c["args"].get("nccl_seq")]
        if len(mine) != 1:
            problems.append("%s seq %s: %d GPU events" % (c["name"], c["args"]["seq"], len(mine)))
        elif mine[0]["ts"] < c["ts"]:
            problems.append("%s seq %s: GPU time starts before the call" % (c["name"], c["args"]["seq"]))
    for fn in ("Send", "Recv"):
        calls = [e for e in api if e["name"] == "nccl" + fn and e["args"].get("result") == "ncclSuccess"]
        timed = [g for g in gpu if g["args"].get("func") == fn]
        if len(timed) != len(calls):
            problems.append("%d nccl%s calls, %d GPU events" % (len(calls), fn, len(timed)))
    if not channels or not all(k["args"].get("gpu_timer") is True for k in channels):
        problems.append("channel events missing or not timed by the GPU")
    return problems


def expected_client_kernels(t, iters):
    """Kernels a CUPTI client that traced the whole job after NCCL's initialisation receives:
    one per launch of NCCL's calls, and the job's one compute kernel per iteration."""
    launches, captured = expected_launches(t.api())
    return len(launches) + iters
