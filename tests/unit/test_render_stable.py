"""The trace, byte for byte: every renderer's output for a fixed set of logs compared with the output
kept in render_fixtures/ (gzip), so that a change of the rendering code that changes a trace is
seen, and one that must not (moving the sources onto another writer) is proven not to.

The logs were recorded from the fakes under the real mpirun (2 ranks of tests/programs/nccl_mix
--small --iters 2 --marks) and hold every source: API calls and groups, CUPTI kernels and copies
(fake CUPTI), NCCL's profiler plugin with proxy and network steps (FAKE_NCCL_NET=1), NPKit dumps
(FAKE_NCCL_NPKIT=1), marks, call stacks (NPKIT_STACK_DEPTH=4), the machine's samples
(NPKIT_GPU_SAMPLE_RATE=20000); flight_ring.npkit is a dump of the flight recorder's ring
(NPKIT_RING_MB=4) with its FLIGHT event; marks_windows.npkit is tests/callsites/callsite_prog
(--iters 6 --pause-at 2 --resume-at 3 --raise-at 4 --raise-at 5 --unterminated --compute-thread,
NPKIT_TOGGLE_SIGNAL=SIGUSR2): mark ranges cut by a pause, mark instants, the recording changes.  Outputs: `npkit json` of each log (what the library
writes at exit), and `npkit merge` of the two ranks.  `npkit convert` has its own fixture
(tests/npkit/fixture).

The tool's version in otherData is replaced by VERSION on both sides.  After an intended change of
a trace, run this file with --update (NPKIT_TOOL set), review `git diff --stat` and the traces, and
commit the new files."""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "render_fixtures")
TOOL = os.environ.get("NPKIT_TOOL", "npkit")
RANKS = ["every_source_rank0.npkit", "every_source_rank1.npkit"]
ALONE = ["flight_ring.npkit", "marks_windows.npkit"]
CASES = [("json_" + name.replace(".npkit", ""), ["json", name]) for name in RANKS + ALONE] + \
        [("merge_every_source", ["merge"] + RANKS)]


def render(args, work):
    """The trace of `npkit ARGS -o OUT`, run in the folder of the logs (copied into work)."""
    out = os.path.join(work, "out.json")
    p = subprocess.run([TOOL] + args + ["-o", out], cwd=work, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit("npkit %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    with open(out, "rb") as f:
        raw = f.read()
    version = json.loads(raw)["otherData"]["version"]
    return re.sub(rb'"version": ?"' + re.escape(version.encode()) + rb'"', b'"version":"VERSION"', raw)


# What the fixtures must keep holding, so that the comparison covers every source: trace event
# categories, and call stacks (events with "sf", and stackFrames).
COVERS = {"json_every_source_rank0": {"nccl_api", "nccl_group", "kernel", "gpu_memcpy", "ac2g", "nccl_kernel",
                                      "nccl_proxy", "nccl_net", "npkit_gpu", "npkit_cpu", "npkit_mark", "machine"},
          "json_flight_ring": {"nccl_api", "npkit_flight"},
          "json_marks_windows": {"nccl_api", "npkit_mark", "npkit"}}


def check_covers(case, raw):
    want = COVERS.get(case)
    if want is None:
        return
    doc = json.loads(raw)
    cats = {e.get("cat") for e in doc["traceEvents"]}
    missing = want - cats
    if missing:
        raise SystemExit("%s: the fixture no longer covers %s" % (case, sorted(missing)))
    if case.startswith("json_every_source") and not (doc.get("stackFrames") and any("sf" in e for e in doc["traceEvents"])):
        raise SystemExit("%s: the fixture's calls carry no call stacks" % case)


def check_stacks_resolve(case, raw):
    """Every "sf" of an event and every parent of a frame names a frame of stackFrames (a merged
    trace included)."""
    doc = json.loads(raw)
    frames = doc.get("stackFrames", {})
    bad = [e["sf"] for e in doc["traceEvents"] if "sf" in e and e["sf"] not in frames]
    bad += [f["parent"] for f in frames.values() if "parent" in f and f["parent"] not in frames]
    if bad:
        raise SystemExit("%s: %d stack ids name no frame of stackFrames, e.g. %s" % (case, len(bad), bad[:3]))
    return sum(1 for e in doc["traceEvents"] if "sf" in e)


def first_difference(a, b):
    la, lb = a.split(b"\n"), b.split(b"\n")
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return "line %d\n  kept:     %s\n  rendered: %s" % (i + 1, x[:300], y[:300])
    return "the same first %d lines, then one trace ends (%d against %d lines)" % (min(len(la), len(lb)), len(la),
                                                                                  len(lb))


def main():
    update = "--update" in sys.argv[1:]
    work = next((a for a in sys.argv[1:] if not a.startswith("--")), None) or tempfile.mkdtemp()
    os.makedirs(work, exist_ok=True)
    for name in ALONE + RANKS:
        with open(os.path.join(FIXTURES, name), "rb") as src, open(os.path.join(work, name), "wb") as dst:
            dst.write(src.read())
    # every block of the fixtures is of a type the reader knows (STACK, MACHINE, POOL included)
    for name in RANKS + ALONE:
        p = subprocess.run([TOOL, "info", name], cwd=work, capture_output=True, text=True, timeout=60)
        if p.returncode != 0 or "unknown types" in p.stdout:
            raise SystemExit("npkit info %s: exit %d\n%s" % (name, p.returncode, p.stdout[:2000]))
    failed = []
    for case, args in CASES:
        got = render(args, work)
        check_covers(case, got)
        if case.endswith("every_source") and check_stacks_resolve(case, got) == 0:
            raise SystemExit("%s: no call carries a stack" % case)
        check_stacks_resolve(case, got)
        kept_path = os.path.join(FIXTURES, case + ".json.gz")
        if update:
            with gzip.open(kept_path, "wb", compresslevel=9) as f:
                f.write(got)
            print("%s: written (%d bytes)" % (kept_path, len(got)))
            continue
        with gzip.open(kept_path, "rb") as f:
            kept = f.read()
        if got != kept:
            with open(os.path.join(work, case + ".rendered.json"), "wb") as f:
                f.write(got)
            failed.append("%s (npkit %s): the trace differs from %s at %s" % (case, " ".join(args), kept_path,
                                                                             first_difference(kept, got)))
        else:
            print("%s: %d bytes, the same" % (case, len(got)))
    if failed:
        raise SystemExit("\n".join(failed) + "\n(the rendered traces are in %s)" % work)


if __name__ == "__main__":
    main()
