"""Headless Chromium for the tests of the HTML report: running it with the flags this machine needs,
reading the page it built back (elements, table rows, the timeline's lanes and rects) and checking
that a page is self-contained, well formed and holds every section of the text report.  Used by
test_report_html.py and by the demo's test (tests/scripts)."""

import html.parser
import os
import shutil
import struct
import subprocess
import tempfile

WIDTH, HEIGHT = 1280, 4000
# Every section of the text report has one in the page (ids of the <section> elements).
SECTIONS = ["findings", "timeline-section", "collectives-section", "bandwidth", "stragglers", "gpu", "alignment",
            "lost", "call-sites", "marks"]
VOID = {"meta", "br", "img", "input", "link", "hr", "wbr", "col", "area", "base", "source", "track", "embed"}


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
        self.lane_rects = {}  # data-rank of a timeline lane -> attributes of its rects
        self.lane_classes = {}
        self.lane = None
        self.rows = {}
        self.table = None
        self.svg = None
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id")
        self.elements.append((tag, a, self.svg))
        if tag == "g" and "lane" in (a.get("class") or "").split():
            self.lane = int(a["data-rank"])
            self.lane_rects[self.lane] = []
            self.lane_classes[self.lane] = a["class"].split()
        elif tag == "rect" and self.lane is not None:
            self.lane_rects[self.lane].append(a)
        if tag == "table":
            self.table = a.get("id")
            self.rows[self.table] = 0
        elif tag == "tr" and self.table is not None:
            self.rows[self.table] += 1

    def handle_endtag(self, tag):
        if tag == "g":
            self.lane = None
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


class Balance(html.parser.HTMLParser):
    """Tags that are closed without being open, or left open: a page Chromium would have to repair."""

    def __init__(self):
        super().__init__()
        self.stack, self.problems = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append("</%s> closes %s" % (tag, self.stack[-1] if self.stack else "nothing"))
        else:
            self.stack.pop()


def rects(dom, rank, cls):
    """The rects of a timeline lane that have all the classes in cls."""
    want = cls.split()
    return [a for a in dom.lane_rects[rank] if all(c in (a.get("class") or "").split() for c in want)]


def span(a):
    return int(a["data-start-ns"]), int(a["data-end-ns"])


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



def check_page(test, page, shot_name):
    """Checks the page at path `page` and opens it in Chromium; returns the Dom of what Chromium built.
    A screenshot goes to NPKIT_REPORT_ARTIFACTS (or the test's folder) as shot_name.png."""
    with open(page, encoding="utf-8") as f:
        source = f.read()
    # self-contained: no script, nothing to fetch (the SVG namespace is a name, not a fetch)
    test.assertNotIn("<script", source)
    test.assertNotIn("https://", source)
    test.assertEqual(source.count("http://"), source.count("http://www.w3.org/2000/svg"))
    bal = Balance()
    bal.feed(source)
    bal.close()
    test.assertEqual(bal.problems, [])
    test.assertEqual(bal.stack, [])
    dump = run_chromium(["--dump-dom", "file://" + page])
    test.assertEqual(dump.returncode, 0, dump.stderr[-2000:])
    dom = Dom()
    dom.feed(dump.stdout)
    # every section of the text report, in the page Chromium built
    test.assertEqual([a["id"] for a in dom.find("section") if a.get("id") in SECTIONS], SECTIONS)
    artifacts = os.environ.get("NPKIT_REPORT_ARTIFACTS") or test.path("artifacts")
    os.makedirs(artifacts, exist_ok=True)
    shot = os.path.join(artifacts, shot_name + ".png")
    if os.path.exists(shot):
        os.unlink(shot)
    run = run_chromium(["--screenshot=" + shot, "file://" + page])
    test.assertEqual(run.returncode, 0, run.stderr[-2000:])
    test.assertEqual(png_size(shot), (WIDTH, HEIGHT))
    test.assertGreater(os.path.getsize(shot), 20000)  # a blank page compresses to far less
    return dom
