"""Helpers of the `npkit report` / `npkit merge` tests: synthetic logs with a known truth
(gen_report_logs), running the tool, and the model's expected values computed independently.

The tests run through ctest, which sets NPKIT_TOOL, NPKIT_GEN_REPORT_LOGS and the paths of
tests/CMakeLists.txt; the shared helpers of the integration tests are reused."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import npkit_testlib as lib  # noqa: E402  (after the path is set)

T0 = 1764671234000000000        # true time of the generator's clock origin


def generator():
    return lib.need_file(lib.need_env("NPKIT_GEN_REPORT_LOGS"), "gen_report_logs")


def gen(out_dir, *args):
    """Writes synthetic logs into out_dir; returns the number of collective instances."""
    os.makedirs(out_dir, exist_ok=True)
    cmd = [generator(), out_dir] + [str(a) for a in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError("%s failed: %s" % (" ".join(cmd), proc.stderr))
    return int(proc.stdout.split()[0])


def tool(*args, timeout=120):
    return lib.run_tool([str(a) for a in args], timeout=timeout)


def report_json(test, *args):
    run = tool("report", "--json", *args)
    test.assertEqual(run.rc, 0, run.describe())
    return json.loads(run.stdout)


def coll_time_ns(size, lat=5000.0, bw=100.0, bw_above=None):
    """The generator's collective time: lat + S / bw (GB/s = bytes per ns)."""
    if bw_above and size > bw_above[0]:
        bw = bw_above[1]
    return lat + size / bw


def allreduce_factor(n):
    return 2.0 * (n - 1) / n


def findings_of(rep, kind):
    return [f for f in rep["findings"] if f["kind"] == kind]


def host_entry(rep_or_trace_alignment, name):
    for h in rep_or_trace_alignment["hosts"]:
        if h["host"] == name:
            return h
    raise AssertionError("host %s not in %r" % (name, rep_or_trace_alignment["hosts"]))
