"""CUDA graphs: a captured AllReduce replayed between eager AllReduces of the same shape
(graph_job under the fake NCCL, which models NCCL 2.28.9's persistent plans: src/enqueue.cc,
src/plugin/profiler.cc).  NCCL gives the captured call no task at capture time (its plan has
proxy ops when kernel-channel events are asked for) and one task per replay, emitted from the
host-callback thread with the capture-time CollApi as parent, seqNumber advancing at each replay.
Every eager call must still get its own task's algorithm, sequence number and GPU time; every
replay is drawn as its own GPU work, tied to the captured call; no API call is invented; and the
report counts the replays as collectives timed by the GPU.  Joining by a predicted seqNumber (as
before NCCL 2.28) gives the eager calls after the capture a replay's data instead."""

import os
import unittest

import plugin_lib as pl
from plugin_lib import lib

NP = 2
REPLAYS = 3


class Graphs(unittest.TestCase):
    def run_job(self, settings):
        tmp = lib.temp_dir("plugin_graphs", self.addCleanup)
        trace_dir = os.path.join(tmp, "trace")
        s = {"NPKIT_TRACE_DIR": trace_dir}
        s.update(settings)
        job = pl.run_calls(NP, s, args=("--replays", str(REPLAYS)), prog="NPKIT_GRAPH_JOB")
        self.assertEqual(job.rc, 0, job.describe())
        self.assertEqual([l for l in job.stderr_lines if "warning" in l], [])
        return trace_dir, lib.load_traces(trace_dir, expect=NP)

    def calls(self, t):
        calls = [e for e in t.api() if e["name"] == "ncclAllReduce"]
        self.assertEqual(len(calls), 5, [e["name"] for e in t.api()])
        return calls

    def test_replays_with_kernel_channels(self):
        trace_dir, traces = self.run_job({"NPKIT_CUPTI_LIBRARY": lib.need_env("NPKIT_FAKE_CUPTI")})
        for rank, t in traces.items():
            e0, captured, e1, e2, e3 = self.calls(t)
            # what NCCL numbers: E0 0, nothing at capture, E1 1, the replays 2..4, E2 5, E3 6
            want = {id(e0): 0, id(e1): 1, id(e2): 2 + REPLAYS, id(e3): 3 + REPLAYS}
            gpu = pl.by_cat(t, "nccl_gpu")
            for e in (e0, e1, e2, e3):
                a = e["args"]
                what = "rank %d call seq %d" % (rank, a["seq"])
                self.assertEqual(a.get("nccl_seq"), want[id(e)], what)
                mine = [g for g in gpu if pl.task_key(g) == ("AllReduce", a["nccl_seq"])]
                self.assertEqual(len(mine), 1, what)
                self.assertEqual(a["gpu_time_us"], mine[0]["args"]["gpu_time_us"], what)
                self.assertNotIn("graph_replay", mine[0]["args"], what)
                self.assertEqual(mine[0]["args"]["seq"], a["seq"], what)
            ca = captured["args"]
            self.assertIs(ca.get("graph_captured"), True)
            self.assertNotIn("nccl_seq", ca)
            self.assertNotIn("gpu_time_us", ca)
            replays = [g for g in gpu if g["args"].get("graph_replay")]
            self.assertEqual(sorted(g["args"]["nccl_seq"] for g in replays), [2, 3, 4])
            for g in replays:
                self.assertEqual(g["name"], "AllReduce %s/%s (graph replay)"
                                 % (g["args"]["algorithm"], g["args"]["protocol"]))
                self.assertEqual(g["args"]["captured_seq"], ca["seq"])
                self.assertNotIn("seq", g["args"])
                self.assertGreater(g["args"]["gpu_time_us"], 0)
                # after the capture and E1, before E2, up to the error of the GPU clock's map (on a
                # loaded host the proxy reports late, and the map may put the replay late by as much)
                err = max(c["args"]["map_error_us"] for c in pl.by_cat(t, "nccl_kernel")
                          if pl.task_key(c) == ("AllReduce", g["args"]["nccl_seq"]))
                self.assertGreater(g["ts"] + err, e1["ts"] + e1["dur"])
                self.assertLess(g["ts"] + g["dur"], e2["ts"] + err)
            # CUPTI: the replayed kernels (cudaGraphLaunch) are attributed to the captured call
            ks = [k for k in t.events if k.get("cat") == "kernel" and "graph_id" in k.get("args", {})]
            self.assertEqual(len(ks), REPLAYS)
            for k in ks:
                self.assertEqual((k["args"]["nccl_call"], k["args"]["seq"]), ("ncclAllReduce", ca["seq"]))
        # the report: 4 eager calls and 3 replays timed by the GPU, no call invented
        r = lib.run_tool(["report", trace_dir, "--json"])
        self.assertEqual(r.rc, 0, r.describe())
        import json
        rep = json.loads(r.stdout)
        rows = [row for row in rep["collectives"] if row["op"] == "AllReduce"]
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual(rows[0]["calls"], 5 * NP)
        self.assertEqual(rows[0]["time_source"], "gpu")
        self.assertEqual(rows[0]["timed_calls"], (4 + REPLAYS) * NP)
        self.assertEqual(rows[0]["graph_replays"], REPLAYS * NP)

    def test_no_kernel_channels(self):
        # without proxy ops NCCL emits the captured plan's task once, at capture, without
        # advancing seqNumber, and nothing at the replays
        _, traces = self.run_job({"NPKIT_PLUGIN_EVENTS": "coll"})
        for rank, t in traces.items():
            e0, captured, e1, e2, e3 = self.calls(t)
            self.assertEqual([e["args"].get("nccl_seq") for e in (e0, e1, e2, e3)], [0, 1, 2, 3])
            for e in (e0, e1, e2, e3):
                self.assertEqual(e["args"]["algorithm"], pl.algo("AllReduce", 65536 * 4, NP))
            self.assertIs(captured["args"].get("graph_captured"), True)
            self.assertNotIn("nccl_seq", captured["args"])


if __name__ == "__main__":
    unittest.main()
