"""What CUPTI loses is counted and shown, never hidden: records CUPTI dropped (in the trace's drop
counter and otherData, in a warning, in the exit line), kernels CUPTI could not time (counted, not
drawn), and buffers refused at the NPKIT_CUPTI_BUFFERS limit."""

import unittest

import cupti_testlib as ct
from cupti_testlib import lib

ITERS = 3


class FakeLosses(lib.TempDirTestCase):

    def run_job(self, settings, np=2):
        trace_dir = self.path("trace")
        s = {"NPKIT_TRACE_DIR": trace_dir, "NPKIT_CUPTI_LIBRARY": ct.fake_cupti()}
        s.update(settings)
        run = ct.run_job(["--iters", str(ITERS), "--graph"], np=np, settings=s, cwd=self.tmp)
        self.assertRunOk(run)
        return run, lib.load_traces(trace_dir, expect=np)

    def launched(self, t):
        """Kernels each rank's job runs: compute, one per NCCL launch, the graph replays."""
        launches, _ = ct.expected_launches(t.api())
        return ITERS + len(launches) + ct.GRAPH_REPLAYS

    def check_attributed(self, t):
        """Every NCCL kernel that did arrive is tied to the call that launched it."""
        api = t.api()
        launches, _ = ct.expected_launches(api)
        fls = ct.flows(t)
        by_target = {(f["tid"], f["ts"]): (s, f) for s, f in fls.values() if f is not None}
        for k in ct.kernels(t):
            if not k["name"].startswith("ncclDevKernel_") or "graph_id" in k["args"]:
                continue
            l = ct.launcher_of(t, k, by_target, api)
            self.assertIsNotNone(l, k)
            match = [(x, g) for x, g in launches if x.launcher is l and x.name == k["name"]]
            self.assertEqual(len(match), 1, (k, l))
            group = match[0][1]
            want = group[0]["name"] if len(group) == 1 else "ncclGroupEnd"
            self.assertEqual(k["args"]["nccl_call"], want, k)

    def test_dropped_records_are_reported(self):
        run, traces = self.run_job({"FAKE_CUPTI_DROP_EVERY": "4"})
        lost_lines = [l for l in run.warnings if "CUPTI lost" in l]
        self.assertEqual(len(lost_lines), 2, run.describe())
        for r, t in traces.items():
            launched = self.launched(t)
            dropped = launched // 4
            kernels = ct.kernels(t)
            self.assertEqual(len(kernels), launched - dropped)
            self.check_attributed(t)
            self.assertEqual(t.other["dropped"], dropped)
            counters = [e for e in t.events if e.get("ph") == "C" and e["name"] == "npkit dropped events"]
            self.assertEqual([c["args"]["dropped"] for c in counters], [dropped])
            notes = [e["args"]["message"] for e in t.events if e.get("cat") == "npkit"
                     and "CUPTI lost" in e.get("args", {}).get("message", "")]
            self.assertEqual(len(notes), 1, notes)
            self.assertIn("CUPTI lost %d GPU activity records" % dropped, notes[0])
            self.assertEqual(ct.exit_counts(run, r), (len(kernels), ITERS, ITERS, dropped))
            # the binary log's own counters say the same (source 2: the GPU)
            log = lib.log_for_trace(t.path)
            info = lib.run_tool(["info", log])
            self.assertEqual(info.rc, 0, info.describe())
            self.assertIn(str(dropped), info.stdout)

    def test_untimed_kernels_are_counted_not_drawn(self):
        run, traces = self.run_job({"FAKE_CUPTI_UNTIMED_EVERY": "5"})
        self.assertEqual(len([l for l in run.warnings if "not timed by CUPTI" in l]), 2,
                         run.describe())
        for r, t in traces.items():
            launched = self.launched(t)
            untimed = launched // 5
            kernels = ct.kernels(t)
            self.assertEqual(len(kernels), launched - untimed)
            for k in kernels:
                self.assertGreater(k["ts"], 0)
            marks = [e for e in t.events if e.get("name") == "npkit untimed GPU activity"]
            self.assertEqual([m["args"]["untimed"] for m in marks], [untimed])
            self.assertEqual(t.other["dropped"], 0)
            # stored in the log (exit line), only not drawn
            self.assertEqual(ct.exit_counts(run, r)[0], launched)

    def test_buffer_limit_refuses_and_counts(self):
        # two 1 KB buffers and no flushing but the final one: CUPTI runs out of room, the records
        # it could not store are counted, and the job is unharmed
        run, traces = self.run_job({"NPKIT_CUPTI_BUFFER_KB": "1", "NPKIT_CUPTI_BUFFERS": "2",
                                    "NPKIT_FLUSH_MS": "3600000"})
        for r, t in traces.items():
            kernels = ct.kernels(t)
            copies = ct.kernels(t, "gpu_memcpy") + ct.kernels(t, "gpu_memset")
            lost = ct.exit_counts(run, r)[3]
            self.assertEqual(t.other["dropped"], lost)
            # everything launched either arrived or is counted as lost (ext records count too)
            self.assertGreaterEqual(len(kernels) + len(copies) + lost, self.launched(t) + 2 * ITERS)
            self.assertGreater(len(kernels), 0)


if __name__ == "__main__":
    unittest.main()
