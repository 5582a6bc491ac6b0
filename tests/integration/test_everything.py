"""Every function of nccl_api.def, error paths included (nccl_everything): all appear in the
trace with the code the program got back, queries only when NPKIT_OPS asks for them.  Against the
fake playing NCCL 2.31.2 every function is really called; against the one playing 2.28.9 (the
toolkit's nccl.h) the newer ones still reach the wrappers, which answer ncclInvalidUsage, mark
them missing in the trace and name them on stderr, the first at once, the others in one line at
exit."""

import re
import unittest

import npkit_testlib as lib


class Everything(lib.TempDirTestCase):
    def run_everything(self, settings=None, nccl="fake"):
        trace_dir = self.path("trace")
        journal = self.path("journal")
        s = {"NPKIT_TRACE_DIR": trace_dir}
        s.update(settings or {})
        run = lib.run_direct("nccl_everything", ["--check", "--journal", journal], nccl=nccl,
                             settings=s)
        self.assertRunOk(run)
        self.assertEqual(run.stdout, "")
        traces = lib.load_traces(trace_dir)
        self.assertEqual(len(traces), 1)
        return run, list(traces.values())[0], lib.Journal(journal)

    def assert_matches(self, trace, journal, classes):
        tid = trace.tid_of_os_thread(journal.tid)
        calls = journal.recorded(classes)
        problems = lib.compare_calls(calls, trace.api(tid=tid))
        self.assertEqual(problems, [], lib.format_problems(problems))
        self.assertEqual(len(trace.api()), len(calls))

    def test_default_ops_record_all_but_queries(self):
        _, trace, journal = self.run_everything(nccl="new")
        called = {c.fn for c in journal.calls}
        every = {name for name, _, _ in lib.api_table()}
        self.assertEqual(every - called, set(), "the program must call every function")
        self.assert_matches(trace, journal, lib.DEFAULT_CLASSES)
        names = {e["name"] for e in trace.api()}
        wanted = {name for name, cls, _ in lib.api_table() if cls != "query"}
        self.assertEqual(wanted - names, set())
        queries = {name for name, cls, _ in lib.api_table() if cls == "query"}
        self.assertEqual(names & queries, set())

    def test_all_ops_record_queries_too(self):
        _, trace, journal = self.run_everything({"NPKIT_OPS": "all"}, nccl="new")
        self.assert_matches(trace, journal, lib.ALL_CLASSES)
        names = {e["name"] for e in trace.api()}
        self.assertEqual({name for name, _, _ in lib.api_table()} - names, set())
        self.assertEqual([e["name"] for e in trace.api() if e["args"].get("missing")], [])

    def test_config_collectives_keep_their_name_and_tag(self):
        _, trace, journal = self.run_everything(nccl="new")
        configs = [e for e in trace.api() if e["name"].endswith("Config") and e["args"]["class"] == "coll"]
        called = [c for c in journal.calls if c.fn.endswith("Config") and c.get("tag") is not None]
        self.assertEqual(len(configs), 9)
        self.assertEqual([e["name"] for e in configs], [c.fn for c in called])
        for e, c in zip(configs, called):
            self.assertEqual(e["args"]["result"], "ncclSuccess", e)
            self.assertIn("seq", e["args"])
            if int(c.get("tag")):
                self.assertEqual(int(e["args"]["user_tag"], 16), int(c.get("tag")))
            else:
                self.assertNotIn("user_tag", e["args"])  # 0: NCCL's default, untagged
        # the tags are the program's own: 0x7a6000000000 + i, then an untagged one in a group
        self.assertEqual([e["args"].get("user_tag") for e in configs],
                         ["0x7a600000000%d" % i for i in range(8)] + [None])

    def test_functions_newer_than_the_loaded_nccl(self):
        run, trace, journal = self.run_everything({"NPKIT_OPS": "all"})
        self.assert_matches(trace, journal, lib.ALL_CLASSES)
        newer = {name for name, _, since in lib.api_table() if since > 22809}
        missing = [e for e in trace.api() if e["args"].get("missing")]
        self.assertTrue(missing)
        for e in missing:
            self.assertIn(e["name"], newer)
            # ncclInvalidUsage from the wrapper; functions returning a value have no result code
            self.assertEqual(e["args"].get("result", "none"),
                             "ncclInvalidUsage" if lib.api_returns_result(e["name"]) else "none", e)
        self.assertEqual({e["name"] for e in missing}, {c.fn for c in journal.calls if c.fn in newer})
        self.assertEqual([e["name"] for e in trace.api() if e["name"] not in newer and e["args"].get("missing")], [])
        # stderr: the first at once, the others in one line at exit
        lines = [l for l in run.stderr.splitlines() if "not in the loaded NCCL" in l or "lacks were called" in l]
        self.assertEqual(len(lines), 2, run.stderr)
        self.assertIn("version 2.28.9", lines[0])
        m = re.search(r"(\d+) more functions the loaded NCCL \(version 2\.28\.9\) lacks", lines[1])
        self.assertIsNotNone(m, lines[1])
        self.assertEqual(int(m.group(1)) + 1, len({e["name"] for e in missing}))

    def test_error_paths_keep_their_codes(self):
        _, trace, journal = self.run_everything({"NPKIT_OPS": "all"})
        null_calls = [c for c in journal.calls if c.get("comm") == "null"]
        self.assertEqual([c.fn for c in null_calls], ["ncclAllReduce", "ncclCommCount"])
        for c in null_calls:
            self.assertNotEqual(c.get("result"), "ncclSuccess", c)
        # every failure (the NULL communicator's, and those of the functions the fake does not
        # model) with the code the program got, and nothing else failed
        failed = [e for e in trace.api() if e["args"].get("result") not in ("ncclSuccess", None)]
        failed_calls = [c for c in journal.calls if c.get("result") not in ("ncclSuccess", "none", None)]
        self.assertEqual([e["name"] for e in failed], [c.fn for c in failed_calls])
        self.assertEqual([e["args"]["result"] for e in failed], [c.get("result") for c in failed_calls])
        nulls = [e for e in failed if e["args"].get("comm") is None and e["name"] in ("ncclAllReduce", "ncclCommCount")]
        self.assertEqual([e["name"] for e in nulls], ["ncclAllReduce", "ncclCommCount"])
        for e in failed:
            self.assertNotIn("seq", e["args"])

    def test_nested_and_simulated_groups(self):
        _, trace, journal = self.run_everything()
        tid = trace.tid_of_os_thread(journal.tid)
        expected = lib.journal_groups(journal.recorded())
        slices = trace.groups(tid)
        self.assertEqual(len(slices), len(expected))
        self.assertEqual([nested for _, nested in expected].count(True), 1)
        api = trace.api(tid)
        for s, (calls, _) in zip(slices, expected):
            inside = [e["name"] for e in api
                      if trace.start_ns(s) <= trace.start_ns(e)
                      and trace.end_ns(e) <= trace.end_ns(s)]
            self.assertEqual(inside, [c.fn for c in calls])
        self.assertIn("ncclGroupSimulateEnd", [c[-1].fn for c, _ in expected])

    def test_memory_sizes_and_premulsum(self):
        _, trace, _ = self.run_everything()
        by_name = {}
        for e in trace.api():
            by_name.setdefault(e["name"], []).append(e)
        for fn in ("ncclMemAlloc", "ncclCommRegister", "ncclCommWindowRegister"):
            self.assertEqual(by_name[fn][0]["args"].get("size"), 1 << 16, fn)
        ops = [e["args"].get("op") for e in by_name["ncclAllReduce"]]
        self.assertIn("premulsum", ops)
        created = {c["created_by"] for c in trace.other["comms"]}
        self.assertEqual(created, {"ncclCommInitRank", "ncclCommInitRankConfig",
                                   "ncclCommInitRankScalable", "ncclCommInitAll",
                                   "ncclCommSplit", "ncclCommShrink"})
        named = [c for c in trace.other["comms"] if c["created_by"] == "ncclCommInitRankConfig"]
        self.assertEqual(named[0]["name"], "everything-config")


if __name__ == "__main__":
    unittest.main(verbosity=2)
