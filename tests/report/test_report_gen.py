"""The generator of synthetic jobs (gen_report_logs.c) at the sizes of big training jobs: more than
256 ranks and 16 hosts, each rank written on its own (any number of threads gives the same bytes),
packed events by default (what the library writes) read exactly as the unpacked ones, offsets
spread over many hosts and found again by the report.  And the report on several threads
(`-j N`): the same bytes as on one, in text, JSON and HTML."""

import filecmp
import json
import os
import unittest

import report_testlib as rt
from report_testlib import lib

ARGS = ("--ranks", 600, "--hosts", 40, "--gpu", "--period", 1000000, "--sizes", "65536,1048576",
        "--plugin", "RING:SIMPLE", "--events", 400, "--spread-offsets", 3000000, "--exit-jitter", 500)


class Generator(lib.TempDirTestCase):

    def test_threads_give_the_same_bytes(self):
        a, b = self.path("one"), self.path("four")
        n1 = rt.gen(a, *ARGS, "--jobs", 1)
        n4 = rt.gen(b, *ARGS, "--jobs", 4)
        self.assertEqual(n1, n4)
        self.assertEqual(n1, 100)  # 400 events: a call, two kernels and a task an instance
        names = sorted(os.listdir(a))
        self.assertEqual(len(names), 600)
        self.assertEqual(names, sorted(os.listdir(b)))
        match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
        self.assertEqual((mismatch, errors), ([], []))
        # the hosts are numbered by rank blocks: 15 ranks each
        self.assertEqual(len({n.split("_")[1] for n in names}), 40)

    def test_packed_reads_as_unpacked(self):
        p, u = self.path("packed"), self.path("unpacked")
        rt.gen(p, *ARGS)
        rt.gen(u, *ARGS, "--unpacked")
        size = lambda d: sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        self.assertLess(size(p) * 3, size(u))  # the library's packed blocks are much smaller
        rp, ru = rt.report_json(self, p), rt.report_json(self, u)
        texts = [json.dumps(r, sort_keys=True, indent=0).replace(d, "DIR").splitlines() for r, d in ((rp, p), (ru, u))]
        differ = [(a, b) for a, b in zip(*texts) if a != b]
        self.assertEqual(len(texts[0]), len(texts[1]))
        # what differs is only what was read: the bytes of the files
        self.assertEqual([a.split(":")[0] for a, _ in differ], ['"bytes"'], differ[:5])

    def test_spread_offsets_are_found(self):
        d = self.path("logs")
        rt.gen(d, *ARGS)
        rep = rt.report_json(self, d)
        hosts = rep["clock_alignment"]["hosts"]
        self.assertEqual(len(hosts), 40)
        # host 0 is the reference; the others were drawn in -3..3 ms, each found within 2 us
        offsets = [h["offset_ns"] for h in hosts]
        self.assertTrue(any(abs(x) > 100000 for x in offsets), offsets)
        self.assertTrue(all(abs(x) <= 6000000 for x in offsets), offsets)
        self.assertTrue(all(h["uncertainty_ns"] < 2000 for h in hosts), hosts)


class ReportThreads(lib.TempDirTestCase):

    def same_at_any_j(self, d):
        outs = {}
        for j in (1, 4):
            html = self.path("r%d.html" % j)
            text = rt.tool("report", d, "-j", j, "--html", html)
            self.assertEqual(text.rc, 0, text.describe())
            js = rt.tool("report", d, "--jobs", j, "--json")
            self.assertEqual(js.rc, 0, js.describe())
            with open(html, encoding="utf-8") as f:
                outs[j] = (text.stdout, js.stdout, f.read())
        for k, what in enumerate(("text", "JSON", "HTML")):
            self.assertEqual(outs[1][k], outs[4][k], "the %s report differs between -j 1 and -j 4" % what)
        self.assertIn("== Findings", outs[1][0])
        return json.loads(outs[1][1])

    def test_marks_stacks_and_a_late_rank(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 24, "--hosts", 3, "--spread-offsets", 800000, "--iters", 30, "--sizes",
               "65536,1048576", "--jitter", 1000, "--exit-jitter", 2000, "--subcomm", "--marks", "--gap", 30000,
               "--stacks", 3, "--late", "7:40000", "--drop", "5:2")
        rep = self.same_at_any_j(d)
        self.assertEqual(rep["inputs"]["logs"], 24)
        self.assertEqual(len(rep["ranks"]), 24)
        self.assertTrue(rep["mark_overlap"], "no marks' overlap in the report")

    def test_gpu_and_plugin(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 40, "--hosts", 5, *ARGS[4:], "--late", "3:30000")
        self.same_at_any_j(d)

    def test_bad_value(self):
        run = rt.tool("report", self.tmp, "-j", 0)
        self.assertEqual(run.rc, 2, run.describe())
        self.assertIn("-j takes a number of threads from 1 to 1024, not '0'", run.stderr)


if __name__ == "__main__":
    unittest.main()
