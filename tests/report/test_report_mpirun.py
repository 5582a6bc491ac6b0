"""`npkit report` and `npkit merge` on the logs of real mpirun jobs: nccl_mix on 4 ranks with the
fake NCCL (which really makes ranks wait for each other), rank 2 sleeping 20 ms (100 ms in sanitizer builds) before every
AllReduce after the first iteration.  The report must name rank 2 as the straggler, and its
table must count exactly the calls the program's journal says it made; the merged trace must
hold every rank's calls.  With the fake CUPTI as well, times must come from the GPU records."""

import collections
import gzip
import json
import os
import unittest

import report_testlib as rt
from report_testlib import lib

NP = 4
ITERS = 4
LATE = 2
# A sanitizer build runs the ranks ten times slower and their arrivals spread by milliseconds of
# noise; the late rank must stand out of that noise to be a straggler at all.
DELAY_US = 100000 if os.environ.get("NPKIT_SANITIZE") else 20000
SHORT = {"ncclAllReduce": "AllReduce", "ncclBroadcast": "Broadcast", "ncclBcast": "Bcast", "ncclReduce": "Reduce",
         "ncclAllGather": "AllGather", "ncclReduceScatter": "ReduceScatter", "ncclAlltoAll": "AlltoAll",
         "ncclGather": "Gather", "ncclScatter": "Scatter", "ncclSend": "Send", "ncclRecv": "Recv"}


def journal_calls(journal, rank):
    return lib.Journal("%s.rank%d" % (journal, rank)).calls


def journal_rows(journal):
    """(op, bytes, nranks) -> calls over all ranks, from the journals of a run."""
    rows = collections.Counter()
    for r in range(NP):
        for c in journal_calls(journal, r):
            if c.fn in lib.DATA_FUNCTIONS and c.get("result") == "ncclSuccess":
                size = lib.expected_bytes(c.fn, c.get("count"), c.get("datatype"), c.get("nranks"))
                rows[(SHORT[c.fn], size, c.get("nranks"))] += 1
    return rows


class RealJob(lib.TempDirTestCase):
    def job(self, settings):
        trace, journal = self.path("trace"), self.path("journal")
        s = {"NPKIT_TRACE_DIR": trace}
        s.update(settings)
        run = lib.run_mpi("nccl_mix", ["--small", "--iters", str(ITERS), "--delay-rank", str(LATE), "--delay-us",
                                       str(DELAY_US), "--journal", journal], NP, settings=s)
        self.assertRunOk(run)
        return trace, journal

    def check_report(self, trace, journal, source):
        rep = rt.report_json(self, trace)
        self.assertEqual(rep["inputs"]["logs"], NP)
        # the fakes alone do not make a run "simulated": only NPKIT_SIMULATED=1 does (tests/scripts)
        self.assertEqual(rep["inputs"]["simulated_logs"], 0)
        text = rt.tool("report", trace)
        self.assertNotIn("SIMULATED", text.stdout)
        self.assertEqual([r["rank"] for r in rep["ranks"]], list(range(NP)))
        self.assertFalse(rep["clock_alignment"]["estimated"])  # one host
        # the table counts what the program called
        got = collections.Counter()
        for row in rep["collectives"]:
            got[(row["op"], row["bytes"], row["nranks"])] += row["calls"]
        self.assertEqual(dict(got), dict(journal_rows(journal)))
        # the delayed AllReduces (outside groups, iterations 2..): rank 2 arrives ~20 ms late
        f = rt.findings_of(rep, "straggler")
        self.assertEqual([x["rank"] for x in f], [LATE], rep["findings"])
        delayed = (ITERS - 1) * 5   # per iteration: 4 bucket AllReduces on world, 1 on rank 2's half
        by_rank = {r["rank"]: r for r in rep["stragglers"]["ranks"]}
        self.assertGreaterEqual(by_rank[LATE]["last_over_threshold"], delayed)
        self.assertGreaterEqual(f[0]["time_at_stake_us"], delayed * DELAY_US * 0.8)
        top = rep["stragglers"]["largest"]
        self.assertTrue(all(t["last_rank"] == LATE and t["op"] == "AllReduce" for t in top[:delayed]), top)
        self.assertTrue(all(t["time_source"] == source for t in top))
        return rep

    def check_merge(self, trace, journal):
        out = self.path("merged.json.gz")
        run = rt.tool("merge", trace, "-o", out)
        self.assertEqual(run.rc, 0, run.describe())
        with gzip.open(out, "rt", encoding="utf-8") as fh:
            t = json.load(fh)
        per_pid = collections.Counter(e["pid"] for e in t["traceEvents"] if e.get("cat") == "nccl_api")
        for r in range(NP):
            self.assertEqual(per_pid[r + 1], len(lib.Journal("%s.rank%d" % (journal, r)).recorded()), r)
        names = sorted(e["args"]["name"] for e in t["traceEvents"] if e["name"] == "process_name")
        self.assertEqual([n.split(" \u00b7 ")[0] for n in names], ["rank %d" % r for r in range(NP)])

    def test_api_events(self):
        trace, journal = self.job({"NPKIT_CUPTI": "0", "NPKIT_PLUGIN": "0"})
        rep = self.check_report(trace, journal, "cpu")
        self.assertFalse(rep["gpu"]["available"])
        # nothing timed on the GPU at all: today's wording
        self.assertEqual(rep["gpu"]["gpu_timed_rows"], 0)
        self.assertIn("these logs hold NCCL API events only", rep["gpu"]["message"])
        (f,) = rt.findings_of(rep, "no_gpu_activity")
        self.assertEqual(f["title"], "No GPU activity in the logs: times are CPU times of the NCCL calls")
        self.assertEqual(rt.findings_of(rep, "no_application_kernels"), [])
        self.assertTrue(all(r["time_source"] in ("cpu", "none") for r in rep["collectives"]))
        # calls inside groups have no CPU time of their own
        sends = [r for r in rep["collectives"] if r["op"] == "Send"]
        self.assertTrue(sends and all(r["time_source"] == "none" and r["untimed_calls"] == r["calls"] for r in sends))
        self.check_merge(trace, journal)

    def test_with_kernel_channels_only(self):
        # no CUPTI, but NCCL's own kernel-channel events (mapped onto the host clock) time the
        # collectives it ran as tasks
        trace, journal = self.job({"NPKIT_CUPTI": "0"})
        rep = self.check_report(trace, journal, "gpu")
        self.assertFalse(rep["gpu"]["available"])  # no CUPTI activity: no overlap analysis
        rows = [r for r in rep["collectives"] if r["op"] == "AllReduce" and r["nranks"] == NP]
        self.assertTrue(rows and all(r["time_source"] == "gpu" for r in rows), rows)
        # the report does not contradict its table: it counts what NCCL's stamps time and says
        # what is missing, instead of "NCCL API events only"
        gpu_rows = [r for r in rep["collectives"] if r["time_source"] == "gpu"]
        n, m = len(gpu_rows), len(rep["collectives"])
        calls = sum(r["calls"] for r in rep["collectives"])
        gpu_calls = sum(r["calls"] for r in gpu_rows)
        self.assertTrue(0 < n < m, (n, m))  # Send/Recv in groups are untimed rows
        g = rep["gpu"]
        self.assertEqual((g["rows"], g["gpu_timed_rows"], g["calls"], g["gpu_timed_calls"], g["plugin_ranks"]),
                         (m, n, calls, gpu_calls, NP))
        self.assertNotIn("API events only", g["message"])
        self.assertIn("time %d of the table's %d rows" % (n, m), g["message"])
        self.assertEqual(rt.findings_of(rep, "no_gpu_activity"), [])
        (f,) = rt.findings_of(rep, "no_application_kernels")
        self.assertEqual(f["title"], "No kernels of the application in the logs: NCCL's own GPU stamps time %d of %d rows"
                         % (n, m))
        self.assertIn("(%d of %d calls)" % (gpu_calls, calls), f["evidence"])
        self.assertIn("(%d of %d ranks)" % (NP, NP), f["evidence"])
        self.assertIsNone(f["time_at_stake_us"])
        text = rt.tool("report", trace)
        self.assertNotIn("API events only", text.stdout)
        self.assertIn("NCCL's own GPU stamps (profiler plugin) time %d of the table's %d rows" % (n, m), text.stdout)
        html = self.path("r.html")
        run = rt.tool("report", trace, "--html", html)
        self.assertEqual(run.rc, 0, run.describe())
        with open(html, encoding="utf-8") as fh:
            page = fh.read()
        self.assertNotIn("API events only", page)
        self.assertIn("no_application_kernels", page)

    def test_with_gpu_records(self):
        fake = os.path.join(lib.need_env("NPKIT_FAKES_DIR"), "libcupti.so.13")
        if not os.path.exists(fake):
            self.skipTest("the fake CUPTI (tests/fakes_cupti) is not built: no GPU records to test with")
        trace, journal = self.job({"NPKIT_CUPTI_LIBRARY": fake})
        rep = self.check_report(trace, journal, "gpu")
        self.assertTrue(rep["gpu"]["available"])
        world = [r for r in rep["collectives"] if r["op"] == "AllReduce" and r["nranks"] == NP and r["timed_calls"]]
        self.assertTrue(world and all(r["time_source"] == "gpu" for r in world), world)
        self.assertTrue(all(g["comm_kernels"] > 0 for g in rep["gpu"]["ranks"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
