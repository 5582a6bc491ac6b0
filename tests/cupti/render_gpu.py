"""Rendering of GPU events (src/trace/trace_cupti.c) from a synthetic log written by gpu_log.c, by
the npkit tool: names, args, the call's part, bandwidth, arrows, untimed and lost activity, graph
replays, group kernels, copies and memsets, and more streams than there are tracks."""

import os
import subprocess
from decimal import Decimal
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import npkit_testlib as lib  # noqa: E402


class RenderGpu(lib.TempDirTestCase):

    def setUp(self):
        super().setUp()
        log = self.path("gpu.npkit")
        subprocess.run([lib.need_env("NPKIT_GPU_LOG"), log], check=True)
        out = self.path("gpu.json")
        r = lib.run_tool(["json", log, "-o", out])
        self.assertEqual(r.rc, 0, r.describe())
        self.t = lib.Trace(out)
        self.pid = self.t.events[0]["pid"]
        ev = self.t.events
        self.gpu = sorted([e for e in ev if e.get("ph") == "X" and e.get("cat") in
                           ("kernel", "gpu_memcpy", "gpu_memset")], key=lambda e: e["ts"])
        self.flows = [e for e in ev if e.get("cat") == "ac2g"]

    def at(self, ts):
        found = [e for e in self.gpu if e["ts"] == ts]
        self.assertEqual(len(found), 1, ts)
        return found[0]

    def test_kernel_tied_to_its_call(self):
        k = self.at(2)
        a = k["args"]
        self.assertEqual(k["name"], "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
        self.assertEqual(k["dur"], 0.5)
        self.assertEqual(k["tid"], self.pid * 1000 + 400)
        want = {"device": 0, "stream": 14, "correlation": 114, "grid": [24, 1, 1],
                "block": [640, 1, 1], "registers_per_thread": 96, "shared_memory": 9216,
                "static_shared_memory": 1024, "dynamic_shared_memory": 8192, "ext_id": 11,
                "nccl_call": "ncclAllReduce", "nccl_bytes": 1048576,
                "comm": "comm 1f2e3d4c (rank 0/2)", "comm_id": "0x1f2e3d4c5b6a7988",
                "comm_rank": 0, "comm_nranks": 2, "seq": 5}
        self.assertEqual({key: a.get(key) for key in want}, want)
        # 1 MiB in 500 ns = 2097.152 GB/s; AllReduce on 2 ranks: bus factor 2(n-1)/n = 1
        self.assertEqual(float(a["algbw_gbps"]), 2097.152)
        self.assertEqual(float(a["busbw_gbps"]), 2097.152)
        self.assertNotIn("group", a)
        # the arrow: from the middle of the call on thread 1 to the start of the kernel
        s = [f for f in self.flows if f["ph"] == "s"]
        f = [f for f in self.flows if f["ph"] == "f"]
        self.assertEqual(len(s), 2)
        self.assertEqual(len(f), 2)
        self.assertEqual((s[0]["tid"], s[0]["ts"]), (self.pid * 1000 + 1, 2))
        self.assertEqual((f[0]["tid"], f[0]["ts"], f[0]["bp"]), (k["tid"], 2, "e"))
        self.assertEqual(s[0]["id"], f[0]["id"])
        self.assertEqual(s[0]["id"] // 10**9, self.pid)

    def test_unnamed_untimed_and_lost(self):
        self.assertEqual(self.at(4)["name"], "(unnamed kernel)")
        self.assertNotIn("nccl_call", self.at(4)["args"])
        self.assertEqual(self.at(5)["args"]["nccl_call"], "(lost)")
        self.assertEqual(self.at(5)["args"]["ext_id"], 7)
        marks = [e for e in self.t.events if e.get("name") == "npkit untimed GPU activity"]
        self.assertEqual(len(marks), 1)
        self.assertEqual(marks[0]["args"]["untimed"], 1)
        self.assertFalse([e for e in self.gpu if e["ts"] <= 0])

    def test_graph_replay_and_group_kernel(self):
        g = self.at(6)["args"]
        self.assertEqual((g["graph_id"], g["graph_node"], g["launched_by"], g["nccl_call"], g["seq"]),
                         (3, 77, "cudaGraphLaunch", "ncclAllReduce", 5))
        grp = self.at(7)["args"]
        self.assertEqual((grp["nccl_call"], grp["group"], grp["group_calls"], grp["nccl_bytes"],
                          grp["launched_by"]), ("ncclGroupEnd", 42, 3, 3000, "ncclGroupEnd"))
        self.assertNotIn("seq", grp)
        self.assertNotIn("algbw_gbps", grp)  # several calls: no single bandwidth
        # the group kernel's arrow starts in the GroupEnd; the replay has none
        s = sorted(f["ts"] for f in self.flows if f["ph"] == "s")
        self.assertEqual(s, [Decimal("2"), Decimal("6.7")])

    def test_copies_and_memsets(self):
        c = self.at(8)
        self.assertEqual((c["name"], c["cat"]), ("Memcpy PtoP", "gpu_memcpy"))
        a = c["args"]
        self.assertEqual((a["bytes"], a["kind"], a["src_kind"], a["dst_kind"], a["src_device"],
                          a["dst_device"]), (2097152, "PtoP", "device", "device", 0, 1))
        self.assertEqual(float(a["bandwidth_gbps"]), 10485.76)
        s = self.at(9)
        self.assertEqual((s["name"], s["cat"], s["args"]["bytes"], s["args"]["value"],
                          s["args"]["memory_kind"]), ("Memset", "gpu_memset", 4096, 171, "device"))

    def test_streams_beyond_the_tracks_share_the_last(self):
        names = {tid: n for tid, n in self.t.thread_names().items() if 400 <= tid % 1000 < 700}
        self.assertEqual(len(names), 300)
        self.assertEqual(names[self.pid * 1000 + 400], "GPU 0 \u00b7 stream 14")
        self.assertEqual(names[self.pid * 1000 + 699], "GPU streams 300+")
        sort = {e["tid"]: e["args"]["sort_index"] for e in self.t.metadata("thread_sort_index")
                if 400 <= e["tid"] % 1000 < 700}
        self.assertEqual(sort[self.pid * 1000 + 401], 401)
        many = [e for e in self.gpu if e["args"]["stream"] >= 1000]
        self.assertEqual(len(many), 310)
        shared = [e for e in many if e["tid"] == self.pid * 1000 + 699]
        # streams 13, 14, 15 took 3 tracks; 296 more get their own; the other 14 share
        self.assertEqual(len(shared), 310 - 296)
        for e in many:
            if e["tid"] != self.pid * 1000 + 699:
                self.assertEqual(names[e["tid"]], "GPU 0 \u00b7 stream %d" % e["args"]["stream"])

    def test_the_trace_counts_them(self):
        # five kernels drawn (the untimed one is not), a copy, a memset, and the 310
        self.assertEqual(len(self.gpu), 7 + 310)
        self.assertEqual(self.t.other["dropped"], 0)


if __name__ == "__main__":
    unittest.main()
