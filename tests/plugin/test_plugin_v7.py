"""The library as NCCL 2.31.2 loads it (profiler ABI v7, the fake built as 2.31.2): plugin_tags
on 3 ranks calls the nccl*Config collectives with user profiler tags next to plain calls.

 - NCCL takes ncclProfiler_v7; the events asked for are NPKIT_PLUGIN_EVENTS' (no KernelPhase by
   default: NCCL issue #2355);
 - each call shows its tag (trace of the wrapped calls), and NCCL's task of the call carries the
   tag of its CollApi/P2pApi, also for an AlltoAllConfig's P2p tasks (whose own descriptors the
   fake leaves untagged);
 - with NPKIT_PLUGIN_EVENTS=...,phase every channel of a collective gets NCCL's three phases
   (initial_sync, compute, final_sync) on a track below the channel's, contiguous, mapped as the
   channel is, and of the lengths the fake's GPU gave them; P2p channels get none;
 - a v6 table under the same NCCL (FAKE_NCCL_PROFILER_ABI=6, as 2.29/2.30 load it) gets no phases
   and no tags from NCCL, while the calls keep theirs;
 - `npkit report` sums the calls by tag: calls, bytes, time (the GPU time of each call's task, or
   the call's CPU time for the AlltoAll, whose P2p tasks it does not time) and share, checked
   against sums taken here from the traces."""

import json
import unittest
from decimal import Decimal

import plugin_lib as pl
from plugin_lib import lib

NP = 3
ITERS = 2
T1, T2, T3, T4, TOP = "0x1001", "0x2002", "0x3003", "0x4004", "0x8000000000000005"
PER_ITER = [("ncclAllReduceConfig", T1), ("ncclAllReduce", None), ("ncclAllGatherConfig", T2),
            ("ncclGroupStart", None), ("ncclAllReduceConfig", T1), ("ncclReduceScatterConfig", T3),
            ("ncclGroupEnd", None), ("ncclGroupStart", None), ("ncclSend", None), ("ncclRecv", None),
            ("ncclGroupEnd", None), ("ncclAlltoAllConfig", T4)]
CALLS = PER_ITER * ITERS + [("ncclAllReduceConfig", None), ("ncclBroadcastConfig", TOP)]
PHASES = ["initial_sync", "compute", "final_sync"]


def ns(us):
    return int(Decimal(us) * 1000)


class V7(lib.TempDirTestCase):
    def job(self, settings):
        trace_dir = self.path("trace")
        s = {"NPKIT_TRACE_DIR": trace_dir}
        s.update(settings)
        run = pl.run_calls(NP, s, args=["--iters", str(ITERS)], prog="NPKIT_PLUGIN_TAGS", nccl="new")
        self.assertRunOk(run)
        return lib.load_traces(trace_dir, expect=NP)

    def profiler(self, t):
        m = t.metadata("nccl_profiler")
        self.assertEqual(len(m), 1, m)
        return m[0]["args"]

    def check_calls(self, t):
        calls = [(e["name"], e["args"].get("user_tag")) for e in t.api()
                 if e["name"] not in ("ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy")]
        self.assertEqual(calls, CALLS)

    def tasks_by_seq(self, t):
        out = {}
        for e in pl.by_cat(t, "nccl_gpu"):
            if "seq" in e["args"]:
                out.setdefault((e["args"]["func"], e["args"]["seq"]), []).append(e)
        return out

    def test_tags_on_calls_and_tasks(self):
        traces = self.job({})
        for rank, t in traces.items():
            p = self.profiler(t)
            self.assertEqual(p["abi"], 7)
            self.assertNotIn("KernelPhase", p["events"])
            self.assertIn("KernelCh", p["events"])  # the API events come as the tasks' parents
            self.check_calls(t)
            self.assertEqual(pl.by_cat(t, "nccl_kernel_phase"), [])
            tasks = self.tasks_by_seq(t)
            checked = 0
            for e in t.api():
                a = e["args"]
                if a["class"] != "coll" or "seq" not in a:
                    continue
                func = e["name"][4:].replace("Config", "")
                if func == "AlltoAll":  # NCCL runs it as P2p tasks: below
                    continue
                mine = tasks.get((func, a["seq"]), [])
                self.assertEqual(len(mine), 1, (rank, e, sorted(tasks)))
                self.assertEqual(mine[0]["args"].get("user_tag"), a.get("user_tag"), (mine, e))
                checked += 1
            self.assertEqual(checked, 5 * ITERS + 2)
            # An AlltoAllConfig's P2p tasks (a Send and a Recv per rank) carry its P2pApi's tag;
            # the Send/Recv ring has no Config variant: untagged
            p2p = [e for e in pl.by_cat(t, "nccl_gpu") if e["args"]["func"] in ("Send", "Recv")]
            self.assertEqual(sorted((e["args"]["count"], e["args"].get("user_tag")) for e in p2p),
                             sorted([(5000, T4)] * (2 * NP * ITERS) + [(30000, None)] * (2 * ITERS)))

    def test_kernel_phases(self):
        traces = self.job({"NPKIT_PLUGIN_EVENTS": "coll,p2p,kernel,phase"})
        for rank, t in traces.items():
            p = self.profiler(t)
            self.assertEqual(p["abi"], 7)
            self.assertIn("KernelPhase", p["events"])
            self.check_calls(t)
            phases = pl.by_cat(t, "nccl_kernel_phase")
            names = t.thread_names()
            by_channel = {}
            for ph in phases:
                a = ph["args"]
                key = (pl.track_comm(t, ph["tid"]), a["channel"], a["func"], a.get("nccl_seq"))
                by_channel.setdefault(key, []).append(ph)
                self.assertRegex(names[ph["tid"]], r"^channel %d phases \u00b7 " % a["channel"])
                self.assertIs(a["gpu_timer"], True)
            channels = pl.by_cat(t, "nccl_kernel")
            coll = [c for c in channels if c["args"]["func"] not in ("Send", "Recv")]
            self.assertTrue(coll)
            for c in channels:
                a = c["args"]
                key = (pl.track_comm(t, c["tid"]), a["channel"], a["func"], a.get("nccl_seq"))
                mine = sorted(by_channel.pop(key, []), key=lambda e: e["args"]["phase"])
                if a["func"] in ("Send", "Recv"):
                    self.assertEqual(mine, [], c)  # no phase stamps on the P2p path
                    continue
                self.assertEqual([(e["name"], e["args"]["phase"]) for e in mine],
                                 list(zip(PHASES, range(3))), c)
                c0, c1 = ns(c["ts"]), ns(c["ts"]) + ns(c["dur"])
                edges = [ns(e["ts"]) for e in mine] + [ns(mine[-1]["ts"]) + ns(mine[-1]["dur"])]
                # contiguous, from the channel's start to its stop: one estimate maps them all
                self.assertEqual(edges[0], c0, (c, mine))
                self.assertEqual(edges[-1], c1, (c, mine))
                for i in range(3):
                    self.assertEqual(ns(mine[i]["ts"]) + ns(mine[i]["dur"]), edges[i + 1])
                # the fake's syncs take 5 % of the channel each (its GPU clock drifts 20 ppm)
                span = c1 - c0
                for i, share in ((0, 0.05), (2, 0.05)):
                    self.assertLessEqual(abs(ns(mine[i]["dur"]) - span * share), 2 + span * 1e-4, (c, mine))
            self.assertEqual(by_channel, {}, "phases without their channel")

    def test_report_by_tag(self):
        trace_dir = self.path("trace")
        traces = self.job({})
        run = lib.run_tool(["report", "--json", trace_dir])
        self.assertEqual(run.rc, 0, run.describe())
        rep = json.loads(run.stdout)
        want = {}
        for t in traces.values():
            gpu = {}
            for e in pl.by_cat(t, "nccl_gpu"):
                if "seq" in e["args"]:
                    gpu[(e["args"]["func"], e["args"]["seq"])] = ns(e["args"]["gpu_time_us"])
            for e in t.api():
                a = e["args"]
                if a["class"] not in ("coll", "p2p") or a.get("result") != "ncclSuccess":
                    continue
                w = want.setdefault(a.get("user_tag"), {"calls": 0, "bytes": 0, "time": 0, "ops": set()})
                op = e["name"][4:].replace("Config", "")
                w["calls"] += 1
                w["bytes"] += a["bytes"]
                w["ops"].add(op)
                if "group" in a and op in ("Send", "Recv"):
                    continue  # in a group and untimed by NCCL's tasks: no time
                if op == "AlltoAll":
                    w["time"] += ns(e["dur"])  # P2p tasks are not the call's: its CPU time
                else:
                    w["time"] += gpu[(op, a["seq"])]
        got = {u["user_tag"]: u for u in rep["user_tags"]}
        self.assertEqual(sorted(got, key=str), sorted(want, key=str))
        total = sum(w["time"] for w in want.values())
        for tag, w in want.items():
            u = got[tag]
            self.assertEqual((u["calls"], u["bytes"], set(u["ops"])), (w["calls"], w["bytes"], w["ops"]), tag)
            self.assertLessEqual(abs(ns(u["time_us"]) - w["time"]), w["calls"], (tag, u, w))
            self.assertAlmostEqual(u["share"], w["time"] / total, delta=1e-3)
            self.assertEqual(u["time_source"], "cpu" if tag == T4 else "gpu", tag)
        self.assertIsNone(rep["user_tags"][-1]["user_tag"])  # the untagged last
        # the table's rows carry the tag too
        rows = {(r["op"], r["user_tag"]) for r in rep["collectives"]}
        self.assertIn(("AllReduce", T1), rows)
        self.assertIn(("AllReduce", None), rows)

    def test_v6_table_under_2_31(self):
        traces = self.job({"NPKIT_PLUGIN_EVENTS": "coll,p2p,kernel,phase", "FAKE_NCCL_PROFILER_ABI": "6"})
        for t in traces.values():
            p = self.profiler(t)
            self.assertEqual(p["abi"], 6)
            self.assertNotIn("KernelPhase", p["events"])
            self.check_calls(t)  # the wrappers still see the tags
            self.assertEqual(pl.by_cat(t, "nccl_kernel_phase"), [])
            self.assertTrue(pl.by_cat(t, "nccl_kernel"))
            self.assertEqual([e for e in pl.by_cat(t, "nccl_gpu") if "user_tag" in e["args"]], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
