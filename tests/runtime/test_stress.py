"""Stress and faults of the recorder: 8 threads per process calling NCCL as fast as they can, with an
event pool far too small, under mpirun: every call is accounted for — events in the log + events
counted as dropped = calls made, exactly.  And a disk that fills up: one warning, recording stops,
the job finishes normally."""
import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest

STRESS, LIB, TOOL, FAKES, MPIRUN, SHIM = sys.argv[1:7]
# Sanitizer builds are 5-20x slower: the same invariants with fewer calls.
CALLS = int(os.environ.get("NPKIT_STRESS_CALLS", "200000" if os.environ.get("NPKIT_SANITIZE") else "1000000"))
THREADS = 8


def preload():
    pre = [LIB]
    san = os.environ.get("NPKIT_SANITIZE", "")
    if san:
        rt = subprocess.run(["cc", f"-print-file-name=lib{'asan' if san == 'address' else 'tsan'}.so"],
                            capture_output=True, text=True).stdout.strip()
        pre.insert(0, rt)
    return ":".join(pre)


def log_counts(log):
    out = subprocess.run([TOOL, "info", log], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^events\s+(\d+) \(recorded (\d+), dropped (\d+)\)", out, re.M)
    assert m, out
    calls = dict((fn, int(n)) for fn, n in re.findall(r"^  (nccl\w+)\s+(\d+)\s+\d+\s", out, re.M))
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), calls, out


class Stress(unittest.TestCase):
    def test_every_call_accounted_for_under_mpirun(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "trace")
            out = os.path.join(tmp, "calls")
            settings = dict(LD_PRELOAD=preload(), LD_LIBRARY_PATH=FAKES, FAKE_NCCL_NOOP="1",
                            NPKIT_TRACE_DIR=trace, NPKIT_EVENT_BUF_SIZE="1", NPKIT_JSON="0",
                            NPKIT_FLUSH_MS="10", ASAN_OPTIONS="detect_leaks=0",
                            NPKIT_PLUGIN="0")  # API events only: NCCL's own are tests/plugin's
            # `-x NAME=value` sets the variables for the ranks only: mpirun itself is not preloaded.
            cmd = [MPIRUN, "-np", "2", "--oversubscribe", "--bind-to", "none"]
            for k, v in settings.items():
                cmd += ["-x", f"{k}={v}"]
            cmd += ["sh", "-c", f'exec "{STRESS}" {THREADS} {CALLS} "{out}.$OMPI_COMM_WORLD_RANK"']
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            logs = sorted(glob.glob(os.path.join(trace, "*.npkit")))
            self.assertEqual(len(logs), 2)
            total_dropped = 0
            for rank in range(2):
                made = open(f"{out}.{rank}").read().split()
                calls_made, allreduce_made = int(made[1]), int(made[3])
                self.assertEqual(allreduce_made, THREADS * CALLS)
                matching = [l for l in logs if log_counts(l)[0] + log_counts(l)[2] == calls_made]
                self.assertTrue(matching, f"no log accounts for the {calls_made} calls of rank {rank}")
                in_log, recorded, dropped, per_fn, text = log_counts(matching[0])
                self.assertEqual(in_log, recorded, text)       # everything counted was written
                self.assertEqual(in_log + dropped, calls_made, text)
                self.assertEqual(per_fn.get("ncclCommInitAll"), 1, text)
                self.assertLessEqual(per_fn.get("ncclAllReduce", 0), allreduce_made)
                total_dropped += dropped
            # A 1 MB pool cannot hold 8 threads x 1M calls: the drop path was exercised.
            self.assertGreater(total_dropped, 0)
            self.assertIn("dropped", r.stderr)

    def test_disk_full_stops_recording_not_the_job(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "trace")
            out = os.path.join(tmp, "calls")
            # The shim makes writes to *.npkit files fail with ENOSPC after 256 KB, like a disk
            # that fills up while the job runs.
            env = dict(os.environ, LD_PRELOAD=preload() + ":" + SHIM, LD_LIBRARY_PATH=FAKES,
                       FAKE_NCCL_NOOP="1", NPKIT_TRACE_DIR=trace, NPKIT_FLUSH_MS="5",
                       ENOSPC_AFTER_BYTES=str(256 * 1024), ASAN_OPTIONS="detect_leaks=0")
            r = subprocess.run([STRESS, "2", "200000", out], env=env, capture_output=True,
                               text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(open(out).read().split()[3], "400000")
            warnings = [l for l in r.stderr.splitlines() if "recording stopped" in l]
            self.assertEqual(len(warnings), 1, r.stderr)
            self.assertTrue(all(l.startswith("npkit:") for l in r.stderr.splitlines()), r.stderr)
            logs = glob.glob(os.path.join(trace, "*.npkit"))
            self.assertEqual(len(logs), 1)
            self.assertLessEqual(os.path.getsize(logs[0]), 256 * 1024)
            # What reached the disk is still a readable log.
            rr = subprocess.run([TOOL, "json", logs[0], "-o", os.path.join(tmp, "t.json")],
                                capture_output=True, text=True)
            self.assertEqual(rr.returncode, 0, rr.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
