"""A log cut at every byte offset of its last blocks (and at offsets inside its header) still
renders: valid JSON holding exactly the calls of the complete blocks, with otherData saying whether
the log was truncated or closed; a cut header is a clean error."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npkit_testlib import *  # noqa: E402,F401,F403

B = 1764671234567890123
WORK = sys.argv[1] if len(sys.argv) > 1 else "test_truncation.work"
os.makedirs(WORK, exist_ok=True)


def ev(fn, thread, start, end, **kw):
    fields = dict(fn=FN_ID[fn], thread=thread, start=B + start, end=B + end, comm=1, count=4, datatype=7,
                  bytes=16, seq=start, stream=0x7f)
    fields.update(kw)
    return spec_line("ev", **fields)


lines = [spec_line("header", clock_base=B)]
lines.append(spec_line("comm", local_id=1, comm_id=0x1122334455667788, rank=3, nranks=4, device=0,
                       created_by="CommInitRank"))
lines.append(spec_line("thread", index=1, os_tid=77, name="main"))
lines += [ev("ncclAllReduce", 1, 1000 * i, 1000 * i + 500, redop=0) for i in range(40)]
lines.append(ev("ncclGroupStart", 1, 50000, 50100, group=3, comm=0))
lines.append(ev("ncclSend", 1, 50200, 50300, group=3, peer=1))
lines.append("flush")
lines += [ev("ncclAllReduce", 1, 60000 + 1000 * i, 60000 + 1000 * i + 500, redop=0) for i in range(3)]
lines.append(spec_line("note", time=B + 70000, level=2, text="a warning of some length"))
lines.append(spec_line("counter", thread=1, recorded=45, dropped=2))
lines.append(ev("ncclRecv", 1, 80000, 80300, group=3, peer=1))
lines.append(ev("ncclGroupEnd", 1, 80400, 90000, group=3, comm=0))
lines.append(spec_line("end", end_ns=B + 100000, recorded=47, dropped=2))

full = os.path.join(WORK, "full.npkit")
blocks = build_log(lines, os.path.join(WORK, "full.spec"), full)
data = open(full, "rb").read()
check(blocks[-1][2] == len(data), "block list covers the file")
EVENTS, END = 1, 15
RECORD = header_sizes(full)[1]


def expect(cut):
    """(calls, groups, truncated, closed) for a log cut after `cut` bytes."""
    calls = groups = 0
    truncated, closed = True, False
    if cut == 256:
        truncated = False
    for t, off, end in blocks:
        if end > cut:
            break
        if end == cut:
            truncated = False
        if t == EVENTS:
            calls += (end - off - 16) // RECORD
        if t == END:
            closed = True
    groups = 1 if calls > 40 else 0  # the GroupStart is the 41st call
    return calls, groups, truncated, closed


cut_log = os.path.join(WORK, "cut.npkit")
out = os.path.join(WORK, "cut.json")
first = blocks[-5][1]  # the last five blocks: EVENTS, NOTE, COUNTERS, EVENTS, END


def telling(cut):
    """Whether a cut is one of those where the reader's state changes: in a block's first 24 bytes
    (its header) or last 8, or at the edge of an event record."""
    for t, off, end in blocks:
        if off <= cut <= end:
            if cut - off < 24 or end - cut < 8:
                return True
            if t == EVENTS and (cut - off - 16) % RECORD in (0, 1, RECORD - 1):
                return True
    return False


# every byte in the normal build; in a sanitizer build (each run of the tool 10-20 times slower,
# over a thousand of them) the telling cuts and every 7th byte between them
cuts = [c for c in range(first, len(data) + 1) if not os.environ.get("NPKIT_SANITIZE") or telling(c) or c % 7 == 0]
cuts += [256, 264, blocks[0][2], blocks[3][1] + 100]
for cut in cuts:
    with open(cut_log, "wb") as f:
        f.write(data[:cut])
    p = run_tool("json", cut_log, "-o", out, check_rc=0)
    trace = load_trace(open(out, encoding="utf-8").read())
    calls, groups, truncated, closed = expect(cut)
    evs = trace["traceEvents"]
    got_calls = [x for x in evs if x.get("cat") == "nccl_api"]
    got_groups = [x for x in evs if x.get("cat") == "nccl_group"]
    o = trace["otherData"]
    check(len(got_calls) == calls, "cut %d: %d calls, expected %d" % (cut, len(got_calls), calls))
    check(len(got_groups) == groups, "cut %d: %d groups, expected %d" % (cut, len(got_groups), groups))
    check(o["events"] == calls, "cut %d: otherData.events %d" % (cut, o["events"]))
    check(o["truncated"] is truncated, "cut %d: truncated %r" % (cut, o["truncated"]))
    check(o["closed_cleanly"] is closed, "cut %d: closed %r" % (cut, o["closed_cleanly"]))
    check(("truncation" in o) == truncated, "cut %d: truncation reason" % cut)
    if truncated:
        check(b"is truncated" in p.stderr, "cut %d: stderr %r" % (cut, p.stderr))
    if groups:
        g = got_groups[0]
        # closed at the GroupEnd when it is there, else at the last call of the thread
        last_end = max(ns_of(x["ts"]) + ns_of(x["dur"]) for x in got_calls)
        want_end = 90000 if calls == 47 else last_end
        check(ns_of(g["ts"]) == 50000 and ns_of(g["ts"]) + ns_of(g["dur"]) == want_end,
              "cut %d: group slice %r" % (cut, g))
    # dropped counter appears once the COUNTERS block is complete
    counters = [x for x in evs if x["ph"] == "C"]
    counters_done = any(t == 5 and end <= cut for t, off, end in blocks)
    check(len(counters) == (1 if counters_done else 0), "cut %d: drop counter" % cut)
print("%d cuts of the last blocks render correctly" % len(cuts))

# cut inside the header: a clean error, and no output file
for cut in list(range(0, 16)) + list(range(16, 256, 8)) + [255]:
    with open(cut_log, "wb") as f:
        f.write(data[:cut])
    if os.path.exists(out):
        os.unlink(out)
    p = run_tool("json", cut_log, "-o", out, check_rc=1)
    msg = p.stderr.decode()
    want = "empty file" if cut == 0 else "bad magic" if cut < 8 else "truncated header"
    check(want in msg and "cut.npkit" in msg, "cut %d: message %r" % (cut, msg))
    check(not os.path.exists(out) and not os.path.exists(out + ".partial"), "cut %d: no output" % cut)
print("header cuts give clean errors")
print("test_truncation: OK")
