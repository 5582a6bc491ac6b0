"""The HTML report opened in headless Chromium: the rendered page must hold the plots (inline
SVG) and tables that the JSON report describes, and nothing from a network.  A screenshot of
each page is kept in the build folder (tests/report/artifacts/) as a test artifact.

Chromium is installed by the CI script (.ci/run); without it these tests are skipped, saying so."""

import html.parser
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import report_testlib as rt
from report_testlib import lib

WIDTH, HEIGHT = 1280, 4000


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Dom(html.parser.HTMLParser):
    """Elements by tag with their attributes, the rows of each table, and the text."""

    def __init__(self):
        super().__init__()
        self.elements = []   # (tag, attributes, id of the enclosing svg)
        self.rows = {}
        self.table = None
        self.svg = None
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id")
        self.elements.append((tag, a, self.svg))
        if tag == "table":
            self.table = a.get("id")
            self.rows[self.table] = 0
        elif tag == "tr" and self.table is not None:
            self.rows[self.table] += 1

    def handle_endtag(self, tag):
        if tag == "table":
            self.table = None
        elif tag == "svg":
            self.svg = None

    def handle_data(self, data):
        self.text.append(data)

    def find(self, tag, **attrs):
        return [a for t, a, _ in self.elements if t == tag and all(a.get(k) == v for k, v in attrs.items())]

    def has_class(self, tag, cls, svg=None):
        """Elements with that class, inside the svg of that id when given."""
        return [a for t, a, s in self.elements
                if t == tag and cls in (a.get("class") or "").split() and (svg is None or s == svg)]


def run_chromium(args, timeout=120):
    profile = tempfile.mkdtemp(prefix="npkit_chromium_")
    try:
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--user-data-dir=" + profile, "--window-size=%d,%d" % (WIDTH, HEIGHT)] + args
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("%s is not a PNG" % path)
    return struct.unpack(">II", head[16:24])


@unittest.skipIf(chromium() is None, "chromium is not installed (apt-get install chromium); the CI installs it")
class HtmlInChromium(lib.TempDirTestCase):
    def page(self, name, *gen_args):
        d = self.path(name)
        rt.gen(d, *gen_args)
        page = self.path(name + ".html")
        run = rt.tool("report", d, "--html", page)
        self.assertEqual(run.rc, 0, run.describe())
        rep = rt.report_json(self, d)
        with open(page, encoding="utf-8") as f:
            source = f.read()
        # self-contained: no script, nothing to fetch (the SVG namespace is a name, not a fetch)
        self.assertNotIn("<script", source)
        self.assertNotIn("https://", source)
        self.assertEqual(source.count("http://"), source.count("http://www.w3.org/2000/svg"))
        dump = run_chromium(["--dump-dom", "file://" + page])
        self.assertEqual(dump.returncode, 0, dump.stderr[-2000:])
        dom = Dom()
        dom.feed(dump.stdout)
        artifacts = os.environ.get("NPKIT_REPORT_ARTIFACTS") or self.path("artifacts")
        os.makedirs(artifacts, exist_ok=True)
        shot = os.path.join(artifacts, name + ".png")
        if os.path.exists(shot):
            os.unlink(shot)
        run = run_chromium(["--screenshot=" + shot, "file://" + page])
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        self.assertEqual(png_size(shot), (WIDTH, HEIGHT))
        self.assertGreater(os.path.getsize(shot), 20000)  # a blank page compresses to far less
        return rep, dom

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
        self.assertEqual(len(dom.has_class("svg", "plot")), 3)
        text = " ".join(dom.text)
        self.assertIn("Needs GPU kernel events", text)
        self.assertIn("rank 3 arrives last at collectives", text)

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


if __name__ == "__main__":
    unittest.main(verbosity=2)
