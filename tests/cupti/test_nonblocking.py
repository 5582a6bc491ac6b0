"""Non-blocking communicators (nonblocking_job under the fake NCCL and the fake CUPTI): NCCL
creates the communicator and launches every collective from threads of its own (NCCL 2.28.9
src/init.cc, src/group.cc), so the correlation id the library pushes around the application's
call does not cover those kernels; the library pushes the launching call's id around NCCL's
KernelLaunch instead.  Calls return ncclInProgress, which is a normal result.  And NCCL's calls
of its own public API (ncclGetVersion from its init thread, ncclCommGetAsyncError inside every
collective) are not the application's: with every function recorded (NPKIT_OPS=all), the trace
holds exactly the application's own calls."""

import collections
import json
import os
import unittest

import cupti_testlib as ct
from cupti_testlib import lib

ITERS = 3
NP = 2


class NonBlocking(lib.TempDirTestCase):
    def test_kernels_tied_and_only_the_applications_calls(self):
        trace_dir, polls = self.path("trace"), self.path("polls")
        s = {"NPKIT_TRACE_DIR": trace_dir, "NPKIT_CUPTI_LIBRARY": ct.fake_cupti(), "NPKIT_OPS": "all"}
        prog = lib.need_file(lib.need_env("NPKIT_NONBLOCKING_JOB"), "nonblocking_job")
        run = ct.run_job(["--iters", str(ITERS), "--polls-out", polls], np=NP, settings=s,
                         cwd=self.tmp, prog=prog)
        self.assertRunOk(run)
        self.assertEqual(run.warnings, [], run.describe())
        traces = lib.load_traces(trace_dir, expect=NP)
        for r, t in traces.items():
            api = t.api()
            names = collections.Counter(e["name"] for e in api)
            # the application's calls, and nothing of NCCL's own
            with open("%s.rank%d" % (polls, r)) as f:
                self.assertEqual(names["ncclCommGetAsyncError"], int(f.read()))
            self.assertEqual(names["ncclGetVersion"], 0, names)
            self.assertEqual(names["ncclAllReduce"], 2 * ITERS)
            self.assertEqual(names["ncclGroupEnd"], ITERS)
            bare = [e for e in api if e["name"] == "ncclAllReduce" and "group" not in e["args"]]
            ends = [e for e in api if e["name"] == "ncclGroupEnd"]
            for e in bare + ends + [e for e in api if e["name"] == "ncclCommInitRankConfig"]:
                self.assertEqual(e["args"]["result"], "ncclInProgress", e)
            # sequence numbers count calls that returned ncclInProgress
            seqs = [e["args"]["seq"] for e in api if e["name"] in ("ncclAllReduce", "ncclAllGather")]
            self.assertEqual(sorted(seqs), list(range(3 * ITERS)))
            # every NCCL kernel, launched from NCCL's thread, is tied to the call it belongs to
            fls = ct.flows(t)
            kernels = [k for k in ct.kernels(t) if k["name"].startswith("ncclDevKernel_")]
            self.assertEqual(len(kernels), 2 * ITERS)
            for k in kernels:
                a = k["args"]
                self.assertIn(a.get("nccl_call"), ("ncclAllReduce", "ncclGroupEnd"), a)
            single = [k for k in kernels if k["args"]["nccl_call"] == "ncclAllReduce"]
            self.assertEqual(sorted(k["args"]["seq"] for k in single), sorted(e["args"]["seq"] for e in bare))
            grouped = [k for k in kernels if k["args"]["nccl_call"] == "ncclGroupEnd"]
            self.assertEqual(len(grouped), ITERS)
            for k in grouped:
                self.assertEqual(k["args"]["group_calls"], 2)
            self.assertEqual(len([f for f in fls.values() if f[1] is not None]), len(kernels))
        # the report counts the calls that returned ncclInProgress, timed by their kernels
        r = lib.run_tool(["report", trace_dir, "--json"])
        self.assertEqual(r.rc, 0, r.describe())
        rep = json.loads(r.stdout)
        rows = [row for row in rep["collectives"] if row["op"] == "AllReduce" and row["bytes"] == 4096 * 4]
        self.assertEqual(len(rows), 1, rep["collectives"])
        self.assertEqual(rows[0]["calls"], ITERS * NP)
        self.assertEqual(rows[0]["time_source"], "gpu")
        self.assertEqual(rows[0]["timed_calls"], ITERS * NP)


if __name__ == "__main__":
    unittest.main()
