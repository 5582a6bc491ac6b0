"""`npkit report` on synthetic logs whose truth is known (gen_report_logs): injected clock
offsets, a late rank, known bandwidths with a bottleneck, known GPU overlap and bubbles, lost
events; the report must find them within the stated tolerances.  Also its handling of bad
input."""

import os
import shutil
import unittest

import report_testlib as rt
from report_testlib import lib

MiB = 1 << 20


class ClockOffsets(lib.TempDirTestCase):
    def test_offsets_of_three_hosts_are_recovered(self):
        d = self.path("logs")
        # host clocks read true time + offset; merge must add -offset (host0 is the reference)
        n = rt.gen(d, "--ranks", 9, "--hosts", 3, "--offset", "1:2500000", "--offset", "2:-1234567",
                   "--iters", 300, "--sizes", "65536,1048576", "--jitter", 1000, "--exit-jitter", 2000,
                   "--subcomm", "--seed", 7)
        rep = rt.report_json(self, d)
        al = rep["clock_alignment"]
        self.assertTrue(al["estimated"])
        self.assertEqual(al["source"], "cpu")
        self.assertEqual(al["reference_host"], "host0")
        for host, injected in (("host1", 2500000), ("host2", -1234567)):
            h = rt.host_entry(al, host)
            self.assertEqual(h["status"], "aligned")
            # stated uncertainty: a standard error; the error must be within 5 of them (+ 50 ns of
            # timestamp and jitter quantisation), and the uncertainty itself small
            self.assertLess(h["uncertainty_ns"], 200, h)
            self.assertLessEqual(abs(h["offset_ns"] + injected), 5 * h["uncertainty_ns"] + 50, h)
            self.assertGreaterEqual(h["samples"], n)
            self.assertEqual(h["used"] + h["rejected"], h["samples"])
        # the sub-communicator of hosts 1 and 2 gives a second path: checked, and consistent
        self.assertGreaterEqual(al["cycle_checks"], 1)
        self.assertEqual(al["cycle_failures"], 0)
        # per-rank offsets follow the host
        for r in rep["ranks"]:
            want = {"host0": 0, "host1": -2500000, "host2": 1234567}[r["host"]]
            self.assertLessEqual(abs(r["clock_offset_ns"] - want), 200)
        # with offsets applied nothing looks late: no straggler, spreads within the jitter
        self.assertEqual(rt.findings_of(rep, "straggler"), [])
        self.assertLess(rep["stragglers"]["spread_us"]["max"], 2.0)

    def test_no_align_keeps_clocks(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--hosts", 2, "--offset", "1:500000", "--iters", 50)
        rep = rt.report_json(self, d, "--no-align")
        self.assertFalse(rep["clock_alignment"]["enabled"])
        self.assertFalse(rep["clock_alignment"]["estimated"])
        self.assertTrue(all(r["clock_offset_ns"] == 0 for r in rep["ranks"]))
        # unaligned, host1's calls look 500 us early: the ranks of host0 arrive "last"
        self.assertGreater(rep["stragglers"]["spread_us"]["p50"], 490)

    def test_single_host_needs_no_offsets(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--iters", 20)
        rep = rt.report_json(self, d)
        self.assertFalse(rep["clock_alignment"]["estimated"])
        self.assertEqual([h["status"] for h in rep["clock_alignment"]["hosts"]], ["reference"])


class Stragglers(lib.TempDirTestCase):
    def test_late_rank_across_hosts(self):
        d = self.path("logs")
        late_ns, jitter = 30000, 1000
        n = rt.gen(d, "--ranks", 8, "--hosts", 2, "--offset", "1:5000000", "--iters", 100,
                   "--late", "5:%d" % late_ns, "--jitter", jitter, "--exit-jitter", 1000)
        rep = rt.report_json(self, d)
        s = rep["stragglers"]
        self.assertEqual(s["instances"], n)
        self.assertEqual(s["over_threshold"], n)
        self.assertEqual(s["cross_host"], n)
        by_rank = {r["rank"]: r for r in s["ranks"]}
        self.assertEqual(by_rank[5]["last"], n)
        self.assertEqual(by_rank[5]["last_over_threshold"], n)
        # spread = 30 us less the earliest jitter, plus rank 5's own: within one jitter of it,
        # plus the alignment error
        self.assertAlmostEqual(s["spread_us"]["p50"], late_ns / 1e3, delta=jitter / 1e3 + 0.3)
        self.assertAlmostEqual(by_rank[5]["delay_caused_us"], n * late_ns / 1e3, delta=n * (jitter / 1e3 + 0.3))
        for r in range(8):
            if r != 5:
                self.assertEqual(by_rank[r]["last"], 0)
                self.assertAlmostEqual(by_rank[r]["waited_us"], n * late_ns / 1e3, delta=n * (jitter / 1e3 + 0.3))
        top = s["largest"]
        self.assertEqual(len(top), 10)
        self.assertTrue(all(t["last_rank"] == 5 and t["op"] == "AllReduce" for t in top))
        self.assertEqual([t["spread_us"] for t in top], sorted((t["spread_us"] for t in top), reverse=True))
        f = rt.findings_of(rep, "straggler")
        self.assertEqual(len(f), 1, rep["findings"])
        self.assertEqual(f[0]["rank"], 5)
        self.assertEqual(f[0]["position"], 1)
        self.assertAlmostEqual(f[0]["time_at_stake_us"], by_rank[5]["delay_caused_us"], places=3)
        self.assertIn("rank 5", f[0]["evidence"])
        self.assertIn("bind", f[0]["next_step"])

    def test_threshold_option(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--iters", 40, "--late", "2:30000")
        rep = rt.report_json(self, d, "--threshold", "50us")
        self.assertEqual(rep["stragglers"]["threshold_us"], 50)
        self.assertEqual(rep["stragglers"]["over_threshold"], 0)
        self.assertEqual(rt.findings_of(rep, "straggler"), [])
        rep = rt.report_json(self, d, "--threshold", "0.02ms", "--top", "3")
        self.assertEqual(rep["stragglers"]["over_threshold"], 40)
        self.assertEqual(len(rep["stragglers"]["largest"]), 3)
        self.assertEqual(rt.findings_of(rep, "straggler")[0]["rank"], 2)


class Bandwidth(lib.TempDirTestCase):
    SIZES = [4096, 65536, MiB, 16 * MiB, 64 * MiB, 256 * MiB]

    def test_table_and_bottleneck(self):
        d = self.path("logs")
        ranks, iters, above = 8, 10, (16 * MiB, 40.0)
        rt.gen(d, "--ranks", ranks, "--iters", iters, "--sizes", ",".join(map(str, self.SIZES)),
               "--lat", 5000, "--bw", 100, "--bw-above", "%d:%g" % above)
        rep = rt.report_json(self, d)
        rows = rep["collectives"]
        self.assertEqual([r["bytes"] for r in rows], self.SIZES)
        for r in rows:
            t = rt.coll_time_ns(r["bytes"], bw_above=above)
            self.assertEqual(r["op"], "AllReduce")
            self.assertEqual(r["calls"], ranks * iters)
            self.assertEqual(r["timed_calls"], ranks * iters)
            self.assertEqual(r["time_source"], "cpu")
            self.assertEqual(r["datatype"], "float32")
            self.assertEqual(r["redop"], "sum")
            self.assertEqual(r["count"], r["bytes"] // 4)
            self.assertTrue(r["quantiles_exact"])
            # the generator stores whole nanoseconds: within 1 ns
            self.assertAlmostEqual(r["time_mean_us"], t / 1e3, delta=1e-3)
            self.assertAlmostEqual(r["time_p50_us"], t / 1e3, delta=1e-3)
            self.assertAlmostEqual(r["algbw_gbs"], r["bytes"] / t, delta=1e-3 * r["bytes"] / t)
            self.assertAlmostEqual(r["busbw_gbs"], r["algbw_gbs"] * rt.allreduce_factor(ranks), delta=1e-9)
            self.assertIsNone(r["algorithm"])
        (cv,) = rep["bandwidth_curves"]
        flagged = [p["bytes"] for p in cv["points"] if p["bottleneck"]]
        self.assertEqual(flagged, [64 * MiB, 256 * MiB])
        self.assertEqual(cv["knee_bytes"], 16 * MiB)
        # time at stake: instances x (t - S / best algbw below the knee)
        best = 16 * MiB / rt.coll_time_ns(16 * MiB)
        stake = sum(iters * (rt.coll_time_ns(s, bw_above=above) - s / best) for s in flagged) / 1e3
        self.assertAlmostEqual(cv["time_at_stake_us"], stake, delta=1e-3 * stake)
        f = rt.findings_of(rep, "bandwidth_bottleneck")
        self.assertEqual(len(f), 1)
        self.assertAlmostEqual(f[0]["time_at_stake_us"], stake, delta=1e-3 * stake)
        self.assertIn("NCCL_ALGO", f[0]["next_step"])
        self.assertIn("16 MiB", f[0]["title"])

    def test_no_bottleneck_when_bandwidth_holds(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--iters", 5, "--sizes", ",".join(map(str, self.SIZES)))
        rep = rt.report_json(self, d)
        self.assertEqual(rep["bandwidth_curves"][0]["flagged"], 0)
        self.assertEqual(rt.findings_of(rep, "bandwidth_bottleneck"), [])


class GpuTimeline(lib.TempDirTestCase):
    def test_overlap_bubbles_gpu_time_and_algorithm(self):
        d = self.path("logs")
        ranks, iters, C, O, P = 4, 25, 400000, 100000, 1000000
        sizes = [65536, MiB, 16 * MiB]
        n = rt.gen(d, "--ranks", ranks, "--hosts", 2, "--offset", "1:-700000", "--iters", iters,
                   "--sizes", ",".join(map(str, sizes)), "--gpu", "--compute", C, "--overlap", O,
                   "--period", P, "--plugin", "RING:SIMPLE")
        rep = rt.report_json(self, d)
        # times come from the GPU kernels, not from the launch (3 us of CPU)
        for r in rep["collectives"]:
            t = rt.coll_time_ns(r["bytes"])
            self.assertEqual(r["time_source"], "gpu")
            self.assertEqual(r["timed_calls"], ranks * iters)
            self.assertAlmostEqual(r["time_mean_us"], t / 1e3, delta=1e-3)
            self.assertEqual((r["algorithm"], r["protocol"]), ("RING", "SIMPLE"))
        # alignment from GPU ends: exact here
        al = rep["clock_alignment"]
        self.assertEqual(al["source"], "gpu")
        self.assertEqual(rt.host_entry(al, "host1")["offset_ns"], 700000)
        # overlap: comm [C-O, C-O+d] against compute [0, C] in every step
        comm = sum(rt.coll_time_ns(sizes[k % 3]) for k in range(n))
        over = sum(min(O, rt.coll_time_ns(sizes[k % 3])) for k in range(n))
        busy = sum(max(C, C - O + rt.coll_time_ns(sizes[k % 3])) for k in range(n))
        g = rep["gpu"]
        self.assertTrue(g["available"])
        self.assertEqual(len(g["ranks"]), ranks)
        for gr in g["ranks"]:
            self.assertEqual(gr["kernels"], 2 * n)
            self.assertEqual(gr["comm_kernels"], n)
            self.assertAlmostEqual(gr["overlap_ratio"], over / comm, delta=1e-6)
            self.assertAlmostEqual(gr["comm_us"], comm / 1e3, delta=n * 1e-3)
            self.assertAlmostEqual(gr["exposed_comm_us"], (comm - over) / 1e3, delta=n * 1e-3)
            self.assertAlmostEqual(gr["busy_us"], busy / 1e3, delta=n * 1e-3)
            tl = gr["timeline"]
            self.assertTrue(tl["regular_gaps"])
            self.assertAlmostEqual(tl["regular_period_us"], P / 1e3, delta=P / 1e3 * 0.01)
            self.assertEqual(tl["gaps"], n - 1)
            self.assertEqual(sorted(s["stream"] for s in gr["streams"]), [7, 13])
        f = rt.findings_of(rep, "pipeline_bubbles")
        self.assertEqual(len(f), 1)
        self.assertIn("every 1.00 ms", f[0]["title"])
        f = rt.findings_of(rep, "exposed_communication")
        self.assertEqual(len(f), 1)
        self.assertAlmostEqual(f[0]["time_at_stake_us"], (comm - over) / 1e3, delta=n * 1e-3)
        self.assertEqual(rt.findings_of(rep, "no_gpu_activity"), [])

    def test_api_events_alone_say_what_is_missing(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 2, "--iters", 10)
        rep = rt.report_json(self, d)
        self.assertFalse(rep["gpu"]["available"])
        self.assertIn("GPU kernel events", rep["gpu"]["message"])
        self.assertNotIn("ranks", rep["gpu"])
        self.assertEqual(len(rt.findings_of(rep, "no_gpu_activity")), 1)
        text = rt.tool("report", d)
        self.assertEqual(text.rc, 0, text.describe())
        self.assertIn("Needs GPU kernel events", text.stdout)
        self.assertNotIn("overlap ratio", text.stdout)


class LostEvents(lib.TempDirTestCase):
    def test_above_three_percent_asks_for_a_bigger_buffer(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--iters", 200, "--drop", "2:5")
        rep = rt.report_json(self, d)
        for r in rep["ranks"]:
            (api,) = [x for x in r["lost_events"] if x["source"] == "api"]
            if r["rank"] == 2:
                self.assertAlmostEqual(api["percent"], 5.0, delta=0.3)
                self.assertTrue(api["above_limit"])
            else:
                self.assertEqual(api["dropped"], 0)
        f = rt.findings_of(rep, "lost_events")
        self.assertEqual(len(f), 1)
        self.assertEqual(f[0]["rank"], 2)
        self.assertIsNone(f[0]["time_at_stake_us"])
        self.assertIn("NPKIT_EVENT_BUF_SIZE", f[0]["next_step"])
        # data-quality findings come after the timed ones
        kinds = [x["time_at_stake_us"] is None for x in rep["findings"]]
        self.assertEqual(kinds, sorted(kinds))

    def test_below_three_percent_is_only_listed(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--iters", 200, "--drop", "1:2")
        rep = rt.report_json(self, d)
        self.assertEqual(rt.findings_of(rep, "lost_events"), [])
        r1 = [r for r in rep["ranks"] if r["rank"] == 1][0]
        self.assertFalse(r1["lost_events"][0]["above_limit"])


class Inputs(lib.TempDirTestCase):
    def test_text_report_sections(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--hosts", 2, "--offset", "1:100000", "--iters", 30, "--late", "1:20000")
        run = rt.tool("report", d)
        self.assertEqual(run.rc, 0, run.describe())
        for title in ("== Findings", "== Clock alignment", "== Collectives (nccl-tests table",
                      "== Bandwidth versus size", "== Stragglers and synchronisation delay",
                      "== Communication/computation overlap", "== Lost events"):
            self.assertIn(title, run.stdout)
        self.assertIn("rank 1 arrives last at collectives", run.stdout)
        self.assertRegex(run.stdout, r"host1\s+2-3\s+-100 us")

    def test_bad_inputs(self):
        missing = rt.tool("report", self.path("nothing"))
        self.assertEqual(missing.rc, 1)
        self.assertIn("No such file", missing.stderr)
        os.makedirs(self.path("empty"))
        empty = rt.tool("report", self.path("empty"))
        self.assertEqual(empty.rc, 1)
        self.assertIn("no event logs", empty.stderr)
        junk = self.path("junk.npkit")
        with open(junk, "wb") as f:
            f.write(b"this is not a log" * 10)
        bad = rt.tool("report", junk)
        self.assertEqual(bad.rc, 1)
        self.assertIn("not an npkit log", bad.stderr)
        # one bad file among good ones: a warning, and the rest is analysed
        d = self.path("logs")
        rt.gen(d, "--ranks", 2, "--iters", 5)
        shutil.copy(junk, d)
        rep = rt.report_json(self, d)
        self.assertEqual(rep["inputs"]["logs"], 2)
        self.assertTrue(any("not an npkit log" in w for w in rep["inputs"]["warnings"]))
        for args in (["--threshold", "fast", d], ["--top", "100", d], ["--bogus", d], [],
                     ["--html"]):
            run = rt.tool("report", *args)
            self.assertEqual(run.rc, 2, run.describe())
            self.assertIn("Try 'npkit report --help'", run.stderr)
        for cmd, words in (("report", ("--json", "--html", "--threshold", "--no-align", "--top")),
                           ("merge", ("--window", "--ranks", "--ops", "--no-align", "--warn-size", ".gz"))):
            run = rt.tool(cmd, "--help")
            self.assertEqual(run.rc, 0, run.describe())
            for w in words:
                self.assertIn(w, run.stdout)
        listing = rt.tool("--help")
        self.assertRegex(listing.stdout, r"\n  report +")
        self.assertRegex(listing.stdout, r"\n  merge +")
        unwritable = rt.tool("report", d, "--html", self.path("no", "such", "dir.html"))
        self.assertEqual(unwritable.rc, 1)
        self.assertIn("dir.html", unwritable.stderr)

    def test_duplicates_missing_ranks_and_truncation(self):
        d = self.path("logs")
        rt.gen(d, "--ranks", 4, "--iters", 10000)  # 3 event blocks per log
        logs = sorted(os.path.join(d, f) for f in os.listdir(d))
        # the same log twice counts once
        rep = rt.report_json(self, logs[0], logs[0], logs[1])
        self.assertEqual(rep["inputs"]["logs"], 2)
        self.assertTrue(any("the same process" in w for w in rep["inputs"]["warnings"]))
        # two of four ranks: the communicator is incomplete
        f = rt.findings_of(rep, "missing_ranks")
        self.assertEqual(len(f), 1)
        self.assertIn("2 of the 4 ranks", f[0]["title"])
        # a log cut in the middle: still read, and said
        size = os.path.getsize(logs[3])
        with open(logs[3], "r+b") as fh:
            fh.truncate(size // 2)
        rep = rt.report_json(self, d)
        f = rt.findings_of(rep, "truncated_log")
        self.assertEqual([x["rank"] for x in f], [3])
        r3 = [r for r in rep["ranks"] if r["rank"] == 3][0]
        self.assertTrue(r3["truncated"])
        self.assertGreater(r3["nccl_calls"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
