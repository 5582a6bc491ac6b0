"""How a job ends must not matter: NCCL torn down before or after MPI_Finalize, ncclCommAbort
instead of destroy, or no teardown at all (as PyTorch jobs often end). Every rank still writes a
complete, cleanly closed trace holding every call its journal lists, in order."""

import os
import unittest

import npkit_testlib as lib

NP = 4


class ExitPaths(unittest.TestCase):
    def run_mode(self, mode):
        tmp = lib.temp_dir("exit_" + mode, self.addCleanup)
        trace_dir, journal = os.path.join(tmp, "trace"), os.path.join(tmp, "journal")
        job = lib.run_mpi("nccl_mix", ["--small", "--iters", "1", "--check", "--journal", journal,
                                       "--end", mode],
                          NP, settings={"NPKIT_TRACE_DIR": trace_dir, "NPKIT_PLUGIN": "0"})
        self.assertEqual(job.rc, 0, job.describe())
        self.assertEqual(job.stdout, "")
        traces = lib.load_traces(trace_dir, expect=NP)
        last_calls = set()
        for r in range(NP):
            t = traces[r]
            self.assertTrue(t.other["closed_cleanly"], (mode, r))
            self.assertFalse(t.other["truncated"], (mode, r))
            calls = lib.Journal("%s.rank%d" % (journal, r)).recorded()
            problems = lib.compare_calls(calls, t.api())
            self.assertEqual(problems, [], lib.format_problems(problems))
            last_calls.add(t.api()[-1]["name"])
        return last_calls

    def test_nccl_teardown_after_mpi_finalize(self):
        self.assertEqual(self.run_mode("finalize-first"), {"ncclCommDestroy"})

    def test_abort_instead_of_destroy(self):
        self.assertEqual(self.run_mode("abort"), {"ncclCommAbort"})

    def test_no_teardown_at_all(self):
        self.assertNotIn("ncclCommDestroy", self.run_mode("none"))

    def test_usual_order(self):
        self.assertEqual(self.run_mode("destroy"), {"ncclCommDestroy"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
