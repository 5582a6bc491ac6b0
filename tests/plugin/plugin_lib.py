"""Helpers of the profiler plugin tests: running the plugin test programs, reading NCCL's own
events out of traces, and what the fake NCCL must have chosen and sent, computed here from its
documented rules (tests/fakes/README.md) and from the calls themselves — never from the plugin's
records."""

import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.environ.get("NPKIT_SOURCE_DIR", ""), "tests", "integration"))
import npkit_testlib as lib  # noqa: E402

STEP_BYTES = 65536
NCHANNELS = 4
# NCCL's function of an API function, and the functions it counts with its seqNumber.
NCCL_FUNC = {"ncclAllReduce": "AllReduce", "ncclBroadcast": "Broadcast", "ncclBcast": "Broadcast",
             "ncclReduce": "Reduce", "ncclAllGather": "AllGather",
             "ncclReduceScatter": "ReduceScatter"}
TRAFFIC = {"AllReduce": lambda n: 2, "AllGather": lambda n: n, "ReduceScatter": lambda n: n}


def need(name):
    return lib.need_file(lib.need_env(name), name)


def run_calls(np, settings, args=(), preload=True, timeout=240, prog="NPKIT_PLUGIN_CALLS", nccl="fake"):
    """plugin_calls (or the program named by the variable prog) on np ranks under mpirun, with
    the fake NCCL (nccl: "fake" plays 2.28.9, "new" 2.31.2)."""
    env = {k: v for k, v in os.environ.items() if k not in lib.LIBRARY_SETTINGS}
    env.pop("LD_PRELOAD", None)
    cmd = [lib.mpirun(), "-np", str(np), "--oversubscribe", "--bind-to", "none"]
    for name, value in sorted(lib.job_env(nccl, preload, settings).items()):
        cmd += ["-x", "%s=%s" % (name, value)]
    cmd += [need(prog)] + list(args)
    return lib._run(cmd, env, None, timeout)


# --- what the fake NCCL decides ---------------------------------------------------------------

def proto(nbytes):
    return "LL" if nbytes <= 65536 else "LL128" if nbytes <= 1048576 else "SIMPLE"


def algo(func, nbytes, nranks):
    return "TREE" if func == "AllReduce" and nranks > 2 and nbytes <= 262144 else "RING"


def channels(nbytes):
    return max(1, min(NCHANNELS, math.ceil(nbytes / 262144)))


def p2p_channels(nbytes):
    return max(1, min(2, math.ceil(nbytes / 65536)))


def size_bin(traffic):
    """NCCL's sorter: 4 bins per power of two of the size in KiB."""
    x = traffic >> 10
    if x == 0:
        return 0
    e = x.bit_length() - 1
    frac = (x >> (e - 2)) & 3 if e >= 2 else (x << (2 - e)) & 3
    return 1 + e * 4 + frac


def task_bytes(ev):
    return ev["args"]["count"] * lib.DTYPE_SIZE[ev["args"]["datatype"]]


def split(total, parts):
    base, rem = divmod(total, parts)
    return [base + (1 if i < rem else 0) for i in range(parts)]


def slice_elems(count, n, p):
    return split(count, n)[p]


def expected_nccl_seqs(api, nranks_of):
    """{id(api event): the seqNumbers NCCL may give it} for the collectives NCCL launches: counted
    per (communicator, function), a launch (one call, or a group at its end) taking its calls of a
    function largest first and, within a size bin, the later call first.  Calls whose key (count,
    datatype, root) is the same are interchangeable, so a call gets the set of its twins' numbers.
    api: the API events of one process in call order."""
    counters, out, pending = {}, {}, []

    def launch(calls):
        by = {}
        for e in calls:
            by.setdefault((e["args"]["comm"], NCCL_FUNC[e["name"]]), []).append(e)
        for (comm, func), evs in sorted(by.items()):
            factor = TRAFFIC.get(func, lambda n: 1)(nranks_of[comm])
            order = sorted(range(len(evs)), key=lambda i: (-size_bin(task_bytes(evs[i]) * factor), -i))
            base = counters.get((comm, func), 0)
            counters[(comm, func)] = base + len(evs)
            seq_of = {order[k]: base + k for k in range(len(evs))}
            for i, e in enumerate(evs):
                key = lambda x: (x["args"]["count"], x["args"]["datatype"], x["args"].get("root"))
                out[id(e)] = {seq_of[j] for j, o in enumerate(evs) if key(o) == key(e)}

    for e in api:
        a = e["args"]
        takes_part = (e["name"] in NCCL_FUNC and a.get("result") == "ncclSuccess"
                      and a.get("count", 0) > 0 and nranks_of.get(a.get("comm"), 1) > 1)
        if e["name"] in ("ncclGroupEnd", "ncclGroupSimulateEnd") and pending and \
                pending[0]["args"].get("group") == a.get("group"):
            if e["name"] == "ncclGroupEnd" and a["result"] == "ncclSuccess":
                launch(pending)
            pending = []
        elif takes_part and "group" in a:
            pending.append(e)
        elif takes_part:
            launch([e])
    return out


def comms_of(trace):
    """{label: nranks} of the communicators in otherData."""
    return {c["label"]: c["nranks"] for c in trace.other["comms"]}


# --- NCCL's own events in a trace -------------------------------------------------------------

def by_cat(trace, cat):
    return [e for e in trace.events if e.get("ph") == "X" and e.get("cat") == cat]


def track_comm(trace, tid):
    """The communicator label at the end of a plugin track's name."""
    name = trace.thread_names().get(tid, "")
    m = re.search(r" \u00b7 (.*)$", name)
    return m.group(1) if m else None


def task_key(ev):
    a = ev["args"]
    return (a.get("func"), a.get("nccl_seq"))
