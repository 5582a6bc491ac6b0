"""scripts/npkit_launcher.sh and the machine: --gpu-sample-rate, --cpu-profiling-interval,
--gpu-profiling-depth, --sysfs-root, --nvml-library and --no-machine reach every rank under real
mpirun (read back from the logs), bad values are refused, and the soft open-file limit is raised
to the hard one for the job, with one line that says so (the ranks' snapshots show the new limit)."""

import os
import re
import resource
import subprocess
import unittest

import machine_lib as ml

lib = ml.lib


def launcher():
    return lib.need_file(os.path.join(lib.source_dir(), "scripts", "npkit_launcher.sh"), "scripts/npkit_launcher.sh")


class LauncherMachine(lib.TempDirTestCase):

    def launch(self, args, soft_nofile=None, timeout=180):
        cmd = [launcher(), "--lib", lib.preload_lib(), "--npkit", lib.tool()]
        if lib.sanitizer_runtime():
            cmd += ["--preload", lib.sanitizer_runtime()]
        cmd += list(args)
        env = {k: v for k, v in lib._base_env().items() if k not in ml.SETTINGS}
        env.update(lib.sanitizer_env())
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]

        def lower():  # the job's shell starts with a low soft limit
            if soft_nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft_nofile, hard))

        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=self.tmp,
                              preexec_fn=lower)
        return lib.Run(cmd, proc), hard

    def test_options_reach_the_ranks_and_nofile_is_raised(self):
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        if hard == resource.RLIM_INFINITY or hard <= 1024:
            self.skipTest("the hard open-file limit (%r) leaves nothing to raise" % hard)
        root = self.path("sys")
        ml.make_sysfs(root, [ml.eth_port("eth7")])
        mpirun = [lib.mpirun(), "-np", "2", "--oversubscribe", "--bind-to", "none"]
        run, hard = self.launch(["--trace-dir", self.path("t"), "--no-report", "--gpu-sample-rate", "20000",
                                 "--cpu-profiling-interval", "5000000", "--gpu-profiling-depth", "4",
                                 "--sysfs-root", root, "--env", "NPKIT_CUPTI=0",
                                 "--env", "LD_LIBRARY_PATH=" + lib.nccl_dir("fake"), "--"] + mpirun +
                                [ml.perf(), "-b", "1M", "-e", "1M", "-n", "40", "-w", "1"], soft_nofile=1024)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertEqual([l for l in run.stderr_lines if "open-file limit" in l],
                         ["npkit_launcher.sh: raised the open-file limit (ulimit -n) from 1024 to %d for this job" % hard])
        logs = ml.logs_by_rank(self.path("t"))
        self.assertEqual(sorted(logs), [0, 1])
        for log in logs.values():
            recs = ml.machine_records(log)
            snap = ml.records_of(recs, "snapshot")[0]
            self.assertEqual((snap["gpu_sample_us"], snap["cpu_sample_ns"], snap["sysfs_root"]), ("20000", "5000000", root))
            self.assertEqual(ml.records_of(recs, "system")[0]["nofile_soft"], str(hard))
            env = {f["name"]: f["value"] for f in ml.records_of(recs, "env")}
            self.assertEqual(env["NPKIT_STACK_DEPTH"], "4")
            self.assertEqual([p["dev"] for p in ml.records_of(recs, "port")], ["eth7"])
            kinds = {e["kind"] for e in ml.machine_events(log)}
            self.assertEqual(kinds, {"port", "cpu"})  # no NVML here: no GPU samples

    def test_no_machine_and_dry_run(self):
        run, hard = self.launch(["--dry-run", "--no-machine", "--nvml-library", "/x/libnvidia-ml.so.1", "--", "true"],
                                soft_nofile=512)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn("NPKIT_MACHINE=0", run.stdout)
        self.assertIn("NPKIT_NVML_LIBRARY=/x/libnvidia-ml.so.1", run.stdout)
        if hard != resource.RLIM_INFINITY and hard > 512:
            self.assertIn("open files: the soft limit 512 would be raised to %d" % hard, run.stdout)

    def test_bad_values(self):
        for opt, value in [("--gpu-sample-rate", "999"), ("--gpu-sample-rate", "3600000001"), ("--gpu-sample-rate", "1s"),
                           ("--cpu-profiling-interval", "999999"), ("--cpu-profiling-interval", "x"),
                           ("--gpu-profiling-depth", "65"), ("--sysfs-root", "/nonexistent/sys"), ("--nvml-library", "")]:
            run, _ = self.launch([opt, value, "--", "true"])
            self.assertEqual(run.rc, 2, run.describe())
            self.assertRegex(run.stderr, re.escape(opt))
            self.assertEqual(run.stdout, "")


if __name__ == "__main__":
    unittest.main()
