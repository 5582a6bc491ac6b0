"""scripts/npkit_launcher.sh: every option is explained by --help, bad options and values are
refused with a message, the settings reach every rank (Open MPI -x, Slurm --export, plain
environment) and the report at the end covers this run's logs only."""

import os
import re
import shlex
import subprocess
import unittest

import callsites_lib as cs

lib = cs.lib


def launcher():
    return lib.need_file(cs.source("scripts", "npkit_launcher.sh"), "scripts/npkit_launcher.sh")


class Launcher(lib.TempDirTestCase):

    def launch(self, args, tools=True, env_extra=None, timeout=180):
        cmd = [launcher()]
        if tools:
            cmd += ["--lib", lib.preload_lib(), "--npkit", lib.tool()]
            if lib.sanitizer_runtime():  # the ranks need it first; the script itself must not get it
                cmd += ["--preload", lib.sanitizer_runtime()]
        cmd += list(args)
        env = lib._base_env()
        for k in cs.SETTINGS:
            env.pop(k, None)
        env.update(lib.sanitizer_env())
        env.update(env_extra or {})
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=self.tmp)
        return lib.Run(cmd, proc)

    def assertRefused(self, args, pattern):
        r = self.launch(args + ["--", "true"])
        self.assertEqual(r.rc, 2, r.describe())
        self.assertRegex(r.stderr, pattern)
        self.assertIn("--help", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_help_explains_every_option(self):
        r = self.launch(["--help"], tools=False)
        self.assertEqual(r.rc, 0, r.describe())
        with open(launcher()) as f:
            script = f.read()
        parsed = set(re.findall(r"^\s+((?:-[-\w]+\|?)+)\)", script, re.M))
        options = {o for group in parsed for o in group.split("|") if o != "--"}
        self.assertGreater(len(options), 20)
        documented = set(re.findall(r"^  (?:-\w, )?(--[\w-]+)", r.stdout, re.M)) | {"-h"}
        self.assertEqual(options, documented)

    def test_bad_options_are_refused(self):
        self.assertRefused(["--bogus"], r"unknown option '--bogus'")
        self.assertRefused(["-x"], r"unknown option '-x'")
        for opt, value in [("--buffer-size", "0"), ("--buffer-size", "12x"), ("--buffer-size", "65537"),
                           ("--stack-depth", "65"), ("--stack-depth", "-1"), ("--window", "5"), ("--window", "a:b"),
                           ("--window", ":"), ("--window", "1:2x"), ("--start-after", "soon"), ("--stop-after", ""),
                           ("--toggle-signal", "SIGKILL"), ("--toggle-signal", "9"), ("--flush-ms", "0"),
                           ("--log-level", "loud"), ("--env", "NOEQUALS"), ("--env", "LD_PRELOAD=x"),
                           ("--ops", "all;rm"), ("--trace-dir", ""), ("--lib", "/nonexistent.so"),
                           ("--preload", "/nonexistent.so")]:
            self.assertRefused([opt, value], re.escape(opt))
        r = self.launch(["--trace-dir"])
        self.assertEqual(r.rc, 2)
        self.assertIn("--trace-dir needs a value", r.stderr)
        r = self.launch(["--stack-depth", "4"])
        self.assertEqual(r.rc, 2)
        self.assertIn("missing COMMAND", r.stderr)

    def dry_run(self, args, command):
        r = self.launch(["--dry-run"] + args + ["--"] + command)
        self.assertEqual(r.rc, 0, r.describe())
        line = [l for l in r.stdout.splitlines() if l.startswith("command:")]
        self.assertEqual(len(line), 1, r.stdout)
        return shlex.split(line[0][len("command:"):]), r.stdout

    def test_environment_per_launcher(self):
        settings = ["--trace-dir", "out dir", "--stack-depth", "8", "--window", "100:30s", "--ops", "coll,-AllReduce",
                    "--toggle-signal", "usr2", "--env", "NCCL_PROTO=LL"]
        want = ["NPKIT_TRACE_DIR=out dir", "NPKIT_STACK_DEPTH=8", "NPKIT_START_AFTER=100", "NPKIT_STOP_AFTER=30s",
                "NPKIT_OPS=coll,-AllReduce", "NPKIT_TOGGLE_SIGNAL=SIGUSR2", "NCCL_PROTO=LL"]
        mpirun = lib.mpirun()
        cmd, _ = self.dry_run(settings, [mpirun, "-np", "2", "./train", "--lr", "0.1"])
        xs = [cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i] == "-x"]
        self.assertEqual(xs[0], "LD_PRELOAD=%s:%s" % (lib.sanitizer_runtime(), lib.preload_lib())
                         if lib.sanitizer_runtime() else "LD_PRELOAD=" + lib.preload_lib())
        self.assertEqual(xs[1:], want)
        self.assertEqual(cmd[0], mpirun)
        self.assertEqual(cmd[-5:], ["-np", "2", "./train", "--lr", "0.1"])

        cmd, _ = self.dry_run(settings, ["/opt/slurm/bin/srun", "-N", "2", "./train"])
        self.assertEqual(cmd, ["/opt/slurm/bin/srun", "--export=ALL", "-N", "2", "./train"])
        cmd, _ = self.dry_run(settings, ["srun", "--export=HOME", "./train"])
        self.assertEqual(cmd, ["srun", "--export=HOME,LD_PRELOAD,NPKIT_TRACE_DIR,NPKIT_STACK_DEPTH,NPKIT_START_AFTER,"
                                        "NPKIT_STOP_AFTER,NPKIT_OPS,NPKIT_TOGGLE_SIGNAL,NCCL_PROTO", "./train"])
        cmd, out = self.dry_run(settings, ["torchrun", "--nproc-per-node", "8", "train.py"])
        self.assertEqual(cmd, ["torchrun", "--nproc-per-node", "8", "train.py"])
        self.assertIn("launcher: env", out)

    def test_plain_program(self):
        trace_dir = self.path("plain")
        r = self.launch(["--trace-dir", trace_dir, "--stack-depth", "2", "--quiet",
                         "--env", "LD_LIBRARY_PATH=" + lib.nccl_dir("fake"), "--",
                         cs.prog("callsite_prog_g"), "--iters", "3"])
        self.assertEqual(r.rc, 0, r.describe())
        t = cs.one_trace(self, trace_dir)
        ar = cs.api(t, "ncclAllReduce")
        self.assertEqual(len(ar), 3)
        self.assertEqual([cs.function_of(f) for f in cs.frames(ar[0])], ["issue_allreduce", "main"])
        self.assertIn("== npkit report (1 logs in %s)" % trace_dir, r.stdout)
        self.assertIn("\nCall sites\n", r.stdout)
        # the job's exit status is the launcher's
        r = self.launch(["--trace-dir", trace_dir, "--no-report", "--", cs.prog("callsite_prog_g"), "--bogus"])
        self.assertEqual(r.rc, 2, r.describe())

    def test_mpirun_two_ranks(self):
        trace_dir = self.path("mpi")
        args = ["--trace-dir", trace_dir, "--stack-depth", "4", "--ops", "coll", "--window", "3:",
                "--env", "LD_LIBRARY_PATH=" + lib.nccl_dir("fake"), "--",
                lib.mpirun(), "-np", "2", "--oversubscribe", "--bind-to", "none", lib.program("nccl_mix"),
                "--iters", "2", "--small"]
        for attempt in (1, 2):  # the second run finds the first one's logs in the folder
            r = self.launch(args)
            self.assertEqual(r.rc, 0, r.describe())
            self.assertIn("== npkit report (2 logs in %s)" % trace_dir, r.stdout)
            self.assertRegex(r.stdout, r"\d+ call sites in 2 of 2 logs")
        ts = cs.traces(trace_dir)
        self.assertEqual(len(ts), 4)
        newest = sorted(ts, key=lambda t: int(t.other["base_ns"]))[-2:]
        self.assertEqual(sorted(t.rank for t in newest), [0, 1])
        for t in newest:
            calls = t.api()
            self.assertTrue(calls)
            self.assertEqual({e["args"]["class"] for e in calls}, {"coll"})              # --ops
            for e in calls:
                self.assertTrue(1 <= len(cs.frames(e)) <= 4, e)                            # --stack-depth
            tg = cs.toggles(t)
            self.assertEqual([(e["name"], e["args"]["reason"]) for e in tg][:2],          # --window
                             [("npkit recording paused", "NPKIT_START_AFTER"),
                              ("npkit recording resumed", "NPKIT_START_AFTER")])
            self.assertEqual(tg[1]["args"]["collectives"], 3)
        # mpirun itself ran without the library: no log of a third process
        self.assertEqual(len([f for f in os.listdir(trace_dir) if f.endswith(".npkit")]), 4)


if __name__ == "__main__":
    unittest.main()
