"""Recording windows: npkit_pause()/npkit_resume(), NPKIT_START_AFTER / NPKIT_STOP_AFTER (collectives
or time) and NPKIT_TOGGLE_SIGNAL store exactly the calls and marks of the recorded stretches, show
every change as an instant with its reason, and keep sequence numbers counting while paused, so
that they stay identical across ranks."""

import unittest

import callsites_lib as cs

lib = cs.lib


def seqs(trace, name=None):
    return sorted(int(e["args"]["seq"]) for e in cs.api(trace, name) if "seq" in e["args"])


def ns(trace, e, end=False):
    return trace.end_ns(e) if end else trace.start_ns(e)


class Windows(lib.TempDirTestCase):

    def run_prog(self, args, settings=None):
        self.runs = getattr(self, "runs", 0) + 1
        trace_dir = self.path("trace%d" % self.runs)
        r = cs.run([cs.prog("callsite_prog_g")] + args, dict(settings or {}, NPKIT_TRACE_DIR=trace_dir))
        self.assertRunOk(r)
        return cs.one_trace(self, trace_dir)

    def by_seq(self, t):
        return {int(e["args"]["seq"]): e for e in t.api() if "seq" in e["args"]}

    def test_pause_and_resume(self):
        # iteration i: GEMM, [pause before i == 2's collectives], [resume before i == 4's], AllReduce
        # (seq 2i), Broadcast (seq 2i + 1), instant, end of step
        t = self.run_prog(["--iters", "6", "--pause-at", "2", "--resume-at", "4"])
        self.assertEqual(seqs(t, "ncclAllReduce"), [0, 2, 8, 10])
        self.assertEqual(seqs(t, "ncclBroadcast"), [1, 3, 9, 11])
        tg = cs.toggles(t)
        self.assertEqual([(e["name"], e["args"]["reason"]) for e in tg],
                         [("npkit recording paused", "npkit_pause()"), ("npkit recording resumed", "npkit_resume()")])
        for e in tg:
            self.assertEqual(e["s"], "p")
        calls = self.by_seq(t)
        gemm = cs.marks(t, "X", "GEMM")
        self.assertEqual(len(gemm), 4)  # iterations 0, 1, 2 and 5: iteration 4's ran while paused
        self.assertTrue(ns(t, calls[3], True) <= ns(t, gemm[2], True) <= ns(t, tg[0]) < ns(t, tg[1]) <= ns(t, calls[8]))
        self.assertLessEqual(ns(t, calls[9], True), ns(t, gemm[3]))
        steps = cs.marks(t, "X", "step")
        self.assertEqual(len(steps), 4)
        cut = [e for e in steps if e.get("args", {}).get("cut_by_pause")]
        self.assertEqual(len(cut), 1)
        self.assertEqual(ns(t, cut[0], True), ns(t, tg[0]))  # closed where recording paused
        self.assertEqual(len(cs.marks(t, "i", "iteration done")), 4)

    def test_window_by_collectives(self):
        t = self.run_prog(["--iters", "8", "--no-marks"], {"NPKIT_START_AFTER": "4", "NPKIT_STOP_AFTER": "10"})
        self.assertEqual(seqs(t), list(range(4, 10)))
        self.assertEqual([e["name"] for e in t.api()].count("ncclCommInitAll"), 0)
        self.assertEqual([e["name"] for e in t.api()].count("ncclCommDestroy"), 0)
        tg = cs.toggles(t)
        self.assertEqual([(e["name"], e["args"]["reason"], e["args"]["collectives"]) for e in tg],
                         [("npkit recording paused", "NPKIT_START_AFTER", 0),
                          ("npkit recording resumed", "NPKIT_START_AFTER", 4),
                          ("npkit recording paused", "NPKIT_STOP_AFTER", 10)])
        calls = self.by_seq(t)
        self.assertEqual(ns(t, tg[1]), ns(t, calls[4]))  # resumed at the start of the 5th collective
        self.assertLess(ns(t, calls[9], True), ns(t, tg[2]))

    def test_window_by_time(self):
        # 150 iterations of at least 1 ms: calls cross both points, in sanitizer builds too
        t = self.run_prog(["--iters", "150", "--no-marks", "--gemm-us", "1000"],
                          {"NPKIT_START_AFTER": "40ms", "NPKIT_STOP_AFTER": "90ms"})
        tg = cs.toggles(t)
        self.assertEqual([(e["name"], e["args"]["reason"]) for e in tg],
                         [("npkit recording paused", "NPKIT_START_AFTER"), ("npkit recording resumed", "NPKIT_START_AFTER"),
                          ("npkit recording paused", "NPKIT_STOP_AFTER")])
        start = ns(t, tg[0])  # the paused instant at start-up is the window's time zero
        self.assertGreaterEqual(ns(t, tg[1]) - start, 40000000)
        self.assertGreaterEqual(ns(t, tg[2]) - start, 90000000)
        recorded = seqs(t)
        self.assertTrue(recorded)
        self.assertEqual(recorded, list(range(recorded[0], recorded[-1] + 1)))
        self.assertEqual(recorded[0], tg[1]["args"]["collectives"])
        self.assertEqual(recorded[-1] + 1, tg[2]["args"]["collectives"])
        self.assertLess(recorded[-1], 299)  # not to the end
        first = min(t.api(), key=lambda e: e["ts"])
        self.assertEqual(ns(t, first), ns(t, tg[1]))
        for e in t.api():
            self.assertTrue(ns(t, tg[1]) <= ns(t, e) < ns(t, tg[2]), e)

    def check_signal(self, setting, sig_arg):
        args = ["--iters", "7", "--no-marks", "--raise-at", "2", "--raise-at", "5"] + sig_arg
        t = self.run_prog(args, {"NPKIT_TOGGLE_SIGNAL": setting})
        self.assertEqual(seqs(t), [0, 1, 2, 3, 10, 11, 12, 13])
        tg = cs.toggles(t)
        self.assertEqual([(e["name"], e["args"]["reason"], e["args"]["collectives"]) for e in tg],
                         [("npkit recording paused", "NPKIT_TOGGLE_SIGNAL", 4),
                          ("npkit recording resumed", "NPKIT_TOGGLE_SIGNAL", 10)])
        calls = self.by_seq(t)
        self.assertTrue(ns(t, calls[3], True) <= ns(t, tg[0]) < ns(t, tg[1]) <= ns(t, calls[10]))
        return tg

    def test_toggle_signal(self):
        tg = self.check_signal("SIGUSR2", [])
        self.assertEqual({e["args"]["signal"] for e in tg}, {"SIGUSR2"})
        tg = self.check_signal("10", ["--signal", "10"])
        self.assertEqual({e["args"]["signal"] for e in tg}, {"SIGUSR1"})

    def test_sequence_numbers_across_ranks(self):
        """Paused calls keep their numbers: a window's calls carry the numbers of a full run, and
        the ranks agree on them."""
        def recorded(settings, name):
            trace_dir = self.path(name)
            r = lib.run_mpi("nccl_mix", ["--iters", "3", "--small"], 2,
                            settings=dict(settings, NPKIT_TRACE_DIR=trace_dir))
            self.assertRunOk(r)
            out = []
            for t in sorted(cs.traces(trace_dir), key=lambda t: t.rank):
                out.append({(e["args"]["comm_nranks"], e["name"], int(e["args"]["seq"]), e["args"]["bytes"])
                            for e in t.api() if e["args"].get("class") == "coll" and "seq" in e["args"]})
            self.assertEqual(len(out), 2)
            return out
        full = recorded({}, "full")
        window = recorded({"NPKIT_START_AFTER": "12", "NPKIT_STOP_AFTER": "30"}, "window")
        for rank in (0, 1):
            self.assertTrue(window[rank])
            self.assertLess(len(window[rank]), len(full[rank]))
            self.assertLessEqual(window[rank], full[rank])
        world = [{x for x in w if x[0] == 2} for w in window]
        self.assertEqual(world[0], world[1])


if __name__ == "__main__":
    unittest.main()
