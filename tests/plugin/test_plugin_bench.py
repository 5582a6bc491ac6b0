"""bench/plugin_bench, the program behind bench/run_plugin_overhead.sh's figures, drives the
library for real: for each ABI, every kernel channel and proxy event it counts reaches the log, and
its event count per collective is the one NCCL's sequence gives (computed here).  No time is
checked: the figures themselves are the bench's business (bench/RESULTS.md)."""

import os
import re
import subprocess
import tempfile
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import npkit_testlib  # noqa: E402  (the log's event counts)

BENCH = os.environ.get("NPKIT_PLUGIN_BENCH", "")
LIB = os.environ.get("NPKIT_PRELOAD_LIB", "")
TOOL = os.environ.get("NPKIT_TOOL", "")
N, CHANNELS, STEPS = 50, 4, 3


def expected_events(abi):
    # v5+: GroupApi, CollApi, KernelLaunch, Group, Coll; v4: Group, Coll; then per channel a
    # KernelCh, and a send and a receive ProxyOp of STEPS ProxySteps each
    return (5 if abi >= 5 else 2) + CHANNELS + 2 * CHANNELS * (1 + STEPS)


class PluginBench(unittest.TestCase):
    def run_bench(self, abi, trace):
        env = dict(os.environ, NPKIT_TRACE_DIR=trace, NPKIT_JSON="0", NPKIT_QUIET="1")
        env.pop("LD_PRELOAD", None)  # the bench loads the library itself, as NCCL loads its plugin
        r = subprocess.run([BENCH, LIB, "--abi", str(abi), "--collectives", str(N), "--channels", str(CHANNELS),
                            "--steps", str(STEPS), "--repeats", "1"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        fields = dict(re.findall(r"(\w+)=([-0-9.]+)", r.stdout))
        return fields

    def logged(self, trace):
        return npkit_testlib.log_event_counts(trace, TOOL)

    @unittest.skipUnless(BENCH and LIB and TOOL, "plugin_bench, the library or the tool not built")
    def test_every_abi(self):
        for abi in (4, 5, 6, 7):
            with self.subTest(abi=abi), tempfile.TemporaryDirectory() as trace:
                f = self.run_bench(abi, trace)
                per = expected_events(abi)
                self.assertEqual(int(f["events_per_collective"]), per)
                for k in ("ns_per_event", "raw_ns_per_event", "baseline_ns_per_event", "other_cpu_ns_per_event"):
                    self.assertIn(k, f)
                self.assertGreater(float(f["baseline_ns_per_event"]), 0)
                recorded, dropped = self.logged(trace)
                self.assertEqual(dropped, 0)
                # every channel, op and step is a record; the call-level events are a few records
                # each (at most one per event), plus the log's own few (communicator, clock, stats)
                slots = CHANNELS + 2 * CHANNELS * (1 + STEPS)
                self.assertGreaterEqual(recorded, N * slots)
                self.assertLessEqual(recorded, N * per + 32)


if __name__ == "__main__":
    unittest.main(verbosity=2)
