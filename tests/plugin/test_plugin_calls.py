"""NCCL's own events of a 3-rank job (plugin_calls under mpirun, fake NCCL 2.28 driving the
library's ncclProfiler_v5 table, ranks acting as separate nodes): every collective NCCL launched
says which algorithm, protocol and channels ran and its GPU time, its kernel-channel slices are
on per-channel tracks, and its network steps add up to the bytes the fake moves — all compared
with what the test computes from the calls and the fake's documented rules."""

import collections
import os
import unittest
from decimal import Decimal

import plugin_lib as pl
from plugin_lib import lib

NP = 3


class PluginCalls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = lib.temp_dir("plugin_calls", cls.addClassCleanup)
        trace_dir = os.path.join(cls.tmp, "trace")
        cls.job = pl.run_calls(NP, {"NPKIT_TRACE_DIR": trace_dir, "FAKE_NCCL_NET": "1"})
        if cls.job.rc != 0:
            raise AssertionError(cls.job.describe())
        cls.traces = lib.load_traces(trace_dir, expect=NP)

    def collectives(self, t):
        """(API event, the seqNumbers NCCL may give it) for the calls NCCL turned into tasks."""
        api = t.api()
        expected = pl.expected_nccl_seqs(api, pl.comms_of(t))
        return [(e, expected[id(e)]) for e in api if id(e) in expected], api, expected

    def test_no_loss_and_no_warning(self):
        self.assertEqual([l for l in self.job.stderr_lines if "warning" in l], [])
        for t in self.traces.values():
            self.assertEqual(t.other["dropped"], 0)
            self.assertEqual([e for e in t.events if e.get("name") == "npkit plugin"], [])

    def test_algorithm_protocol_channels_on_api_events(self):
        for rank, t in self.traces.items():
            colls, api, expected = self.collectives(t)
            # 8 single calls, 4 AllReduce + 1 Broadcast in a group, the call after the simulated
            # group; rank 1's split communicator has one rank: NCCL launches nothing for it
            self.assertEqual(len(colls), 8 + 5 + 1 + (0 if rank == 1 else 1), [e["name"] for e, _ in colls])
            for e, seqs in colls:
                a = e["args"]
                func = pl.NCCL_FUNC[e["name"]]
                nbytes = pl.task_bytes(e)
                nranks = pl.comms_of(t)[a["comm"]]
                what = "rank %d %s count %d" % (rank, e["name"], a["count"])
                self.assertEqual(a.get("algorithm"), pl.algo(func, nbytes, nranks), what)
                self.assertEqual(a.get("protocol"), pl.proto(nbytes), what)
                self.assertEqual(a.get("channels"), pl.channels(nbytes), what)
                self.assertEqual(a.get("warps"), 16 if pl.proto(nbytes) == "SIMPLE" else 8, what)
                self.assertIn(a.get("nccl_seq"), seqs, what)
                self.assertIn("gpu_time_us", a, what)
            # the sizes chose every protocol, both algorithms and 1, 2 and 4 channels
            self.assertEqual({e["args"]["protocol"] for e, _ in colls}, {"LL", "LL128", "SIMPLE"})
            self.assertEqual({e["args"]["algorithm"] for e, _ in colls}, {"TREE", "RING"})
            self.assertEqual({e["args"]["channels"] for e, _ in colls}, {1, 2, 4})
            # what NCCL did not launch says nothing about it
            for e in api:
                if id(e) not in expected:
                    self.assertNotIn("algorithm", e["args"], e)
            names = collections.Counter(e["name"] for e in api if "algorithm" in e["args"])
            self.assertEqual(names["ncclAlltoAll"], 0)
            self.assertEqual(names["ncclBcast"], 1)

    def test_channel_slices_and_gpu_time(self):
        for rank, t in self.traces.items():
            kernels = pl.by_cat(t, "nccl_kernel")
            gpu = pl.by_cat(t, "nccl_gpu")
            colls, _, _ = self.collectives(t)
            for e, _ in colls:
                a = e["args"]
                key = (pl.NCCL_FUNC[e["name"]], a["nccl_seq"])
                mine = [k for k in kernels
                        if pl.track_comm(t, k["tid"]) == a["comm"] and pl.task_key(k) == key]
                what = "rank %d %r" % (rank, key)
                self.assertEqual(sorted(k["args"]["channel"] for k in mine),
                                 list(range(a["channels"])), what)
                names = t.thread_names()
                for k in mine:
                    self.assertEqual(names[k["tid"]], "channel %d \u00b7 %s" % (k["args"]["channel"], a["comm"]))
                    self.assertIs(k["args"]["gpu_timer"], True)
                    self.assertEqual((k["args"]["algorithm"], k["args"]["protocol"]),
                                     (a["algorithm"], a["protocol"]))
                    self.assertEqual(k["name"], "%s %s/%s" % (key[0], a["algorithm"], a["protocol"]))
                first = min(k["ts"] for k in mine)
                last = max(k["ts"] + k["dur"] for k in mine)
                self.assertEqual(a["gpu_time_us"], last - first, what)
                # the fake's channel c starts 100 ns after channel c-1; each stamp is mapped with
                # the drift the GPU clock map has fitted, truncated to whole ns per stamp
                # (plugin_clock_map.c: g + offset + (int64_t)(slope * (g - gref))), so once a
                # slope is fitted (a loaded host) two stamps' distance may move by 1 ns
                starts = sorted(k["ts"] for k in mine)
                for c, s in enumerate(starts):
                    self.assertLessEqual(abs((s - starts[0]) - Decimal(c) / 10), Decimal("0.001"),
                                         "%s: %r" % (what, [s - starts[0] for s in starts]))
                lane = [g for g in gpu
                        if pl.track_comm(t, g["tid"]) == a["comm"] and pl.task_key(g) == key]
                self.assertEqual(len(lane), 1, what)
                self.assertEqual((lane[0]["ts"], lane[0]["dur"]), (first, last - first), what)
                self.assertEqual(lane[0]["args"]["seq"], a["seq"], what)
                self.assertTrue(names[lane[0]["tid"]].startswith("collectives (GPU) \u00b7 "))

    def expected_transfers(self, e, nranks):
        """{(peer, 'send'|'recv'): bytes} the fake's plan moves for the collective e."""
        a = e["args"]
        func, me, c = pl.NCCL_FUNC[e["name"]], a["comm_rank"], a["count"]
        es = lib.DTYPE_SIZE[a["datatype"]]
        root = a.get("root")
        out = {}
        for q in range(nranks):
            if q == me:
                continue
            if func == "AllReduce":
                b = (pl.slice_elems(c, nranks, q) + pl.slice_elems(c, nranks, me)) * es
                out[(q, "send")] = out[(q, "recv")] = b
            elif func in ("AllGather", "ReduceScatter"):
                out[(q, "send")] = out[(q, "recv")] = c * es
            elif func == "Broadcast":
                if me == root:
                    out[(q, "send")] = c * es
                elif q == root:
                    out[(q, "recv")] = c * es
            elif func == "Reduce":
                if me == root:
                    out[(q, "recv")] = c * es
                elif q == root:
                    out[(q, "send")] = c * es
        return out

    def test_network_steps_add_up(self):
        sent = {}  # (comm_id, func, nccl_seq, from, to) -> bytes, from the senders' traces
        received = {}
        for rank, t in self.traces.items():
            steps = [s for s in pl.by_cat(t, "nccl_net")]
            ops = [o for o in pl.by_cat(t, "nccl_proxy") if o["name"].startswith("proxy ")]
            self.assertTrue(steps and ops)
            for s in steps:
                self.assertLessEqual(s["args"]["size"], pl.STEP_BYTES)
                self.assertGreater(s["args"]["size"], 0)
            comm_ids = {c["label"]: c["comm_id"] for c in t.other["comms"]}
            colls, _, _ = self.collectives(t)
            for e, _ in colls:
                a = e["args"]
                key = (pl.NCCL_FUNC[e["name"]], a["nccl_seq"])
                got = collections.Counter()
                for s in steps:
                    if pl.track_comm(t, s["tid"]) == a["comm"] and pl.task_key(s) == key:
                        got[(s["args"]["peer"], "send" if s["name"] == "net send" else "recv")] += s["args"]["size"]
                want = self.expected_transfers(e, pl.comms_of(t)[a["comm"]])
                self.assertEqual(dict(got), want, "rank %d %s %r" % (rank, e["name"], key))
                by_op = collections.Counter()
                for o in ops:
                    if pl.track_comm(t, o["tid"]) == a["comm"] and pl.task_key(o) == key:
                        oa = o["args"]
                        self.assertEqual(oa["steps"], -(-oa["bytes"] // pl.STEP_BYTES))
                        self.assertEqual(oa["steps_done"], oa["steps"])
                        by_op[(oa["peer"], o["name"][6:])] += oa["bytes"]
                self.assertEqual(dict(by_op), want)
                me = a["comm_rank"]  # peers are ranks in the communicator
                for (peer, d), b in want.items():
                    k = (comm_ids[a["comm"]],) + key
                    (sent if d == "send" else received)[k + ((me, peer) if d == "send" else (peer, me))] = b
            # send/recv ring and AlltoAll: P2p tasks, by peer
            p2p = collections.Counter()
            for s in steps:
                if s["args"].get("func") in ("Send", "Recv"):
                    p2p[(s["args"]["func"], s["args"]["peer"])] += s["args"]["size"]
            nxt, prv = (rank + 1) % NP, (rank + NP - 1) % NP
            want = collections.Counter()
            for q in range(NP):
                if q != rank:
                    want[("Send", q)] += 5000 * 4
                    want[("Recv", q)] += 5000 * 4
            want[("Send", nxt)] += 30000 * 4
            want[("Recv", prv)] += 30000 * 4
            self.assertEqual(p2p, want, "rank %d" % rank)
        self.assertEqual(sorted(set(sent.items()) ^ set(received.items())), [],
                         "what one rank sent, its peer received")

    def test_p2p_kernel_channels(self):
        for rank, t in self.traces.items():
            sends = [k for k in pl.by_cat(t, "nccl_kernel") if k["args"].get("func") == "Send"]
            # the ring's Send (120000 B: 2 channels) and AlltoAll's Sends to the other ranks (1 each)
            nxt = (rank + 1) % NP
            self.assertEqual(len(sends), 2 + (NP - 1) + 1)  # + AlltoAll's send to itself
            chans = collections.Counter(k["args"]["channel"] for k in sends)
            for q in range(NP):
                self.assertGreater(chans[(2 * q) % pl.NCHANNELS], 0)
            self.assertGreater(chans[(2 * nxt + 1) % pl.NCHANNELS], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
