"""Renders built logs with `npkit json` and checks the whole trace against the values put into the
log, computed here from docs/trace-format.md: every call's name, tid, ts/dur to the nanosecond and
args; the group slices (pairing, nesting, file order); metadata; notes; the drop counter; otherData.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npkit_testlib import *  # noqa: E402,F401,F403

B = 1764671234567890123
WORK = sys.argv[1] if len(sys.argv) > 1 else "test_render_content.work"
os.makedirs(WORK, exist_ok=True)

COMMS = {
    1: dict(local_id=1, parent=0, comm_id=0x1f2e3d4c5b6a7988, handle=0x1000, rank=3, nranks=4, device=3,
            created_by="CommInitRank", create_ns=B + 50000, name=b"world"),
    2: dict(local_id=2, parent=1, comm_id=0x0000abcd12345678, handle=0x2000, rank=1, nranks=2, device=3,
            created_by="CommSplit", create_ns=B + 90000, name=b'sub "x"\n\x01'),
}
THREADS = {1: (5001, "main"), 2: (5002, "worker")}


def ev(fn, thread, start, end, **kw):
    e = dict(fn=FN_ID[fn] if isinstance(fn, str) else fn, kind=1, thread=thread, start=B + start, end=B + end,
             count=0, bytes=0, stream=0, seq=NO_SEQ, group=0, aux=0, comm=0, peer=-1, datatype=-1, redop=-1,
             result=0, flags=0, user_tag=0)
    e.update(kw)
    return e


def ev_line(e):
    f = dict(e)
    f["seq"] = "none" if e["seq"] == NO_SEQ else e["seq"]
    return spec_line("ev", **f)


def coll(fn, thread, start, end, comm, count, dt, seq, **kw):
    return ev(fn, thread, start, end, comm=comm, count=count, datatype=dt, seq=seq,
              bytes=count * DATATYPE_SIZE[dt % 12], stream=kw.pop("stream", 0x7f00deadbe00), **kw)


def handcrafted():
    blocks = []
    blocks.append([
        ev("ncclCommInitRank", 1, 1000, 50000, aux=1),
        ev("ncclGetVersion", 1, 60000, 60100, aux=22809),
        ev("ncclMemAlloc", 1, 61000, 61500, aux=1048576),
        ev("ncclCommSplit", 1, 70000, 90000, comm=1, aux=2),
        coll("ncclAllReduce", 1, 100000, 150000, 1, 1024, 7, 0, redop=0),
        coll("ncclBroadcast", 1, 160000, 170000, 1, 10, 0, 1, peer=0, stream=0),
        coll("ncclReduce", 1, 180000, 190000, 2, 8, 8, 0, redop=4, peer=1, stream=0x10),
        coll("ncclAllGather", 1, 200000, 210000, 1, 3, 9, 2),
        coll("ncclAllReduce", 1, 220000, 220500, 1, 5, 7, NO_SEQ, redop=1, result=5),
    ])
    blocks.append([
        ev("ncclGroupStart", 1, 300000, 300100, group=7, flags=0x10),
        ev("ncclGroupStart", 1, 300200, 300250, group=7),
        coll("ncclSend", 1, 300300, 300400, 1, 16, 4, 0, peer=2, group=7, flags=3, stream=0x7f),
        coll("ncclRecv", 1, 300500, 300600, 1, 16, 4, 0, peer=1, group=7, flags=5, stream=0x7f),
        ev("ncclGroupEnd", 1, 300700, 300750, group=7),
        ev("ncclGroupEnd", 1, 300800, 350000, group=7, flags=0x10),
        ev("ncclGroupStart", 2, 400000, 400050, group=9),
        coll("ncclAllReduce", 2, 400100, 400900, 2, 1, 7, 1, redop=2, group=9, flags=1, stream=0x20),
        ev("ncclGroupEnd", 3, 410000, 410100, group=11),
        ev("ncclGroupStart", 1, 500000, 500100, group=20),
        coll("ncclAllReduce", 1, 500200, 500300, 1, 2, 7, 3, redop=0, group=20, flags=1),
        ev("ncclGroupStart", 1, 500400, 500500, group=21),
        coll("ncclSend", 1, 500600, 500700, 1, 1, 0, 1, peer=0, group=21, flags=3),
        ev("ncclGroupEnd", 1, 500800, 500900, group=21),
    ])
    blocks.append([
        ev("ncclGroupStart", 1, 600000, 600010, group=30),
        coll("ncclAllReduce", 1, 600020, 600030, 1, 4, 7, 4, redop=0, group=30, flags=1),
        ev("ncclGroupSimulateEnd", 1, 600040, 600050, group=30),
        ev("ncclAllReduce", 1, 700000, 700100, comm=99, count=1, datatype=99, redop=7, seq=5, stream=1),
        coll("ncclSend", 3, 710000, 710100, 1, 1, 0, 2, peer=3),
        coll("ncclAllReduce", 1, -5000, -4000, 1, 1, 7, 6, redop=0),
        coll("ncclAllReduce", 2, 800000, 799000, 2, 1, 7, 2, redop=0),
        ev("ncclAllReduce", 1, 810000, 810100, kind=250),
        ev(500, 1, 820000, 820100),
        ev("ncclCommRegister", 1, 830000, 830100, comm=1, aux=4096),
        ev("ncclCommWindowRegister", 1, 840000, 840100, comm=2, aux=8192),
        coll("ncclAllReduce", 1, 10**12 + 7, 10**12 + 7 + 123456789, 1, 7, 7, 7, redop=3),
        ev("ncclCommDestroy", 1, 900000, 900100, comm=2),
        ev("ncclCommShrink", 1, 910000, 910100, comm=1, result=5, flags=0x20),
        # 2.31: an nccl*Config call, recorded as its collective, tagged and untagged
        coll("ncclAllReduce", 1, 920000, 920500, 1, 64, 7, 8, redop=0, flags=API_CONFIG, user_tag=2**63 + 5),
        coll("ncclGather", 1, 921000, 921500, 1, 8, 0, 9, peer=0, flags=API_CONFIG),
        # the flag means nothing on a function without a Config variant
        coll("ncclBcast", 1, 922000, 922500, 1, 8, 0, 10, peer=0, flags=API_CONFIG, user_tag=7),
        # returning an int, a team, a string: no result code to show
        ev("ncclTeamRankToWorld", 1, 930000, 930100, comm=1, aux=3),
        ev("ncclTeamWorld", 1, 931000, 931100, comm=1),
        ev("ncclGetErrorString", 1, 932000, 932100),
        ev("ncclPutSignal", 1, 933000, 933100, comm=1, count=4, datatype=7, bytes=16, peer=2, seq=11),
        # taken from NCCL's CollApi event: no wrapper saw it
        coll("ncclAllReduce", 1, 934000, 934500, 1, 32, 7, 12, flags=0x80),
    ])
    return blocks


# slices the spec asks for: (thread, group, start, end, calls)
GROUPS = [(1, 7, 300000, 350000, 2), (2, 9, 400000, 799000, 2), (1, 20, 500000, 500300, 1),
          (1, 21, 500400, 500900, 1), (1, 30, 600000, 600050, 1)]

DATA_FNS = [n for n, c, _ in API if c in ("coll", "p2p")]


def random_events(rng, n, t0):
    out = []
    for i in range(n):
        fn = rng.choice(DATA_FNS)
        dt = rng.randrange(12)
        e = ev(fn, rng.choice([1, 3]), t0 + 1000 * i, t0 + 1000 * i + rng.randrange(0, 999),
               comm=rng.choice([1, 2]), count=rng.randrange(2**40), datatype=dt, bytes=rng.randrange(2**50),
               stream=rng.randrange(2**64), seq=rng.choice([NO_SEQ, rng.randrange(2**63)]),
               result=rng.choice([0, 0, 0, 1, 7, 9]))
        if fn in ROOTED or fn in ("ncclSend", "ncclRecv", "ncclPutSignal", "ncclSignal"):
            e["peer"] = rng.randrange(-1, 64)
        if fn in ("ncclAllReduce", "ncclReduce", "ncclReduceScatter"):
            e["redop"] = rng.randrange(-1, 7)
        out.append(e)
    return out


def expected_args(e):
    fid = e["fn"]
    name, cls = fn_name(fid), fn_class(fid)
    a = {"class": cls}
    if name == "ncclUnknown":
        a["func"] = fid
    moves = cls in ("coll", "p2p") and name != "ncclUnknown"
    if moves:
        a["count"] = e["count"]
    if e["datatype"] >= 0:
        a["datatype"] = DATATYPES[e["datatype"]] if e["datatype"] < 12 else "unknown"
    if moves:
        a["bytes"] = e["bytes"]
    if e["redop"] >= 0:
        a["op"] = REDOPS[e["redop"]] if e["redop"] < 5 else "premulsum"
    if name in ROOTED:
        a["root"] = e["peer"]
    elif name in ("ncclSend", "ncclRecv", "ncclPutSignal", "ncclSignal"):
        a["peer"] = e["peer"]
    if e["comm"]:
        c = COMMS.get(e["comm"])
        if c is None:
            a["comm"] = "comm local %d" % e["comm"]
        else:
            a["comm"] = comm_label(c["comm_id"], c["rank"], c["nranks"])
            a["comm_id"] = "0x%016x" % c["comm_id"]
            a["comm_rank"] = c["rank"]
            a["comm_nranks"] = c["nranks"]
    if e["seq"] != NO_SEQ:
        a["seq"] = e["seq"]
    if moves:
        a["stream"] = hex(e["stream"])
    if RETURNS.get(name, "R") == "R":  # functions returning a string, an int or a team have no code
        a["result"] = RESULTS[e["result"]] if 0 <= e["result"] < len(RESULTS) else "ncclUnknownResult"
    if e["group"]:
        a["group"] = e["group"]
    if name in CREATES_COMM and e["aux"]:
        c = COMMS.get(e["aux"])
        a["new_comm"] = comm_label(c["comm_id"], c["rank"], c["nranks"]) if c else "comm local %d" % e["aux"]
    elif name in SIZED:
        a["size"] = e["aux"]
    elif name == "ncclGetVersion" and e["aux"]:
        a["version"] = e["aux"]
    if e["flags"] & API_CONFIG and name in CONFIG_OF and e["user_tag"]:
        a["user_tag"] = "0x%x" % e["user_tag"]
    if e["flags"] & 0x20:
        a["missing"] = True
    if e["flags"] & 0x80:
        a["from_nccl_events"] = True
    return a


def shown_name(e):
    """The name a call is shown under: an nccl*Config call keeps the name it was called by."""
    name = fn_name(e["fn"])
    return CONFIG_OF[name] if e["flags"] & API_CONFIG and name in CONFIG_OF else name


def comm_line(c, **over):
    d = dict(c)
    d.update(over)
    return spec_line("comm", **d)


def main_scenario():
    rng = random.Random(1234)
    hand = handcrafted()
    rand = [random_events(rng, 1500, 2 * 10**9), random_events(rng, 1500, 4 * 10**9)]
    lines = [spec_line("header", clock_base=B, pid=4242, rank=-1, world=-1, local_rank=1, host="node1",
                       launcher="ompi", libver="0.1.0", nccl=22809, version=2)]
    lines.append(comm_line(COMMS[1], device=-1))  # the device is learnt later
    for idx, (tid, name) in THREADS.items():
        lines.append(spec_line("thread", index=idx, os_tid=tid, name=name))
    lines += [ev_line(e) for e in hand[0]]
    lines.append(comm_line(COMMS[2]))
    lines.append(comm_line(COMMS[1]))
    lines.append(spec_line("process", rank=3, world=4, local_rank=-1, device=-1, source="comm"))
    lines.append(spec_line("note", time=B + 123456, level=2, text=b'disk "full"\n\x01\xff end'))
    lines += [ev_line(e) for e in hand[1]]
    lines.append(spec_line("counter", thread=1, recorded=10, dropped=5))
    lines.append(spec_line("counter", thread=2, recorded=3, dropped=0))
    lines.append(spec_line("raw", type=42, count=3, size=24, byte=0xee))
    lines += [ev_line(e) for e in hand[2]]
    lines.append("flush")
    lines += [ev_line(e) for e in rand[0]]
    lines.append(spec_line("note", time=B - 10, level=1, text="NCCL symbol ncclCommShrink missing"))
    lines += [ev_line(e) for e in rand[1]]
    lines.append(spec_line("counter", thread=1, recorded=20, dropped=7))
    lines.append(spec_line("counter", thread=2, recorded=3, dropped=1))
    lines.append(spec_line("end", end_ns=B + 2 * 10**12, recorded=3040, dropped=8, blocks=20))
    all_events = hand[0] + hand[1] + hand[2] + rand[0] + rand[1]

    log = os.path.join(WORK, "main.npkit")
    build_log(lines, os.path.join(WORK, "main.spec"), log)
    out = os.path.join(WORK, "main.json")
    run_tool("json", log, "-o", out, check_rc=0)
    raw = open(out, "rb").read()
    trace = load_trace(raw.decode("utf-8"))  # strict UTF-8 as well
    pid = 4
    version = run_tool("--version", check_rc=0).stdout.decode().split()[1]

    check(trace["displayTimeUnit"] == "ns", "displayTimeUnit")
    want_other = {
        "tool": "npkit-preload", "version": version, "log_version": 2, "writer_version": "0.1.0",
        "nccl_header_version": 22809, "clock": "CLOCK_REALTIME", "clock_source": "clock_gettime", "simulated": False,
        "base_ns": str(B), "host": "node1",
        "pid": 4242, "rank": 3, "world_size": 4, "local_rank": 1, "rank_source": "comm",
        "events": len(all_events), "dropped": 8, "truncated": False, "closed_cleanly": True,
        "skipped_blocks": 0, "skipped_bytes": 0,
        "comms": [
            {"comm_id": "0x1f2e3d4c5b6a7988", "local_id": 1, "rank": 3, "nranks": 4, "device": 3,
             "label": "comm 1f2e3d4c (rank 3/4)", "name": "world", "parent": 0, "created_by": "ncclCommInitRank"},
            {"comm_id": "0x0000abcd12345678", "local_id": 2, "rank": 1, "nranks": 2, "device": 3,
             "label": "comm 0000abcd (rank 1/2)", "name": 'sub "x"\n\x01', "parent": 1,
             "created_by": "ncclCommSplit"},
        ],
    }
    check(trace["otherData"] == want_other, "otherData:\n got  %r\n want %r" % (trace["otherData"], want_other))

    evs = trace["traceEvents"]
    for x in evs:
        check(x.get("pid") == pid, "pid of %r" % (x,))

    # --- metadata
    meta = [x for x in evs if x["ph"] == "M"]
    want_meta = [
        {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": "rank 3 %s node1:4242 %s GPU 3" % (MIDDOT, MIDDOT)}},
        {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": 3}},
        {"name": "process_labels", "ph": "M", "pid": pid, "args": {"labels": "npkit-preload, world 4"}},
    ]
    for idx, (ostid, _) in THREADS.items():
        want_meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 4000 + idx,
                          "args": {"name": "NCCL API %s tid %d" % (MIDDOT, ostid)}})
        want_meta.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": 4000 + idx,
                          "args": {"sort_index": idx}})
    want_meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 4003,
                      "args": {"name": "NCCL API %s thread 3" % MIDDOT}})
    want_meta.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": 4003, "args": {"sort_index": 3}})
    key = lambda m: (m["name"], m.get("tid", 0))  # noqa: E731
    check(sorted(meta, key=key) == sorted(want_meta, key=key), "metadata:\n got  %r\n want %r" % (meta, want_meta))

    # --- calls: every API event exactly once, everything exact
    calls = [x for x in evs if x.get("cat") == "nccl_api"]
    rendered = [e for e in all_events if e["kind"] == 1]
    check(len(calls) == len(rendered), "%d calls rendered, %d expected" % (len(calls), len(rendered)))
    by_key = {}
    for x in calls:
        k = (x["tid"], ns_of(x["ts"]), x["name"])
        check(k not in by_key, "duplicate call %r" % (k,))
        by_key[k] = x
    for e in rendered:
        k = (4000 + e["thread"], e["start"] - B, shown_name(e))
        x = by_key.get(k)
        check(x is not None, "call %r missing" % (k,))
        want = {"name": shown_name(e), "cat": "nccl_api", "ph": "X", "pid": pid, "tid": 4000 + e["thread"],
                "ts": x["ts"], "dur": x["dur"], "args": expected_args(e)}
        check(x == want, "call:\n got  %r\n want %r" % (x, want))
        check(ns_of(x["dur"]) == max(0, e["end"] - e["start"]), "dur of %r" % (x,))
    spot = by_key[(4001, 10**12 + 7, "ncclAllReduce")]
    check(raw.count(b'"ts":1000000000.007,"dur":123456.789') == 1, "exact text of a large ts")
    check(ns_of(spot["ts"]) == 10**12 + 7, "large ts")
    check(ns_of(by_key[(4001, -5000, "ncclAllReduce")]["ts"]) == -5000, "negative ts")

    # --- groups
    groups = [x for x in evs if x.get("cat") == "nccl_group"]
    got = sorted((x["tid"], x["args"]["group"], ns_of(x["ts"]), ns_of(x["ts"]) + ns_of(x["dur"]), x["args"]["calls"])
                 for x in groups)
    want = sorted((4000 + t, g, s, e, c) for t, g, s, e, c in GROUPS)
    check(got == want, "group slices:\n got  %r\n want %r" % (got, want))
    for x in groups:
        check(x["name"] == "ncclGroup" and x["ph"] == "X" and set(x["args"]) == {"group", "calls"}, "slice %r" % (x,))
        lo, hi = ns_of(x["ts"]), ns_of(x["ts"]) + ns_of(x["dur"])
        inside = [c for c in calls if c["tid"] == x["tid"] and c["args"].get("group") == x["args"]["group"]]
        check(len(inside) >= 2, "calls of group %r" % (x["args"],))
        for c in inside:
            check(lo <= ns_of(c["ts"]) and ns_of(c["ts"]) + ns_of(c["dur"]) <= hi, "%r not inside %r" % (c, x))
        # the slice precedes the call that starts with it, so stable sorts keep the nesting
        i_slice = evs.index(x)
        starts = [i for i, c in enumerate(evs) if c.get("cat") == "nccl_api" and c["tid"] == x["tid"]
                  and c["ts"] == x["ts"]]
        check(len(starts) == 1 and starts[0] > i_slice, "GroupStart after its slice: %r" % (x,))

    # --- notes and the drop counter
    notes = sorted([x for x in evs if x["ph"] == "i"], key=lambda x: x["ts"])
    want_notes = [
        {"name": "npkit error", "cat": "npkit", "ph": "i", "s": "p", "pid": pid, "ts": notes[0]["ts"],
         "args": {"level": "error", "message": "NCCL symbol ncclCommShrink missing"}},
        {"name": "npkit warning", "cat": "npkit", "ph": "i", "s": "p", "pid": pid, "ts": notes[1]["ts"] if len(notes) > 1 else None,
         "args": {"level": "warning", "message": 'disk "full"\n\x01\ufffd end'}},
    ]
    check(notes == want_notes, "notes:\n got  %r\n want %r" % (notes, want_notes))
    check(ns_of(notes[0]["ts"]) == -10 and ns_of(notes[1]["ts"]) == 123456, "note times")
    counters = [x for x in evs if x["ph"] == "C"]
    check(len(counters) == 1, "one drop counter")
    c = counters[0]
    check(c["name"] == "npkit dropped events" and c["args"] == {"dropped": 8} and ns_of(c["ts"]) == 2 * 10**12,
          "drop counter %r" % (c,))
    check(len(evs) == len(meta) + len(calls) + len(groups) + len(notes) + len(counters),
          "unexpected events: %r" % ([x for x in evs if x["ph"] not in "MXiC"],))
    print("main scenario: %d calls, %d groups, %d metadata checked" % (len(calls), len(groups), len(meta)))


def unknown_rank_scenario():
    """No rank anywhere, no device, no drops, not closed: pid from the OS pid."""
    lines = [spec_line("header", clock_base=B, pid=2345678, rank=-1, world=-1, local_rank=-1, host='h"1', launcher="")]
    lines.append(spec_line("comm", local_id=1, comm_id=5, rank=0, nranks=1, device=-1, created_by="CommInitAll"))
    lines.append(ev_line(coll("ncclAllReduce", 1, 10, 20, 1, 1, 7, 0, redop=0)))
    log = os.path.join(WORK, "norank.npkit")
    build_log(lines, os.path.join(WORK, "norank.spec"), log)
    p = run_tool("json", log, "-o", "-", check_rc=0)
    trace = load_trace(p.stdout.decode("utf-8"))
    pid = 1 + 2345678 % 2000000
    evs = trace["traceEvents"]
    names = {x["name"]: x for x in evs if x["ph"] == "M"}
    check(names["process_name"]["args"]["name"] == 'h"1:2345678', "process name %r" % (names["process_name"],))
    check(names["process_sort_index"]["args"]["sort_index"] == 2345678, "sort index")
    check(names["process_labels"]["args"]["labels"] == "npkit-preload", "labels")
    check(all(x["pid"] == pid for x in evs), "pid %d" % pid)
    call = [x for x in evs if x["ph"] == "X"][0]
    check(call["tid"] == pid * 1000 + 1 and call["args"]["comm"] == "comm 00000000 (rank 0/1)", "call %r" % (call,))
    o = trace["otherData"]
    check(o["rank"] == -1 and o["world_size"] == -1 and o["rank_source"] == "" and o["dropped"] == 0
          and o["closed_cleanly"] is False and o["truncated"] is False, "otherData %r" % (o,))
    check(not [x for x in evs if x["ph"] == "C"], "no drop counter without drops")
    check(b"not closed cleanly" in p.stderr, "stderr says the log was not closed: %r" % (p.stderr,))
    print("unknown-rank scenario checked")


main_scenario()
unknown_rank_scenario()
print("test_render_content: OK")
