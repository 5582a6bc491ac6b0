"""`npkit report` (text, JSON, HTML) and `npkit merge` open each log exactly once: the logs of a
job are read by one scan (call sites, marks and the HTML timeline included), not once per view.
An LD_PRELOAD shim (open_counter.c) writes the name of every *.npkit file the tool opens.

The report also walks each log's events once: report_reads.c counts the EVENTS blocks its walks
enter.  The one exception is the HTML view's timeline strip, which walks the events of each log a
second time (docs/architecture.md says why a single pass would need the whole job's events in
memory); it may not walk them a third time."""

import collections
import os
import subprocess
import unittest

import report_testlib as rt
from report_testlib import lib

RANKS = 4


class ReportOpensEachLogOnce(lib.TempDirTestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.path("logs")
        rt.gen(self.logs, "--ranks", RANKS, "--hosts", 2, "--offset", "1:700000", "--iters", 40, "--gpu",
               "--period", 1000000, "--marks", "--stacks", 4, "--plugin", "RING:SIMPLE", "--late", "2:30000")
        self.names = sorted(os.path.join(self.logs, f) for f in os.listdir(self.logs) if f.endswith(".npkit"))
        self.assertEqual(len(self.names), RANKS)

    def opens(self, *args):
        """{log path: times opened} while the tool runs with args."""
        record = self.path("opens-%d.txt" % len(os.listdir(self.tmp)))
        shim = lib.need_file(lib.need_env("NPKIT_OPEN_COUNTER"), "the open counter")
        preload = [p for p in (lib.sanitizer_runtime(), shim) if p]
        env = dict(os.environ, LD_PRELOAD=":".join(preload), NPKIT_OPEN_COUNT_FILE=record, **lib.sanitizer_env())
        run = lib.run_tool(list(args), timeout=120, env=env)
        self.assertEqual(run.rc, 0, run.describe())
        seen = collections.Counter()
        if os.path.exists(record):
            with open(record) as f:
                seen.update(os.path.realpath(line.rstrip("\n")) for line in f)
        return {os.path.realpath(n): seen[os.path.realpath(n)] for n in self.names}, seen

    def check_once(self, *args):
        per_log, seen = self.opens(*args)
        self.assertEqual(sum(seen.values()), RANKS, "opens of *.npkit files: %r" % dict(seen))
        for name, n in per_log.items():
            self.assertEqual(n, 1, "%s opened %d times by npkit %s" % (name, n, " ".join(args)))

    def test_text_report(self):
        self.check_once("report", self.logs)

    def test_json_report(self):
        self.check_once("report", "--json", self.logs)

    def test_html_report(self):
        self.check_once("report", "--html", self.path("report.html"), self.logs)

    def test_merge(self):
        self.check_once("merge", "-o", self.path("merged.json"), self.logs)

    def event_walks(self, *args):
        """{log path: (EVENTS blocks, EVENTS blocks the report's walks entered)}, and whether the
        timeline strip found an instance.  Every log's file is closed once the report is made."""
        prog = lib.need_file(lib.need_env("NPKIT_REPORT_READS"), "report_reads")
        run = subprocess.run([prog] + list(args) + self.names, capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = run.stdout.split("\n")
        walks = {}
        for line in lines[:-2]:
            path, blocks, reads, still_open = line.rsplit(" ", 3)
            self.assertEqual(still_open, "0", "%s: still open after the report" % path)
            walks[os.path.realpath(path)] = (int(blocks), int(reads))
        self.assertEqual(sorted(walks), sorted(os.path.realpath(n) for n in self.names))
        return walks, lines[-2] == "timeline 1"

    def test_events_walked_once(self):
        """Text and JSON reports: every EVENTS block is entered once, so a second pass fails."""
        walks, _ = self.event_walks()
        for name, (blocks, reads) in walks.items():
            self.assertGreater(blocks, 0, name)
            self.assertEqual(reads, blocks, "%s: %d EVENTS blocks entered %d times" % (name, blocks, reads))

    def test_timeline_walks_twice(self):
        """With the HTML view's strip: the one scan, and the strip's walk over the chosen window."""
        walks, found = self.event_walks("--timeline")
        self.assertTrue(found)
        for name, (blocks, reads) in walks.items():
            self.assertEqual(reads, 2 * blocks, "%s: %d EVENTS blocks entered %d times" % (name, blocks, reads))

    def test_counter_counts(self):
        """The shim sees the tool's opens: `npkit info` of one log opens it, and no other."""
        per_log, _ = self.opens("info", self.names[1])
        self.assertEqual([per_log[os.path.realpath(n)] for n in self.names], [0, 1, 0, 0])


if __name__ == "__main__":
    unittest.main()
