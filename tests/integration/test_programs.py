"""The test programs themselves, without the library: they pick libnccl through LD_LIBRARY_PATH
(no RPATH to the fake), their own checks pass on correct data and fail on wrong data, their
checksums are deterministic, and bad command lines are refused."""

import os
import shutil
import subprocess
import unittest

import npkit_testlib as lib

PROGRAMS = ("nccl_mix", "nccl_threads", "nccl_everything", "nccl_real_init")


def read(path):
    with open(path) as f:
        return f.read()


class Programs(lib.TempDirTestCase):
    @unittest.skipUnless(shutil.which("readelf"), "readelf not installed")
    def test_nccl_is_found_at_run_time(self):
        fakes = os.path.realpath(lib.need_env("NPKIT_FAKES_DIR"))
        for name in PROGRAMS:
            out = subprocess.run(["readelf", "-d", lib.program(name)], capture_output=True,
                                 text=True, check=True).stdout
            self.assertIn("Shared library: [libnccl.so.2]", out, name)
            for line in out.splitlines():
                if "RPATH" in line or "RUNPATH" in line:
                    self.assertNotIn(fakes, line, name)
                    self.assertNotIn("cuda", line, name)

    def test_mix_checks_pass_and_results_are_deterministic(self):
        outs = []
        for n, extra in enumerate(([], [], ["--delay-rank", "1", "--delay-us", "1000"])):
            out = self.path("results%d" % n)
            run = lib.run_mpi("nccl_mix", ["--small", "--iters", "2", "--check", "--results",
                                           out] + extra, 4, preload=False)
            self.assertRunOk(run)
            self.assertEqual(run.stdout, "")
            self.assertEqual(run.stderr, "")
            outs.append([read("%s.rank%d" % (out, r)) for r in range(4)])
        self.assertEqual(outs[0], outs[1])
        self.assertEqual(outs[0], outs[2], "a delay must not change the data")
        # ranks receive different data (ReduceScatter, AlltoAll, ...): checksums tell them apart
        self.assertNotEqual(outs[0][0], outs[0][1])

    def test_mix_check_catches_wrong_data(self):
        # calls that return at once without moving data must fail the check
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", "1", "--check"], 2, preload=False,
                          settings={"FAKE_NCCL_NOOP": "1"})
        self.assertEqual(run.rc != 0, True, run.describe())
        self.assertIn("check failed", run.stderr)

    def test_threads_and_everything_checks_pass(self):
        for args in (["--threads"], ["--grouped"]):
            run = lib.run_direct("nccl_threads", args + ["--small", "--check"], preload=False)
            self.assertRunOk(run, args)
            self.assertEqual(run.stdout + run.stderr, "")
        run = lib.run_direct("nccl_everything", ["--check"], preload=False)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        bad = lib.run_direct("nccl_threads", ["--threads", "--small", "--check"],
                             preload=False, settings={"FAKE_NCCL_NOOP": "1"})
        self.assertNotEqual(bad.rc, 0, bad.describe())

    def test_journal_is_complete(self):
        journal = self.path("journal")
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", "2", "--journal", journal], 2,
                          preload=False)
        self.assertRunOk(run)
        for r in range(2):
            j = lib.Journal("%s.rank%d" % (journal, r))
            names = [c.fn for c in j.calls]
            self.assertEqual(names[0], "ncclGetUniqueId" if r == 0 else "ncclCommInitRank")
            self.assertEqual(names[-1], "ncclCommDestroy")
            self.assertEqual(names.count("ncclAllReduce"), 2 * 9)
            for c in j.calls:
                self.assertEqual(c.get("result"), "ncclSuccess", c)
                lib.api_class(c.fn)   # every name is an NCCL function
            self.assertEqual(int(j.meta["pid"]), int(j.meta["tid"]))

    def test_bad_command_lines(self):
        for prog, args in (("nccl_threads", []), ("nccl_threads", ["--threads", "--iters", "x"]),
                           ("nccl_everything", ["--bogus"]), ("nccl_real_init", [])):
            run = lib.run_direct(prog, args, preload=False)
            self.assertEqual(run.rc, 2, run.describe())
            self.assertIn("usage", run.stderr)
            self.assertEqual(run.stdout, "")
        for args in (["--iters", "-1"], ["--delay-rank", "1"], ["--frobnicate"]):
            run = lib.run_mpi("nccl_mix", args, 1, preload=False)
            self.assertNotEqual(run.rc, 0, run.describe())
            self.assertIn("usage", run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
