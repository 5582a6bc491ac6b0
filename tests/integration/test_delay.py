"""A straggler made on purpose: rank 2 sleeps 20 ms before every AllReduce after the first
iteration.  The traces must show it: before each such AllReduce rank 2's own timeline has the 20 ms
gap, it enters well after the first rank, and the ranks that were on time leave the call only after
it came (they waited for it)."""

import collections
import unittest

import npkit_testlib as lib

NP = 4
ITERS = 3
LATE = 2
DELAY_US = 20000
# The late rank's own gap from its previous call is at least the 20 ms it slept, whatever the load.
# How late it is against the others is not: when 4 ranks share 2 loaded cores (ThreadSanitizer on
# CI) on-time ranks reached the call 12 ms after the previous one released them, and once two of
# them even came 15 ms after the late rank.  So lateness has a loose bound (still three orders of
# magnitude above an undelayed spread) and is not required to be the largest; the waiting is
# checked exactly: an on-time rank leaves the AllReduce only after the late rank entered it (one
# host, one clock; a microsecond for rounding).
MIN_GAP_NS = DELAY_US * 1000
MIN_LATE_NS = 2_000_000
ROUNDING_NS = 1000


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

        # the late rank's NCCL calls, to find the one before each of its AllReduces
        late_calls = sorted((traces[LATE].start_ns(e), traces[LATE].end_ns(e))
                            for e in traces[LATE].api())

        def end_before(t):
            return max(e for s, e in late_calls if e <= t)

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
                self.assertGreaterEqual(late, MIN_LATE_NS, where)
                for r, (s, e) in ranks.items():
                    if r != LATE:
                        self.assertGreaterEqual(e, starts[LATE] - ROUNDING_NS,
                                                "%s: rank %d left at %d, before rank %d came"
                                                % (where, r, e, LATE))
                prev_end = end_before(starts[LATE])
                self.assertGreaterEqual(starts[LATE] - prev_end, MIN_GAP_NS - ROUNDING_NS,
                                        "%s: rank %d slept only %d ns" % (where, LATE,
                                                                          starts[LATE] - prev_end))
                checked += 1
        # world: 4 bucket AllReduces per iteration; even half of the split: 1
        self.assertEqual(checked, (ITERS - 1) * (4 + 1))


if __name__ == "__main__":
    unittest.main(verbosity=2)
