"""An NCCL opened with dlopen and called through dlsym(handle) pointers (dlopen_job on 3 ranks):
no call reaches a wrapper.

 - NCCL 2.28 (profiler ABI v5): every call is taken from NCCL's CollApi/P2pApi event and recorded
   as the call (from_nccl_events), on the calling thread's track, with its arguments, a
   communicator made from what NCCL told the plugin (the same id on every rank) and collective
   sequence numbers that agree across ranks; NCCL's tasks join those calls; `npkit report` counts
   them; one line on stderr says what happened.
 - NCCL 2.27 (v4, no API events): no calls, NCCL's tasks and channels still, and one line saying
   that the wrappers saw nothing and why.
 - A wrapped job (plugin_calls) has no call taken from NCCL's events."""

import collections
import json
import unittest

import plugin_lib as pl
from plugin_lib import lib

NP = 3
ITERS = 3
# per iteration, as the program calls them: (function, count, in a group)
PER_ITER = [("ncclAllReduce", 1000, False), ("ncclAllReduce", 300000, False), ("ncclBroadcast", 7000, False),
            ("ncclAllReduce", 2000, True), ("ncclAllReduce", 70000, True),
            ("ncclSend", 3000, True), ("ncclRecv", 3000, True)]


class Dlopen(lib.TempDirTestCase):
    def job(self, settings, prog="NPKIT_DLOPEN_JOB", args=("--iters", str(ITERS))):
        trace_dir = self.path("trace")
        s = {"NPKIT_TRACE_DIR": trace_dir}
        s.update(settings)
        run = pl.run_calls(NP, s, args=list(args), prog=prog)
        self.assertRunOk(run)
        return run, trace_dir, lib.load_traces(trace_dir, expect=NP)

    def test_calls_from_nccl_events(self):
        run, trace_dir, traces = self.job({})
        lines = [l for l in run.stderr_lines if "no NCCL call went through the wrappers" in l]
        self.assertEqual(len(lines), NP, run.describe())
        self.assertIn("%d calls on 1 communicator(s)" % (len(PER_ITER) * ITERS), lines[0])
        comm_ids = set()
        seqs = {}
        for rank, t in traces.items():
            calls = sorted(t.api(), key=lambda e: (e["ts"], e["args"].get("seq", -1)))
            self.assertTrue(all(e["args"].get("from_nccl_events") is True for e in calls))
            self.assertEqual([(e["name"], e["args"]["count"], "group" in e["args"]) for e in calls],
                             PER_ITER * ITERS)
            self.assertEqual(len({e["tid"] for e in calls}), 1)  # the thread that called NCCL
            for e in calls:
                a = e["args"]
                self.assertEqual((a["comm_rank"], a["comm_nranks"]), (rank, NP))
                self.assertEqual(a["datatype"], "int8" if e["name"] == "ncclBroadcast" else "float32")
                self.assertEqual(a["bytes"], a["count"] * (1 if e["name"] == "ncclBroadcast" else 4))
                self.assertNotIn("op", a)  # NCCL's events do not say
                if e["name"] == "ncclBroadcast":
                    self.assertEqual(a["root"], 1)
                comm_ids.add(a["comm_id"])
            # collectives numbered 0, 1, 2, ... in call order, as a wrapper numbers them
            colls = [e for e in calls if e["args"]["class"] == "coll"]
            self.assertEqual(sorted(e["args"]["seq"] for e in colls), list(range(len(colls))))
            seqs[rank] = [(e["args"]["seq"], e["name"], e["args"]["count"]) for e in sorted(colls, key=lambda e: e["args"]["seq"])]
            for e in calls:
                if e["args"]["class"] == "p2p":
                    self.assertNotIn("seq", e["args"])  # the peer is unknown
            # NCCL's tasks join the calls
            tasks = {e["args"]["seq"]: e for e in pl.by_cat(t, "nccl_gpu") if "seq" in e["args"]}
            self.assertEqual(sorted(tasks), list(range(len(colls))))
            for e in colls:
                self.assertEqual(tasks[e["args"]["seq"]]["args"]["func"], e["name"][4:])
        self.assertEqual(len(comm_ids), 1)  # the same communicator id on every rank
        self.assertEqual(seqs[0], seqs[1])
        self.assertEqual(seqs[0], seqs[2])
        # the report counts them as calls, GPU-timed by NCCL's tasks
        r = lib.run_tool(["report", "--json", trace_dir])
        self.assertEqual(r.rc, 0, r.describe())
        rep = json.loads(r.stdout)
        rows = {(c["op"], c["count"]): c for c in rep["collectives"]}
        want = collections.Counter((f[4:], n) for f, n, _ in PER_ITER)
        self.assertEqual({k: c["calls"] for k, c in rows.items()}, {k: v * ITERS * NP for k, v in want.items()})
        for (op, n), c in rows.items():
            self.assertEqual(c["time_source"], "none" if op in ("Send", "Recv") else "gpu", (op, n))

    def test_nccl_2_27_has_no_api_events(self):
        run, _, traces = self.job({"FAKE_NCCL_PROFILER_ABI": "4"})
        lines = [l for l in run.stderr_lines if "no call went through the wrappers" in l]
        self.assertEqual(len(lines), NP, run.describe())
        self.assertIn("profiler interface v4", lines[0])
        self.assertIn("NCCL 2.28 or later reports the calls too", lines[0])
        for t in traces.values():
            self.assertEqual(t.api(), [])
            funcs = collections.Counter(e["args"]["func"] for e in pl.by_cat(t, "nccl_gpu"))
            self.assertEqual(funcs, {"AllReduce": 4 * ITERS, "Broadcast": ITERS, "Send": ITERS, "Recv": ITERS})
        notes = [e for t in traces.values() for e in t.events if e.get("ph") == "i" and "wrappers" in str(e.get("args"))]
        self.assertEqual(len(notes), NP)  # kept in the trace too

    def test_wrapped_calls_are_not_doubled(self):
        run, _, traces = self.job({}, prog="NPKIT_PLUGIN_CALLS", args=())
        self.assertEqual([l for l in run.stderr_lines if "wrappers" in l], [])
        for t in traces.values():
            self.assertTrue(t.api())
            self.assertEqual([e for e in t.api() if e["args"].get("from_nccl_events")], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
