"""One process, four communicators from ncclCommInitAll (nccl_threads): calls from four threads
land on four tracks, each named after its OS thread, with nothing lost; the single-thread grouped
form puts every call inside a group slice."""

import collections
import unittest

import npkit_testlib as lib

ITERS = 3
NDEV = 4


class Threads(lib.TempDirTestCase):
    def run_mode(self, mode):
        trace_dir = self.path("trace")
        journal = self.path("journal")
        run = lib.run_direct("nccl_threads", ["--" + mode, "--small", "--check", "--iters",
                                              str(ITERS), "--journal", journal],
                             settings={"NPKIT_TRACE_DIR": trace_dir,
                                       "NPKIT_PLUGIN": "0"})  # API events only (tests/plugin)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        traces = lib.load_traces(trace_dir)
        self.assertEqual(len(traces), 1, "one process, one trace")
        trace = list(traces.values())[0]
        self.assertEqual(trace.other["dropped"], 0)
        self.assertEqual(len(lib.log_files(trace_dir)), 1)
        return trace, journal

    def assert_comms_from_init_all(self, trace):
        comms = trace.other["comms"]
        self.assertEqual(len(comms), NDEV)
        self.assertEqual(sorted(c["rank"] for c in comms), list(range(NDEV)))
        for c in comms:
            self.assertEqual(c["nranks"], NDEV)
            self.assertEqual(c["created_by"], "ncclCommInitAll")
        # the four are ranks of one communicator: one comm_id
        self.assertEqual(len({c["comm_id"] for c in comms}), 1)
        return comms

    def test_one_thread_per_comm(self):
        trace, journal = self.run_mode("threads")
        self.assert_comms_from_init_all(trace)
        main = lib.Journal(journal + ".main")
        workers = [lib.Journal("%s.thread%d" % (journal, d)) for d in range(NDEV)]
        tids = {}
        for j in [main] + workers:
            tids[j.path] = trace.tid_of_os_thread(j.tid)
        self.assertEqual(len(set(tids.values())), NDEV + 1, "each thread on its own track")

        total = 0
        for j in [main] + workers:
            events = trace.api(tid=tids[j.path])
            calls = j.recorded()
            problems = lib.compare_calls(calls, events)
            self.assertEqual(problems, [], "%s:\n%s" % (j.path, lib.format_problems(problems)))
            total += len(calls)
        self.assertEqual(len(trace.api()), total, "events on unexpected threads")
        self.assertEqual(trace.other["events"], total)

        # per communicator: the worker d is rank d, and its events carry that rank only
        for d, j in enumerate(workers):
            ranks = {e["args"].get("comm_rank") for e in trace.api(tid=tids[j.path])
                     if "comm_rank" in e["args"]}
            self.assertEqual(ranks, {d})
            colls = [e for e in trace.api(tid=tids[j.path]) if e["args"]["class"] == "coll"]
            self.assertEqual(len(colls), 5 * ITERS)
            self.assertEqual([e["args"]["seq"] for e in colls], list(range(5 * ITERS)))

        # every track is named after its OS thread
        names = trace.thread_names()
        for tid in tids.values():
            self.assertRegex(names[tid], r"^NCCL API · tid \d+$")

    def test_grouped_single_thread(self):
        trace, journal = self.run_mode("grouped")
        self.assert_comms_from_init_all(trace)
        main = lib.Journal(journal + ".main")
        tid = trace.tid_of_os_thread(main.tid)
        calls = main.recorded()
        events = trace.api(tid=tid)
        problems = lib.compare_calls(calls, events)
        self.assertEqual(problems, [], lib.format_problems(problems))
        self.assertEqual(len(trace.api()), len(events))

        slices = trace.groups(tid)
        self.assertEqual(len(slices), 4 * ITERS)
        expected = lib.journal_groups(calls)
        self.assertEqual(len(expected), len(slices))
        data_events = [e for e in events if e["args"]["class"] in ("coll", "p2p")]
        for e in data_events:
            inside = [s for s in slices
                      if trace.start_ns(s) <= trace.start_ns(e)
                      and trace.end_ns(e) <= trace.end_ns(s)]
            self.assertEqual(len(inside), 1, "%s outside group slices" % e)
            self.assertEqual(e["args"]["group"], inside[0]["args"]["group"])
        for s, (group_calls, _) in zip(slices, expected):
            self.assertEqual(s["args"]["calls"], len(group_calls) - 2)

        per_rank = collections.Counter(e["args"]["comm_rank"] for e in data_events)
        self.assertEqual(per_rank, {d: 5 * ITERS for d in range(NDEV)})


if __name__ == "__main__":
    unittest.main(verbosity=2)
