"""Valid but empty logs through every command: a header only, no calls, no collectives, only failed
calls (what the real NCCL gives on a machine without a GPU), one rank alone in its communicator.
Each command succeeds and says what is there; the numbers are computed here from the spec files
(the same ones the fuzz targets start from, tests/fuzz/seeds)."""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npkit_testlib import *  # noqa: E402,F401,F403

WORK = sys.argv[1] if len(sys.argv) > 1 else "test_empty_logs.work"
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
SEEDS = os.path.join(SOURCE_DIR, "tests", "fuzz", "seeds")
DATA_MOVING = {"coll", "p2p"}


def parse_spec(path):
    """[(record, {key: value})] of a build_log spec."""
    out = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        rec, *fields = line.split()
        out.append((rec, dict(f.split("=", 1) for f in fields)))
    return out


def sanitizer_clean(p, what):
    err = p.stderr.decode(errors="replace")
    check("runtime error:" not in err and "Sanitizer" not in err, "%s: sanitizer report:\n%s" % (what, err))


for name in ("minimal", "empty_no_calls", "empty_no_collectives", "empty_failed_only", "empty_one_rank"):
    spec = os.path.join(SEEDS, name + ".spec")
    recs = parse_spec(spec)
    log = os.path.join(WORK, name + ".npkit")
    build_log([l.rstrip("\n") for l in open(spec)], os.path.join(WORK, name + ".spec"), log)
    calls = [f for r, f in recs if r == "ev"]
    closed = any(r == "end" for r, _ in recs)
    comms = {int(f["local_id"]): f for r, f in recs if r == "comm"}
    # the collectives the table must show: successful data-moving calls on a known communicator
    ok = [c for c in calls if fn_class(FN_ID["nccl" + c["fn"]]) in DATA_MOVING and int(c.get("result", 0)) == 0
          and int(c.get("comm", 0)) in comms]

    p = run_tool("info", log, check_rc=0 if closed else 3)
    sanitizer_clean(p, name + " info")
    out = p.stdout.decode()
    check(re.search(r"^events\s+%d " % len(calls), out, re.M), "%s: info events:\n%s" % (name, out))
    failed = sum(1 for c in calls if int(c.get("result", 0)) != 0)
    for fn in {c["fn"] for c in calls}:
        n = sum(1 for c in calls if c["fn"] == fn)
        nf = sum(1 for c in calls if c["fn"] == fn and int(c.get("result", 0)) != 0)
        check(re.search(r"^  nccl%s\s+%d\s+%d\s" % (fn, n, nf), out, re.M), "%s: info row of %s:\n%s" % (name, fn, out))

    jpath = os.path.join(WORK, name + ".json")
    p = run_tool("json", log, "-o", jpath, check_rc=0)
    sanitizer_clean(p, name + " json")
    trace = load_trace(open(jpath).read())
    api = [e for e in trace["traceEvents"] if e.get("cat") == "nccl_api"]
    check(len(api) == len(calls), "%s: %d calls in the trace" % (name, len(api)))
    check(sum(1 for e in api if e["args"].get("result", "ncclSuccess") != "ncclSuccess") == failed, name + ": failed")

    for args in (["report", log], ["report", "--html", os.path.join(WORK, name + ".html"), log]):
        p = run_tool(*args, check_rc=0)
        sanitizer_clean(p, name + " " + " ".join(args[:2]))
    check(open(os.path.join(WORK, name + ".html")).read().lstrip().lower().startswith("<!doctype html"), "html page")
    p = run_tool("report", "--json", log, check_rc=0)
    sanitizer_clean(p, name + " report --json")
    rep = json.loads(p.stdout)
    check(rep["ranks"][0]["nccl_calls"] == len(calls), "%s: report nccl_calls" % name)
    rows = rep["collectives"]
    check(sorted(r["op"] for r in rows for _ in range(r["calls"])) == sorted(c["fn"] for c in ok),
          "%s: collectives table %r" % (name, rows))
    for r in rows:
        mine = [c for c in ok if c["fn"] == r["op"]]
        mean_ns = sum(int(c["end"]) - int(c["start"]) for c in mine) / len(mine)
        nbytes = int(mine[0]["bytes"])
        check(abs(r["algbw_gbs"] - nbytes / mean_ns) < 1e-9, "%s: algbw %r" % (name, r))
        # AllReduce's bus factor 2(n-1)/n is 0 for a rank alone: nothing crosses a link
        n = int(comms[int(mine[0]["comm"])]["nranks"])
        check(r["op"] != "AllReduce" or r["busbw_gbs"] == (2 * (n - 1) / n) * r["algbw_gbs"],
              "%s: busbw %r" % (name, r))
    check(rep["stragglers"]["instances"] == 0, name + ": nothing to compare across ranks")

    mpath = os.path.join(WORK, name + ".merged.json")
    p = run_tool("merge", log, "-o", mpath, check_rc=0)
    sanitizer_clean(p, name + " merge")
    merged = load_trace(open(mpath).read())
    check(sum(1 for e in merged["traceEvents"] if e.get("cat") == "nccl_api") == len(calls), name + ": merged calls")
print("test_empty_logs: OK")
