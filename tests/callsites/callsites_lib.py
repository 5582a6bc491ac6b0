"""Helpers of the call-site, mark and window tests: the programs of this folder, running them under
the preloaded library, and reading their traces.  Builds on the integration tests' helpers
(tests/integration/npkit_testlib.py) for paths, environments and strict JSON reading."""

import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("NPKIT_SOURCE_DIR", ""), "tests", "integration"))
import npkit_testlib as lib  # noqa: E402

SETTINGS = lib.LIBRARY_SETTINGS + ("NPKIT_STACK_DEPTH", "NPKIT_STACK_LINES", "NPKIT_START_AFTER",
                                   "NPKIT_STOP_AFTER", "NPKIT_TOGGLE_SIGNAL")


def build_dir():
    return lib.need_env("NPKIT_CALLSITES_DIR")


def prog(name):
    return lib.need_file(os.path.join(build_dir(), name), "test program " + name)


def source(*parts):
    return os.path.join(lib.source_dir(), *parts)


def source_line(marker, path=None):
    """1-based line of the test program's source that holds `marker`."""
    path = path or source("tests", "callsites", "callsite_prog.c")
    with open(path) as f:
        found = [i + 1 for i, line in enumerate(f) if marker in line]
    if len(found) != 1:
        raise AssertionError("%d lines of %s hold %r" % (len(found), path, marker))
    return found[0]


def clean_env():
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    env.pop("LD_PRELOAD", None)
    return env


def run(cmd, settings=None, preload=True, extra_lib_dirs=(), timeout=120, cwd=None):
    """Runs a program of this folder (or any command) under the library with the given settings."""
    env = clean_env()
    env.update(lib.job_env("fake", preload, settings))
    if extra_lib_dirs:
        env["LD_LIBRARY_PATH"] = ":".join(list(extra_lib_dirs) + [env["LD_LIBRARY_PATH"]])
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("timed out after %ss: %s\n%s" % (timeout, " ".join(cmd), e.stderr))
    return lib.Run(cmd, proc)


def traces(trace_dir):
    files = sorted(glob.glob(os.path.join(trace_dir, "*.json")))
    return [lib.Trace(f) for f in files]


def one_trace(test, trace_dir):
    ts = traces(trace_dir)
    test.assertEqual(len(ts), 1, "traces in %s: %r" % (trace_dir, os.listdir(trace_dir)))
    return ts[0]


def marks(trace, ph=None, name=None):
    return sorted([e for e in trace.events if e.get("cat") == "npkit_mark"
                   and (ph is None or e["ph"] == ph) and (name is None or e["name"] == name)],
                  key=lambda e: e["ts"])


def toggles(trace):
    return sorted([e for e in trace.events if e.get("cat") == "npkit" and e.get("ph") == "i"
                   and e["name"].startswith("npkit recording ")], key=lambda e: e["ts"])


def api(trace, name=None):
    return [e for e in trace.api() if name is None or e["name"] == name]


def frames(event):
    return event["args"]["stack"].split("\n")


def function_of(frame):
    """'issue_allreduce' of 'issue_allreduce+0x1f (prog+0x1322) prog.c:38'."""
    m = re.match(r"^(.*?)\+0x[0-9a-f]+ \(", frame)
    return m.group(1) if m else frame


def has_debug_info_for(path, source_name):
    """Whether the binary has DWARF for a compilation unit of that source file."""
    out = subprocess.run(["readelf", "--debug-dump=info", "-W", path], capture_output=True, text=True).stdout
    return re.search(r"DW_AT_name\s*:.*\b%s$" % re.escape(source_name), out, re.M) is not None


def readelf_sections(path):
    out = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"\]\s+(\.\S+)", out))
