"""The NPKIT_* settings: a bad value gives exactly one warning naming the variable and the value
and the default is used; NPKIT_OPS selects what is recorded; NPKIT_DISABLE, NPKIT_QUIET,
NPKIT_JSON and an unwritable NPKIT_TRACE_DIR behave as documented, and none of them changes what
the job computes."""

import os
import shutil
import unittest

import npkit_testlib as lib

NUMERIC = ("NPKIT_EVENT_BUF_SIZE", "NPKIT_FLUSH_MS", "NPKIT_RING_MB")
BAD_VALUES = ("", "-5", "abc", "99999999999999999999")
MIX_ARGS = ["--small", "--iters", "1"]


def read(path):
    with open(path) as f:
        return f.read()


class Settings(lib.TempDirTestCase):
    baseline = {}

    @classmethod
    def setUpClass(cls):
        cls.base_tmp = lib.make_temp_dir("settings_baseline")
        cls.addClassCleanup(shutil.rmtree, cls.base_tmp, True)
        for np in (1, 2):
            out = os.path.join(cls.base_tmp, "np%d" % np)
            run = lib.run_mpi("nccl_mix", MIX_ARGS + ["--results", out], np, preload=False)
            if run.rc != 0:
                raise AssertionError("baseline run failed\n" + run.describe())
            cls.baseline[np] = [read("%s.rank%d" % (out, r)) for r in range(np)]

    def run_mix(self, name, np, settings, journal=False):
        """nccl_mix with the library and these settings; checks the job itself was unaffected."""
        out = self.path(name)
        os.makedirs(out)
        trace_dir = os.path.join(out, "trace")
        s = {"NPKIT_TRACE_DIR": trace_dir}
        s.update(settings)
        args = MIX_ARGS + ["--results", os.path.join(out, "results")]
        if journal:
            args += ["--journal", os.path.join(out, "journal")]
        run = lib.run_mpi("nccl_mix", args, np, settings=s)
        self.assertRunOk(run, "settings %r" % settings)
        self.assertEqual(run.stdout, "")
        got = [read(os.path.join(out, "results.rank%d" % r)) for r in range(np)]
        self.assertEqual(got, self.baseline[np], "results changed by %r" % settings)
        run.trace_dir = trace_dir
        run.out = out
        return run

    def test_bad_values_warn_once_and_use_defaults(self):
        n = 0
        for var in NUMERIC + ("NPKIT_LOG_LEVEL", "NPKIT_OPS"):
            for value in BAD_VALUES:
                with self.subTest(var=var, value=value):
                    n += 1
                    run = self.run_mix("bad%d" % n, 1, {var: value}, journal=True)
                    self.assertEqual(len(run.warnings), 1, run.describe())
                    line = run.warnings[0]
                    self.assertIn(var, line)
                    if value:
                        self.assertIn(value, line)
                    traces = lib.load_traces(run.trace_dir, expect=1)
                    # the default selection (all but queries) is in force
                    j = lib.Journal(os.path.join(run.out, "journal.rank0"))
                    problems = lib.compare_calls(j.recorded(), traces[0].api())
                    self.assertEqual(problems, [], lib.format_problems(problems))

    def test_good_values_are_silent(self):
        settings = {"NPKIT_EVENT_BUF_SIZE": "1", "NPKIT_FLUSH_MS": "1",
                    "NPKIT_LOG_LEVEL": "debug", "NPKIT_OPS": "all,-query"}
        run = self.run_mix("good", 2, settings, journal=True)
        self.assertEqual(run.warnings, [], run.describe())
        self.check_every_call_traced(run)

    def check_every_call_traced(self, run):
        """Each rank's trace has every call its journal recorded, and nothing was dropped."""
        traces = lib.load_traces(run.trace_dir, expect=2)
        for r, t in traces.items():
            j = lib.Journal(os.path.join(run.out, "journal.rank%d" % r))
            problems = lib.compare_calls(j.recorded(), t.api())
            self.assertEqual(problems, [], lib.format_problems(problems))
            self.assertEqual(t.other["dropped"], 0)

    def test_flight_recorder_records_the_same(self):
        """A ring that holds the whole job, the watchdog and a dump signal: silent, the results
        unchanged, every call in the trace as the journal has it."""
        settings = {"NPKIT_RING_MB": "8", "NPKIT_HANG_TIMEOUT": "60s", "NPKIT_DUMP_SIGNAL": "SIGUSR1"}
        run = self.run_mix("ring", 2, settings, journal=True)
        self.assertEqual(run.warnings, [], run.describe())
        self.assertEqual([l for l in run.npkit_lines if "hang" in l], [], run.describe())
        self.check_every_call_traced(run)

    def check_selection(self, ops, selected):
        run = self.run_mix("ops", 2, {"NPKIT_OPS": ops}, journal=True)
        self.assertEqual(run.warnings, [], run.describe())
        traces = lib.load_traces(run.trace_dir, expect=2)
        for r, t in traces.items():
            j = lib.Journal(os.path.join(run.out, "journal.rank%d" % r))
            calls = [c for c in j.calls if selected(c)]
            self.assertGreater(len(calls), 0)
            problems = lib.compare_calls(calls, t.api())
            self.assertEqual(problems, [], lib.format_problems(problems))

    def test_ops_collectives_only(self):
        self.check_selection("coll", lambda c: lib.api_class(c.fn) == "coll")

    def test_ops_names_with_and_without_prefix(self):
        self.check_selection(
            "coll,-AllReduce,ncclSend,CommSplit",
            lambda c: (lib.api_class(c.fn) == "coll" and c.fn != "ncclAllReduce")
            or c.fn in ("ncclSend", "ncclCommSplit"))

    def test_ops_all_includes_queries(self):
        self.check_selection("all", lambda c: True)

    def test_disable_is_pure_pass_through(self):
        run = self.run_mix("disabled", 2, {"NPKIT_DISABLE": "1"})
        self.assertFalse(os.path.exists(run.trace_dir) and os.listdir(run.trace_dir),
                         "files written while disabled")
        self.assertEqual(run.npkit_lines, [], run.describe())

    def test_quiet_prints_nothing(self):
        run = self.run_mix("quiet", 2, {"NPKIT_QUIET": "1"})
        self.assertEqual([l for l in run.stderr_lines if "npkit" in l], [], run.describe())
        lib.load_traces(run.trace_dir, expect=2)

    def test_unwritable_trace_dir(self):
        blocker = self.path("blocker")
        with open(blocker, "w") as f:
            f.write("a regular file where a folder should be\n")
        run = self.run_mix("unwritable", 2, {"NPKIT_TRACE_DIR": os.path.join(blocker, "sub")})
        self.assertEqual(len(run.warnings), 2, "one warning per process\n" + run.describe())
        for line in run.warnings:
            self.assertTrue(blocker in line or "NPKIT_TRACE_DIR" in line, line)
        self.assertEqual(read(blocker), "a regular file where a folder should be\n")

    def test_json_off_keeps_the_log(self):
        run = self.run_mix("nojson", 2, {"NPKIT_JSON": "0"})
        self.assertEqual(lib.trace_files(run.trace_dir), [])
        logs = lib.log_files(run.trace_dir)
        self.assertEqual(len(logs), 2)
        ranks = set()
        for log in logs:
            out = log + ".json"
            r = lib.run_tool(["json", log, "-o", out])
            self.assertRunOk(r)
            t = lib.Trace(out)
            ranks.add(t.rank)
            self.assertGreater(len(t.api()), 20)
        self.assertEqual(ranks, {0, 1})


if __name__ == "__main__":
    unittest.main(verbosity=2)
