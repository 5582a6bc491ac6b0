"""fork() without exec: the child's NCCL calls work and it writes nothing (it records nothing, by
the documented rule); the parent's trace is complete. fork()+exec: the new program records into
its own files."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

JOB, LIB, FAKES = sys.argv[1:4]


def run(mode, tmp, **extra):
    env = dict(os.environ, LD_LIBRARY_PATH=FAKES, NPKIT_TRACE_DIR=os.path.join(tmp, "t"),
               FAKE_NCCL_LAT_US="0", ASAN_OPTIONS="detect_leaks=0")
    pre = [LIB]
    san = os.environ.get("NPKIT_SANITIZE", "")
    if san:
        pre.insert(0, subprocess.run(["cc", f"-print-file-name=lib{'asan' if san == 'address' else 'tsan'}.so"],
                                     capture_output=True, text=True).stdout.strip())
    env["LD_PRELOAD"] = ":".join(pre)
    if san == "thread":
        # The fake NCCL's child starts its proxy thread after a fork of a threaded parent, as the
        # real one does; ThreadSanitizer cannot follow that unless told to go on.
        env["TSAN_OPTIONS"] = (os.environ.get("TSAN_OPTIONS", "") + " die_after_fork=0").strip()
    env.update(extra)
    return subprocess.run([JOB, mode], env=env, capture_output=True, text=True, timeout=120)


def allreduce_counts(tmp):
    counts = {}
    for path in glob.glob(os.path.join(tmp, "t", "*.json")):
        trace = json.load(open(path))
        pid = trace["otherData"]["pid"]
        counts[pid] = sum(1 for e in trace["traceEvents"]
                          if e.get("ph") == "X" and e.get("name") == "ncclAllReduce")
    return counts


class Fork(unittest.TestCase):
    def test_fork_without_exec(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run("plain", tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "")
            # One process wrote files: the parent, with its 10 calls; the child's 4 are not there.
            self.assertEqual(len(glob.glob(os.path.join(tmp, "t", "*.npkit"))), 1)
            self.assertEqual(list(allreduce_counts(tmp).values()), [10])
            self.assertEqual(sum("wrote" in l for l in r.stderr.splitlines()), 1, r.stderr)

    def test_fork_and_exec(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run("exec", tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            counts = sorted(allreduce_counts(tmp).values())
            self.assertEqual(counts, [3, 10])  # the exec'd program recorded its own 3 calls


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
