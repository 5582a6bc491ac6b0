"""scripts/demo.sh on the build at hand (--no-build), with the job configuration it shows a new user:
4 ranks of nccl_mix with the fake NCCL and CUPTI, rank 2 arriving 20 ms late at every AllReduce.

What its story claims must hold on this 2-core machine: the report names rank 2 (and only rank 2)
as the straggler; its table has GPU-timed rows; overlap and GPU idle time are measured; everything
says it is simulated; the traces have GPU tracks, arrows from calls to kernels, the profiler
plugin's kernel channels and network proxy events, the phases' marks and call stacks; the files
the demo lists at the end exist; its HTML page loads in headless Chromium with every section and a
timeline whose late lane is rank 2.

A sanitizer build is left out: the demo preloads the library alone, which a sanitizer runtime
refuses; nccl_mix with a late rank and the fake CUPTI runs under the sanitizers in
tests/report/test_report_mpirun.py."""

import glob
import gzip
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "report"))
import chromium_lib as cl  # noqa: E402
import report_testlib as rt  # noqa: E402
from report_testlib import lib  # noqa: E402

NP = 4
LATE = 2
MARKS = {"forward", "backward", "optimizer"}


@unittest.skipIf(os.environ.get("NPKIT_SANITIZE"), "the demo preloads the library without a sanitizer runtime")
@unittest.skipIf(not os.environ.get("NPKIT_MPIRUN"), "mpirun not found")
class Demo(lib.TempDirTestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = lib.temp_dir("demo", cls.addClassCleanup)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NPKIT_DEMO", "NPKIT_DEPS"))}
        for k in lib.LIBRARY_SETTINGS + ("LD_PRELOAD",):
            env.pop(k, None)
        env.update({"NPKIT_DEMO_BUILD": lib.need_env("NPKIT_BUILD_DIR"), "NPKIT_SKIP_DEPS": "1",
                    "NPKIT_DEMO_SIMULATE": "1"})
        cmd = [os.path.join(lib.source_dir(), "scripts", "demo.sh"), "--no-build", "--out", cls.out]
        cls.run_ = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)

    def file(self, *names):
        return os.path.join(self.out, *names)

    def setUp(self):
        super().setUp()
        self.assertEqual(self.run_.returncode, 0, self.run_.stdout[-3000:] + self.run_.stderr[-3000:])

    def report(self):
        with open(self.file("report.json")) as f:
            return json.load(f)

    def test_straggler_gpu_rows_overlap(self):
        rep = self.report()
        self.assertEqual(rep["inputs"]["logs"], NP)
        self.assertEqual(rep["inputs"]["simulated_logs"], NP)
        self.assertEqual([f["rank"] for f in rt.findings_of(rep, "straggler")], [LATE], rep["findings"])
        by_rank = {r["rank"]: r for r in rep["stragglers"]["ranks"]}
        others = max(r["delay_caused_us"] for k, r in by_rank.items() if k != LATE)
        self.assertGreater(by_rank[LATE]["delay_caused_us"], 2 * others)
        self.assertTrue(rep["stragglers"]["gpu_timed"] > 0)
        # GPU-timed rows, with busbw; every world AllReduce timed by its kernels
        gpu_rows = [r for r in rep["collectives"] if r["time_source"] == "gpu"]
        self.assertTrue(gpu_rows and all(r["busbw_gbs"] > 0 for r in gpu_rows))
        world = [r for r in rep["collectives"] if r["op"] == "AllReduce" and r["nranks"] == NP and r["timed_calls"]]
        self.assertTrue(world and all(r["time_source"] == "gpu" for r in world))
        self.assertTrue(any(r["algorithm"] for r in world))  # the profiler plugin's choice
        # overlap: the backward kernel runs beside the gradient AllReduces on every rank; idle time
        self.assertTrue(rep["gpu"]["available"])
        for g in rep["gpu"]["ranks"]:
            self.assertGreater(g["compute_kernels"], 0)
            self.assertGreater(g["overlap_us"], 0)
            self.assertTrue(0 < g["overlap_ratio"] < 1)
            self.assertGreater(g["idle_us"], 0)
        # call sites from NPKIT_STACK_DEPTH
        self.assertEqual(rep["call_sites"]["logs_with_stacks"], NP)

    def test_report_says_simulated_first(self):
        with open(self.file("report.txt")) as f:
            head = f.read().splitlines()[:2]
        self.assertTrue(head[0].startswith("npkit report: 4 logs"), head)
        self.assertTrue(head[1].startswith("SIMULATED GPU: all 4 of 4 logs"), head)
        self.assertIn("rank %d arrives last at collectives (straggler)" % LATE, self.run_.stdout)
        self.assertIn("The report names rank %d, the late one, as the straggler" % LATE, self.run_.stdout)

    def test_traces(self):
        traces = sorted(glob.glob(self.file("npkit_rank*.json")))
        self.assertEqual(len(traces), NP)
        for path in traces:
            with open(path) as f:
                t = json.load(f)
            ev = t["traceEvents"]
            self.assertIs(t["otherData"]["simulated"], True)
            name = [e["args"]["name"] for e in ev if e.get("name") == "process_name"]
            self.assertEqual(len(name), 1)
            self.assertTrue(name[0].endswith("\u00b7 simulated GPU"), name)
            cats = {e.get("cat") for e in ev if e.get("ph") == "X"}
            for cat in ("nccl_api", "kernel", "nccl_kernel", "nccl_proxy", "nccl_net", "npkit_mark"):
                self.assertIn(cat, cats, path)
            flows = [e for e in ev if e.get("cat") == "ac2g"]
            self.assertTrue(flows and len([e for e in flows if e["ph"] == "s"]) ==
                            len([e for e in flows if e["ph"] == "f"]))
            self.assertEqual({e["name"] for e in ev if e.get("cat") == "npkit_mark"}, MARKS)
            self.assertTrue(t.get("stackFrames"))
        with gzip.open(self.file("merged.json.gz"), "rt") as f:
            merged = json.load(f)
        names = sorted(e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name")
        self.assertEqual([n.split(" \u00b7 ")[0] for n in names], ["rank %d" % r for r in range(NP)])
        self.assertTrue(all(n.endswith("simulated GPU") for n in names))

    def test_live_metrics(self):
        # each rank wrote NCCL Inspector's lines and a textfile while it ran, with its collectives
        logs = glob.glob(self.file("metrics", "*.log"))
        self.assertEqual(len(logs), NP)
        self.assertEqual(len(glob.glob(self.file("metrics", "*.prom"))), NP)
        for path in logs:
            with open(path) as f:
                lines = [json.loads(line) for line in f]
            perf = [o["coll_perf"] for o in lines if "coll_perf" in o]
            self.assertTrue(perf and all(p["coll_busbw_gbs"] >= 0 for p in perf))
            self.assertIn("kernel_gpu", {p["coll_timing_source"] for p in perf})

    def test_lists_the_files_to_open(self):
        tail = self.run_.stdout[self.run_.stdout.index("== what to open"):]
        listed = re.findall(r"^  (/\S+)$", tail, re.M)
        want = sorted(glob.glob(self.file("npkit_rank*.json"))) + [self.file("merged.json.gz"),
                                                                   self.file("report.html"), self.file("metrics")]
        self.assertEqual(listed, want)
        for hint in ("https://ui.perfetto.dev", "chrome://tracing", "any browser"):
            self.assertIn(hint, tail)

    def test_html_has_every_text_section(self):
        """The HTML view renders the same model as the text: each section title of report.txt (a
        line after a blank one, not indented; "== " before the main ones) has an <h2> on the page
        that starts with the same words (up to a parenthesis or comma, where each view says more)."""
        def core(title):
            return re.split(r" \(|, ", title, 1)[0].strip()

        with open(self.file("report.txt")) as f:
            lines = f.read().splitlines()
        text = [core(ln[3:] if ln.startswith("== ") else ln) for prev, ln in zip(lines, lines[1:])
                if prev == "" and ln and not ln.startswith(" ")]
        with open(self.file("report.html")) as f:
            html = {core(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<h2>(.*?)</h2>", f.read())}
        # the demo's job has findings, GPU overlap, stragglers and call sites: the sections are there
        for want in ("Findings", "Collectives", "Stragglers and synchronisation delay", "Call sites"):
            self.assertIn(want, text, lines)
        missing = [t for t in text if t not in html]
        self.assertEqual(missing, [], "text sections without an HTML section: %r (HTML: %r)" % (missing, html))

    @unittest.skipIf(cl.chromium() is None, "chromium is not installed; the CI installs it")
    def test_page(self):
        dom = cl.check_page(self, self.file("report.html"), "demo")
        self.assertEqual(len(dom.find("p", id="simulated")), 1)
        self.assertEqual(sorted(dom.lane_rects), list(range(NP)))
        self.assertEqual([r for r, c in dom.lane_classes.items() if "late" in c], [LATE])
        last = int(dom.find("svg", id="timeline")[0]["data-last-arrival-ns"])
        focus = {r: cl.rects(dom, r, "kernel comm focus") for r in range(NP)}
        self.assertTrue(all(focus.values()), focus)
        # each other rank waits from its arrival to the last one; the late rank does not wait
        waits = {r: [cl.span(w) for w in cl.rects(dom, r, "wait")] for r in range(NP)}
        self.assertEqual(waits[LATE], [])
        arrival = {LATE: last}
        for r in range(NP):
            if r != LATE:
                self.assertEqual(len(waits[r]), 1, waits)
                self.assertEqual(waits[r][0][1], last)
                arrival[r] = waits[r][0][0]
                self.assertLess(arrival[r], last)
        # the kernel the collective ran in (its own, or its group's fused kernel: the demo's
        # gradient AllReduces are grouped) holds each rank's arrival, or starts just after it: the
        # call launches it on arrival and it starts microseconds later (FAKE_NCCL_LAUNCH_US, and
        # NCCL's GPU stamps are mapped onto the host clock within the proxy's report latency)
        launch_ns = 100000
        for r in range(NP):
            self.assertTrue(any(cl.span(k)[0] - launch_ns <= arrival[r] <= cl.span(k)[1] for k in focus[r]),
                            (r, arrival[r], [cl.span(k) for k in focus[r]]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
