"""The HTML report opened in headless Chromium: the rendered page must hold the plots (inline
SVG) and tables that the JSON report describes, every section of the text report, the timeline
strip of the largest arrival spread, and nothing from a network.  A screenshot of
each page is kept in the build folder (tests/report/artifacts/) as a test artifact.

Chromium is installed by the CI script (.ci/run); without it these tests are skipped, saying so."""

import unittest

import report_testlib as rt
from chromium_lib import chromium, check_page, rects, span
from report_testlib import lib


@unittest.skipIf(chromium() is None, "chromium is not installed (apt-get install chromium); the CI installs it")
class HtmlInChromium(lib.TempDirTestCase):
    def page(self, name, *gen_args):
        d = self.path(name)
        rt.gen(d, *gen_args)
        page = self.path(name + ".html")
        run = rt.tool("report", d, "--html", page)
        self.assertEqual(run.rc, 0, run.describe())
        rep = rt.report_json(self, d)
        return rep, check_page(self, page, name)

    def test_straggler_and_bandwidth_page(self):
        rep, dom = self.page("cpu", "--ranks", 8, "--hosts", 2, "--offset", "1:300000", "--iters", 20,
                             "--sizes", "65536,1048576,16777216,67108864", "--bw-above", "16777216:40",
                             "--late", "3:40000", "--jitter", 500)
        # findings: one list item each, in the JSON's order
        items = dom.has_class("li", "finding")
        self.assertEqual([a["data-kind"] for a in items], [f["kind"] for f in rep["findings"]])
        self.assertIn("straggler", [a["data-kind"] for a in items])
        # the nccl-tests table: a header row and one row per JSON row
        self.assertEqual(dom.rows["collectives"], 1 + len(rep["collectives"]))
        self.assertEqual(dom.rows["straggler-ranks"], 1 + 8)
        self.assertEqual(dom.rows["hosts"], 1 + 2)
        # plots: bandwidth with the bottleneck point flagged, and the two straggler charts
        self.assertEqual(len(dom.find("svg", id="bw-AllReduce")), 1)
        self.assertEqual(len(dom.has_class("circle", "flagged", svg="bw-AllReduce")), 1)
        self.assertEqual(len(dom.has_class("circle", "point", svg="bw-AllReduce")), 4)
        self.assertEqual(len(dom.find("svg", id="strag-delay")), 1)
        self.assertEqual(len(dom.find("svg", id="strag-last")), 1)
        for chart in ("strag-delay", "strag-last"):  # one bar per rank, rank 3's flagged
            self.assertEqual(len(dom.has_class("rect", "bar", svg=chart)), 8)
            self.assertEqual(len(dom.has_class("rect", "flagged", svg=chart)), 1)
        self.assertEqual(len(dom.has_class("svg", "plot")), 4)  # and the timeline
        text = " ".join(dom.text)
        self.assertIn("Needs GPU kernel events", text)
        self.assertIn("rank 3 arrives last at collectives", text)
        self.assertIn("NPKIT_STACK_DEPTH=8", text)  # what to set for the call-site table
        # the timeline: one lane per rank, the straggler's (rank 3, 40 us late) marked, its call
        # the instance's last arrival; each other rank waits from its own arrival to that one
        self.assertEqual(sorted(dom.lane_rects), list(range(8)))
        self.assertEqual([r for r, c in dom.lane_classes.items() if "late" in c], [3])
        svg = dom.find("svg", id="timeline")[0]
        last = int(svg["data-last-arrival-ns"])
        focus = {r: rects(dom, r, "call focus") for r in range(8)}
        self.assertTrue(all(len(f) == 1 for f in focus.values()), focus)
        start = {r: span(f[0])[0] for r, f in focus.items()}
        self.assertEqual(max(start, key=start.get), 3)
        self.assertEqual(start[3], last)
        # arrivals differ by the injected 40 us plus jitter (0..500 ns per rank) and the clock
        # alignment's error between the two hosts
        tol = 500 + 1000 * rep["stragglers"]["max_alignment_uncertainty_us"] + 1
        for r in range(8):
            if r == 3:
                self.assertEqual(rects(dom, r, "wait"), [])
                continue
            self.assertLess(abs(start[3] - start[r] - 40000), tol, (r, start))
            self.assertEqual([span(w) for w in rects(dom, r, "wait")], [(start[r], last)])
        biggest = [t for t in rep["stragglers"]["largest"] if t["last_rank"] == 3][0]
        self.assertIn("ncclAllReduce #%d " % biggest["seq"], text)

    def test_gpu_page(self):
        rep, dom = self.page("gpu", "--ranks", 4, "--iters", 20, "--gpu", "--period", 1000000,
                             "--sizes", "65536,1048576", "--plugin", "RING:LL128")
        self.assertEqual(dom.rows["overlap"], 1 + 4)
        self.assertEqual(dom.rows["gpu-idle"], 4 * 3 + 1)  # whole GPU and two streams per rank
        self.assertEqual(len(dom.find("svg", id="overlap-plot")), 1)
        self.assertEqual(len(dom.has_class("rect", "bar", svg="overlap-plot")), 4)
        text = " ".join(dom.text)
        self.assertIn("RING/LL128", text)
        self.assertNotIn("Needs GPU kernel events", text)
        kinds = [a["data-kind"] for a in dom.has_class("li", "finding")]
        self.assertIn("pipeline_bubbles", kinds)
        self.assertEqual(kinds, [f["kind"] for f in rep["findings"]])


    def test_gpu_timeline(self):
        # rank 1 launches every AllReduce 300 us late; no jitter, so the picture is exact
        rep, dom = self.page("gpu-late", "--ranks", 4, "--iters", 12, "--gpu", "--period", 1000000,
                             "--late", "1:300000", "--compute", 400000, "--overlap", 100000)
        self.assertEqual([f["rank"] for f in rt.findings_of(rep, "straggler")], [1])
        svg = dom.find("svg", id="timeline")[0]
        last = int(svg["data-last-arrival-ns"])
        for r in range(4):
            kernels = rects(dom, r, "kernel comm focus")
            self.assertEqual(len(kernels), 1, r)
            calls = rects(dom, r, "call focus")
            self.assertEqual(len(calls), 1, r)
            k0 = span(kernels[0])[0]
            # the call launches its kernel: it ends 2 us before the kernel starts (the generator's model)
            self.assertEqual(span(calls[0])[1] + 2000, k0)
            if r == 1:
                self.assertEqual(k0, last)
                self.assertEqual(rects(dom, r, "wait"), [])
            else:
                self.assertEqual(last - k0, 300000, r)
                self.assertEqual([span(w) for w in rects(dom, r, "wait")], [(k0, last)])
            # the compute kernel of the step ends `overlap` after the collective's kernel began
            compute = [span(a) for a in rects(dom, r, "kernel compute")]
            nominal = k0 - (300000 if r == 1 else 0)
            self.assertIn(nominal + 100000, [b for a, b in compute], (r, compute))
        self.assertIn("GPU times", " ".join(dom.text))

    def test_call_sites_and_marks(self):
        iters = 6
        rep, dom = self.page("sites", "--ranks", 4, "--iters", iters, "--stacks", 3, "--marks")
        cs = rep["call_sites"]
        self.assertEqual(len(cs["sites"]), 3)
        self.assertEqual(dom.rows["call-site-rows"], 1 + len(cs["rows"]))
        self.assertEqual(dom.rows["call-site-frames"], 1 + 3)
        text = " ".join(dom.text)
        for i in range(3):
            self.assertIn("step_%d+0x1f (train+0x%x) train.c:%d" % (i, 0x1300 + 0x40 * i, 40 + i), text)
        # call k comes from site k mod 3: 2 calls per rank and site, on 4 ranks
        self.assertEqual(sorted(r["calls"] for r in cs["rows"]), [8, 8, 8])
        # marks: a 9 us "forward" range before each of the 6 arrivals, on every rank
        self.assertEqual(dom.rows["mark-overlap"], 1 + 4)
        self.assertEqual([m["compute_us"] for m in rep["mark_overlap"]], [iters * 9.0] * 4)
        self.assertIn("forward (%d, %.1f us)" % (iters, iters * 9.0), text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
