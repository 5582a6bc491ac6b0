"""User marks (include/npkit_preload.h): ranges and instants land on the calling thread's track in
the order the program made them; a program built with the header runs unchanged without the
library; the functions work from C++ and from Python through ctypes; npkit report counts marked
ranges as computation when it measures overlap with communication."""

import os
import re
import shutil
import subprocess
import textwrap
import unittest

import callsites_lib as cs

lib = cs.lib
ITERS = 5


def ns(trace, e, end=False):
    return trace.end_ns(e) if end else trace.start_ns(e)


def union(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        elif b > a:
            out.append([a, b])
    return out


def intersect(x, y):
    t, i, j = 0, 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        t += max(0, b - a)
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return t


def duration_ns(text):
    value, unit = text.split()
    return float(value) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]


class Marks(lib.TempDirTestCase):

    def run_prog(self, args, settings=None, preload=True):
        self.runs = getattr(self, "runs", 0) + 1
        trace_dir = self.path("trace%d" % self.runs)
        r = cs.run([cs.prog("callsite_prog_g")] + args, dict(settings or {}, NPKIT_TRACE_DIR=trace_dir),
                   preload=preload)
        self.assertRunOk(r)
        return trace_dir, r

    def test_marks_where_the_program_made_them(self):
        trace_dir, _ = self.run_prog(["--iters", str(ITERS), "--gemm-us", "300"])
        t = cs.one_trace(self, trace_dir)
        gemm, step = cs.marks(t, "X", "GEMM"), cs.marks(t, "X", "step")
        done = cs.marks(t, "i", "iteration done")
        ar, bc = cs.api(t, "ncclAllReduce"), cs.api(t, "ncclBroadcast")
        for evs in (gemm, step, done, ar, bc):
            self.assertEqual(len(evs), ITERS)
        tid = ar[0]["tid"]
        for e in gemm + step + done:
            self.assertEqual(e["tid"], tid, e)
            self.assertEqual(e["pid"], ar[0]["pid"])
        for e in done:
            self.assertEqual(e["s"], "t")
            self.assertNotIn("dur", e)
        for k in range(ITERS):
            # step ⊇ GEMM, then AllReduce, Broadcast, the instant — in this order, inside the step
            self.assertLessEqual(ns(t, step[k]), ns(t, gemm[k]))
            self.assertGreaterEqual(ns(t, gemm[k], True) - ns(t, gemm[k]), 300000)
            self.assertLessEqual(ns(t, gemm[k], True), ns(t, ar[k]))
            self.assertLessEqual(ns(t, ar[k], True), ns(t, bc[k]))
            self.assertLessEqual(ns(t, bc[k], True), ns(t, done[k]))
            self.assertLessEqual(ns(t, done[k]), ns(t, step[k], True))
            if k + 1 < ITERS:
                self.assertLessEqual(ns(t, step[k], True), ns(t, step[k + 1]))
            self.assertNotIn("args", gemm[k])

    def test_range_open_at_exit(self):
        trace_dir, _ = self.run_prog(["--iters", "2", "--unterminated"])
        t = cs.one_trace(self, trace_dir)
        open_range = cs.marks(t, "X", "open range")
        self.assertEqual(len(open_range), 1)
        self.assertIs(open_range[0]["args"]["unterminated"], True)
        last_end = max(ns(t, e, True) for e in t.api())
        self.assertLessEqual(ns(t, open_range[0]), ns(t, cs.marks(t, "X", "GEMM")[0]))
        self.assertGreaterEqual(ns(t, open_range[0], True), last_end)

    def test_runs_without_the_library(self):
        work = self.path("cwd")
        os.mkdir(work)
        r = cs.run([cs.prog("callsite_prog_g"), "--iters", "3"], preload=False, cwd=work)
        self.assertRunOk(r)
        self.assertEqual(os.listdir(work), [])
        self.assertNotIn("npkit", r.stderr)

    def test_python_ctypes(self):
        script = textwrap.dedent("""\
            import ctypes, time
            lib = ctypes.CDLL(None)
            begin = getattr(lib, "npkit_mark_begin", None)
            print("library" if begin else "no library")
            if begin:
                begin(b"python GEMM")
                time.sleep(0.003)
                lib.npkit_mark_end(b"python GEMM")
                lib.npkit_mark_instant(b"python instant")
            """)
        trace_dir = self.path("py")
        r = cs.run(["python3", "-c", script], {"NPKIT_TRACE_DIR": trace_dir})
        self.assertRunOk(r)
        self.assertEqual(r.stdout.strip(), "library")
        t = cs.one_trace(self, trace_dir)
        rng, inst = cs.marks(t, "X", "python GEMM"), cs.marks(t, "i", "python instant")
        self.assertEqual((len(rng), len(inst)), (1, 1))
        self.assertGreaterEqual(ns(t, rng[0], True) - ns(t, rng[0]), 3000000)
        self.assertLessEqual(ns(t, rng[0], True), ns(t, inst[0]))
        names = t.thread_names()
        self.assertRegex(names[rng[0]["tid"]], r"tid \d+$")
        r = cs.run(["python3", "-c", script], {"NPKIT_TRACE_DIR": self.path("py2")}, preload=False)
        self.assertRunOk(r)
        self.assertEqual(r.stdout.strip(), "no library")
        self.assertFalse(os.path.exists(self.path("py2")))

    def compiler(self, names):
        for n in names:
            if shutil.which(n):
                return shutil.which(n)
        return None

    def test_header_from_c_and_cxx(self):
        header_dir = cs.source("include")
        cc = lib.need_env("NPKIT_C_COMPILER")
        r = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-fsyntax-only",
                            "-I", header_dir, "-x", "c", os.path.join(header_dir, "npkit_preload.h")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        cxx = self.compiler(["c++", "g++", "clang++"])
        if cxx is None:
            self.skipTest("no C++ compiler")
        src = self.path("marks.cpp")
        with open(src, "w") as f:
            f.write(textwrap.dedent("""\
                #include <npkit_preload.h>
                #include <string>
                int main() {
                  std::string name = "C++ range";
                  npkit_mark_begin(name.c_str());
                  npkit_mark_instant("C++ instant");
                  npkit_mark_end(name.c_str());
                  npkit_pause();
                  npkit_mark_instant("not recorded");
                  npkit_resume();
                  return 0;
                }
                """))
        exe = self.path("marks_cxx")
        r = subprocess.run([cxx, "-std=c++11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I", header_dir, src,
                            "-o", exe, "-ldl"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = cs.run([exe], preload=False, cwd=self.tmp)
        self.assertRunOk(r)
        trace_dir = self.path("cxx")
        r = cs.run([exe], {"NPKIT_TRACE_DIR": trace_dir})
        self.assertRunOk(r)
        t = cs.one_trace(self, trace_dir)
        self.assertEqual(len(cs.marks(t, "X", "C++ range")), 1)
        self.assertEqual(len(cs.marks(t, "i", "C++ instant")), 1)
        self.assertEqual(cs.marks(t, name="not recorded"), [])
        self.assertEqual([e["args"]["reason"] for e in cs.toggles(t)], ["npkit_pause()", "npkit_resume()"])

    def report_overlap(self, trace_dir):
        r = lib.run_tool(["report", trace_dir])
        self.assertEqual(r.rc, 0, r.describe())
        m = re.search(r"^\nOverlap with marked computation\n(?:.*\n){2}  rank .*\n  (rank 0) +([\d.]+)% +([\d.]+ \w+) +"
                      r"([\d.]+ \w+) +([\d.]+ \w+)  (.*)$", r.stdout, re.M)
        self.assertIsNotNone(m, r.stdout)
        return float(m.group(2)), duration_ns(m.group(3)), duration_ns(m.group(4)), m.group(6)

    def test_report_overlap_single_thread(self):
        # one thread: it computes or it communicates, never both
        trace_dir, _ = self.run_prog(["--iters", str(ITERS)])
        t = cs.one_trace(self, trace_dir)
        ratio, comm, compute, names = self.report_overlap(trace_dir)
        self.assertEqual(ratio, 0.0)
        calls = [(ns(t, e), ns(t, e, True)) for e in t.api() if e["name"] in ("ncclAllReduce", "ncclBroadcast")]
        want = sum(b - a for a, b in union(calls))
        self.assertAlmostEqual(comm, want, delta=want * 0.006)
        gemm = sum(ns(t, e, True) - ns(t, e) for e in cs.marks(t, "X", "GEMM"))
        self.assertGreaterEqual(compute, gemm * 0.994)
        self.assertRegex(names, r"\bGEMM \(%d, " % ITERS)
        self.assertRegex(names, r"\bstep \(%d, " % ITERS)

    def test_report_overlap_compute_thread(self):
        trace_dir, _ = self.run_prog(["--iters", "20", "--compute-thread", "--no-marks"])
        t = cs.one_trace(self, trace_dir)
        ratio, comm, compute, names = self.report_overlap(trace_dir)
        calls = union([(ns(t, e), ns(t, e, True)) for e in t.api() if e["name"] in ("ncclAllReduce", "ncclBroadcast")])
        bg = union([(ns(t, e), ns(t, e, True)) for e in cs.marks(t, "X", "background GEMM")])
        want = intersect(calls, bg) / sum(b - a for a, b in calls)
        self.assertGreater(want, 0.2, "the compute thread ran alongside the calls")
        self.assertAlmostEqual(ratio / 100, want, delta=0.0006)
        self.assertRegex(names, r"^background GEMM \(\d+, ")


if __name__ == "__main__":
    unittest.main()
