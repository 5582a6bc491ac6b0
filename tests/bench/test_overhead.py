"""bench/overhead --paired, the measurement behind bench/run_overhead.sh's added_cpu column: its
direct blocks really bypass the preloaded library (the log holds the wrapped calls and none of the
direct ones), both kinds of block run as many calls as asked, and a bad block size is refused with
a message.  No time is checked: the figures are the bench's business (bench/RESULTS.md)."""

import os
import re
import subprocess
import tempfile
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import npkit_testlib  # noqa: E402  (sanitizer runtime and options for a sanitized library)

BENCH = os.environ.get("NPKIT_OVERHEAD_BENCH", "")
LIB = os.environ.get("NPKIT_PRELOAD_LIB", "")
TOOL = os.environ.get("NPKIT_TOOL", "")
FAKES = os.environ.get("NPKIT_FAKE_NCCL_DIR", "")
CALLS, REPEATS, BLOCK = 20000, 3, 1000


def env_with(**extra):
    env = dict(os.environ, FAKE_NCCL_NOOP="1", LD_LIBRARY_PATH=FAKES, **extra)
    env.pop("LD_PRELOAD", None)
    return env


def fields(out):
    return dict(re.findall(r"(\w+)=([-0-9.,]+)", out))


@unittest.skipUnless(BENCH and LIB and TOOL and FAKES, "bench/overhead, the library, the tool or the fake NCCL not built")
class OverheadPaired(unittest.TestCase):
    def run_bench(self, threads, preload, trace, *extra):
        env = env_with(NPKIT_TRACE_DIR=trace, NPKIT_JSON="0", NPKIT_QUIET="1")
        if preload:
            # a sanitized library needs its runtime first in LD_PRELOAD (the bench is not instrumented)
            rt = npkit_testlib.sanitizer_runtime()
            env["LD_PRELOAD"] = LIB if rt is None else rt + ":" + LIB
            env.update(npkit_testlib.sanitizer_env())
        return subprocess.run([BENCH, "--calls", str(CALLS), "--repeats", str(REPEATS), "--threads", str(threads),
                               "--paired", str(BLOCK), *extra], capture_output=True, text=True, env=env, timeout=120)

    def recorded(self, trace):
        return npkit_testlib.log_event_counts(trace, TOOL)

    def test_direct_blocks_are_not_recorded(self):
        for threads in (1, 2):
            with self.subTest(threads=threads), tempfile.TemporaryDirectory() as trace:
                r = self.run_bench(threads, True, trace)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                f = fields(r.stdout)
                self.assertEqual(int(f["paired_blocks"]), REPEATS * CALLS // BLOCK)
                for k in ("paired_direct_cpu_ns", "paired_wrapped_cpu_ns", "paired_added_cpu_ns"):
                    self.assertGreater(float(f[k]), 0, k)
                self.assertEqual(len(f["sorted_paired_added_cpu_ns"].split(",")), REPEATS)
                recorded, dropped = self.recorded(trace)
                self.assertEqual(dropped, 0)
                # every wrapped call is an event, plus the log's few of its own (communicators,
                # init, destroy, clock); the as many direct calls are not: they would double it
                wrapped = threads * REPEATS * CALLS
                self.assertGreaterEqual(recorded, wrapped)
                self.assertLess(recorded, wrapped + 64)

    def test_paced_calls(self):
        # --spin adds the same work after every call of both kinds: the log still holds exactly
        # the wrapped calls, and the direct blocks now cost more than a bare call
        with tempfile.TemporaryDirectory() as trace:
            bare = fields(self.run_bench(1, False, trace).stdout)
            r = self.run_bench(1, True, trace, "--spin", "300")
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            f = fields(r.stdout)
            self.assertGreater(float(f["paired_direct_cpu_ns"]), float(bare["paired_direct_cpu_ns"]))
            recorded, dropped = self.recorded(trace)
            self.assertEqual(dropped, 0)
            self.assertGreaterEqual(recorded, REPEATS * CALLS)
            self.assertLess(recorded, REPEATS * CALLS + 64)

    def test_blocks_printed(self):
        with tempfile.TemporaryDirectory() as trace:
            r = self.run_bench(1, False, trace, "--print-blocks", "1")
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            lines = [l for l in r.stderr.splitlines() if "block pair" in l]
            self.assertEqual(len(lines), REPEATS)
            for line in lines:
                pairs = re.findall(r" (\d+)/(\d+)", line.split(":", 1)[1])
                self.assertEqual(len(pairs), CALLS // BLOCK)

    def test_bad_options_refused(self):
        with tempfile.TemporaryDirectory() as trace:
            bad = [["--paired", b] for b in ("3000", "-5", str(CALLS * 2))]
            bad += [["--spin", "100"], ["--paired", str(BLOCK), "--spin", "-1"]]
            for args in bad:
                with self.subTest(args=args):
                    r = subprocess.run([BENCH, "--calls", str(CALLS), *args], capture_output=True, text=True,
                                       env=env_with(NPKIT_TRACE_DIR=trace), timeout=60)
                    self.assertEqual(r.returncode, 2)
                    self.assertIn(args[-2], r.stderr)
                    self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
