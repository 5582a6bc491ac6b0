"""Damaged, old and newer logs through every command: a corrupt block in the middle is skipped and
the rest read, and info, json, report and merge say so on standard error and in their output's
metadata; a flipped payload byte is found by the checksum; a log of version 1 (npkit-preload
0.1/0.2) is read in full; a log of a later version is read and every command says so; `npkit info`
tells the state of a log by its exit status."""
import json
import os
import re
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npkit_testlib import *  # noqa: E402,F401,F403

B = 1764671234567890123
WORK = sys.argv[1] if len(sys.argv) > 1 else "test_damage.work"
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
EVENTS_BLOCK = 1
N_BLOCKS, PER_BLOCK = 10, 3


def write_log(name, version=2, end=True, rank=0):
    """One rank of a 2-rank job: 10 EVENTS blocks of 3 AllReduce calls each. Returns the path, the
    blocks and the start times of the calls, block by block."""
    lines = [spec_line("header", clock_base=B, pid=500 + len(name), rank=rank, world=2, local_rank=rank, host="n1",
                       version=version),
             spec_line("comm", local_id=1, comm_id=0x77, rank=rank, nranks=2, device=rank, created_by="CommInitRank"),
             spec_line("thread", index=1, os_tid=900, name="main")]
    starts = []
    for b in range(N_BLOCKS):
        block = []
        for i in range(PER_BLOCK):
            seq = b * PER_BLOCK + i
            t = B + 1000 + seq * 10000
            block.append(t)
            lines.append(spec_line("ev", fn="AllReduce", thread=1, start=t, end=t + 5000, comm=1, count=256,
                                   bytes=1024, datatype=7, redop=0, seq=seq))
        lines.append("flush")
        starts.append(block)
    if end:
        lines.append(spec_line("end", end_ns=B + 10**9, recorded=N_BLOCKS * PER_BLOCK, dropped=0, blocks=13))
    path = os.path.join(WORK, name + ".npkit")
    blocks = build_log(lines, os.path.join(WORK, name + ".spec"), path)
    return path, [b for b in blocks if b[0] == EVENTS_BLOCK], starts


def patch(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def trace_starts(trace):
    base = int(trace["otherData"]["base_ns"])
    return sorted(base + ns_of(e["ts"]) for e in trace["traceEvents"] if e.get("cat") == "nccl_api")


def info_status(path):
    return run_tool("info", path).returncode


# --- the size of the 4th EVENTS block's header overwritten with 0x7FFFFFF0 ---------------------
log, ev_blocks, starts = write_log("size")
bad = ev_blocks[3]
skipped = bad[2] - bad[1]  # the block with its CHECK block
patch(log, bad[1] + 12, struct.pack("<I", 0x7FFFFFF0))
want_starts = sorted(t for i, blk in enumerate(starts) if i != 3 for t in blk)
damage = "1 corrupt block (%d bytes) skipped, the first at offset %d" % (skipped, bad[1])

p = run_tool("info", log, check_rc=5)
out = p.stdout.decode()
check(re.search(r"^damage\s+1 corrupt block skipped \(%d bytes\), the first at offset %d: incomplete EVENTS block"
                % (skipped, bad[1]), out, re.M), "info damage line:\n" + out)
check(re.search(r"^events\s+%d " % len(want_starts), out, re.M), "info counts the readable events:\n" + out)
check(re.search(r"^state\s+closed cleanly$", out, re.M), "the END block after the damage is read:\n" + out)
check(damage in p.stderr.decode(), "info warns on stderr: %r" % p.stderr)

jpath = os.path.join(WORK, "size.json")
p = run_tool("json", log, "-o", jpath, check_rc=0)
check(("warning: %s: %s" % (log, damage)) in p.stderr.decode(), "json warns on stderr: %r" % p.stderr)
trace = load_trace(open(jpath).read())
o = trace["otherData"]
check((o["skipped_blocks"], o["skipped_bytes"]) == (1, skipped), "otherData skipped: %r" % o)
check(o["damage"].startswith(damage) and o["truncated"] is False and o["closed_cleanly"] is True, "otherData: %r" % o)
check(trace_starts(trace) == want_starts, "the trace holds every call outside the bad block")
p = run_tool("json", "-q", log, "-o", jpath, check_rc=0)
check(damage in p.stderr.decode(), "damage is said even with -q")

# the other rank, intact, so that report and merge compare two ranks
other, _, _ = write_log("other", rank=1)
p = run_tool("report", "--json", log, other, check_rc=0)
check(damage in p.stderr.decode(), "report warns on stderr: %r" % p.stderr)
rep = json.loads(p.stdout)
logs = {l["path"]: l for l in rep["ranks"]}
check((logs[log]["skipped_blocks"], logs[log]["skipped_bytes"]) == (1, skipped), "report log entry %r" % logs[log])
check((logs[other]["skipped_blocks"], logs[other]["log_version"]) == (0, 2), "intact log %r" % logs[other])
check(any(damage in w for w in rep["inputs"]["warnings"]), "report JSON warnings: %r" % rep["inputs"])
check(any(f["title"] == "The log of rank 0 is damaged" for f in rep["findings"]),
      "a finding names the damaged rank: %r" % [f["title"] for f in rep["findings"]])
p = run_tool("report", log, other, check_rc=0)
check(damage in p.stderr.decode() and damage in p.stdout.decode(), "text report: stderr and the report say it")

mpath = os.path.join(WORK, "merged.json")
p = run_tool("merge", log, other, "-o", mpath, check_rc=0)
check(damage in p.stderr.decode(), "merge warns on stderr: %r" % p.stderr)
merged = load_trace(open(mpath).read())
entries = {e["path"]: e["summary"] for e in merged["otherData"]["logs"]}
check(entries[log]["skipped_blocks"] == 1 and entries[other]["skipped_blocks"] == 0, "merge otherData.logs")
check(any(damage in w for w in merged["otherData"]["warnings"]), "merge otherData.warnings")
api = [e for e in merged["traceEvents"] if e.get("cat") == "nccl_api"]
check(len(api) == len(want_starts) + N_BLOCKS * PER_BLOCK, "merge: %d calls" % len(api))

# --- one flipped bit in a call's payload: the checksum finds it, the block is skipped ----------
log, ev_blocks, starts = write_log("flip")
patch(log, ev_blocks[5][1] + 16 + 128 + 30, b"\x5a")
p = run_tool("info", log, check_rc=5)
check("corrupt EVENTS block: bad checksum" in p.stdout.decode(), "info names the bad checksum:\n%s" % p.stdout)
p = run_tool("json", log, "-o", jpath, check_rc=0)
trace = load_trace(open(jpath).read())
check(trace_starts(trace) == sorted(t for i, blk in enumerate(starts) if i != 5 for t in blk), "flip: other calls")

# --- the format of npkit-preload 0.1 and 0.2 (version 1, no checksums) -------------------------
log, _, starts = write_log("v1", version=1)
p = run_tool("info", log, check_rc=0)
check(re.search(r"^format\s+version 1, header 256 bytes", p.stdout.decode(), re.M), "v1 format line")
p = run_tool("json", log, "-o", jpath, check_rc=0)
check(p.stderr.decode().count("warning") == 0, "a v1 log is no damage: %r" % p.stderr)
trace = load_trace(open(jpath).read())
check(trace["otherData"]["log_version"] == 1 and trace_starts(trace) == sorted(sum(starts, [])), "v1 trace")
rep = json.loads(run_tool("report", "--json", log, check_rc=0).stdout)
check(rep["ranks"][0]["log_version"] == 1 and rep["ranks"][0]["events"] == N_BLOCKS * PER_BLOCK, "v1 report")

# --- a log of a later version: read, and every command says so on stderr ----------------------
log, _, starts = write_log("v9", version=9)
note = "event-log format version 9 is newer than this npkit's"
for args in (["info", log], ["json", log, "-o", jpath], ["json", "-q", log, "-o", jpath], ["report", log],
             ["report", "--json", log], ["merge", log, "-o", mpath]):
    p = run_tool(*args, check_rc=0)
    check(note in p.stderr.decode(), "npkit %s says the version is newer: %r" % (args[0], p.stderr))
trace = load_trace(open(jpath).read())
check(trace_starts(trace) == sorted(sum(starts, [])), "the newer log is read in full")

# --- npkit info: the exit status tells the state -----------------------------------------------
log, ev_blocks, _ = write_log("open", end=False)
check(info_status(log) == 3, "no END block: 3")
data = open(log, "rb").read()
cut = os.path.join(WORK, "cut.npkit")
open(cut, "wb").write(data[:ev_blocks[-1][1] + 40])
check(info_status(cut) == 4, "cut inside a block: 4")
log, _, _ = write_log("closed")
check(info_status(log) == 0, "complete: 0")
check(info_status(os.path.join(WORK, "closed.spec")) == 1, "not a log: 1")
helptext = run_tool("info", "--help", check_rc=0).stdout.decode()
for code in range(6):
    check(re.search(r"^  %d  \S" % code, helptext, re.M), "info --help documents exit status %d" % code)
print("test_damage: OK")
