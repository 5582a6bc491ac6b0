"""Against an older NCCL (the fake behaving like 2.17.3, without AlltoAll, Gather, Scatter,
CommShrink, CommRevoke, window registration, CommInitRankScalable and GroupSimulateEnd): jobs
that stay within its API run as before; a function it lacks returns ncclInvalidUsage with one
warning naming it."""

import unittest

import npkit_testlib as lib

MISSING = ("ncclAlltoAll", "ncclGather", "ncclScatter", "ncclCommShrink", "ncclCommRevoke",
           "ncclCommWindowRegister", "ncclCommInitRankScalable", "ncclGroupSimulateEnd")


class OldNccl(lib.TempDirTestCase):
    def test_mix_without_new_api(self):
        trace_dir = self.path("trace")
        journal = self.path("journal")
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", "2", "--no-new-api", "--check",
                                       "--journal", journal],
                          2, nccl="old", settings={"NPKIT_TRACE_DIR": trace_dir})
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        self.assertEqual(run.warnings, [])
        traces = lib.load_traces(trace_dir, expect=2)
        for r, t in traces.items():
            j = lib.Journal("%s.rank%d" % (journal, r))
            problems = lib.compare_calls(j.recorded(), t.api(tid=t.tid_of_os_thread(j.tid)))
            self.assertEqual(problems, [], lib.format_problems(problems))

    def test_everything_reports_missing_functions(self):
        trace_dir = self.path("trace")
        journal_path = self.path("journal")
        run = lib.run_direct("nccl_everything", ["--journal", journal_path], nccl="old",
                             settings={"NPKIT_TRACE_DIR": trace_dir})
        self.assertRunOk(run)
        journal = lib.Journal(journal_path)
        results = {}
        for c in journal.calls:
            results.setdefault(c.fn, c.get("result"))
        self.assertEqual(results["ncclAlltoAll"], "ncclInvalidUsage")
        for fn in MISSING:
            if fn in results:
                self.assertEqual(results[fn], "ncclInvalidUsage", fn)
        named = [l for l in run.warnings if "ncclAlltoAll" in l]
        self.assertEqual(len(named), 1, run.describe())
        for line in run.stderr_lines:
            if "ncclAlltoAll" in line:
                self.assertTrue(line.startswith("npkit: warning:"), line)

        traces = lib.load_traces(trace_dir)
        t = list(traces.values())[0]
        problems = lib.compare_calls(journal.recorded(), t.api(tid=t.tid_of_os_thread(journal.tid)))
        self.assertEqual(problems, [], lib.format_problems(problems))
        a2a = [e for e in t.api() if e["name"] == "ncclAlltoAll"]
        self.assertEqual(len(a2a), 1)
        self.assertEqual(a2a[0]["args"]["result"], "ncclInvalidUsage")
        self.assertNotIn("seq", a2a[0]["args"])
        # the warning is kept in the trace as a note
        notes = [e for e in t.events if e.get("ph") == "i" and e.get("cat") == "npkit"]
        self.assertTrue(any("ncclAlltoAll" in e["args"]["message"] for e in notes), notes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
