"""A straggler made on purpose: rank 2 sleeps 20 ms before every AllReduce after the first
iteration.  The traces must show it: in each such AllReduce rank 2 starts last, about 20 ms after
the first rank, and the ranks that were on time spend that long inside the call waiting for it."""

import collections
import unittest

import npkit_testlib as lib

NP = 4
ITERS = 3
LATE = 2
DELAY_US = 20000
# The late rank sleeps 20 ms; the others can themselves reach the call a few ms after the previous
# collective released them when 4 ranks share 2 loaded cores (sanitizer builds), so the bounds
# leave half the sleep as margin: still three orders of magnitude above an undelayed spread.
MIN_LATE_NS = 10_000_000
MIN_WAIT_NS = 10_000_000


class Straggler(lib.TempDirTestCase):
    def test_late_rank_shows_in_allreduce_times(self):
        trace_dir = self.path("trace")
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", str(ITERS), "--delay-rank",
                                       str(LATE), "--delay-us", str(DELAY_US)],
                          NP, settings={"NPKIT_TRACE_DIR": trace_dir})
        self.assertRunOk(run)
        traces = lib.load_traces(trace_dir, expect=NP)

        # (comm_id, seq) -> rank -> (start_ns, end_ns) of AllReduces outside groups
        instances = collections.defaultdict(dict)
        for r, t in traces.items():
            for e in t.api():
                a = e["args"]
                if e["name"] == "ncclAllReduce" and "group" not in a:
                    instances[(a["comm_id"], a["seq"])][r] = (t.start_ns(e), t.end_ns(e))

        by_comm = collections.defaultdict(list)
        for (cid, seq), ranks in instances.items():
            by_comm[cid].append((seq, ranks))
        checked = 0
        for cid, lst in by_comm.items():
            lst.sort()
            members = set(lst[0][1])
            if LATE not in members:
                continue  # the odd half of the split never waits for rank 2
            per_iter, rest = divmod(len(lst), ITERS)
            self.assertEqual(rest, 0, "comm %s: %d AllReduces" % (cid, len(lst)))
            for seq, ranks in lst[per_iter:]:   # the first iteration is not delayed
                self.assertEqual(set(ranks), members)
                starts = {r: s for r, (s, _) in ranks.items()}
                earliest = min(starts.values())
                late = starts[LATE] - earliest
                where = "comm %s seq %d: starts %r" % (cid, seq, starts)
                self.assertEqual(max(starts, key=starts.get), LATE, where)
                self.assertGreaterEqual(late, MIN_LATE_NS, where)
                for r, (s, e) in ranks.items():
                    if r != LATE:
                        self.assertGreaterEqual(e - s, MIN_WAIT_NS,
                                                "%s: rank %d waited only %d ns" % (where, r,
                                                                                   e - s))
                checked += 1
        # world: 4 bucket AllReduces per iteration; even half of the split: 1
        self.assertEqual(checked, (ITERS - 1) * (4 + 1))


if __name__ == "__main__":
    unittest.main(verbosity=2)
