"""A 4-rank training-like job (nccl_mix) under the preloaded library: every NCCL call the program
journals appears exactly once, in order and with the right arguments in its rank's trace;
sequence numbers line up across ranks; group slices hold exactly the calls made inside them."""

import collections
import os
import unittest

import npkit_testlib as lib

NP = 4
ITERS = 2


class MixCalls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = lib.temp_dir("mix_calls", cls.addClassCleanup)
        cls.trace_dir = os.path.join(cls.tmp, "trace")
        cls.journal = os.path.join(cls.tmp, "journal")
        cls.job = lib.run_mpi("nccl_mix", ["--small", "--iters", str(ITERS), "--check",
                                           "--journal", cls.journal],
                              NP, settings={"NPKIT_TRACE_DIR": cls.trace_dir})

    def setUp(self):
        self.assertEqual(self.job.rc, 0, self.job.describe())
        self.traces = lib.load_traces(self.trace_dir, expect=NP)
        self.journals = {r: lib.Journal("%s.rank%d" % (self.journal, r)) for r in range(NP)}

    def main_thread_events(self, rank):
        t = self.traces[rank]
        return t.api(tid=t.tid_of_os_thread(self.journals[rank].tid))

    def test_job_is_quiet_on_stdout(self):
        self.assertEqual(self.job.stdout, "")

    def test_every_journal_call_is_in_the_trace_in_order(self):
        for r in range(NP):
            with self.subTest(rank=r):
                calls = self.journals[r].recorded()
                self.assertGreater(len(calls), 20 * ITERS, "journal suspiciously short")
                problems = lib.compare_calls(calls, self.main_thread_events(r))
                self.assertEqual(problems, [], lib.format_problems(problems))

    def test_no_events_on_other_threads(self):
        for r in range(NP):
            t = self.traces[r]
            self.assertEqual(len(t.api()), len(self.main_thread_events(r)))

    def test_default_ops_skip_queries(self):
        for r in range(NP):
            names = {e["name"] for e in self.traces[r].api()}
            self.assertNotIn("ncclCommCount", names)
            self.assertNotIn("ncclCommUserRank", names)
            journal_names = {c.fn for c in self.journals[r].calls}
            self.assertIn("ncclCommCount", journal_names)  # the program did call it

    def test_bcast_recorded_once_without_inner_broadcast(self):
        for r in range(NP):
            names = [e["name"] for e in self.traces[r].api()]
            journal = [c.fn for c in self.journals[r].calls]
            self.assertEqual(names.count("ncclBcast"), ITERS)
            self.assertEqual(names.count("ncclBcast"), journal.count("ncclBcast"))
            self.assertEqual(names.count("ncclBroadcast"), journal.count("ncclBroadcast"))

    def collectives_by_comm(self):
        """comm_id -> rank -> [(seq, name, count)] in seq order."""
        out = collections.defaultdict(dict)
        for r, t in self.traces.items():
            per = collections.defaultdict(list)
            for e in t.api():
                a = e["args"]
                if a.get("class") == "coll" and a.get("result") == "ncclSuccess":
                    per[a["comm_id"]].append((a["seq"], e["name"], a["count"]))
            for cid, lst in per.items():
                out[cid][r] = sorted(lst)
        return out

    def test_collective_seq_identical_on_all_ranks(self):
        comms = self.collectives_by_comm()
        # the world communicator and the two halves of the split
        self.assertEqual(len(comms), 3, sorted(comms))
        sizes = sorted(len(by_rank) for by_rank in comms.values())
        self.assertEqual(sizes, [2, 2, 4])
        for cid, by_rank in comms.items():
            lists = list(by_rank.values())
            seqs = [s for s, _, _ in lists[0]]
            self.assertEqual(seqs, list(range(len(seqs))), "comm %s: seq not 0..k-1" % cid)
            for r, lst in by_rank.items():
                self.assertEqual(lst, lists[0], "comm %s: rank %d differs" % (cid, r))

    def test_comm_ids_and_labels(self):
        for r, t in self.traces.items():
            for e in t.api():
                a = e["args"]
                if "comm_id" not in a:
                    continue
                cid = a["comm_id"]
                self.assertRegex(cid, r"^0x[0-9a-f]{16}$")
                self.assertEqual(a["comm"], "comm %s (rank %d/%d)"
                                 % (cid[2:10], a["comm_rank"], a["comm_nranks"]))
                if a["comm_nranks"] == NP:
                    self.assertEqual(a["comm_rank"], r)
                else:
                    self.assertEqual(a["comm_rank"], r // 2)

    def test_send_seq_matches_recv_seq(self):
        sends = collections.defaultdict(list)   # (comm_id, from, to) -> [seq]
        recvs = collections.defaultdict(list)
        for r, t in self.traces.items():
            for e in t.api():
                a = e["args"]
                if e["name"] == "ncclSend":
                    sends[(a["comm_id"], a["comm_rank"], a["peer"])].append(a["seq"])
                elif e["name"] == "ncclRecv":
                    recvs[(a["comm_id"], a["peer"], a["comm_rank"])].append(a["seq"])
        self.assertEqual(len(sends), NP)  # ring: each rank sends to its successor
        self.assertEqual(sorted(sends), sorted(recvs))
        for key, seqs in sends.items():
            self.assertEqual(seqs, list(range(ITERS)), key)
            self.assertEqual(recvs[key], seqs, key)

    def test_group_slices_hold_exactly_their_calls(self):
        for r in range(NP):
            t = self.traces[r]
            tid = t.tid_of_os_thread(self.journals[r].tid)
            expected = lib.journal_groups(self.journals[r].recorded())
            slices = t.groups(tid)
            self.assertEqual(len(slices), len(expected), "rank %d: group slices" % r)
            self.assertEqual(len(slices), 2 * ITERS)
            api = t.api(tid)
            for s, (calls, nested) in zip(slices, expected):
                self.assertEqual(s["name"], "ncclGroup")
                lo, hi = t.start_ns(s), t.end_ns(s)
                inside = [e for e in api if t.start_ns(e) >= lo and t.end_ns(e) <= hi]
                self.assertEqual([e["name"] for e in inside], [c.fn for c in calls])
                self.assertEqual(t.start_ns(inside[0]), lo, "slice starts with ncclGroupStart")
                self.assertEqual(t.end_ns(inside[-1]), hi, "slice ends with ncclGroupEnd")
                gid = s["args"]["group"]
                for e in inside[1:-1]:
                    self.assertEqual(e["args"].get("group"), gid, e)
                if not nested:
                    self.assertEqual(s["args"]["calls"], len(calls) - 2)
            outside = [e for e in api if not any(
                t.start_ns(s) <= t.start_ns(e) and t.end_ns(e) <= t.end_ns(s) for s in slices)]
            for e in outside:
                self.assertNotIn("group", e["args"], e)

    def test_group_ids_unique(self):
        for t in self.traces.values():
            ids = [s["args"]["group"] for s in t.groups()]
            self.assertEqual(len(ids), len(set(ids)))

    def test_split_recorded_with_new_comm(self):
        for r, t in self.traces.items():
            splits = [e for e in t.api() if e["name"] == "ncclCommSplit"]
            self.assertEqual(len(splits), 1)
            a = splits[0]["args"]
            self.assertEqual(a["comm_nranks"], NP)
            self.assertRegex(a.get("new_comm", ""), r"^comm [0-9a-f]{8} \(rank %d/2\)$" % (r // 2))
            comms = t.other["comms"]
            self.assertEqual(len(comms), 2)
            created = sorted(c["created_by"] for c in comms)
            self.assertEqual(created, ["ncclCommInitRank", "ncclCommSplit"])
            world = [c for c in comms if c["created_by"] == "ncclCommInitRank"][0]
            split = [c for c in comms if c["created_by"] == "ncclCommSplit"][0]
            self.assertEqual((world["rank"], world["nranks"]), (r, NP))
            self.assertEqual((split["rank"], split["nranks"]), (r // 2, 2))
            self.assertEqual(split["parent"], world["local_id"])
            self.assertEqual(a["new_comm"], split["label"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
