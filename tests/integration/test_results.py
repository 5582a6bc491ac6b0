"""The library must not change what the job computes or prints: the checksums of every received
buffer, the NCCL return codes (journal) and stdout are identical with and without it, and the
job's own checks of the data pass under it."""

import os
import re
import unittest

import npkit_testlib as lib


def read(path):
    with open(path) as f:
        return f.read()


def journal_body(path):
    """Journal lines without the header (thread and process ids differ between runs)."""
    return [l for l in read(path).splitlines() if not l.startswith("#")]


class SameResults(lib.TempDirTestCase):
    def run_pair(self, np, args):
        """Runs nccl_mix without and with the library; returns both runs."""
        runs = {}
        for mode in ("plain", "preload"):
            out = self.path(mode)
            os.makedirs(out)
            runs[mode] = lib.run_mpi(
                "nccl_mix", args + ["--check", "--results", os.path.join(out, "results"),
                                    "--journal", os.path.join(out, "journal")],
                np, preload=(mode == "preload"),
                settings={"NPKIT_TRACE_DIR": os.path.join(out, "trace")})
            self.assertRunOk(runs[mode], mode)
        return runs

    def assert_same_outputs(self, np, runs):
        for r in range(np):
            plain = read(self.path("plain", "results.rank%d" % r))
            traced = read(self.path("preload", "results.rank%d" % r))
            self.assertGreater(len(plain.splitlines()), 10)
            self.assertEqual(traced, plain, "rank %d: received data differs" % r)
            self.assertEqual(journal_body(self.path("preload", "journal.rank%d" % r)),
                             journal_body(self.path("plain", "journal.rank%d" % r)),
                             "rank %d: calls or return codes differ" % r)
        self.assertEqual(runs["plain"].stdout, "")
        self.assertEqual(runs["preload"].stdout, "")
        # the plain run really was plain, the traced one really traced
        self.assertFalse(os.path.exists(self.path("plain", "trace")))
        self.assertEqual(len(lib.load_traces(self.path("preload", "trace"))), np)

    def test_small_sizes_four_ranks(self):
        runs = self.run_pair(4, ["--small", "--iters", "3"])
        self.assert_same_outputs(4, runs)

    def test_full_sizes_two_ranks(self):
        # gradient buckets up to 8 MB
        runs = self.run_pair(2, ["--iters", "1"])
        self.assert_same_outputs(2, runs)
        t = lib.load_traces(self.path("preload", "trace"), expect=2)[0]
        biggest = max(e["args"].get("bytes", 0) for e in t.api())
        self.assertEqual(biggest, 2097152 * 4)

    def test_odd_rank_count(self):
        # 3 ranks: the split has halves of 2 and 1
        runs = self.run_pair(3, ["--small", "--iters", "1"])
        self.assert_same_outputs(3, runs)

    def test_library_lines_all_prefixed(self):
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", "1"], 2,
                          settings={"NPKIT_TRACE_DIR": self.path("trace")})
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        for line in run.stderr_lines:
            self.assertTrue(line.startswith("npkit:"), "stray stderr line: %r" % line)
        wrote = [l for l in run.npkit_lines if " wrote " in l]
        self.assertEqual(len(wrote), 2, run.describe())
        traces = lib.load_traces(self.path("trace"), expect=2)
        for r, t in traces.items():
            line = [l for l in wrote if l.startswith("npkit: rank %d: wrote " % r)]
            self.assertEqual(len(line), 1, wrote)
            self.assertRegex(line[0], r"^npkit: rank %d: wrote (\S+) \((\d+) events, 0 dropped\)$"
                             % r)
            path, events = re.match(r"npkit: rank \d+: wrote (\S+) \((\d+) events",
                                        line[0]).groups()
            self.assertEqual(os.path.realpath(path), os.path.realpath(t.path))
            self.assertEqual(int(events), t.other["events"])

    def test_default_trace_dir(self):
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", "1"], 2, cwd=self.tmp)
        self.assertRunOk(run)
        lib.load_traces(self.path("npkit_trace"), expect=2)
        self.assertEqual(len(lib.log_files(self.path("npkit_trace"))), 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
